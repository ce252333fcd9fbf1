// Command vitals-canary is the pod network canary of the node agent's connectivity check: it runs in a
// pod on the pod network on every node, accepts TCP connections from other nodes' agents on its port,
// and runs the probes its own node's agent asks for, over the agent's unix socket, from the pod
// network (package canary; docs/agent.md, "Peers discovered").
//
//	vitals-canary --listen :8091 --socket /run/vitals/canary/canary.sock
//
// It says who it is from the downward API's POD_NAMESPACE, POD_NAME and POD_IP. It imports the standard
// library and the probes only: it runs on every node beside the agent.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/vitalsproject/vitals/canary"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// Memory defaults, unless GOGC or GOMEMLIMIT say otherwise: the canary runs on every node, and each
// pass starts a goroutine per probe whose stacks the collector gives back sooner at 50% growth under a
// 4 MiB soft limit (docs/benchmarks.md, "Pod network peers": 7.2 MiB resident without them, 5.0 with).
const (
	defaultGCPercent   = 50
	defaultMemoryLimit = 4 << 20
)

// Exit codes, as the other binaries': 2 for a configuration error.
const (
	exitOK     = 0
	exitError  = 1
	exitConfig = 2
)

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("vitals-canary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := canary.Options{}
	fs.StringVar(&o.Listen, "listen", fmt.Sprintf(":%d", canary.DefaultPort), "TCP address other nodes' agents connect to")
	fs.StringVar(&o.Socket, "socket", canary.DefaultSocketPath, "the node agent's unix socket")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitConfig
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vitals-canary: unexpected arguments %q\n", fs.Args())
		return exitConfig
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "vitals-canary: log-level: expected debug, info, warn or error, got %q\n", *logLevel)
		return exitConfig
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		fmt.Fprintf(stderr, "vitals-canary: listen: expected [host]:port, got %q\n", o.Listen)
		return exitConfig
	}
	if o.Socket == "" || o.Socket[0] != '/' {
		fmt.Fprintf(stderr, "vitals-canary: socket: expected an absolute path, got %q\n", o.Socket)
		return exitConfig
	}
	if ns, name := getenv("POD_NAMESPACE"), getenv("POD_NAME"); ns != "" && name != "" {
		o.Hello.Pod = ns + "/" + name
	}
	if ip := getenv("POD_IP"); ip != "" {
		if _, err := netip.ParseAddr(ip); err != nil {
			fmt.Fprintf(stderr, "vitals-canary: POD_IP: expected an IP address, got %q\n", ip)
			return exitConfig
		}
		o.Hello.PodIP = ip
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	o.Log = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := canary.Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "vitals-canary: %v\n", err)
		return exitError
	}
	return exitOK
}
