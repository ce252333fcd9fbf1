package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Event records one injected fault.
type Event struct {
	Time   time.Time
	Rule   string
	Kind   Kind
	Method string
	Path   string
	Query  string
}

// Proxy is a reverse proxy in front of one upstream service, injecting faults by its rules.
// It is safe for concurrent use: tests change rules while clients use the proxy.
type Proxy struct {
	target    *url.URL
	ln        net.Listener
	srv       *http.Server
	rp        *httputil.ReverseProxy
	transport http.RoundTripper
	log       *slog.Logger
	clock     clock.Clock
	closed    chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	rules    []*ruleState
	counts   map[string]int
	matched  map[string]int
	events   []Event
	requests int
	catalog  map[string]string          // real origin -> proxy origin, for Keystone token responses
	catalogF func(origin string) string // maps origins not in catalog ("" = keep)
}

type options struct {
	log       *slog.Logger
	clock     clock.Clock
	transport http.RoundTripper
	listen    string
}

// Option configures New.
type Option func(*options)

// WithLogger sets the logger of injected faults (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock used for delays, holds and event times (default: the real clock).
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithTransport sets the transport to the upstream (default: a clone of http.DefaultTransport), e.g. one
// trusting the kube-apiserver's CA.
func WithTransport(rt http.RoundTripper) Option { return func(o *options) { o.transport = rt } }

// WithListenAddress sets the proxy's listen address (default 127.0.0.1:0, a free port).
func WithListenAddress(addr string) Option { return func(o *options) { o.listen = addr } }

// New starts a proxy for target (scheme://host:port, optionally with a base path) and returns it serving.
// Close it when done.
func New(target string, opts ...Option) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("parse proxy target %q: %w", target, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("proxy target %q: want http(s)://host:port", target)
	}
	o := options{log: slog.Default(), clock: clock.RealClock{}, listen: "127.0.0.1:0"}
	for _, opt := range opts {
		opt(&o)
	}
	if o.transport == nil {
		o.transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return nil, fmt.Errorf("listen for proxy to %s: %w", target, err)
	}
	p := &Proxy{
		target: u, ln: ln, transport: o.transport, clock: o.clock, closed: make(chan struct{}),
		log:    o.log.With("proxy", "http://"+ln.Addr().String(), "target", target),
		counts: map[string]int{}, matched: map[string]int{}, catalog: map[string]string{},
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      o.transport,
		FlushInterval:  -1, // stream at once: watches
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL returns the proxy's base URL (http://127.0.0.1:PORT), to use instead of the target's.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Target returns the upstream URL.
func (p *Proxy) Target() string { return p.target.String() }

// Add appends rules (checked in the order added). It fails, adding none, on an invalid rule or a name in use.
func (p *Proxy) Add(rules ...Rule) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := map[string]bool{}
	for _, s := range p.rules {
		names[s.Name] = true
	}
	for _, r := range rules {
		if err := r.validate(); err != nil {
			return err
		}
		if names[r.Name] {
			return fmt.Errorf("rule %s: name already in use", r.Name)
		}
		names[r.Name] = true
	}
	for _, r := range rules {
		p.rules = append(p.rules, &ruleState{Rule: r})
	}
	return nil
}

// Remove removes the named rule; it reports whether it existed. Its counts stay.
func (p *Proxy) Remove(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.rules {
		if s.Name == name {
			p.rules = append(p.rules[:i], p.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Clear removes every rule: requests pass unchanged. Counts and events stay.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Count returns how many faults the named rule injected (sequence steps that passed are not counted).
func (p *Proxy) Count(rule string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[rule]
}

// Matched returns how many requests the named rule selected, injected or not.
func (p *Proxy) Matched(rule string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.matched[rule]
}

// Events returns the injected faults in order.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// Requests returns how many requests the proxy received.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// RewriteCatalog makes the proxy (in front of Keystone) replace realOrigin (scheme://host:port) with
// proxyOrigin in the endpoint URLs of the service catalog it returns (token and catalog responses), so that
// clients reach that service through another proxy.
func (p *Proxy) RewriteCatalog(realOrigin, proxyOrigin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.catalog[strings.TrimSuffix(realOrigin, "/")] = strings.TrimSuffix(proxyOrigin, "/")
}

func (p *Proxy) setCatalogFunc(f func(origin string) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.catalogF = f
}

func (p *Proxy) mapOrigin(origin string) string {
	p.mu.Lock()
	to, ok := p.catalog[origin]
	f := p.catalogF
	p.mu.Unlock()
	if ok {
		return to
	}
	if f != nil {
		return f(origin)
	}
	return ""
}

func (p *Proxy) hasCatalogRewrite() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.catalog) > 0 || p.catalogF != nil
}

// Close stops the proxy, releases held requests and closes upstream connections.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		close(p.closed)
		err = p.srv.Close()
		if t, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	})
	return err
}

type ctxKey struct{}

