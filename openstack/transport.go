package openstack

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// metrics are the request metrics, shared by every Cloud registered on the same Registerer.
type metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	wait     *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_openstack_requests_total",
			Help: "OpenStack API requests by service (openstack_service), operation (method and path template) and HTTP status code.",
		}, []string{"openstack_service", "operation", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vitals_openstack_request_errors_total",
			Help: "OpenStack API requests that failed: an HTTP status of 400 or more (reason is the code) or no answer (reason transport).",
		}, []string{"openstack_service", "operation", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vitals_openstack_request_duration_seconds",
			Help:    "Latency of OpenStack API requests, from sending to response headers, without the rate limiter's wait.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"openstack_service", "operation"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vitals_openstack_rate_limiter_wait_seconds",
			Help:    "Time requests waited for the client-side rate limiter.",
			Buckets: []float64{0, .001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"openstack_service"}),
	}
	if reg != nil {
		m.requests = register(reg, m.requests)
		m.errors = register(reg, m.errors)
		m.duration = register(reg, m.duration)
		m.wait = register(reg, m.wait)
	}
	return m
}

// register registers c, or returns the collector already registered under the same name so that
// several Clouds can share one Registerer.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // a programming error: a conflicting metric of the same name
	}
	return c
}

// transport is the http.RoundTripper under every request of a Cloud, re-authentication included:
// it waits for the rate limiter, then measures the request.
type transport struct {
	base    http.RoundTripper
	limiter *rate.Limiter
	metrics *metrics
	clock   clock.PassiveClock
	maxBody int64 // bytes of one response body (0: no limit)

	mu        sync.RWMutex
	endpoints []endpoint // longest URL first
}

type endpoint struct {
	prefix  string // scheme://host[:port]/path/ of the service's endpoint
	service string
}

// setEndpoint records that URLs under prefix belong to service (for the service label and to cut
// the endpoint off the operation's path).
func (t *transport) setEndpoint(service, prefix string) {
	if prefix == "" {
		return
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, e := range t.endpoints {
		if e.prefix == prefix {
			t.endpoints[i].service = service
			return
		}
	}
	t.endpoints = append(t.endpoints, endpoint{prefix: prefix, service: service})
	sort.SliceStable(t.endpoints, func(i, j int) bool { return len(t.endpoints[i].prefix) > len(t.endpoints[j].prefix) })
}

// classify returns the service and the operation ("GET /v2.0/routers/{id}") of a request URL. For
// Keystone, the path of its base URL is cut off ("/identity/v3/auth/tokens" is "/v3/auth/tokens"): for a
// tenant it is part of the auth URL of a Secret, whose contents no metric may carry (and whose paths would
// grow the metrics without bound).
func (t *transport) classify(method string, u *url.URL) (service, operation string) {
	full := u.Scheme + "://" + u.Host + u.Path + "/"
	service = "unknown"
	path := u.Path
	t.mu.RLock()
	for _, e := range t.endpoints {
		if strings.HasPrefix(full, e.prefix) {
			service = e.service
			if service == string(ServiceIdentity) {
				path = "/" + strings.TrimSuffix(strings.TrimPrefix(full, e.prefix), "/")
			}
			break
		}
	}
	t.mu.RUnlock()
	return service, method + " " + PathTemplate(path)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	service, op := t.classify(req.Method, req.URL)
	if t.limiter != nil {
		start := t.clock.Now()
		if err := t.limiter.Wait(req.Context()); err != nil {
			t.metrics.errors.WithLabelValues(service, op, "rate_limiter").Inc()
			return nil, fmt.Errorf("wait for the client-side rate limiter: %w", err)
		}
		t.metrics.wait.WithLabelValues(service).Observe(t.clock.Since(start).Seconds())
	}
	start := t.clock.Now()
	resp, err := t.base.RoundTrip(req)
	t.metrics.duration.WithLabelValues(service, op).Observe(t.clock.Since(start).Seconds())
	if err != nil {
		t.metrics.requests.WithLabelValues(service, op, "none").Inc()
		t.metrics.errors.WithLabelValues(service, op, "transport").Inc()
		return nil, err
	}
	code := strconv.Itoa(resp.StatusCode)
	t.metrics.requests.WithLabelValues(service, op, code).Inc()
	if resp.StatusCode >= 400 {
		t.metrics.errors.WithLabelValues(service, op, code).Inc()
	}
	if resp.StatusCode >= 400 {
		// An error's body is never shown (Classify keeps its status code only): read at most
		// MaxErrorBodyBytes of it, so that a tenant's Keystone answering megabytes costs nothing.
		resp.Body = truncated{Reader: io.LimitReader(resp.Body, MaxErrorBodyBytes), Closer: resp.Body}
		resp.ContentLength = -1
		return resp, nil
	}
	if t.maxBody > 0 {
		what := service + " response to " + op
		if resp.ContentLength > t.maxBody {
			resp.Body.Close()
			t.metrics.errors.WithLabelValues(service, op, "too_large").Inc()
			return nil, fmt.Errorf("%s: %w: %s (expected at most %s)", what, bounded.ErrTooLarge, bounded.Size(resp.ContentLength), bounded.Size(t.maxBody))
		}
		resp.Body = bounded.ReadCloser(resp.Body, t.maxBody, what)
	}
	return resp, nil
}

// MaxErrorBodyBytes is how much of an error answer's body (HTTP status of 400 or more) is read.
const MaxErrorBodyBytes = 4 << 10

// truncated reads a body up to its limit, then closes the whole body.
type truncated struct {
	io.Reader
	io.Closer
}

var (
	uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
	hexRe  = regexp.MustCompile(`^[0-9a-fA-F]{16,}$`)
	numRe  = regexp.MustCompile(`^[0-9]+$`)
)

// PathTemplate replaces the IDs in a URL path with {id}: UUIDs (with or without dashes), long hex
// strings (project IDs in Nova and Cinder endpoints) and numbers. "/v2.0/routers/4f1c.../
// remove_extraroutes" becomes "/v2.0/routers/{id}/remove_extraroutes". Keeping IDs out of the
// operation keeps the metrics' cardinality bounded.
func PathTemplate(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s == "" {
			continue
		}
		if uuidRe.MatchString(s) || hexRe.MatchString(s) || numRe.MatchString(s) {
			segs[i] = "{id}"
		}
	}
	p := strings.Join(segs, "/")
	if p == "" {
		p = "/"
	}
	return p
}
