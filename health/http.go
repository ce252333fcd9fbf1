package health

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// HandlerOptions configure the HTTP handler.
type HandlerOptions struct {
	// Details shows failure reasons in aggregate endpoints, JSON and per-check sub-paths. Without
	// it, only a sub-path asked from a loopback address (kubectl port-forward, kubectl exec) shows
	// its reason; everyone else reads "reason withheld".
	Details bool
	// DisableByFilePath: when this file exists every probe answers 503 "DISABLED BY FILE" (oslo).
	DisableByFilePath string
	// DisableByFilePaths: "port:path" pairs, matched against Port.
	DisableByFilePaths []string
	// EnableByFilePaths: "port:path" pairs; when one names Port, the server is disabled
	// ("FILE PATH MISSING") unless its file exists. Ports not listed stay enabled, as in oslo.
	EnableByFilePaths []string
	// Port this handler serves on, for the port:path options.
	Port int
}

// Endpoint paths and the probe each serves.
const (
	pathLivez = iota
	pathHealthz
	pathAlive
	pathReadyz
	pathReady
	pathStartupz
	numPaths
)

var pathNames = [numPaths]string{"livez", "healthz", "alive", "readyz", "ready", "startupz"}
var pathProbe = [numPaths]int{liveIdx, liveIdx, liveIdx, readyIdx, readyIdx, startIdx}

// Response forms cached per snapshot.
const (
	formText = iota // verbose text, also the body of a failed plain probe
	formJSON
	numForms
)

var (
	hdrText     = []string{"text/plain; charset=utf-8"}
	hdrJSON     = []string{"application/json"}
	hdrNosniff  = []string{"nosniff"}
	bodyOK      = []byte("ok")
	hdrTypeKey  = "Content-Type"
	hdrSniffKey = "X-Content-Type-Options"
)

// Handler returns the HTTP handler for /livez, /readyz, /startupz, /healthz, /alive, /ready and their
// /<probe>/<check> sub-paths.
//
// GET answers as the Kubernetes apiserver does: 200 "ok", or with ?verbose one line per check and a
// closing "<path> check passed" line; on failure 500 with the verbose text; ?exclude=name (repeatable)
// leaves checks out. JSON is served on "Accept: application/json" or ?format=json, with the same
// status codes (200 or 500); reasons only with Details, or on a per-check path asked from a loopback
// address. HEAD answers 204
// when healthy and 503 when not, without a body, as oslo.middleware does. A disabled handler (see
// HandlerOptions) answers 503 with the reason. Other paths get 404 (oslo.middleware's /healthcheck
// is package health/oslo's handler, mounted beside this one: ServerOptions.Handlers).
func (m *Manager) Handler(opts HandlerOptions) http.Handler {
	h := &handler{m: m, opts: opts}
	if opts.Details {
		h.det = 1
	}
	var bad []string
	h.gate, bad = NewFileGate(m.clock, opts)
	for _, b := range bad {
		m.log.Warn("health handler option ignored", "value", b, "expected", "port:path")
	}
	return h
}

type handler struct {
	m    *Manager
	opts HandlerOptions
	det  int
	gate *FileGate
}

