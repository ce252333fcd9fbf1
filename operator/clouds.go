package operator

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// ConnectFunc connects to one cloud.
type ConnectFunc func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error)

// DefaultConnect connects with openstack.Connect, at most qps requests a second (burst), registering
// request metrics on reg.
func DefaultConnect(reg prometheus.Registerer, log *slog.Logger, qps float64, burst int) ConnectFunc {
	return func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error) {
		return openstack.Connect(ctx, openstack.Config{Auth: a, QPS: qps, Burst: burst, Registerer: reg, Logger: log})
	}
}

// CloudRetryBackoff spaces the operator's attempts to connect to its own cloud after a failure: from
// first (the check interval), doubling up to 2 minutes, each wait up to half as long again at random.
func CloudRetryBackoff(first time.Duration) wait.Backoff {
	return wait.Backoff{Duration: first, Factor: 2, Jitter: 0.5, Steps: 16, Cap: max(first, 2*time.Minute)}
}

// lazyCloud connects in the background, on first use and again after a failure (after a jittered
// exponential backoff), so that the operator starts, and reports not ready, while Keystone is down;
// and so that a check's short timeout never cuts an authentication that is merely slow. stop ends
// the attempt in flight.
type lazyCloud struct {
	auth    openstack.Auth
	connect ConnectFunc
	clock   clock.PassiveClock
	// timeout of one connection attempt (default 1m).
	timeout time.Duration

	ctx    context.Context // of the attempts; ended by stop
	cancel context.CancelFunc

	mu         sync.Mutex
	cloud      *openstack.Cloud
	err        error
	backoff    *backoff.Backoff
	next       time.Time     // no attempt before this (zero: at once)
	connecting chan struct{} // closed when the attempt in flight ends; nil when none
}

// newLazyCloud connects with auth through connect; after a failure it waits out b (its jitter drawn
// from r) before the next attempt.
func newLazyCloud(auth openstack.Auth, connect ConnectFunc, clk clock.PassiveClock, b wait.Backoff, r backoff.Rand) *lazyCloud {
	ctx, cancel := context.WithCancel(context.Background())
	return &lazyCloud{auth: auth, connect: connect, clock: clk, ctx: ctx, cancel: cancel, backoff: backoff.New(b, r)}
}

// stop ends the attempt in flight and refuses new ones.
func (l *lazyCloud) stop() { l.cancel() }

// get returns the cloud, or the reason there is none yet. It starts a connection attempt when none
// runs and the backoff after the last failure has passed, and waits for it at most until ctx ends.
func (l *lazyCloud) get(ctx context.Context) (*openstack.Cloud, error) {
	l.mu.Lock()
	if l.cloud != nil {
		l.mu.Unlock()
		return l.cloud, nil
	}
	if l.connecting == nil && l.ctx.Err() == nil && !l.clock.Now().Before(l.next) {
		done := make(chan struct{})
		l.connecting = done
		go l.attempt(done)
	}
	wait := l.connecting
	l.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to OpenStack (%s): still authenticating", l.auth.Source)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cloud != nil {
		return l.cloud, nil
	}
	if l.err == nil {
		return nil, fmt.Errorf("connect to OpenStack (%s): not connected yet", l.auth.Source)
	}
	return nil, l.err
}

func (l *lazyCloud) attempt(done chan struct{}) {
	timeout := l.timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	c, err := l.connect(ctx, l.auth)
	l.mu.Lock()
	if err != nil {
		l.err = fmt.Errorf("connect to OpenStack (%s): %w", l.auth.Source, err)
		l.next = l.clock.Now().Add(l.backoff.Next())
	} else {
		l.cloud, l.err = c, nil
	}
	l.connecting = nil
	l.mu.Unlock()
	close(done)
}

// operatorConnection is the operator's own connection, for the tenancy of clusters in trusted
// namespaces.
func (l *lazyCloud) connection(ctx context.Context) (tenancy.Connection, error) {
	c, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// tenantConnect connects with a cluster's own credentials, over the transport tenancy chose, at most
// qps requests a second (burst), registering request metrics on reg; every request names the replica in
// its User-Agent, so that the cloud's logs tell which replica acted.
func tenantConnect(reg prometheus.Registerer, log *slog.Logger, qps float64, burst int, userAgent string) tenancy.ConnectFunc {
	return func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (tenancy.Connection, error) {
		c, err := openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr, QPS: qps, Burst: burst, Registerer: reg, Logger: log, UserAgent: userAgent})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// DefaultKubeconfigKey is the key of a kubeconfig Secret.
const DefaultKubeconfigKey = "kubeconfig"
