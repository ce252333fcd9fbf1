package health

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/utils/clock"
)

func TestRegisterValidation(t *testing.T) {
	tests := []struct {
		name  string
		check Check
		want  string
	}{
		{"bad name", Check{Name: "a b", Run: ok}, "invalid name"},
		{"empty name", Check{Name: "", Run: ok}, "invalid name"},
		{"nil run", Check{Name: "a"}, "run function is nil"},
		{"timeout over interval", Check{Name: "a", Run: ok, Interval: time.Second, Timeout: 2 * time.Second}, "longer than interval"},
		{"negative interval", Check{Name: "a", Run: ok, Interval: -time.Second}, "negative"},
		{"negative start", Check{Name: "a", Run: ok, StartPeriod: -time.Second}, "negative"},
		{"bad probes", Check{Name: "a", Run: ok, Probes: 64}, "unknown probes"},
		{"ok", Check{Name: "a-b_c.d", Run: ok}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTest(t)
			err := m.Register(tc.check)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	m, _ := newTest(t)
	m.MustRegister(Check{Name: "a", Run: ok})
	if err := m.Register(Check{Name: "a", Run: ok}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := m.Register(Check{Name: "b", Run: ok}, Check{Name: "b", Run: ok}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate in one call: %v", err)
	}
	if _, err := m.Component("a", ComponentOptions{}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("component duplicate: %v", err)
	}
	if _, err := m.Budget("a", BudgetOptions{Limit: 1, Window: time.Second}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("budget duplicate: %v", err)
	}
	r, _ := m.Result("a")
	if r.Probes != Readiness || r.Status != StatusUnknown || !errors.Is(r.Err, ErrNoResult) {
		t.Fatalf("defaults: %+v", r)
	}
}

func TestThresholds(t *testing.T) {
	tests := []struct {
		name       string
		fail, succ int
		runs       string // s = success, f = failure
		want       string // status after each run: u, o, f
	}{
		{"defaults", 0, 0, "sfsf", "ofof"},
		{"first failure", 0, 0, "f", "f"},
		{"failure threshold 3", 3, 1, "sffsfff", "oooooof"},
		{"unknown until failure threshold", 2, 1, "ff", "uf"},
		{"success threshold 2", 1, 2, "sfssfss", "uffoffo"},
		{"success resets failures", 2, 1, "sfsfsff", "oooooof"},
		{"both", 2, 2, "ffssffss", "uffooffo"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t)
			m.MustRegister(Check{Name: "c", Run: ok, FailureThreshold: tc.fail, SuccessThreshold: tc.succ})
			e := entryOf(t, m, "c")
			var got strings.Builder
			for _, run := range tc.runs {
				var err error
				if run == 'f' {
					err = errBoom
				}
				clk.Step(time.Second)
				e.record(clk.Now(), time.Millisecond, err)
				r, _ := m.Result("c")
				got.WriteByte(string(r.Status)[0])
			}
			if got.String() != tc.want {
				t.Fatalf("statuses %s, want %s", got.String(), tc.want)
			}
		})
	}
}

func TestResultFields(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "c", Run: ok, FailureThreshold: 2})
	e := entryOf(t, m, "c")
	e.record(clk.Now(), 3*time.Millisecond, nil)
	clk.Step(time.Second)
	e.record(clk.Now(), 4*time.Millisecond, errBoom)
	r, _ := m.Result("c")
	if r.Status != StatusOK || r.Err != nil || r.ConsecutiveFailures != 1 || r.ConsecutiveSuccesses != 0 ||
		!r.LastSuccess.Equal(t0) || !r.LastFailure.Equal(t0.Add(time.Second)) || r.Duration != 4*time.Millisecond ||
		r.Kind != KindCheck || r.Name != "c" {
		t.Fatalf("result %+v", r)
	}
	e.record(clk.Now(), 4*time.Millisecond, errBoom)
	r, _ = m.Result("c")
	if r.Status != StatusFailed || !errors.Is(r.Err, errBoom) || r.ConsecutiveFailures != 2 {
		t.Fatalf("result %+v", r)
	}
	e.record(clk.Now(), time.Millisecond, nil)
	r, _ = m.Result("c")
	if r.Status != StatusOK || r.Err != nil || !errors.Is(r.LastErr, errBoom) {
		t.Fatalf("after recovery: %+v", r)
	}
}

