package openstack

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// coalescer runs a check at most once per interval; calls in between, and calls that arrive while
// a run is under way, get the last result.
type coalescer struct {
	clock    clock.PassiveClock
	interval time.Duration
	sem      chan struct{}
	ran      bool
	last     time.Time
	lastErr  error
}

func newCoalescer(c clock.PassiveClock, interval time.Duration) *coalescer {
	if c == nil {
		c = clock.RealClock{}
	}
	return &coalescer{clock: c, interval: interval, sem: make(chan struct{}, 1)}
}

func (c *coalescer) do(ctx context.Context, f func(context.Context) error) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	if c.ran && c.clock.Since(c.last) < c.interval {
		return c.lastErr
	}
	err := f(ctx)
	c.ran, c.last, c.lastErr = true, c.clock.Now(), err
	return err
}
