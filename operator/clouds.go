package operator

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// ConnectFunc connects to one cloud.
type ConnectFunc func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error)

// DefaultConnect connects with openstack.Connect, registering request metrics on reg.
func DefaultConnect(reg prometheus.Registerer, log *slog.Logger) ConnectFunc {
	return func(ctx context.Context, a openstack.Auth) (*openstack.Cloud, error) {
		return openstack.Connect(ctx, openstack.Config{Auth: a, Registerer: reg, Logger: log})
	}
}

// lazyCloud connects in the background, on first use and again after a failure (not more often
// than retry), so that the operator starts, and reports not ready, while Keystone is down; and so
// that a check's short timeout never cuts an authentication that is merely slow.
type lazyCloud struct {
	auth    openstack.Auth
	connect ConnectFunc
	clock   clock.PassiveClock
	retry   time.Duration
	// timeout of one connection attempt (default 1m).
	timeout time.Duration

	mu         sync.Mutex
	cloud      *openstack.Cloud
	err        error
	lastTry    time.Time
	connecting chan struct{} // closed when the attempt in flight ends; nil when none
}

// get returns the cloud, or the reason there is none yet. It starts a connection attempt when none
// runs and the last one is older than retry, and waits for it at most until ctx ends.
func (l *lazyCloud) get(ctx context.Context) (*openstack.Cloud, error) {
	l.mu.Lock()
	if l.cloud != nil {
		l.mu.Unlock()
		return l.cloud, nil
	}
	if l.connecting == nil && (l.lastTry.IsZero() || l.clock.Since(l.lastTry) >= l.retry) {
		l.lastTry = l.clock.Now()
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
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := l.connect(ctx, l.auth)
	l.mu.Lock()
	if err != nil {
		l.err = fmt.Errorf("connect to OpenStack (%s): %w", l.auth.Source, err)
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

// tenantConnect connects with a cluster's own credentials, over the transport tenancy chose,
// registering request metrics on reg.
func tenantConnect(reg prometheus.Registerer, log *slog.Logger) tenancy.ConnectFunc {
	return func(ctx context.Context, a openstack.Auth, tr http.RoundTripper) (tenancy.Connection, error) {
		c, err := openstack.Connect(ctx, openstack.Config{Auth: a, Transport: tr, Registerer: reg, Logger: log})
		if err != nil {
			return nil, err
		}
		return c, nil
	}
}

// DefaultKubeconfigKey is the key of a kubeconfig Secret.
const DefaultKubeconfigKey = "kubeconfig"
