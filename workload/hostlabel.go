package workload

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	clientmetrics "k8s.io/client-go/tools/metrics"
	// imported for its init: it installs client-go's metric adapters, which the init below wraps
	_ "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OtherHost is the host label of client-go's request metrics (rest_client_*) for every server but the
// operator's own kube-apiserver.
const OtherHost = "other"

// ownHosts holds the hosts (host:port, and the name alone, as the DNS metric names it) whose label
// client-go's request metrics keep.
var ownHosts sync.Map

// KeepHostLabel lets client-go's request metrics name the server of cfg, the operator's own
// kube-apiserver. Every other server, and so every workload cluster (its host comes from a tenant's
// kubeconfig Secret), is labelled OtherHost: client-go's metrics are process-wide and label each request
// with its host, and would carry a tenant's server name into the operator's /metrics.
func KeepHostLabel(cfg *rest.Config) error {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return fmt.Errorf("reading the server of the operator's configuration: %w", err)
	}
	ownHosts.Store(u.Host, struct{}{})
	ownHosts.Store(u.Hostname(), struct{}{})
	return nil
}

func hostLabel(host string) string {
	if _, ok := ownHosts.Load(host); ok {
		return host
	}
	return OtherHost
}

// The adapters installed in client-go (controller-runtime's, at its init) are wrapped once, at this
// package's init, before any client exists: client-go reads them without a lock.
func init() {
	clientmetrics.RequestResult = hostlessResult{clientmetrics.RequestResult}
	clientmetrics.RequestRetry = hostlessRetry{clientmetrics.RequestRetry}
	clientmetrics.RequestLatency = hostlessLatency{clientmetrics.RequestLatency}
	clientmetrics.RateLimiterLatency = hostlessLatency{clientmetrics.RateLimiterLatency}
	clientmetrics.ResolverLatency = hostlessResolver{clientmetrics.ResolverLatency}
	clientmetrics.RequestSize = hostlessSize{clientmetrics.RequestSize}
	clientmetrics.ResponseSize = hostlessSize{clientmetrics.ResponseSize}
}

type hostlessResult struct{ m clientmetrics.ResultMetric }

func (h hostlessResult) Increment(ctx context.Context, code, method, host string) {
	h.m.Increment(ctx, code, method, hostLabel(host))
}

type hostlessRetry struct{ m clientmetrics.RetryMetric }

func (h hostlessRetry) IncrementRetry(ctx context.Context, code, method, host string) {
	h.m.IncrementRetry(ctx, code, method, hostLabel(host))
}

// hostlessLatency passes the URL of an own server as it is, and of any other only the scheme and
// OtherHost (its path may carry the tenant's server path too).
type hostlessLatency struct{ m clientmetrics.LatencyMetric }

func (h hostlessLatency) Observe(ctx context.Context, verb string, u url.URL, latency time.Duration) {
	if hostLabel(u.Host) == OtherHost {
		u = url.URL{Scheme: u.Scheme, Host: OtherHost}
	}
	h.m.Observe(ctx, verb, u, latency)
}

type hostlessResolver struct {
	m clientmetrics.ResolverLatencyMetric
}

func (h hostlessResolver) Observe(ctx context.Context, host string, latency time.Duration) {
	h.m.Observe(ctx, hostLabel(host), latency)
}

type hostlessSize struct{ m clientmetrics.SizeMetric }

func (h hostlessSize) Observe(ctx context.Context, verb, host string, size float64) {
	h.m.Observe(ctx, verb, hostLabel(host), size)
}
