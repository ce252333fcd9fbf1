package openstack

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestOverQuota(t *testing.T) {
	tests := []struct {
		used, limit int
		threshold   float64
		want        string
	}{
		{used: 80, limit: 100, threshold: 0.8, want: ""},
		{used: 81, limit: 100, threshold: 0.8, want: "ports 81/100 (81% > 80%)"},
		{used: 5000, limit: -1, threshold: 0.8, want: ""},
		{used: 0, limit: 0, threshold: 0.8, want: ""},
		{used: 1, limit: 0, threshold: 0.8, want: "ports 1/0"},
		{used: 31, limit: 30, threshold: 1, want: "ports 31/30 (103% > 100%)"},
	}
	for _, tc := range tests {
		if got := overQuota("ports", tc.used, tc.limit, tc.threshold); got != tc.want {
			t.Errorf("overQuota(%d, %d, %v) = %q, want %q", tc.used, tc.limit, tc.threshold, got, tc.want)
		}
	}
}

func TestCoalescer(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	co := newCoalescer(clk, 10*time.Second)
	calls := 0
	fail := errors.New("down")
	f := func(context.Context) error {
		calls++
		if calls == 1 {
			return fail
		}
		return nil
	}
	ctx := context.Background()
	if err := co.do(ctx, f); !errors.Is(err, fail) || calls != 1 {
		t.Fatalf("first call: %v, %d calls", err, calls)
	}
	clk.SetTime(clk.Now().Add(9 * time.Second))
	if err := co.do(ctx, f); !errors.Is(err, fail) || calls != 1 {
		t.Fatalf("within the interval: %v, %d calls; want the cached failure and no call", err, calls)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if err := co.do(ctx, f); err != nil || calls != 2 {
		t.Fatalf("after the interval: %v, %d calls", err, calls)
	}
	// A caller whose context ends while another run holds the check gets its context's error.
	co.sem <- struct{}{}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := co.do(cctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	<-co.sem
}
