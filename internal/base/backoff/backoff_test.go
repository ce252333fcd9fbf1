package backoff

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

// seq returns the values in turn, then the last one again.
func seq(vs ...float64) Rand {
	i := 0
	return func() float64 {
		v := vs[min(i, len(vs)-1)]
		i++
		return v
	}
}

func TestBackoffNext(t *testing.T) {
	agentLike := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: 16, Cap: 10 * time.Second}
	tests := []struct {
		name   string
		policy wait.Backoff
		rand   Rand
		reset  int // Reset before this call (0: never)
		want   []time.Duration
	}{
		{"no jitter doubles to the cap and holds", wait.Backoff{Duration: time.Second, Factor: 2, Steps: 16, Cap: 5 * time.Second}, seq(0.9),
			0, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"jitter of zero draws", agentLike, seq(0),
			0, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"jitter lengthens each step, the cap included", agentLike, seq(0.75),
			0, []time.Duration{1375 * time.Millisecond, 2750 * time.Millisecond, 5500 * time.Millisecond, 11 * time.Second, 13750 * time.Millisecond, 13750 * time.Millisecond}},
		{"draws differ per step", agentLike, seq(0.5, 0, 0.25),
			0, []time.Duration{1250 * time.Millisecond, 2 * time.Second, 4500 * time.Millisecond}},
		{"steps run out before the cap: held at the last", wait.Backoff{Duration: time.Second, Factor: 3, Steps: 2, Cap: time.Hour}, seq(0),
			0, []time.Duration{1 * time.Second, 3 * time.Second, 9 * time.Second, 9 * time.Second}},
		{"reset starts again", agentLike, seq(0),
			3, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 1 * time.Second, 2 * time.Second}},
		{"factor 1 is a constant period with jitter", wait.Backoff{Duration: time.Second, Factor: 1, Jitter: 0.1, Steps: 5}, seq(0.5),
			0, []time.Duration{1050 * time.Millisecond, 1050 * time.Millisecond, 1050 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.policy, tt.rand)
			for i, want := range tt.want {
				if tt.reset > 0 && i == tt.reset {
					b.Reset()
				}
				if got := b.Next(); got != want {
					t.Fatalf("wait %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestJitter(t *testing.T) {
	tests := []struct {
		d      time.Duration
		factor float64
		r      float64
		want   time.Duration
	}{
		{time.Second, 0, 0.9, time.Second},
		{time.Second, -1, 0.9, time.Second},
		{time.Second, 0.5, 0, time.Second},
		{time.Second, 0.5, 0.5, 1250 * time.Millisecond},
		{time.Second, 1, 0.5, 1500 * time.Millisecond},
		{0, 1, 0.5, 0},
	}
	for _, tt := range tests {
		if got := Jitter(tt.d, tt.factor, seq(tt.r)); got != tt.want {
			t.Errorf("Jitter(%v, %v) with draw %v = %v, want %v", tt.d, tt.factor, tt.r, got, tt.want)
		}
	}
	// The default source stays within [d, d×(1+factor)).
	for range 100 {
		if got := Jitter(time.Second, 0.5, nil); got < time.Second || got >= 1500*time.Millisecond {
			t.Fatalf("Jitter(1s, 0.5) = %v, outside [1s, 1.5s)", got)
		}
	}
}

func TestSleep(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		d       time.Duration
		advance time.Duration // fake time passed while waiting
		cancel  bool          // the context ends while waiting
		want    bool
	}{
		{"runs to its end", context.Background(), time.Second, time.Second, false, true},
		{"zero wait", context.Background(), 0, 0, false, true},
		{"context already ended", canceled, time.Second, 0, false, false},
		{"context ends while waiting", context.Background(), time.Hour, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			ctx, cancel := context.WithCancel(tt.ctx)
			defer cancel()
			done := make(chan bool)
			go func() { done <- Sleep(ctx, clk, tt.d) }()
			if tt.d > 0 && tt.ctx.Err() == nil {
				for !clk.HasWaiters() {
					time.Sleep(time.Millisecond)
				}
			}
			if tt.cancel {
				cancel()
			}
			clk.Step(tt.advance)
			if got := <-done; got != tt.want {
				t.Fatalf("Sleep = %v, want %v", got, tt.want)
			}
		})
	}
}
