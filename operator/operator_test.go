package operator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/openstack"
)

// cloudStep is fake time passed before a get, and the connection attempts counted after it.
type cloudStep struct {
	after time.Duration
	calls int32
}

// TestLazyCloudBacksOff: after a failed connection the next attempt waits out a jittered exponential
// backoff (10s doubling, lengthened by the injected draw), however often the cloud is asked for.
func TestLazyCloudBacksOff(t *testing.T) {
	tests := []struct {
		name  string
		draw  float64
		steps []cloudStep
	}{
		{"no jitter drawn", 0, []cloudStep{{0, 1}, {0, 1}, {9 * time.Second, 1}, {time.Second, 2}, {19 * time.Second, 2}, {time.Second, 3}, {40 * time.Second, 4}}},
		{"half the jitter drawn", 0.5, []cloudStep{{0, 1}, {10 * time.Second, 1}, {2500 * time.Millisecond, 2}, {25 * time.Second, 3}, {49 * time.Second, 3}, {time.Second, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
			var calls atomic.Int32
			fail := errors.New("keystone down")
			l := newLazyCloud(openstack.Auth{Source: "test"}, func(context.Context, openstack.Auth) (*openstack.Cloud, error) {
				calls.Add(1)
				return nil, fail
			}, clk, CloudRetryBackoff(10*time.Second), func() float64 { return tt.draw })
			defer l.stop()
			for i, st := range tt.steps {
				clk.Step(st.after)
				if _, err := l.get(context.Background()); !errors.Is(err, fail) {
					t.Fatalf("get %d: %v, want the connect error", i, err)
				}
				if n := calls.Load(); n != st.calls {
					t.Fatalf("after get %d: %d connection attempts, want %d", i, n, st.calls)
				}
			}
		})
	}
}

// TestLazyCloudStopEndsTheAttempt: stopping the operator cancels a connection attempt in flight and
// starts no new one.
func TestLazyCloudStopEndsTheAttempt(t *testing.T) {
	var calls atomic.Int32
	l := newLazyCloud(openstack.Auth{Source: "test"}, func(ctx context.Context, _ openstack.Auth) (*openstack.Cloud, error) {
		calls.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}, clocktesting.NewFakeClock(time.Now()), CloudRetryBackoff(time.Second), nil)
	done := make(chan error)
	go func() {
		_, err := l.get(context.Background())
		done <- err
	}()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	l.stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("get after stop: %v, want context.Canceled", err)
	}
	if _, err := l.get(context.Background()); err == nil || calls.Load() != 1 {
		t.Fatalf("get after stop: %v with %d attempts, want the last error and no new attempt", err, calls.Load())
	}
}

func TestLazyCloudSlowConnectDoesNotBlockPastCtx(t *testing.T) {
	release := make(chan struct{})
	l := newLazyCloud(openstack.Auth{Source: "test"}, func(ctx context.Context, _ openstack.Auth) (*openstack.Cloud, error) {
		<-release
		return nil, errors.New("late")
	}, clocktesting.NewFakeClock(time.Now()), CloudRetryBackoff(time.Second), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.get(ctx); err == nil {
		t.Fatal("want an error while authenticating")
	}
	close(release)
}
