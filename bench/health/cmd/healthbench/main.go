// Command healthbench is the driver of bench/health (run.sh calls it):
//
//	healthbench serve -contender NAME -addr 127.0.0.1:PORT   serve one contender (one process each,
//	                                                         so its CPU time is its own)
//	healthbench paths -contender NAME                        list "key path" lines to load
//	healthbench runner -checks 100 -interval 10s -duration 60s
//	                                                         CPU of Vitals' background runner
//	healthbench report < results.tsv                         print the table with ratios to the floor
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vitalsproject/vitals/bench/health/contenders"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: healthbench serve|paths|runner|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "paths":
		err = paths(os.Args[2:])
	case "runner":
		err = runner(os.Args[2:])
	case "report":
		err = report(os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "healthbench:", err)
		os.Exit(1)
	}
}

func specFlags(fs *flag.FlagSet) *contenders.Spec {
	s := &contenders.Spec{}
	fs.IntVar(&s.Checks, "checks", 10, "number of checks")
	fs.DurationVar(&s.Cost, "cost", 2*time.Millisecond, "duration of one check body")
	fs.DurationVar(&s.Interval, "interval", time.Second, "interval of background checks")
	return s
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	name := fs.String("contender", "", "contender: "+fmt.Sprint(contenders.Names()))
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	spec := specFlags(fs)
	_ = fs.Parse(args)
	c, err := contenders.New(*name, *spec)
	if err != nil {
		return err
	}
	defer c.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: checks not passing after 30s", *name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv := &http.Server{Addr: *addr, Handler: c.Handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Println("ready", *name, *addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return srv.Close()
	}
}

func paths(args []string) error {
	fs := flag.NewFlagSet("paths", flag.ExitOnError)
	name := fs.String("contender", "", "contender")
	_ = fs.Parse(args)
	c, err := contenders.New(*name, contenders.Spec{Checks: 1, Cost: time.Microsecond})
	if err != nil {
		return err
	}
	defer c.Stop()
	for _, k := range contenders.SortedPathKeys(c) {
		fmt.Println(k, c.Paths[k])
	}
	return nil
}
