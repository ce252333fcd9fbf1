// Command healthcheck is the container health check: one static binary for Docker's HEALTHCHECK
// (exec form) and Kubernetes exec probes. It prints one line and exits 0 (healthy) or 1
// (unhealthy). See docs/healthcheck.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/vitalsproject/vitals/healthcheck"
)

func main() {
	// A reader that goes away (a closed pipe) must not kill us with SIGPIPE (exit 141): the
	// verdict is the exit code, whatever happens to the line.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(healthcheck.Main(context.Background(), os.Args, os.Getenv, os.Stdout, os.Stderr))
}
