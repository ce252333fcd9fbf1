package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var errBoom = errors.New("boom")

// newTest returns a manager on a fake clock that logs nowhere.
func newTest(t testing.TB, opts ...Option) (*Manager, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	base := []Option{
		WithClock(clk),
		WithRand(rand.New(rand.NewPCG(1, 2))),
		WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
	m := NewManager(append(base, opts...)...)
	t.Cleanup(m.Stop)
	return m, clk
}

// ok is a check function that passes.
func ok(context.Context) error { return nil }

// entryOf returns a registered check's entry, for tests that feed results without the runner.
func entryOf(t testing.TB, m *Manager, name string) *checkEntry {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if c, isCheck := e.(*checkEntry); isCheck && c.name == name {
			return c
		}
	}
	t.Fatalf("no check %q", name)
	return nil
}

// drive advances the fake clock by step while cond is false, waiting for the manager's goroutines
// in between. The real-time limit only prevents a hang.
func drive(t *testing.T, clk *testingclock.FakeClock, step time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached; fake time %s", clk.Now().Sub(t0))
		}
		time.Sleep(time.Millisecond)
		if cond() {
			return
		}
		clk.Step(step)
	}
}

// eventually waits (in real time, without moving the fake clock) for cond.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