// ServeHTTP applies the first matching rule to the request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, rule := p.pick(r)
	if f.Delay > 0 && !p.wait(r.Context(), f.Delay) {
		return
	}
	switch f.Kind {
	case KindStatus:
		if f.AfterUpstream {
			p.forward(discard{h: http.Header{}}, r, Pass())
		}
		for k, vs := range f.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		body := errorBody(f)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(f.Status)
		_, _ = w.Write(body)
	case KindReset:
		if f.AfterUpstream {
			p.forward(discard{h: http.Header{}}, r, Pass())
		}
		p.hangUp(w, rule, true)
	case KindTimeout:
		if f.AfterUpstream {
			p.forward(discard{h: http.Header{}}, r, Pass())
		}
		var after <-chan time.Time
		if f.Hold > 0 {
			after = p.clock.After(f.Hold)
		}
		select {
		case <-r.Context().Done():
		case <-p.closed:
		case <-after:
		}
		p.hangUp(w, rule, false)
	default: // pass, delay, truncate, reorder
		p.forward(w, r, f)
	}
}

// pick finds the rule for r and records the fault it injects.
func (p *Proxy) pick(r *http.Request) (Fault, string) {
	body := p.peekBody(r)
	p.mu.Lock()
	p.requests++
	var (
		f    = Pass()
		rule string
	)
	for _, s := range p.rules {
		if s.matches(r, body) {
			f, rule = s.next(), s.Name
			p.matched[rule]++
			break
		}
	}
	if rule != "" && f.Kind != KindPass {
		p.counts[rule]++
		p.events = append(p.events, Event{Time: p.clock.Now(), Rule: rule, Kind: f.Kind, Method: r.Method, Path: r.URL.Path, Query: queryString(r.URL)})
	}
	p.mu.Unlock()
	if rule != "" && f.Kind != KindPass {
		p.log.Info("fault injected", "rule", rule, "kind", string(f.Kind), "status", f.Status, "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery)
	}
	return f, rule
}

// peekBody reads the first MaxBodyMatch bytes of r's body when a rule matches bodies, and puts them back in
// front of the rest.
func (p *Proxy) peekBody(r *http.Request) []byte {
	p.mu.Lock()
	need := slices.ContainsFunc(p.rules, func(s *ruleState) bool { return s.Body != "" })
	p.mu.Unlock()
	if !need || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	head, _ := io.ReadAll(io.LimitReader(r.Body, MaxBodyMatch))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	return head
}

// wait waits d; false when the client or the proxy went away first.
func (p *Proxy) wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-p.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	case <-p.closed:
		return false
	}
}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, f Fault) {
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, f)))
}

// hangUp closes the client's connection without an answer; with reset, as a TCP RST (SO_LINGER 0).
func (p *Proxy) hangUp(w http.ResponseWriter, rule string, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		p.log.Error("hijack failed", "rule", rule, "err", err)
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.target)
	// Keep the Host the client used: services build the links they return (next page, self) from it, so
	// those lead back through the proxy.
	pr.Out.Host = pr.In.Host
	f, _ := pr.In.Context().Value(ctxKey{}).(Fault)
	if f.Kind == KindTruncate || f.Kind == KindReorder || (p.hasCatalogRewrite() && isCatalogPath(pr.In.URL.Path)) {
		// the body is rewritten: have the transport decompress it, and ask for JSON (client-go asks
		// Kubernetes for protobuf; it decodes whatever content type the answer has)
		pr.Out.Header.Del("Accept-Encoding")
		if f.Kind == KindReorder {
			pr.Out.Header.Set("Accept", "application/json")
		}
	}
}

func isCatalogPath(p string) bool {
	return strings.HasSuffix(p, "/auth/tokens") || strings.HasSuffix(p, "/auth/catalog")
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(ctxKey{}).(Fault)
	rewriteCat := p.hasCatalogRewrite() && isCatalogPath(resp.Request.URL.Path) && resp.StatusCode/100 == 2
	if f.Kind != KindTruncate && f.Kind != KindReorder && !rewriteCat {
		return nil
	}
	if resp.Request.Method == http.MethodHead || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read upstream body: %w", err)
	}
	if rewriteCat {
		if nb, err := rewriteCatalog(body, p.mapOrigin); err != nil {
			p.log.Error("catalog rewrite failed", "path", resp.Request.URL.Path, "err", err)
		} else {
			body = nb
		}
	}
	switch f.Kind {
	case KindReorder:
		if nb, err := reverseFirstArray(body); err != nil {
			p.log.Error("reorder failed: body passed unchanged", "path", resp.Request.URL.Path, "err", err)
		} else {
			body = nb
		}
	case KindTruncate:
		n := f.Bytes
		if n == 0 || n >= len(body) {
			n = len(body) / 2
		}
		resp.ContentLength = int64(len(body))
		resp.TransferEncoding = nil
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		resp.Body = &truncated{data: body[:n]}
		return nil
	}
	resp.ContentLength = int64(len(body))
	resp.TransferEncoding = nil
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return nil
}

func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return // the client went away
	}
	p.log.Warn("upstream request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	body := errorBody(Fault{Status: http.StatusBadGateway, Message: "faultproxy: upstream: " + err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	_, _ = w.Write(body)
}

// truncated yields its data, then fails: the reverse proxy aborts the connection mid-body.
type truncated struct{ data []byte }

func (t *truncated) Read(b []byte) (int, error) {
	if len(t.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(b, t.data)
	t.data = t.data[n:]
	return n, nil
}
func (t *truncated) Close() error { return nil }

// discard is a ResponseWriter that drops the answer (faults after the upstream acted).
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}
func (d discard) Flush()                      {}
