package oslo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/health"
)

// Path is where oslo.middleware's healthcheck application answers.
const Path = "/healthcheck"

// Options configure the handler.
type Options struct {
	// Probes are the probe handler's options this one shares: Details (show each failing backend's
	// reason) and the disable/enable-by-file gate (DisableByFilePath, DisableByFilePaths,
	// EnableByFilePaths, Port), which becomes oslo's disable_by_file backend.
	Probes health.HandlerOptions
	// Detailed answers as oslo.middleware's "detailed" mode does (host, time, version, platform, and each
	// backend's kind and details).
	Detailed bool
	// Clock gives the detailed mode's time and the gate's (default: the real clock).
	Clock clock.PassiveClock
}

// Handler answers as oslo.middleware's healthcheck application (5.x) does, from m's readiness. Mount it
// on Path, beside m's probe handler (health.ServerOptions.Handlers).
func Handler(m *health.Manager, opts Options) http.Handler {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	gate, _ := health.NewFileGate(opts.Clock, opts.Probes) // bad values: the probe handler logs them
	return &handler{m: m, opts: opts, gate: gate}
}

type handler struct {
	m    *health.Manager
	opts Options
	gate *health.FileGate
}

var (
	hdrTypeKey = "Content-Type"
	hdrJSON    = []string{"application/json"}
)

// osloResult is one backend's result, as oslo.middleware's HealthcheckResult.
type osloResult struct {
	available bool
	reason    string
	details   string
}

// osloClass is the "Kind" of every result in oslo's detailed output: the Python class of its
// results. Vitals' kind of entry is in the details.
const osloClass = "HealthcheckResult"

// ServeHTTP answers with readiness as oslo's backends: the disable-by-file gate first when configured
// (its reasons are oslo's own), then every check, component and budget feeding readiness, then the
// drain. A backend that does not fail readiness says "OK"; one that does says "<name> failed", with
// ": <reason>" when Details is set. Any method but HEAD answers 200 or 503 with a body negotiated from
// Accept (text/plain, text/html, application/json, in oslo's order of preference; text/plain when
// nothing matches); HEAD answers 204 or 503 without a body. Options.Detailed adds oslo's "detailed"
// fields.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var results []osloResult
	now := h.opts.Clock.Now()
	if h.gate != nil {
		st := h.gate.State(now) // oslo's disable_by_file backend
		res := osloResult{available: st.Reason == "", reason: "OK"}
		if !res.available {
			res.reason = st.Reason
		}
		if h.opts.Detailed {
			res.details = st.Details()
		}
		results = append(results, res)
	}
	rep := h.m.Evaluate(health.Readiness)
	healthy := true
	for _, e := range rep.Results {
		reason := ""
		if e.Err != nil {
			reason = e.Err.Error()
		}
		res := osloResult{available: !e.Failing(health.Readiness), reason: "OK"}
		if !res.available {
			res.reason = e.Name + " failed"
			if h.opts.Probes.Details {
				res.reason += ": " + reason
			}
		}
		if h.opts.Detailed {
			res.details = string(e.Kind) + " " + e.Name + ": " + string(e.Status)
			if reason != "" {
				res.details += ": " + reason
			}
			if e.Status != health.StatusOK && e.Severity == health.Degraded {
				res.details += " (degraded)" // readiness excuses nothing else
			}
		}
		results = append(results, res)
	}
	if rep.Draining {
		results = append(results, osloResult{reason: health.DrainName + " failed", details: health.ErrDraining.Error()})
	}
	for _, res := range results {
		healthy = healthy && res.available
	}
	hdr := w.Header()
	if r.Method == http.MethodHead {
		if healthy {
			w.WriteHeader(http.StatusNoContent) // a 204 carries no Content-Type
		} else {
			hdr[hdrTypeKey] = []string{"text/plain; charset=UTF-8"}
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	var body []byte
	switch osloAccept(r.Header.Values("Accept")) {
	case "text/html":
		hdr[hdrTypeKey] = []string{"text/html; charset=UTF-8"}
		body = osloHTML(results, h.opts.Detailed, now)
	case "application/json":
		hdr[hdrTypeKey] = hdrJSON
		body = osloJSON(results, h.opts.Detailed, now)
	default:
		hdr[hdrTypeKey] = []string{"text/plain; charset=UTF-8"}
		var b strings.Builder
		for _, res := range results {
			b.WriteString("\n")
			b.WriteString(res.reason)
		}
		body = []byte(strings.TrimSpace(b.String()))
	}
	if !healthy {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write(body)
}

// osloOffers are the types oslo's healthcheck offers, in its order of preference.
var osloOffers = [...]string{"text/plain", "text/html", "application/json"}

// osloAccept picks the response type as webob's acceptable_offers does for oslo's offers: each
// offer takes the q-value of the most specific media range that matches it (type/subtype, then
// type/*, then */*; a range with media-type parameters matches none of them), offers with q=0 drop
// out, and the highest q wins, ties going to the earlier offer. No Accept header, an invalid one or
// no acceptable offer: text/plain.
func osloAccept(values []string) string {
	if len(values) == 0 {
		return osloOffers[0]
	}
	type match struct {
		q    float64
		spec int
	}
	var best [len(osloOffers)]match
	for _, v := range values {
		for _, rng := range strings.Split(v, ",") {
			rng = strings.TrimSpace(rng)
			if rng == "" {
				continue
			}
			parts := strings.Split(rng, ";")
			typ, sub, ok := strings.Cut(strings.ToLower(strings.TrimSpace(parts[0])), "/")
			if !ok || typ == "" || sub == "" || (typ == "*" && sub != "*") {
				return osloOffers[0]
			}
			q, params := 1.0, false
			for _, p := range parts[1:] {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil || f < 0 || f > 1 {
						return osloOffers[0]
					}
					q = f
					break // what follows q is accept-ext, not media-type parameters
				}
				params = true
			}
			for i, offer := range osloOffers {
				ot, os, _ := strings.Cut(offer, "/")
				spec := 0
				switch {
				case typ == ot && sub == os && !params:
					spec = 3
				case typ == ot && sub == "*":
					spec = 2
				case typ == "*" && sub == "*":
					spec = 1
				}
				if spec > best[i].spec {
					best[i] = match{q: q, spec: spec}
				}
			}
		}
	}
	pick, pickQ := osloOffers[0], 0.0
	for i, m := range best {
		if m.spec > 0 && m.q > pickQ {
			pick, pickQ = osloOffers[i], m.q
		}
	}
	return pick
}

// osloNow formats t as Python's str(datetime.utcnow()).
func osloNow(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02 15:04:05")
	}
	return t.Format("2006-01-02 15:04:05.000000")
}

