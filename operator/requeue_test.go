package operator

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRequeueLimiter: each cluster's failed reconciles are retried after 5 ms doubling up to the cap,
// lengthened by the injected draw; a success (Forget) starts again; clusters back off on their own.
func TestRequeueLimiter(t *testing.T) {
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}
	type call struct {
		forget bool // Forget the request instead of asking When
		req    reconcile.Request
		want   time.Duration
	}
	tests := []struct {
		name  string
		draw  float64
		calls []call
	}{
		{"no jitter drawn: doubling per cluster", 0, []call{
			{false, a, 5 * time.Millisecond}, {false, a, 10 * time.Millisecond}, {false, a, 20 * time.Millisecond},
			{false, b, 5 * time.Millisecond}, {false, a, 40 * time.Millisecond},
		}},
		{"half the jitter drawn", 0.5, []call{
			{false, a, 6250 * time.Microsecond}, {false, a, 12500 * time.Microsecond}, {false, b, 6250 * time.Microsecond},
		}},
		{"forget starts again", 0, []call{
			{false, a, 5 * time.Millisecond}, {false, a, 10 * time.Millisecond}, {true, a, 0}, {false, a, 5 * time.Millisecond},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rl := requeueLimiter(func() float64 { return tt.draw })
			for i, c := range tt.calls {
				if c.forget {
					rl.Forget(c.req)
					continue
				}
				if got := rl.When(c.req); got != c.want {
					t.Fatalf("call %d (%s): wait %v, want %v", i, c.req, got, c.want)
				}
			}
		})
	}
	// The wait is capped (then lengthened by at most the jitter).
	rl := requeueLimiter(func() float64 { return 0.999 })
	var last time.Duration
	for range 40 {
		last = rl.When(a)
	}
	if limit := time.Duration(float64(RequeueMaxDelay) * (1 + RequeueJitter)); last > limit || last < RequeueMaxDelay {
		t.Fatalf("wait after 40 failures: %v, want within [%v, %v]", last, RequeueMaxDelay, limit)
	}
}
