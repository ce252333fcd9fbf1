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

func TestLazyCloudRetriesAfterFailureNotBefore(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var calls atomic.Int32
	fail := errors.New("keystone down")
	l := &lazyCloud{auth: openstack.Auth{Source: "test"}, clock: clk, retry: 10 * time.Second,
		connect: func(context.Context, openstack.Auth) (*openstack.Cloud, error) {
			calls.Add(1)
			return nil, fail
		}}
	ctx := context.Background()
	for i := range 3 {
		if _, err := l.get(ctx); !errors.Is(err, fail) {
			t.Fatalf("get %d: %v, want the connect error", i, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d connection attempts within the retry period, want 1", n)
	}
	clk.Step(10 * time.Second)
	_, _ = l.get(ctx)
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d connection attempts after the retry period, want 2", n)
	}
}

func TestLazyCloudSlowConnectDoesNotBlockPastCtx(t *testing.T) {
	release := make(chan struct{})
	l := &lazyCloud{auth: openstack.Auth{Source: "test"}, clock: clocktesting.NewFakeClock(time.Now()), retry: time.Second,
		connect: func(ctx context.Context, _ openstack.Auth) (*openstack.Cloud, error) {
			<-release
			return nil, errors.New("late")
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.get(ctx); err == nil {
		t.Fatal("want an error while authenticating")
	}
	close(release)
}
