package cloudsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/internal/test/errbody"
)

// apiError is an error answered with a service-shaped body.
type apiError struct {
	status int
	typ    string // Neutron's error type, e.g. "RouterNotFound"
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.typ, e.msg) }

func errf(status int, typ, format string, args ...any) *apiError {
	return &apiError{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, "HTTPBadRequest", format, args...)
}

// call is one API request being served.
type call struct {
	s       *Sim
	w       http.ResponseWriter
	r       *http.Request
	service string
	tok     *token // the caller's token (nil for unauthenticated Keystone calls)
	status  int    // status written, for logs
	q       url.Values
}

func (c *call) admin() bool     { return c.tok != nil && c.tok.Admin }
func (c *call) project() string { return c.tok.ProjectID }

// decode reads a JSON body into v.
func (c *call) decode(v any) error {
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 4<<20))
	if err != nil {
		return badRequest("cannot read request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("Request body is empty; a JSON object was expected.")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("Malformed request body: %v", err)
	}
	return nil
}

// values is the parsed query, parsed once per call.
func (c *call) values() url.Values {
	if c.q == nil {
		c.q = c.r.URL.Query()
	}
	return c.q
}

func (c *call) query(key string) string { return c.values().Get(key) }

// limit reads the limit parameter; 0 means none. maxLimit caps it (0: no cap).
func (c *call) limit(maxLimit int) (int, error) {
	v := c.query("limit")
	if v == "" {
		return maxLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest("limit param must be an integer >= 0, got %q", v)
	}
	if maxLimit > 0 && (n == 0 || n > maxLimit) {
		n = maxLimit
	}
	return n, nil
}

// baseURL is the public base URL for links and the catalog.
func (c *call) baseURL() string {
	if u := c.s.URL(); u != "" {
		return u
	}
	scheme := "http"
	if c.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.r.Host
}

// nextLink builds the URL of the next page: the request's URL with marker replaced.
func (c *call) nextLink(marker string) []map[string]string {
	q := url.Values{}
	for k, v := range c.values() {
		q[k] = v
	}
	q.Set("marker", marker)
	return []map[string]string{{"rel": "next", "href": c.baseURL() + c.r.URL.Path + "?" + q.Encode()}}
}

type handlerFunc func(c *call) (int, any, error)

// apiFunc makes the handler of one API call of a service (Sim.api): each service registers its calls with it.
type apiFunc func(service string, auth bool, h handlerFunc) http.Handler

// api wraps a handler: recovery, faults, latency, auth, error shapes, JSON.
func (s *Sim) api(service string, auth bool, h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{s: s, w: w, r: r, service: service}
		s.requests.Add(1)
		start := s.clock.Now()
		var fault string
		defer func() {
			if s.reqLog != nil {
				rec := &Request{Time: start, Service: service, Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
					Status: c.status, UserAgent: r.UserAgent(), Fault: fault}
				if c.tok != nil {
					rec.Project = c.tok.ProjectID
				} else if tok, err := s.id.authenticate(r.Header.Get("X-Auth-Token")); auth && err == nil {
					rec.Project = tok.ProjectID // a call a fault answered before its token was checked
				}
				s.reqLog.write(rec)
			}
		}()
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("handler panicked", "service", service, "method", r.Method, "path", r.URL.Path,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				c.fail(errf(http.StatusInternalServerError, "InternalServerError",
					"The server has either erred or is incapable of performing the requested operation."))
			}
			s.log.Debug("api call", "service", service, "method", r.Method, "path", r.URL.Path,
				"status", c.status, "duration", s.clock.Since(start))
		}()
		if d := time.Duration(s.Knobs().RequestLatency); d > 0 {
			if err := s.sleep(r.Context(), d); err != nil {
				return
			}
		}
		if f := s.matchFault(service, r.Method, r.URL.Path, r.URL.RawQuery); f != nil {
			fault = f.ID
			s.log.Info("fault injected", "fault", f.ID, "service", service, "method", r.Method,
				"path", r.URL.Path, "status", f.Status)
			if err := s.sleep(r.Context(), time.Duration(f.Latency)); err != nil {
				return
			}
			if f.Status != 0 {
				msg := f.Message
				if msg == "" {
					msg = http.StatusText(f.Status) + " (injected by cloudsim)"
				}
				c.fail(errf(f.Status, "", "%s", msg)) // the type the status implies, as the fault proxy's
				return
			}
		}
		s.advance()
		echoMicroversion(service, w, r)
		if auth {
			tok, err := s.id.authenticate(r.Header.Get("X-Auth-Token"))
			if err != nil {
				c.fail(err)
				return
			}
			c.tok = tok
		}
		status, body, err := h(c)
		if err != nil {
			c.fail(err)
			return
		}
		c.writeJSON(status, body)
	})
}

