package openstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// Service names one OpenStack service, as used in metrics and errors.
type Service string

const (
	ServiceIdentity     Service = "identity"
	ServiceNetworking   Service = "network"
	ServiceCompute      Service = "compute"
	ServiceBlockStorage Service = "block-storage"
	ServiceLoadBalancer Service = "load-balancer"
)

// DefaultMaxResponseBytes bounds one response body: a Neutron list of 50,000 ports is about 75 MB.
const DefaultMaxResponseBytes = 128 << 20

// Config configures Connect.
type Config struct {
	// Auth says how to authenticate (see AuthFromCloudsYAML, AuthFromEnv, AuthFromINI).
	Auth Auth
	// QPS is the client-side rate limit of requests per second to all services of this cloud,
	// re-authentication included; 0 means 10, negative means no limit.
	QPS float64
	// Burst is the rate limiter's bucket size; 0 means 2*QPS (at least 1).
	Burst int
	// Registerer receives the request metrics (nil: not registered). Clouds may share one.
	Registerer prometheus.Registerer
	// Require lists services whose absence from the catalog fails Connect. Others fail at use.
	Require []Service
	// ComputeMicroversion for Nova requests; "" means 2.26 (server tags).
	ComputeMicroversion string
	// HTTPTimeout bounds each HTTP request (0: 60s). Contexts bound calls too.
	HTTPTimeout time.Duration
	// MaxResponseBytes bounds each response body (0: DefaultMaxResponseBytes): the endpoints come from a
	// tenant's Secret and its Keystone's catalog, and an endless body must not take the operator's memory.
	MaxResponseBytes int64
	// Transport is the base HTTP transport (nil: a clone of http.DefaultTransport with Auth.TLS).
	Transport http.RoundTripper
	// Logger (nil: slog.Default()).
	Logger *slog.Logger
	// Clock (nil: the real one); used for latency metrics only.
	Clock clock.PassiveClock
	// UserAgent goes before "vitals" in each request's User-Agent, e.g. the operator replica's identity,
	// so that the cloud's logs tell who sent a request ("": "vitals" only).
	UserAgent string
}

// Cloud is an authenticated connection to one OpenStack cloud. It implements Routers, Ports,
// Servers, SecurityGroups, Volumes, LoadBalancers and Networks. It is safe for concurrent use.
type Cloud struct {
	provider  *gophercloud.ProviderClient
	auth      Auth
	transport *transport
	log       *slog.Logger
	clients   map[Service]*gophercloud.ServiceClient
	missing   map[Service]error

	extMu      sync.Mutex
	extensions map[string]bool // Neutron extension aliases, read once

	projMu    sync.Mutex
	projToken string // the token whose project projID is (decoding a token's body costs as much as a list)
	projID    string

	credMu    sync.Mutex
	cred      *Credential // an application credential's, read once (Keystone never changes its expiry); else credToken's
	credToken string      // the token cred was read from (a password's, a bare token's)
}

var (
	_ Routers        = (*Cloud)(nil)
	_ Ports          = (*Cloud)(nil)
	_ Servers        = (*Cloud)(nil)
	_ SecurityGroups = (*Cloud)(nil)
	_ Volumes        = (*Cloud)(nil)
	_ LoadBalancers  = (*Cloud)(nil)
	_ Networks       = (*Cloud)(nil)
)

// ErrServiceUnavailable is wrapped by errors for calls to a service the cloud's catalog lacks.
var ErrServiceUnavailable = errors.New("service not in the catalog")

// ErrWrongCredentials is wrapped by Connect's error when Keystone refuses the credentials (401).
var ErrWrongCredentials = errors.New("wrong credentials")

// ErrUnreachable is wrapped by Connect's error when Keystone cannot be reached at all.
var ErrUnreachable = errors.New("unreachable")

// ErrUntrustedCertificate is wrapped by Connect's error when Keystone's TLS certificate does not verify:
// signed by a CA the process does not trust, for another host name, or expired.
var ErrUntrustedCertificate = errors.New("TLS certificate not trusted")