func osloPlatform() string { return runtime.GOOS + "-" + runtime.GOARCH }

// osloJSON renders oslo's JSON body: json.dumps(body, indent=4, sort_keys=True), which escapes
// non-ASCII characters and not HTML ones. Detailed adds the Go counterparts of oslo's Python fields.
func osloJSON(results []osloResult, detailed bool, now time.Time) []byte {
	var body any
	if detailed {
		type reason struct {
			Class   string `json:"class"`
			Details string `json:"details"`
			Reason  string `json:"reason"`
		}
		reasons := make([]reason, 0, len(results))
		for _, r := range results {
			reasons = append(reasons, reason{Class: osloClass, Details: r.details, Reason: r.reason})
		}
		// Keys in sorted order, as sort_keys=True.
		body = struct {
			Detailed   bool     `json:"detailed"`
			GoVersion  string   `json:"go_version"`
			Goroutines int      `json:"goroutines"`
			Now        string   `json:"now"`
			Platform   string   `json:"platform"`
			Reasons    []reason `json:"reasons"`
		}{true, runtime.Version(), runtime.NumGoroutine(), osloNow(now), osloPlatform(), reasons}
	} else {
		reasons := make([]string, 0, len(results))
		for _, r := range results {
			reasons = append(reasons, r.reason)
		}
		body = struct {
			Detailed bool     `json:"detailed"`
			Reasons  []string `json:"reasons"`
		}{false, reasons}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	_ = enc.Encode(body)
	return asciiJSON(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// asciiJSON escapes every non-ASCII character of a JSON text as \uXXXX (surrogate pairs above the
// BMP), as Python's json.dumps does by default.
func asciiJSON(b []byte) []byte {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return b
	}
	var out bytes.Buffer
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			out.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			fmt.Fprintf(&out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	return out.Bytes()
}

// osloHTML renders oslo's HTML template (its Jinja output, whitespace included). Detailed shows the
// host, time, Go version and platform where oslo shows Python's, and no thread stacks.
func osloHTML(results []osloResult, detailed bool, now time.Time) []byte {
	var b strings.Builder
	b.WriteString("<HTML>\n<HEAD><TITLE>Healthcheck Status</TITLE></HEAD>\n<BODY>\n")
	if detailed {
		b.WriteString("<H1>Server status</H1>\n")
		if host, err := os.Hostname(); err == nil && host != "" {
			b.WriteString("<B>Server hostname:</B><PRE>" + html.EscapeString(host) + "</PRE>\n")
		}
		b.WriteString("<B>Current time:</B><PRE>" + html.EscapeString(osloNow(now)) + "</PRE>\n")
		b.WriteString("<B>Go version:</B><PRE>" + html.EscapeString(runtime.Version()) + "</PRE>\n")
		b.WriteString("<B>Platform:</B><PRE>" + html.EscapeString(osloPlatform()) + "</PRE>\n")
		b.WriteString("<HR></HR>\n")
	} else {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "<H2>Result of %d checks:</H2>\n", len(results))
	b.WriteString("<TABLE bgcolor=\"#ffffff\" border=\"1\">\n<TBODY>\n<TR>\n")
	if detailed {
		b.WriteString("<TH>\nKind\n</TH>\n<TH>\nReason\n</TH>\n<TH>\nDetails\n</TH>\n\n")
	} else {
		b.WriteString("\n<TH>\nReason\n</TH>\n")
	}
	b.WriteString("</TR>\n")
	for _, r := range results {
		if r.reason == "" {
			continue
		}
		b.WriteString("<TR>\n")
		if detailed {
			b.WriteString("<TD>" + osloClass + "</TD>\n")
		} else {
			b.WriteString("\n")
		}
		b.WriteString("    <TD>" + html.EscapeString(r.reason) + "</TD>\n")
		if detailed {
			b.WriteString("<TD>" + html.EscapeString(r.details) + "</TD>\n")
		} else {
			b.WriteString("\n")
		}
		b.WriteString("</TR>")
	}
	b.WriteString("\n</TBODY>\n</TABLE>\n<HR></HR>\n")
	if !detailed {
		b.WriteString("\n")
	}
	b.WriteString("</BODY>\n</HTML>")
	return []byte(b.String())
}
