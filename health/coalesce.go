package health

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Coalescer runs a check body at most once per interval: calls in between, and calls that arrive
// while a run is under way, get the last result. Checks that ask a remote service (Keystone, the
// Kubernetes API) wrap their requests in one, so that however often they are called (by several
// managers, by tests, by a probe storm) the service sees at most one round of requests per interval.
type Coalescer struct {
	clock    clock.PassiveClock
	interval time.Duration
	sem      chan struct{}
	ran      bool
	last     time.Time
	lastErr  error
}

// NewCoalescer returns a Coalescer on the given clock (nil: the real one).
func NewCoalescer(c clock.PassiveClock, interval time.Duration) *Coalescer {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Coalescer{clock: c, interval: interval, sem: make(chan struct{}, 1)}
}

// Do runs f, or returns the result of the last run when it is younger than the interval.
func (c *Coalescer) Do(ctx context.Context, f Func) error {
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