// Connect authenticates and builds the service clients. It fails when Keystone refuses the
// credentials or cannot be reached, or a required service is missing from the catalog.
func Connect(ctx context.Context, cfg Config) (*Cloud, error) {
	a := cfg.Auth
	url := a.Options.IdentityEndpoint
	if url == "" {
		return nil, fmt.Errorf("connect to OpenStack: no auth URL (source: %s)", orUnknown(a.Source))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	base := cfg.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if a.TLS != nil {
			t.TLSClientConfig = a.TLS.Clone()
		}
		base = t
	}
	qps, burst := cfg.QPS, cfg.Burst
	if qps == 0 {
		qps = 10
	}
	var limiter *rate.Limiter
	if qps > 0 {
		if burst <= 0 {
			burst = max(1, int(2*qps))
		}
		limiter = rate.NewLimiter(rate.Limit(qps), burst)
	}
	maxBody := cfg.MaxResponseBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxResponseBytes
	}
	tr := &transport{base: base, limiter: limiter, metrics: newMetrics(cfg.Registerer), clock: clk, maxBody: maxBody}

	pc, err := gcos.NewClient(url)
	if err != nil {
		return nil, fmt.Errorf("connect to OpenStack at %q (source: %s): %w", url, orUnknown(a.Source), err)
	}
	timeout := cfg.HTTPTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	pc.HTTPClient = http.Client{Transport: tr, Timeout: timeout}
	pc.UserAgent.Prepend("vitals")
	if cfg.UserAgent != "" {
		pc.UserAgent.Prepend(cfg.UserAgent)
	}
	tr.setEndpoint(string(ServiceIdentity), pc.IdentityBase)

	opts := a.Options
	opts.AllowReauth = opts.TokenID == "" // a bare token cannot be renewed
	if err := gcos.Authenticate(ctx, pc, opts); err != nil {
		return nil, authError(url, a, err)
	}
	c := &Cloud{provider: pc, auth: a, transport: tr, log: log,
		clients: map[Service]*gophercloud.ServiceClient{}, missing: map[Service]error{}}
	eo := gophercloud.EndpointOpts{Region: a.Region, Availability: a.Availability}

	// Identity: the endpoint we authenticated against, not the catalog's (which may be an internal
	// URL); so the Keystone check probes the Keystone this process depends on.
	if ic, err := gcos.NewIdentityV3(pc, gophercloud.EndpointOpts{}); err == nil {
		c.clients[ServiceIdentity] = ic
	} else {
		c.missing[ServiceIdentity] = err
	}
	add := func(s Service, f func() (*gophercloud.ServiceClient, error)) {
		sc, err := f()
		if err != nil || sc == nil || sc.Endpoint == "" {
			if err == nil {
				err = errors.New("empty endpoint")
			}
			c.missing[s] = err
			return
		}
		c.clients[s] = sc
		tr.setEndpoint(string(s), sc.Endpoint)
	}
	add(ServiceNetworking, func() (*gophercloud.ServiceClient, error) { return gcos.NewNetworkV2(pc, eo) })
	add(ServiceCompute, func() (*gophercloud.ServiceClient, error) {
		sc, err := gcos.NewComputeV2(pc, eo)
		if err == nil {
			sc.Microversion = cfg.ComputeMicroversion
			if sc.Microversion == "" {
				sc.Microversion = "2.26"
			}
		}
		return sc, err
	})
	add(ServiceBlockStorage, func() (*gophercloud.ServiceClient, error) { return gcos.NewBlockStorageV3(pc, eo) })
	add(ServiceLoadBalancer, func() (*gophercloud.ServiceClient, error) { return gcos.NewLoadBalancerV2(pc, eo) })
	for _, s := range cfg.Require {
		if _, err := c.Client(s); err != nil {
			return nil, fmt.Errorf("connect to OpenStack at %s: %w", url, err)
		}
	}
	avail := make([]string, 0, len(c.clients))
	for s := range c.clients {
		avail = append(avail, string(s))
	}
	// The source and the project proven, never the settings: for a tenant they are a Secret's contents
	// (its auth URL, user, region), which no log may hold at any level.
	log.Debug("openstack connected", "source", orUnknown(a.Source), "project", c.ProjectID(), "services", avail)
	return c, nil
}

// authError explains an authentication failure.
func authError(url string, a Auth, err error) error {
	switch {
	case gophercloud.ResponseCodeIs(err, http.StatusUnauthorized):
		return fmt.Errorf("authenticate to %s as %s: %w (Keystone answered 401; source: %s)", url, a.User(), ErrWrongCredentials, orUnknown(a.Source))
	case isCertificateError(err):
		return fmt.Errorf("authenticate to %s as %s: Keystone's %w: %w (trust its CA with cacert in clouds.yaml, OS_CACERT or cafile; source: %s)",
			url, a.User(), ErrUntrustedCertificate, err, orUnknown(a.Source))
	case isUnreachable(err):
		return fmt.Errorf("authenticate to %s as %s: Keystone %w: %v (source: %s)", url, a.User(), ErrUnreachable, Classify(err), orUnknown(a.Source))
	}
	return fmt.Errorf("authenticate to %s as %s (source: %s): %w", url, a.User(), orUnknown(a.Source), Classify(err))
}

func isCertificateError(err error) bool {
	var ve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

func isUnreachable(err error) bool {
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout())
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Client returns the service client of s, or an error wrapping ErrServiceUnavailable when the
// catalog lacks it. The error names the credentials' source, not their region or auth URL: for a tenant
// those are a Secret's contents, and the error reaches status, Events and logs.
func (c *Cloud) Client(s Service) (*gophercloud.ServiceClient, error) {
	if sc, ok := c.clients[s]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("%s service (the region and interface of %s): %w: %v", s, orUnknown(c.auth.Source), ErrServiceUnavailable, c.missing[s])
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Has reports whether the catalog offers s.
func (c *Cloud) Has(s Service) bool { _, ok := c.clients[s]; return ok }

// Provider is the underlying gophercloud provider client (authenticated, re-authenticating).
func (c *Cloud) Provider() *gophercloud.ProviderClient { return c.provider }

// Auth returns the settings the cloud was connected with.
func (c *Cloud) Auth() Auth { return c.auth }

// ProjectID is the project of the current token ("" for an unscoped or domain-scoped token).
func (c *Cloud) ProjectID() string {
	r, ok := c.provider.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return ""
	}
	tok, err := r.ExtractTokenID()
	if err != nil {
		return ""
	}
	c.projMu.Lock()
	defer c.projMu.Unlock()
	if tok != "" && tok == c.projToken {
		return c.projID
	}
	id := ""
	if p, err := r.ExtractProject(); err == nil && p != nil {
		id = p.ID
	}
	c.projToken, c.projID = tok, id
	return id
}

// Token is the current token (it changes after re-authentication).
func (c *Cloud) Token() string { return c.provider.Token() }

// Limiter is the client-side rate limiter (nil when unlimited). Tests may watch its tokens.
func (c *Cloud) Limiter() *rate.Limiter { return c.transport.limiter }
