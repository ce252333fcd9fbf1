package agent

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/internal/base/backoff"
)

// DefaultAPIBackoff is the backoff of every agent loop that retries a request to the Kubernetes API
// after a failure: 1s, doubling up to 2 minutes, each wait up to half as long again at random, so that
// the agents of every node spread their retries after an API outage instead of retrying in step.
func DefaultAPIBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: 16, Cap: 2 * time.Minute}
}

// retrier spaces the attempts of a loop that runs on a ticker: after a failure the next attempt is due
// after the backoff's next step; a success resets it.
type retrier struct {
	b      *backoff.Backoff
	next   time.Time
	failed bool
}

// newRetrier spaces attempts by b (zero: DefaultAPIBackoff), its jitter drawn from r (nil: math/rand).
func newRetrier(b wait.Backoff, r backoff.Rand) *retrier {
	if b.Duration <= 0 {
		b = DefaultAPIBackoff()
	}
	return &retrier{b: backoff.New(b, r)}
}

// due reports whether an attempt may be made at now.
func (r *retrier) due(now time.Time) bool { return !r.failed || !now.Before(r.next) }

// fail records a failed attempt at now and returns the wait before the next one.
func (r *retrier) fail(now time.Time) time.Duration {
	d := r.b.Next()
	r.failed, r.next = true, now.Add(d)
	return d
}

// ok records a successful attempt.
func (r *retrier) ok() {
	r.failed = false
	r.b.Reset()
}

// backoffWatcher opens watches for client-go's RetryWatcher, waiting out a backoff after each failed
// attempt: the RetryWatcher itself retries a failed watch every second, which during an API outage is
// one request per second from every node.
type backoffWatcher struct {
	watch func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	clock clock.WithTicker

	mu sync.Mutex
	r  *retrier
}

func (w *backoffWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w.mu.Lock()
	wait := time.Duration(0)
	if now := w.clock.Now(); !w.r.due(now) {
		wait = w.r.next.Sub(now)
	}
	w.mu.Unlock()
	if wait > 0 {
		t := w.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C():
		}
	}
	wi, err := w.watch(ctx, opts)
	w.mu.Lock()
	if err != nil {
		w.r.fail(w.clock.Now())
	} else {
		w.r.ok()
	}
	w.mu.Unlock()
	return wi, err
}
