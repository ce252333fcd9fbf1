package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Limits bound what the operator spends on, and what a hostile server can make it do through, one
// workload cluster. The zero value of each field takes the default noted.
type Limits struct {
	// QPS and Burst of all requests to one workload cluster together (default 20 and 40), but a teardown's.
	QPS   float32
	Burst int
	// TeardownQPS and TeardownBurst: the bucket of its own of a deleted cluster's teardown (Cluster.Teardown:
	// deorbit's deletes), so that a cluster being torn down neither waits on the live controllers' bucket nor
	// spends it (default 20 and 300: 250 claims and Services go in one burst).
	TeardownQPS   float32
	TeardownBurst int
	// DialTimeout bounds a TCP connection (default 10s).
	DialTimeout time.Duration
	// HeaderTimeout bounds the wait for a response's headers (default 30s).
	HeaderTimeout time.Duration
	// RequestTimeout bounds a whole request, body included (default 2m); reads through Reader that
	// bring no deadline get this one.
	RequestTimeout time.Duration
	// WatchTimeout bounds one watch stream (default 15m; informers then watch again).
	WatchTimeout time.Duration
	// MaxResponseBytes bounds one response body, or one watch stream (default 128 MiB).
	MaxResponseBytes int64
}

// Defaults of a teardown's bucket (Limits.TeardownQPS, TeardownBurst): bench/deorbit measured a teardown of 250
// claims and Services at 6.5× the cloud's own time through the live bucket (20/s, burst 40), 1.4× with a burst
// of 300.
const (
	DefaultTeardownQPS   = 20
	DefaultTeardownBurst = 300
)

func (l *Limits) defaults() {
	if l.QPS <= 0 {
		l.QPS = 20
	}
	if l.Burst <= 0 {
		l.Burst = 2 * int(l.QPS)
	}
	if l.TeardownQPS <= 0 {
		l.TeardownQPS = DefaultTeardownQPS
	}
	if l.TeardownBurst <= 0 {
		l.TeardownBurst = DefaultTeardownBurst
	}
	if l.DialTimeout <= 0 {
		l.DialTimeout = 10 * time.Second
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = 30 * time.Second
	}
	if l.RequestTimeout <= 0 {
		l.RequestTimeout = 2 * time.Minute
	}
	if l.WatchTimeout <= 0 {
		l.WatchTimeout = 15 * time.Minute
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = 128 << 20
	}
}

// Errors of the limits; their messages go into the condition as they are.
var (
	errForbiddenAddress = errors.New("the server resolves to a link-local, multicast or unspecified address")
	errLoopbackAddress  = errors.New("the server resolves to a loopback address, the operator's own host (allowed with --allow-loopback-workload)")
	errRedirect         = errors.New("the server answered with a redirect, which the operator does not follow")
	errHeaderTimeout    = errors.New("no response headers within the header timeout")
	errRequestTimeout   = errors.New("the response did not end within the request timeout")
	errTooLarge         = errors.New("the response is larger than the operator accepts")
)

// connection is the HTTP side of one workload cluster: its client configuration, the HTTP client every
// client of the cluster shares (one rate limiter, one connection pool, no redirects), and its base
// transport, whose idle connections are closed when the access stops.
type connection struct {
	cfg  *rest.Config
	http *http.Client
	base *http.Transport
}

// connect builds the connection of cfg under lim. tenant: the configuration comes from a tenant's
// Secret, and dials to the addresses its rules refuse are refused (nil: the operator's own
// configuration).
func connect(cfg *rest.Config, lim Limits, tenant *KubeconfigRules, userAgent string) (*connection, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = lim.QPS, lim.Burst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(lim.QPS, lim.Burst)
	cfg.Timeout = 0 // watches are bounded by the transport below; a client timeout would cut them
	cfg.UserAgent = userAgent
	d := &net.Dialer{Timeout: lim.DialTimeout, KeepAlive: 30 * time.Second}
	if tenant != nil {
		d.Control = tenant.refuseAddress
	}
	cfg.Dial = d.DialContext
	// A Proxy function makes the transport uncacheable: each access gets its own, which is closed with
	// it (client-go's global transport cache would keep one per kubeconfig ever seen).
	cfg.Proxy = http.ProxyFromEnvironment
	c := &connection{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		if t, ok := rt.(*http.Transport); ok {
			c.base = t
		}
		return &limitedTransport{rt: rt, lim: lim}
	})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, errorf(ReasonInvalidKubeconfig, "the kubeconfig's TLS settings are unusable")
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	c.cfg, c.http = cfg, hc
	return c, nil
}