func TestStaleness(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "c", Run: ok, Interval: 10 * time.Second, Timeout: 2 * time.Second, Probes: AllProbes})
	e := entryOf(t, m, "c")
	e.record(clk.Now(), 0, nil)
	if !m.Evaluate(Readiness).Healthy {
		t.Fatal("fresh result not healthy")
	}
	clk.Step(12 * time.Second)
	if r, _ := m.Result("c"); r.Stale || r.Status != StatusOK {
		t.Fatalf("at interval+timeout: %+v", r)
	}
	clk.Step(time.Nanosecond)
	r, _ := m.Result("c")
	if !r.Stale || r.Status != StatusFailed || !errors.Is(r.Err, ErrStale) {
		t.Fatalf("after interval+timeout: %+v", r)
	}
	for _, p := range []Probe{Liveness, Readiness, Startup} {
		if m.Evaluate(p).Healthy {
			t.Fatalf("%s healthy with a stale result", p)
		}
	}
	e.record(clk.Now(), 0, nil)
	if r, _ := m.Result("c"); r.Stale || r.Status != StatusOK {
		t.Fatalf("after a new result: %+v", r)
	}
}

func TestStartPeriod(t *testing.T) {
	tests := []struct {
		name      string
		start     time.Duration
		result    error // nil: no result; errBoom: failing
		step      time.Duration
		live, rdy bool
	}{
		{"unknown within start period", 10 * time.Second, nil, 5 * time.Second, true, false},
		{"unknown after start period, first result due", 10 * time.Second, nil, 11 * time.Second, true, false},
		{"unknown, first result overdue", 10 * time.Second, nil, 10*time.Second + 2*time.Hour + time.Second, false, false},
		{"unknown without start period", 0, nil, time.Second, true, false},
		{"unknown without start period, overdue", 0, nil, 2*time.Hour + time.Second, false, false},
		{"failing within start period", 10 * time.Second, errBoom, 5 * time.Second, true, false},
		{"failing after start period", 10 * time.Second, errBoom, 11 * time.Second, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t)
			release := make(chan struct{})
			defer close(release)
			run := func(ctx context.Context) error {
				if tc.result != nil {
					return tc.result
				}
				select {
				case <-ctx.Done():
				case <-release:
				}
				return ctx.Err()
			}
			m.MustRegister(Check{Name: "c", Run: run, Probes: AllProbes, Interval: time.Hour, Timeout: time.Hour,
				StartPeriod: tc.start})
			m.Start(context.Background())
			if tc.result != nil {
				drive(t, clk, 10*time.Millisecond, func() bool { r, _ := m.Result("c"); return r.Status == StatusFailed })
			}
			clk.SetTime(t0.Add(tc.step))
			if got := m.Evaluate(Liveness).Healthy; got != tc.live {
				t.Errorf("liveness healthy = %v, want %v", got, tc.live)
			}
			if got := m.Evaluate(Startup).Healthy; got != tc.live {
				t.Errorf("startup healthy = %v, want %v", got, tc.live)
			}
			if got := m.Evaluate(Readiness).Healthy; got != tc.rdy {
				t.Errorf("readiness healthy = %v, want %v", got, tc.rdy)
			}
		})
	}
}

func TestRunnerPanicAndSuccess(t *testing.T) {
	m, clk := newTest(t)
	var calls atomic.Int32
	m.MustRegister(
		Check{Name: "panics", Run: func(context.Context) error { panic("kaboom") }, Interval: time.Second},
		Check{Name: "passes", Run: func(context.Context) error { calls.Add(1); return nil }, Interval: time.Second},
	)
	m.Start(context.Background())
	drive(t, clk, 100*time.Millisecond, func() bool {
		r, _ := m.Result("panics")
		return r.Status == StatusFailed && calls.Load() >= 3
	})
	r, _ := m.Result("panics")
	if !errors.Is(r.Err, ErrPanic) || !strings.Contains(r.Err.Error(), "kaboom") {
		t.Fatalf("panic result: %v", r.Err)
	}
	if r, _ := m.Result("passes"); r.Status != StatusOK {
		t.Fatalf("passing check: %+v", r)
	}
	m.Stop()
	n := calls.Load()
	clk.Step(time.Hour)
	if calls.Load() != n {
		t.Fatal("check ran after Stop")
	}
}

