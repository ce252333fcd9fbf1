package sharding_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/sharding"
)

// lock is a resource lock whose writes succeed unless fail is set (the elector's view of the API server).
type lock struct {
	id     string
	fail   error
	clock  *clocktesting.FakeClock
	during time.Duration // how long each write takes on the clock
}

func (l *lock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, errors.New("not used")
}
func (l *lock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Update(ctx, r)
}
func (l *lock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	l.clock.Step(l.during)
	return l.fail
}
func (l *lock) RecordEvent(string) {}
func (l *lock) Identity() string   { return l.id }
func (l *lock) Describe() string   { return "test/lock" }

// TestLeaderValidity: the leader's validity is the send time of its last successful acquisition or
// renewal plus the lease duration minus the margin; a failed renewal does not extend it; a release ends
// it before it is written.
func TestLeaderValidity(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	lk := &lock{id: "me", clock: clk, during: 300 * time.Millisecond}
	l, err := sharding.NewLeader(lk, 20*time.Second, 8*time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	ours := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	ctx := context.Background()
	check := func(step string, want time.Time, held bool) {
		t.Helper()
		got, ok := l.Validity("any")
		if ok != held || (held && !got.Equal(want)) {
			t.Fatalf("%s: validity %s (held %v), want %s (held %v)", step, got, ok, want, held)
		}
	}
	check("before any write", time.Time{}, false)
	if err := l.Create(ctx, ours); err != nil {
		t.Fatal(err)
	}
	check("acquired", t0.Add(12*time.Second), true) // from the send time, not the answer's
	clk.Step(2 * time.Second)
	sent := clk.Now()
	if err := l.Update(ctx, ours); err != nil {
		t.Fatal(err)
	}
	check("renewed", sent.Add(12*time.Second), true)
	lk.fail = errors.New("timeout")
	clk.Step(2 * time.Second)
	if err := l.Update(ctx, ours); err == nil {
		t.Fatal("the failed renewal succeeded")
	}
	check("a failed renewal", sent.Add(12*time.Second), true)
	lk.fail = nil
	if err := l.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	check("released", time.Time{}, false)
	if _, err := sharding.NewLeader(lk, 10*time.Second, 10*time.Second, clk); err == nil {
		t.Error("a margin as long as the lease was accepted")
	}
}
