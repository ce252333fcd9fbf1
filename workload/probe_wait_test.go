package workload

import (
	"errors"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/base/backoff"
)

// TestProbeWait: a healthy cluster is probed every interval (lengthened by the draw, at most a tenth);
// after failures the waits double up to four intervals (lengthened by at most half); a success
// starts again.
func TestProbeWait(t *testing.T) {
	down := errors.New("connection refused")
	const iv = 10 * time.Second
	tests := []struct {
		name    string
		draw    float64
		results []error
		want    []time.Duration
	}{
		{"healthy", 0.5, []error{nil, nil}, []time.Duration{10500 * time.Millisecond, 10500 * time.Millisecond}},
		{"outage backs off to the cap", 0, []error{down, down, down, down, down},
			[]time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 40 * time.Second, 40 * time.Second}},
		{"outage with jitter", 0.5, []error{down, down}, []time.Duration{12500 * time.Millisecond, 25 * time.Second}},
		{"recovery starts again", 0, []error{down, down, nil, down}, []time.Duration{10 * time.Second, 20 * time.Second, 10 * time.Second, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := func() float64 { return tt.draw }
			bo := backoff.New(ProbeBackoff(iv), r)
			for i, err := range tt.results {
				if got := probeWait(bo, iv, r, err); got != tt.want[i] {
					t.Fatalf("wait after probe %d (%v) = %v, want %v", i, err, got, tt.want[i])
				}
			}
		})
	}
}