func TestRunnerTimeout(t *testing.T) {
	tests := []struct {
		name      string
		honourCtx bool
	}{
		{"honours context", true},
		{"ignores context", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t)
			release := make(chan struct{})
			var mu sync.Mutex
			var inflight, maxInflight int
			run := func(ctx context.Context) error {
				mu.Lock()
				inflight++
				maxInflight = max(maxInflight, inflight)
				mu.Unlock()
				defer func() { mu.Lock(); inflight--; mu.Unlock() }()
				if tc.honourCtx {
					select {
					case <-ctx.Done():
						return ctx.Err()
					case <-release:
						return nil
					}
				}
				<-release
				return nil
			}
			m.MustRegister(Check{Name: "slow", Run: run, Interval: time.Second, Timeout: 500 * time.Millisecond})
			m.Start(context.Background())
			drive(t, clk, 100*time.Millisecond, func() bool {
				r, _ := m.Result("slow")
				return r.Status == StatusFailed && errors.Is(r.Err, ErrTimeout)
			})
			if !tc.honourCtx {
				// The orphan still runs: the next run is not started but recorded as failing.
				drive(t, clk, 100*time.Millisecond, func() bool {
					r, _ := m.Result("slow")
					return errors.Is(r.Err, ErrStillRunning)
				})
				mu.Lock()
				if maxInflight != 1 {
					t.Errorf("%d runs at once, want 1", maxInflight)
				}
				mu.Unlock()
			}
			close(release)
			drive(t, clk, 100*time.Millisecond, func() bool {
				r, _ := m.Result("slow")
				return r.Status == StatusOK
			})
			m.Stop()
			eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return inflight == 0 })
			goleak.VerifyNone(t)
		})
	}
}

func TestRegisterAfterStartRuns(t *testing.T) {
	m, clk := newTest(t)
	m.Start(context.Background())
	m.MustRegister(Check{Name: "late", Run: ok, Interval: time.Second})
	drive(t, clk, 100*time.Millisecond, func() bool { r, _ := m.Result("late"); return r.Status == StatusOK })
}

func TestStopWithContext(t *testing.T) {
	m, clk := newTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	m.MustRegister(Check{Name: "c", Run: ok, Interval: time.Second})
	m.Start(ctx)
	drive(t, clk, 100*time.Millisecond, func() bool { r, _ := m.Result("c"); return r.Status == StatusOK })
	cancel()
	m.Stop()
	m.Stop() // idempotent
}

// TestFailureThresholdLiveness: below its failure threshold a check fails readiness (not ready until
// proven) but not liveness; the threshold-th real failure fails both.
func TestFailureThresholdLiveness(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "c", Run: ok, Probes: Liveness | Readiness, Interval: time.Minute, FailureThreshold: 3})
	e := entryOf(t, m, "c")
	for i := 1; i <= 3; i++ {
		e.record(clk.Now(), 0, errBoom)
		live, ready := m.Evaluate(Liveness).Healthy, m.Evaluate(Readiness).Healthy
		if want := i < 3; live != want || ready {
			t.Fatalf("after %d failures: live %v ready %v, want live %v ready false", i, live, ready, want)
		}
	}
	status, _, body := get(m.Handler(HandlerOptions{Details: true}), http.MethodGet, "/livez?verbose")
	if status != 500 || !strings.Contains(body, "[-]c failed: boom") {
		t.Fatalf("livez after the threshold: %d %q", status, body)
	}
}

