package health

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/clock"
)

// benchWriter is a ResponseWriter that can be reused, so that benchmarks count the handler's
// allocations only.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *benchWriter) WriteHeader(s int)           { w.status = s }
func (w *benchWriter) reset()                      { clear(w.h); w.status, w.n = 0, 0 }

var floorBody = []byte("ok")

// floor is what no health library can beat: a bare handler writing a constant "ok".
var floor = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(floorBody) })

// benchManager returns a started manager on the real clock with n passing checks.
func benchManager(b *testing.B, n int) *Manager {
	b.Helper()
	m := NewManager(WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	for i := range n {
		m.MustRegister(Check{Name: fmt.Sprintf("check-%02d", i), Run: ok, Probes: AllProbes, Interval: time.Hour})
		entryOf(b, m, fmt.Sprintf("check-%02d", i)).record(m.clock.Now(), 2*time.Millisecond, nil)
	}
	m.Start(context.Background())
	b.Cleanup(m.Stop)
	return m
}

func runHandler(b *testing.B, h http.Handler, target string, hdr ...string) {
	b.Helper()
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := &benchWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	if w.status != 0 && w.status != http.StatusOK {
		b.Fatalf("status %d", w.status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, r)
	}
}

func BenchmarkFloor(b *testing.B) { runHandler(b, floor, "/readyz") }

func BenchmarkReadyz(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{}), "/readyz")
}

func BenchmarkReadyzVerbose(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{}), "/readyz?verbose")
}

func BenchmarkReadyzJSON(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{}), "/readyz", "Accept", "application/json")
}

func BenchmarkReadyzExclude(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{}), "/readyz?exclude=check-03&verbose")
}

func BenchmarkReadyzSubPath(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{}), "/readyz/check-03")
}

func BenchmarkReadyzDisableByFile(b *testing.B) {
	runHandler(b, benchManager(b, 10).Handler(HandlerOptions{DisableByFilePath: b.TempDir() + "/disable"}), "/readyz")
}

// BenchmarkReadyzParallel serves /readyz from every P at once: the snapshot is shared, read-only.
func BenchmarkReadyzParallel(b *testing.B) {
	h := benchManager(b, 10).Handler(HandlerOptions{})
	r := httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: http.Header{}}
		for pb.Next() {
			w.reset()
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkRunnerCycle measures one background run of a no-op check among 100 (start the run's
// goroutine and timer, record the result, rebuild the snapshot). The reported core-% is what 100
// checks at a 10 s interval cost: 10 cycles per second.
func BenchmarkRunnerCycle(b *testing.B) {
	m := benchManager(b, 100)
	e := entryOf(b, m, "check-50")
	ctx := context.Background()
	clk := clock.WithTicker(m.clock)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.runOnce(ctx, clk, clk.Now())
	}
	perRun := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perRun*10/1e9*100, "core-%@100x10s")
}

// BenchmarkRunner100 runs 100 no-op checks in the background on the real clock at a 10 ms
// interval until b.N runs have completed, and reports the process CPU time (user+system, from
// getrusage) per run. core-%@100x10s scales it to 100 checks at a 10 s interval (10 runs/s).
func BenchmarkRunner100(b *testing.B) {
	var runs atomic.Int64
	m := NewManager(WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	for i := range 100 {
		m.MustRegister(Check{Name: fmt.Sprintf("check-%03d", i), Probes: AllProbes,
			Interval: 10 * time.Millisecond, Timeout: 5 * time.Millisecond,
			Run: func(context.Context) error { runs.Add(1); return nil }})
	}
	before := cpuTime(b)
	start := time.Now()
	m.Start(context.Background())
	for runs.Load() < int64(b.N) {
		time.Sleep(5 * time.Millisecond)
	}
	m.Stop()
	cpu := cpuTime(b) - before
	n := runs.Load()
	perRun := float64(cpu.Nanoseconds()) / float64(n)
	b.ReportMetric(perRun, "cpu-ns/run")
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "runs/s")
	b.ReportMetric(perRun*10/1e9*100, "core-%@100x10s")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkComponentBeat is the cost of a heartbeat on a component's hot loop.
func BenchmarkComponentBeat(b *testing.B) {
	m := benchManager(b, 10)
	c, err := m.Component("loop", ComponentOptions{Deadline: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Beat()
	}
}
