package health

import (
	"context"
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestCoalescer(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		steps    []time.Duration // clock advance before each call
		results  []error         // what the body returns on each of its runs
		wantRuns int
		wantLast error
	}{
		{name: "first call runs", steps: []time.Duration{0}, results: []error{nil}, wantRuns: 1},
		{name: "within interval reuses", steps: []time.Duration{0, time.Second, time.Second}, results: []error{boom}, wantRuns: 1, wantLast: boom},
		{name: "after interval runs again", steps: []time.Duration{0, 5 * time.Second}, results: []error{boom, nil}, wantRuns: 2},
		{name: "exactly at interval runs again", steps: []time.Duration{0, 5 * time.Second, 4 * time.Second}, results: []error{nil, boom}, wantRuns: 2, wantLast: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			c := NewCoalescer(clk, 5*time.Second)
			runs := 0
			var last error
			for _, d := range tt.steps {
				clk.SetTime(clk.Now().Add(d))
				last = c.Do(context.Background(), func(context.Context) error {
					err := tt.results[runs]
					runs++
					return err
				})
			}
			if runs != tt.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tt.wantRuns)
			}
			if !errors.Is(last, tt.wantLast) {
				t.Errorf("last = %v, want %v", last, tt.wantLast)
			}
		})
	}
}

func TestCoalescerCancelledWhileBusy(t *testing.T) {
	c := NewCoalescer(nil, time.Second)
	c.sem <- struct{}{} // a run is under way
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Do(ctx, func(context.Context) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
}