// TestLagGrace: a stale result whose staleness the process's own scheduling delay explains does not
// fail liveness (up to the measured delay, capped), and always fails readiness.
func TestLagGrace(t *testing.T) {
	tests := []struct {
		name      string
		late      time.Duration // the lag meter's last tick was this late
		pending   time.Duration // and its next tick is overdue by this much
		past      time.Duration // how far past interval+timeout the result is
		live      bool
		graceFrom string
	}{
		{"no lag", 0, 0, time.Second, false, ""},
		{"lag explains it", 500 * time.Millisecond, 0, time.Second, true, "scheduling delay 2s"}, // lagHops × 500ms
		{"lag too short", time.Second, 0, 5 * time.Second, false, ""},
		{"starved right now", 0, time.Second, 2 * time.Second, true, "scheduling delay 4s"},
		{"capped", time.Minute, 0, 15 * time.Second, false, ""},
		{"within the cap", time.Minute, 0, 9 * time.Second, true, "scheduling delay 10s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t, WithLagGrace(10*time.Second))
			m.MustRegister(Check{Name: "c", Run: ok, Probes: Liveness | Readiness, Interval: 10 * time.Second, Timeout: 2 * time.Second})
			e := entryOf(t, m, "c")
			e.record(clk.Now(), 0, nil)
			clk.Step(12*time.Second + tc.past)
			// The meter's last tick fired pending (+ one period) ago, late by late.
			m.lag.observe(clk.Now().Add(-tc.pending-lagTick), tc.late)
			m.changed()
			rep := m.Evaluate(Liveness)
			if rep.Healthy != tc.live {
				t.Fatalf("liveness healthy = %v, want %v (%+v)", rep.Healthy, tc.live, rep.Results)
			}
			if m.Evaluate(Readiness).Healthy {
				t.Fatal("readiness healthy with a stale result")
			}
			if tc.graceFrom != "" {
				_, _, body := get(m.Handler(HandlerOptions{Details: true}), http.MethodGet, "/livez?verbose")
				if !strings.Contains(body, "("+tc.graceFrom+": ") {
					t.Fatalf("livez body %q does not say %q", body, tc.graceFrom)
				}
			}
		})
	}
}

// TestLagMeterReal runs the meter on the real clock: on an idle process it measures little.
func TestLagMeterReal(t *testing.T) {
	l := &lagMeter{clock: clock.RealClock{}, max: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.run(ctx) }()
	eventually(t, func() bool { return l.worstAt.Load() != 0 })
	cancel()
	<-done
	if g := l.grace(time.Unix(0, l.last.Load())); g < 0 || g >= time.Hour {
		t.Fatalf("grace %s", g)
	}
}

// TestLagExplainsTimeouts: runs that fail on their deadline while the process runs late do not fail
// liveness for up to the lag grace's cap from the first of them; readiness fails at once, and any
// other failure counts at once.
func TestLagExplainsTimeouts(t *testing.T) {
	timeout := fmt.Errorf("%w after 2s", ErrTimeout)
	tests := []struct {
		name string
		errs []error
		step time.Duration // between failures
		live bool
	}{
		{"one timeout, late", []error{timeout}, 0, true},
		{"timeouts within the cap", []error{timeout, context.DeadlineExceeded, timeout}, 4 * time.Second, true},
		{"timeouts past the cap", []error{timeout, timeout, timeout}, 6 * time.Second, false},
		{"another failure", []error{timeout, errBoom}, time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t, WithLagGrace(10*time.Second))
			m.MustRegister(Check{Name: "c", Run: ok, Probes: Liveness | Readiness, Interval: 10 * time.Second, Timeout: 2 * time.Second})
			e := entryOf(t, m, "c")
			for i, err := range tc.errs {
				if i > 0 {
					clk.Step(tc.step)
				}
				m.lag.observe(clk.Now(), time.Second) // a timer a second late: the process is starved
				e.record(clk.Now(), 2*time.Second, err)
			}
			if got := m.Evaluate(Liveness).Healthy; got != tc.live {
				t.Fatalf("liveness healthy = %v, want %v (%+v)", got, tc.live, m.Evaluate(Liveness).Results)
			}
			if m.Evaluate(Readiness).Healthy {
				t.Fatal("readiness healthy after a failure")
			}
		})
	}
	t.Run("on time", func(t *testing.T) {
		m, clk := newTest(t, WithLagGrace(10*time.Second))
		m.MustRegister(Check{Name: "c", Run: ok, Probes: Liveness, Interval: 10 * time.Second, Timeout: 2 * time.Second})
		m.lag.observe(clk.Now(), 10*time.Millisecond)
		entryOf(t, m, "c").record(clk.Now(), 2*time.Second, timeout)
		if m.Evaluate(Liveness).Healthy {
			t.Fatal("a timeout with the process on time passed liveness")
		}
	})
}
