package operator

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/internal/base/backoff"
)

// Requeue backoff of every controller after a failed reconcile (docs/operator.md, "Retries"):
// controller-runtime's default (per cluster, 5 ms doubling; 10 retries/s, burst 100, over all
// clusters) with each cluster's wait lengthened by up to half at random, so that clusters that
// failed together (an API or cloud outage) are not retried together, and capped lower.
const (
	RequeueBaseDelay = 5 * time.Millisecond
	RequeueMaxDelay  = 5 * time.Minute
	RequeueJitter    = 0.5
	RequeueQPS       = 10
	RequeueBurst     = 100
)

// requeueLimiter returns the rate limiter of one controller's queue, its jitter drawn from r (nil:
// math/rand).
func requeueLimiter(r backoff.Rand) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		&jittered[reconcile.Request]{
			TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](RequeueBaseDelay, RequeueMaxDelay),
			factor:           RequeueJitter, rand: r,
		},
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(RequeueQPS, RequeueBurst)},
	)
}

// jittered lengthens each wait of its limiter by up to factor of itself, at random.
type jittered[T comparable] struct {
	workqueue.TypedRateLimiter[T]
	factor float64
	rand   backoff.Rand
}

func (j *jittered[T]) When(item T) time.Duration {
	return backoff.Jitter(j.TypedRateLimiter.When(item), j.factor, j.rand)
}
