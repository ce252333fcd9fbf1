package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestComponent(t *testing.T) {
	type step struct {
		do   string // beat, fail, recover, wait:<duration>
		want Status
	}
	tests := []struct {
		name  string
		opts  ComponentOptions
		steps []step
		why   error // reason at the end, if failed
	}{
		{"alive at start", ComponentOptions{Deadline: 10 * time.Second}, []step{{"", StatusOK}}, nil},
		{"deadline met", ComponentOptions{Deadline: 10 * time.Second},
			[]step{{"wait:10s", StatusOK}, {"beat", StatusOK}, {"wait:10s", StatusOK}}, nil},
		{"deadline missed", ComponentOptions{Deadline: 10 * time.Second},
			[]step{{"wait:10s", StatusOK}, {"wait:1ns", StatusFailed}}, ErrMissedDeadline},
		{"beat revives", ComponentOptions{Deadline: 10 * time.Second},
			[]step{{"wait:11s", StatusFailed}, {"beat", StatusOK}}, nil},
		{"latched deadline", ComponentOptions{Deadline: 10 * time.Second, Latch: true},
			[]step{{"wait:11s", StatusFailed}, {"beat", StatusFailed}, {"recover", StatusFailed}}, ErrMissedDeadline},
		{"latched deadline noticed by beat", ComponentOptions{Deadline: 10 * time.Second, Latch: true},
			[]step{{"quietwait:11s", StatusFailed}}, ErrMissedDeadline},
		{"no deadline", ComponentOptions{}, []step{{"wait:1000h", StatusOK}}, nil},
		{"fail and recover", ComponentOptions{},
			[]step{{"fail", StatusFailed}, {"beat", StatusFailed}, {"recover", StatusOK}}, nil},
		{"latched fail", ComponentOptions{Latch: true},
			[]step{{"fail", StatusFailed}, {"recover", StatusFailed}, {"beat", StatusFailed}}, errBoom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t)
			c, err := m.Component("loop", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				switch {
				case s.do == "beat":
					c.Beat()
				case s.do == "fail":
					c.Fail(errBoom)
				case s.do == "recover":
					c.Recover()
				case strings.HasPrefix(s.do, "wait:"):
					d, _ := time.ParseDuration(strings.TrimPrefix(s.do, "wait:"))
					clk.Step(d)
				case strings.HasPrefix(s.do, "quietwait:"):
					// The deadline passes without any evaluation; the next beat notices it.
					d, _ := time.ParseDuration(strings.TrimPrefix(s.do, "quietwait:"))
					clk.Step(d)
					c.Beat()
				}
				r, _ := m.Result("loop")
				if r.Status != s.want {
					t.Fatalf("step %d (%s): status %s, want %s (%v)", i, s.do, r.Status, s.want, r.Err)
				}
			}
			r, _ := m.Result("loop")
			if tc.why != nil && !errors.Is(r.Err, tc.why) {
				t.Fatalf("reason %v, want %v", r.Err, tc.why)
			}
			if r.Kind != KindComponent || r.Probes != Liveness {
				t.Fatalf("result %+v", r)
			}
			if want := r.Status != StatusOK; m.Evaluate(Liveness).Healthy == want {
				t.Fatalf("liveness healthy with status %s", r.Status)
			}
			if !m.Evaluate(Readiness).Healthy {
				t.Fatal("a liveness component fails readiness")
			}
		})
	}
}

func TestComponentValidation(t *testing.T) {
	m, _ := newTest(t)
	if _, err := m.Component("bad name", ComponentOptions{}); err == nil {
		t.Fatal("bad name accepted")
	}
	if _, err := m.Component("c", ComponentOptions{Deadline: -1}); err == nil {
		t.Fatal("negative deadline accepted")
	}
}

func TestBudget(t *testing.T) {
	type step struct {
		do    string // f = failure, s = success, w = wait 10s
		count int
		want  Status
	}
	win := BudgetOptions{Mode: Window, Limit: 3, Window: 30 * time.Second}
	con := BudgetOptions{Mode: Consecutive, Limit: 3}
	tests := []struct {
		name  string
		opts  BudgetOptions
		steps []step
	}{
		{"window trips", win, []step{{"f", 1, StatusOK}, {"f", 2, StatusOK}, {"f", 3, StatusFailed}}},
		{"window success does not reset", win, []step{{"f", 1, StatusOK}, {"f", 2, StatusOK}, {"s", 2, StatusOK}, {"f", 3, StatusFailed}}},
		{"window expires", win, []step{
			{"f", 1, StatusOK}, {"w", 1, StatusOK}, {"f", 2, StatusOK}, {"w", 2, StatusOK}, {"f", 3, StatusFailed},
			{"w", 2, StatusOK}, // the first failure left the window
			{"w", 1, StatusOK}, {"w", 0, StatusOK},
		}},
		{"consecutive trips", con, []step{{"f", 1, StatusOK}, {"f", 2, StatusOK}, {"f", 3, StatusFailed}, {"w", 3, StatusFailed}}},
		{"consecutive reset", con, []step{{"f", 1, StatusOK}, {"f", 2, StatusOK}, {"s", 0, StatusOK}, {"f", 1, StatusOK},
			{"f", 2, StatusOK}, {"f", 3, StatusFailed}, {"s", 0, StatusOK}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTest(t)
			b, err := m.Budget("cni-add", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				switch s.do {
				case "f":
					b.Failure(errBoom)
				case "s":
					b.Success()
				case "w":
					clk.Step(10 * time.Second)
				}
				r, _ := m.Result("cni-add")
				if r.Status != s.want || r.Count != s.count || b.Count() != s.count {
					t.Fatalf("step %d (%s): status %s count %d/%d, want %s %d", i, s.do, r.Status, r.Count, b.Count(), s.want, s.count)
				}
				if r.Status == StatusFailed && (!errors.Is(r.Err, ErrBudgetExhausted) || !errors.Is(r.Err, errBoom)) {
					t.Fatalf("step %d: reason %v", i, r.Err)
				}
				if m.Evaluate(Liveness).Healthy != (s.want == StatusOK) {
					t.Fatalf("step %d: liveness disagrees with %s", i, s.want)
				}
			}
		})
	}
}

