package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vitalsproject/vitals/health"
)

// cpuTime is the CPU (user+system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runner measures the CPU that Vitals' background runner uses for N checks with a no-op-ish body
// (an atomic increment) at the given interval, over the given duration after a warm-up.
func runner(args []string) error {
	fs := flag.NewFlagSet("runner", flag.ExitOnError)
	n := fs.Int("checks", 100, "number of checks")
	interval := fs.Duration("interval", 10*time.Second, "check interval")
	duration := fs.Duration("duration", 60*time.Second, "measurement window")
	_ = fs.Parse(args)

	// Baseline: the same process, idle, over a short window (the Go runtime's own background work).
	runtime.GC()
	b0, w0 := cpuTime(), time.Now()
	time.Sleep(min(*duration/6, 10*time.Second))
	baseline := float64(cpuTime()-b0) / float64(time.Since(w0))

	var runs atomic.Int64
	m := health.NewManager(health.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	for i := 0; i < *n; i++ {
		m.MustRegister(health.Check{
			Name: fmt.Sprintf("check-%03d", i), Interval: *interval, Timeout: *interval / 2,
			Run: func(context.Context) error { runs.Add(1); return nil },
		})
	}
	m.Start(context.Background())
	defer m.Stop()
	time.Sleep(*interval + time.Second) // every check has run once (start-up cost excluded)
	runtime.GC()

	r0 := runs.Load()
	c0, t0 := cpuTime(), time.Now()
	time.Sleep(*duration)
	cpu, wall := cpuTime()-c0, time.Since(t0)
	executed := runs.Load() - r0
	share := float64(cpu) / float64(wall)
	perRun := time.Duration(0)
	if executed > 0 {
		perRun = cpu / time.Duration(executed)
	}
	fmt.Printf("runner: %d checks every %s, measured %s: %d runs, CPU %s = %.3f%% of one core (idle process baseline %.3f%%), %s CPU per run, %d goroutines\n",
		*n, *interval, wall.Round(time.Millisecond), executed, cpu.Round(time.Microsecond), share*100, baseline*100,
		perRun.Round(100*time.Nanosecond), runtime.NumGoroutine())
	return nil
}