// rawJSON is a response body encoded already, in a buffer from getRaw.
type rawJSON []byte

var rawPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// getRaw returns an empty byte slice to encode a response into; writeJSON recycles it.
func getRaw() []byte { return (*rawPool.Get().(*[]byte))[:0] }

func putRaw(b []byte) {
	if cap(b) <= 1<<20 {
		b = b[:0]
		rawPool.Put(&b)
	}
}

// bufPool holds response buffers: list bodies are tens of KiB, and reusing their memory keeps
// the garbage collector's work per request small.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (c *call) writeJSON(status int, body any) {
	c.status = status
	if body == nil {
		c.w.WriteHeader(status)
		return
	}
	if raw, ok := body.(rawJSON); ok {
		c.w.Header().Set("Content-Type", "application/json")
		c.w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
		c.w.WriteHeader(status)
		_, _ = c.w.Write(raw)
		putRaw(raw)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			bufPool.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		c.s.log.Error("encode response failed", "path", c.r.URL.Path, "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encode response"}`)
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	c.w.WriteHeader(status)
	_, _ = c.w.Write(buf.Bytes())
}

// fail answers err in the shape of c's service.
func (c *call) fail(err error) {
	var ae *apiError
	var bm errBadMarker
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &bm):
		if c.service == svcNetwork {
			ae = errf(http.StatusNotFound, "HTTPNotFound", "Marker %s could not be found.", bm.marker)
		} else {
			ae = badRequest("marker [%s] not found", bm.marker)
		}
	default:
		c.s.log.Error("handler failed", "path", c.r.URL.Path, "err", err)
		ae = errf(http.StatusInternalServerError, "InternalServerError", "%v", err)
	}
	if ae.status == http.StatusUnauthorized {
		c.w.Header().Set("WWW-Authenticate", fmt.Sprintf("Keystone uri=%q", c.baseURL()+"/v3"))
		c.writeJSON(ae.status, errorBody(svcIdentity, ae))
		return
	}
	c.writeJSON(ae.status, errorBody(c.service, ae))
}

// errorStyle is the shape of service's error bodies.
func errorStyle(service string) errbody.Style {
	switch service {
	case svcNetwork:
		return errbody.Neutron
	case svcCompute, svcVolume:
		return errbody.Nova
	case svcLB:
		return errbody.Octavia
	default:
		return errbody.Keystone
	}
}

// errorBody shapes an error like the named service does. Nova's and Cinder's key and Keystone's title follow
// the status; Neutron's type is the error's own.
func errorBody(service string, ae *apiError) any {
	style := errorStyle(service)
	typ := ""
	if style == errbody.Neutron {
		typ = ae.typ
	}
	return errbody.Body(style, ae.status, typ, ae.msg)
}

// authenticate checks a token and returns it.
func (s *identity) authenticate(id string) (*token, error) {
	unauth := errf(http.StatusUnauthorized, "Unauthorized", "The request you have made requires authentication.")
	if id == "" {
		return nil, unauth
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.st.tokens[id]
	if !ok || !s.clock.Now().Before(t.ExpiresAt) {
		return nil, unauth
	}
	if t.ProjectID == "" {
		// Services need a project-scoped token.
		return nil, unauth
	}
	c := *t
	return &c, nil
}

// notFound answers paths no service knows.
func notFound(*call) (int, any, error) {
	return 0, nil, errf(http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
}

func (s *Sim) routes() http.Handler {
	mux := http.NewServeMux()
	s.id.routes(mux, s.api)
	s.neutron.routes(mux, s.api)
	s.nova.routes(mux, s.api)
	s.cinder.routes(mux, s.api)
	s.octavia.routes(mux, s.api)
	s.adminRoutes(mux)
	mux.Handle("/", s.api("", false, notFound))
	return mux
}

// echoMicroversion answers the microversion a Nova or Cinder client asked for, as the services
// do (the simulator serves every microversion alike).
func echoMicroversion(service string, w http.ResponseWriter, r *http.Request) {
	var name string
	switch service {
	case svcCompute:
		name = "compute"
		if v := r.Header.Get("X-OpenStack-Nova-API-Version"); v != "" {
			w.Header().Set("X-OpenStack-Nova-API-Version", v)
		}
	case svcVolume:
		name = "volume"
	default:
		return
	}
	if v := r.Header.Get("OpenStack-API-Version"); v != "" {
		if svc, ver, ok := strings.Cut(v, " "); ok && svc == name {
			w.Header().Set("OpenStack-API-Version", name+" "+ver)
			w.Header().Add("Vary", "OpenStack-API-Version")
		}
	}
}
