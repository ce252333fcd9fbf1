package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// Rand returns a number in [0, 1). Production code passes nil and gets math/rand/v2's Float64.
type Rand func() float64

func (r Rand) float() float64 {
	if r == nil {
		return rand.Float64()
	}
	return r()
}

// Jitter returns d lengthened by up to factor × d, at random from r: the same spread as wait.Jitter,
// from an injected source. A factor ≤ 0 leaves d as it is.
func Jitter(d time.Duration, factor float64, r Rand) time.Duration {
	if factor <= 0 {
		return d
	}
	return d + time.Duration(r.float()*factor*float64(d))
}

// Backoff walks the steps of Policy: each call to Next returns the next wait, Reset starts again from
// the first. The waits grow by Policy.Factor from Policy.Duration up to Policy.Cap and are then
// held there (never more than Cap × (1 + Jitter)); each is lengthened by up to Policy.Jitter of
// itself at random from Rand. A Backoff is not safe for concurrent use.
type Backoff struct {
	Policy wait.Backoff
	Rand   Rand

	cur     wait.Backoff
	started bool
}

// New returns a Backoff over p with its randomness from r (nil: math/rand/v2).
func New(p wait.Backoff, r Rand) *Backoff { return &Backoff{Policy: p, Rand: r} }

// Next returns the wait before the next attempt and advances the steps.
func (b *Backoff) Next() time.Duration {
	if !b.started {
		b.cur, b.started = b.Policy, true
		b.cur.Jitter = 0
	}
	return Jitter(b.cur.Step(), b.Policy.Jitter, b.Rand)
}

// Reset starts the steps again from Policy.Duration (after a success).
func (b *Backoff) Reset() { b.started = false }

// Wait waits out Next on clk, or until ctx ends; it reports whether the wait ran to its end.
func (b *Backoff) Wait(ctx context.Context, clk clock.Clock) bool {
	return Sleep(ctx, clk, b.Next())
}

// Sleep waits d on clk, or until ctx ends; it reports whether the wait ran to its end.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