// close drops the idle connections of the access (active ones end with their requests' contexts).
func (c *connection) close() {
	if c.base != nil {
		c.base.CloseIdleConnections()
	}
}

// refuseAddress is the dialer's control: a server name may resolve to anything, so the address is
// checked where it is dialed.
func (r KubeconfigRules) refuseAddress(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %q: %w", address, err)
	}
	if r.forbidden(ap.Addr()) {
		return errForbiddenAddress
	}
	if r.loopbackRefused(ap.Addr()) {
		return errLoopbackAddress
	}
	return nil
}

// limitedTransport bounds each request: headers within HeaderTimeout, the whole exchange within
// RequestTimeout (WatchTimeout for watches), the body within MaxResponseBytes.
type limitedTransport struct {
	rt  http.RoundTripper
	lim Limits
}

func (t *limitedTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

func (t *limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	total := t.lim.RequestTimeout
	if q := req.URL.Query().Get("watch"); q == "true" || q == "1" {
		total = t.lim.WatchTimeout
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	whole := time.AfterFunc(total, func() { cancel(errRequestTimeout) })
	headers := time.AfterFunc(t.lim.HeaderTimeout, func() { cancel(errHeaderTimeout) })
	stop := func(err error) {
		whole.Stop()
		cancel(err)
	}
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	headers.Stop()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && req.Context().Err() == nil {
			err = cause
		}
		stop(context.Canceled)
		return nil, err
	}
	if cause := context.Cause(ctx); cause != nil {
		resp.Body.Close()
		stop(context.Canceled)
		return nil, cause
	}
	if resp.ContentLength > t.lim.MaxResponseBytes {
		resp.Body.Close()
		stop(context.Canceled)
		return nil, errTooLarge
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.lim.MaxResponseBytes + 1, ctx: ctx, stop: stop}
	return resp, nil
}

// limitedBody fails a read past the limit, and ends the request's context when closed.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	ctx  context.Context
	stop func(error)
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left <= 0 {
		return n, errTooLarge
	}
	if err != nil {
		// the transport may end a cancelled body with EOF: a timeout must not pass for a whole body
		if cause := context.Cause(b.ctx); errors.Is(cause, errRequestTimeout) || errors.Is(cause, errHeaderTimeout) {
			err = cause
		}
	}
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.rc.Close()
	b.stop(context.Canceled)
	return err
}

// perGroupDiscovery returns hc with its discovery requests (/api, /apis) asking for the per-group
// format. Given aggregated discovery, controller-runtime's REST mapper keeps every resource of every
// group the server serves: about 300 KiB per workload cluster (docs/benchmarks.md), where the
// operator reads a few kinds. Asked per group, it fetches only the groups it is asked about.
func perGroupDiscovery(hc *http.Client) *http.Client {
	c := *hc
	c.Transport = groupDiscovery{rt: hc.Transport}
	return &c
}

// groupDiscovery asks for the legacy discovery documents (APIVersions, APIGroupList).
type groupDiscovery struct{ rt http.RoundTripper }

func (d groupDiscovery) RoundTrip(req *http.Request) (*http.Response, error) {
	if p := req.URL.Path; strings.HasSuffix(p, "/api") || strings.HasSuffix(p, "/apis") {
		req = req.Clone(req.Context())
		req.Header.Set("Accept", "application/json")
	}
	return d.rt.RoundTrip(req)
}