// query is what a probe request asks for.
type query struct {
	verbose bool
	json    bool
	exclude []string
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, check, ok := route(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var q query
	if r.URL.RawQuery != "" {
		q = parseQuery(r.URL.RawQuery)
	}
	if !q.json {
		if a := r.Header["Accept"]; len(a) > 0 && wantsJSON(a) {
			q.json = true
		}
	}
	head := r.Method == http.MethodHead
	if h.gate != nil {
		if reason := h.gate.reason(h.m.clock.Now()); reason != "" {
			h.serveDisabled(w, head, q.json, reason)
			return
		}
	}
	s := h.m.current()
	pi := pathProbe[path]
	if check != "" {
		h.serveCheck(w, r, s, pi, check, head, q.json)
		return
	}
	h.m.observeProbe(s, path, q.exclude)
	if q.exclude != nil {
		// Exclusions change the verdict: evaluate this request on its own.
		ex := newExclusions(q.exclude)
		var resp *response
		if q.json {
			resp = renderJSON(s, pi, h.opts.Details, ex)
		} else {
			resp = renderText(s, path, h.opts.Details, ex)
		}
		h.write(w, resp, head, q.json, q.verbose)
		return
	}
	if head {
		if s.healthy[pi] {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	if !q.json && !q.verbose && s.healthy[pi] {
		// The hot path. Content-Type is set rather than left to net/http's sniffing, which
		// costs more per response (measured in bench/health) than one more header insert.
		hdr := w.Header()
		hdr[hdrTypeKey] = hdrText
		hdr[hdrSniffKey] = hdrNosniff
		_, _ = w.Write(bodyOK)
		return
	}
	form := formText
	if q.json {
		form = formJSON
	}
	slot := &s.rendered[h.det][path][form]
	resp := slot.Load()
	if resp == nil {
		if q.json {
			resp = renderJSON(s, pi, h.opts.Details, nil)
		} else {
			resp = renderText(s, path, h.opts.Details, nil)
		}
		slot.Store(resp)
	}
	h.write(w, resp, false, q.json, true)
}

// write sends a rendered response. A healthy plain-text request that is not verbose gets "ok".
func (h *handler) write(w http.ResponseWriter, resp *response, head, json, verbose bool) {
	if head {
		if resp.healthy {
			w.WriteHeader(http.StatusNoContent)
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	hdr := w.Header()
	if json {
		hdr[hdrTypeKey] = hdrJSON
	} else {
		hdr[hdrTypeKey] = hdrText
	}
	hdr[hdrSniffKey] = hdrNosniff
	if !resp.healthy {
		w.WriteHeader(resp.status)
		_, _ = w.Write(resp.body)
		return
	}
	if !json && !verbose {
		_, _ = w.Write(bodyOK)
		return
	}
	_, _ = w.Write(resp.body)
}

func (h *handler) serveDisabled(w http.ResponseWriter, head, json bool, reason string) {
	if head {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	hdr := w.Header()
	hdr[hdrSniffKey] = hdrNosniff
	if json {
		hdr[hdrTypeKey] = hdrJSON
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(disabledJSON(reason))
		return
	}
	hdr[hdrTypeKey] = hdrText
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(reason))
}

// serveCheck answers /<probe>/<check>: "ok", or 500 "internal server error: <reason>" as the
// apiserver's per-check paths do. The reason is shown with Details or to a loopback client, else it
// is withheld as in the aggregate: an upstream error body can tell an attacker more than it should.
// A degraded check that is not ok fails here although it never fails the probe; a check in its
// start period passes liveness and startup here as in the aggregate.
func (h *handler) serveCheck(w http.ResponseWriter, r *http.Request, s *snapshot, pi int, name string, head, json bool) {
	var (
		e      *snapEntry
		failed bool
		reason string
	)
	if i, ok := s.index[name]; ok && s.entries[i].Probes&probeByIdx[pi] != 0 {
		e = &s.entries[i]
		failed = e.fails[pi] || e.excused[pi] == "degraded"
		reason = e.reason
	} else if name == DrainName && pi == readyIdx && s.draining {
		failed, reason = true, ErrDraining.Error()
	} else {
		http.NotFound(w, nil)
		return
	}
	if head {
		if failed {
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	show := h.opts.Details || fromLoopback(r)
	if !show {
		reason = reasonWithheld
	}
	hdr := w.Header()
	if json {
		hdr[hdrSniffKey] = hdrNosniff
		hdr[hdrTypeKey] = hdrJSON
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
		}
		_, _ = w.Write(checkJSON(e, pi, failed, reason, show))
		return
	}
	// As the apiserver: http.Error's headers on failure, only the (sniffed) type on success.
	hdr[hdrTypeKey] = hdrText
	if failed {
		hdr[hdrSniffKey] = hdrNosniff
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("internal server error: " + reason + "\n"))
		return
	}
	_, _ = w.Write(bodyOK)
}

// fromLoopback reports whether the request comes from a loopback address.
func fromLoopback(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// route maps a URL path to an endpoint and, for sub-paths, a check name.
func route(p string) (path int, check string, ok bool) {
	switch p {
	case "/readyz":
		return pathReadyz, "", true
	case "/livez":
		return pathLivez, "", true
	case "/healthz":
		return pathHealthz, "", true
	case "/startupz":
		return pathStartupz, "", true
	case "/ready":
		return pathReady, "", true
	case "/alive":
		return pathAlive, "", true
	}
	if len(p) < 2 || p[0] != '/' {
		return 0, "", false
	}
	first, rest, found := strings.Cut(p[1:], "/")
	if !found || rest == "" || strings.IndexByte(rest, '/') >= 0 {
		return 0, "", false
	}
	for i, n := range pathNames {
		if n == first {
			return i, rest, true
		}
	}
	return 0, "", false
}

// parseQuery reads verbose, exclude and format from a raw query without building a url.Values.
func parseQuery(raw string) query {
	var q query
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if strings.ContainsAny(part, "%+") {
			var err1, err2 error
			k, err1 = url.QueryUnescape(k)
			v, err2 = url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				continue // url.ParseQuery drops such pairs too
			}
		}
		switch k {
		case "verbose":
			q.verbose = true
		case "exclude":
			q.exclude = append(q.exclude, v)
		case "format":
			q.json = strings.EqualFold(v, "json")
		}
	}
	return q
}

func wantsJSON(accept []string) bool {
	for _, a := range accept {
		if strings.Contains(a, "application/json") {
			return true
		}
	}
	return false
}
