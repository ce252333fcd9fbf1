// Command pause is the sandbox ("pause") container of the test node's pods (hack/node.sh): the process that
// holds a pod's namespaces while its containers come and go, as Kubernetes' own pause does. It sleeps until
// SIGINT or SIGTERM (then exits 0) and reaps every child that exits: in a pod that shares its process
// namespace it is PID 1, and orphans become its children.
//
// It is a test tool, built static into a FROM-scratch image (internal/tools/ociimage) so that the node pulls
// nothing; it never ships in Vitals' images.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: pause (no arguments): sleeps until SIGINT or SIGTERM, reaping children")
		os.Exit(2)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	reap() // children that exited before the handler was installed
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking (one SIGCHLD may stand for several children).
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