func TestBudgetValidation(t *testing.T) {
	m, _ := newTest(t)
	for _, o := range []BudgetOptions{{Limit: 0, Window: time.Second}, {Limit: 1}, {Mode: 9, Limit: 1}} {
		if _, err := m.Budget("b", o); err == nil {
			t.Fatalf("%+v accepted", o)
		}
	}
}

func TestDrain(t *testing.T) {
	m, clk := newTest(t, WithDrainDelay(5*time.Second))
	m.MustRegister(Check{Name: "c", Run: ok, Probes: AllProbes, Interval: time.Hour})
	entryOf(t, m, "c").record(clk.Now(), 0, nil)
	comp, _ := m.Component("loop", ComponentOptions{})
	if !m.Evaluate(Readiness).Healthy || !m.Evaluate(Liveness).Healthy {
		t.Fatal("not healthy before drain")
	}
	done := m.Drain()
	rep := m.Evaluate(Readiness)
	if rep.Healthy || !rep.Draining {
		t.Fatalf("readiness while draining: %+v", rep)
	}
	if !m.Evaluate(Readiness, DrainName).Healthy {
		t.Fatal("readiness excluding the drain failed")
	}
	// Liveness holds during the delay, even when a component fails (shutting down).
	comp.Fail(errBoom)
	if !m.Evaluate(Liveness).Healthy {
		t.Fatal("liveness failed during the drain delay")
	}
	select {
	case <-done:
		t.Fatal("drain done before the delay")
	default:
	}
	if m.Drain() != done {
		t.Fatal("second Drain returned another channel")
	}
	eventually(t, clk.HasWaiters)
	clk.Step(5 * time.Second)
	<-done
	if m.Evaluate(Liveness).Healthy {
		t.Fatal("liveness still excused after the drain delay")
	}
	if !m.Draining() {
		t.Fatal("Draining() false")
	}
}

func TestListeners(t *testing.T) {
	var mu sync.Mutex
	var got []Transition
	m, clk := newTest(t, WithListener(func(tr Transition) { mu.Lock(); got = append(got, tr); mu.Unlock() }))
	c, _ := m.Component("loop", ComponentOptions{Deadline: 10 * time.Second})
	m.MustRegister(Check{Name: "chk", Run: ok, Interval: time.Hour})
	e := entryOf(t, m, "chk")
	clk.Step(3 * time.Second)
	c.Fail(errBoom)
	clk.Step(2 * time.Second)
	c.Recover()
	e.record(clk.Now(), time.Millisecond, nil)
	e.record(clk.Now(), time.Millisecond, errBoom)
	clk.Step(11 * time.Second) // component deadline missed, noticed on evaluation
	m.Results()
	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		name     string
		from, to Status
		since    time.Duration
	}{
		{"loop", StatusOK, StatusFailed, 3 * time.Second},
		{"loop", StatusFailed, StatusOK, 2 * time.Second},
		{"chk", StatusUnknown, StatusOK, 5 * time.Second},
		{"chk", StatusOK, StatusFailed, 0},
		{"loop", StatusOK, StatusFailed, 11 * time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d transitions: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.From != w.from || g.To != w.to || g.Since != w.since {
			t.Errorf("transition %d: %s %s->%s after %s, want %+v", i, g.Name, g.From, g.To, g.Since, w)
		}
	}
	if got[3].Result.ConsecutiveFailures != 1 || !errors.Is(got[3].Result.Err, errBoom) {
		t.Errorf("transition result %+v", got[3].Result)
	}
}

func TestWatcherNoticesDeadlines(t *testing.T) {
	trs := make(chan Transition, 10)
	m, clk := newTest(t, WithListener(func(tr Transition) { trs <- tr }))
	if _, err := m.Component("loop", ComponentOptions{Deadline: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	eventually(t, clk.HasWaiters)
	clk.Step(11 * time.Second)
	select {
	case tr := <-trs:
		if tr.To != StatusFailed {
			t.Fatalf("transition %+v", tr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no transition without a probe")
	}
}

func TestTransitionsLogged(t *testing.T) {
	var buf syncBuffer
	m, _ := newTest(t, WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	c, _ := m.Component("loop", ComponentOptions{})
	c.Fail(errBoom)
	c.Recover()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines: %q", lines)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["msg"] != "health status changed" || first["name"] != "loop" || first["to"] != "failed" ||
		first["reason"] != "boom" || first["level"] != "WARN" {
		t.Fatalf("log %v", first)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRealClockWatcher: on the real clock readers trust the published snapshot, and the watcher
// must rebuild it when a deadline passes.
func TestRealClockWatcher(t *testing.T) {
	m := NewManager(WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	c, err := m.Component("loop", ComponentOptions{Deadline: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	defer m.Stop()
	if !m.watched.Load() {
		t.Fatal("real-clock manager not watched")
	}
	h := m.Handler(HandlerOptions{})
	eventually(t, func() bool { status, _, _ := get(h, http.MethodGet, "/livez"); return status == 500 })
	c.Beat()
	if status, _, body := get(h, http.MethodGet, "/livez"); status != 200 {
		t.Fatalf("after a beat: %d %s", status, body)
	}
	m.Stop()
	if m.watched.Load() {
		t.Fatal("still watched after Stop")
	}
}
