package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
)

// get serves one request through h and returns status, headers and body.
func get(h http.Handler, method, target string, hdr ...string) (int, http.Header, string) {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return serveOne(h, r)
}

// getFrom serves one GET from a client at remote (host:port; "" keeps httptest's 192.0.2.1:1234).
func getFrom(h http.Handler, remote, target string) (int, http.Header, string) {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if remote != "" {
		r.RemoteAddr = remote
	}
	return serveOne(h, r)
}

func serveOne(h http.Handler, r *http.Request) (int, http.Header, string) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

// compatChecks builds the same named checks for Vitals and for the apiserver's healthz.
func compatManager(t *testing.T, results map[string]error, order []string) (*Manager, *http.ServeMux) {
	t.Helper()
	m, clk := newTest(t)
	var hc []healthz.HealthChecker
	for _, name := range order {
		m.MustRegister(Check{Name: name, Run: ok, Probes: AllProbes, Interval: time.Hour})
		entryOf(t, m, name).record(clk.Now(), 0, results[name])
		err := results[name]
		hc = append(hc, healthz.NamedCheck(name, func(*http.Request) error { return err }))
	}
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, hc...)
	healthz.InstallLivezHandler(mux, hc...)
	healthz.InstallReadyzHandler(mux, hc...)
	return m, mux
}

func TestApiserverCompatibility(t *testing.T) {
	order := []string{"etcd", "ping", "informer-sync", "log"}
	scenarios := map[string]map[string]error{
		"all pass":  {},
		"one fails": {"informer-sync": errors.New("3 informers not started yet")},
		"two fail":  {"etcd": errBoom, "log": errors.New("logging blocked")},
	}
	targets := []string{
		"/readyz", "/livez", "/healthz",
		"/readyz?verbose", "/livez?verbose=true", "/healthz?verbose=0",
		"/readyz?exclude=etcd", "/readyz?exclude=etcd&verbose",
		"/readyz?exclude=etcd&exclude=log&verbose", "/livez?exclude=log&exclude=informer-sync",
		"/readyz?exclude=nope&verbose", "/readyz?exclude=zeta&exclude=etcd&exclude=alpha&exclude=zeta",
		"/livez?exclude=nope", "/readyz?exclude=&verbose", "/readyz?exclude=informer%2Dsync&verbose",
		"/readyz/etcd", "/readyz/informer-sync", "/livez/log", "/healthz/ping", "/healthz/etcd",
		"/readyz/nope", "/readyz/", "/livez/etcd/x",
	}
	for name, results := range scenarios {
		t.Run(name, func(t *testing.T) {
			m, mux := compatManager(t, results, order)
			ours := httptest.NewServer(m.Handler(HandlerOptions{}))
			defer ours.Close()
			theirs := httptest.NewServer(mux)
			defer theirs.Close()
			for _, target := range targets {
				a, b := fetch(t, ours.URL+target), fetch(t, theirs.URL+target)
				if a != b {
					t.Errorf("GET %s:\nvitals:\n%s\napiserver:\n%s", target, a, b)
				}
			}
		})
	}
}

// fetch returns status, the headers that matter and the body, as one comparable string.
func fetch(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return fmt.Sprintf("%d\nContent-Type: %s\nX-Content-Type-Options: %s\n%q", res.StatusCode,
		res.Header.Get("Content-Type"), res.Header.Get("X-Content-Type-Options"), body)
}

func TestHandlerText(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(
		Check{Name: "db", Run: ok, Probes: Readiness, Interval: time.Hour},
		Check{Name: "cache", Run: ok, Probes: Readiness, Interval: time.Hour, Severity: Degraded},
		Check{Name: "warm", Run: ok, Probes: Liveness | Startup, Interval: time.Hour, StartPeriod: time.Minute},
	)
	entryOf(t, m, "db").record(clk.Now(), 0, nil)
	entryOf(t, m, "cache").record(clk.Now(), 0, errors.New("cache miss rate 90%"))
	b, _ := m.Budget("cni", BudgetOptions{Mode: Consecutive, Limit: 1})
	b.Failure(errors.New("add failed"))
	plain := m.Handler(HandlerOptions{})
	details := m.Handler(HandlerOptions{Details: true})
	tests := []struct {
		h      http.Handler
		target string
		status int
		body   string
	}{
		{plain, "/readyz", 200, "ok"},
		{plain, "/ready", 200, "ok"},
		{plain, "/readyz?verbose", 200, "[+]db ok\n[+]cache ok\nreadyz check passed\n"},
		{plain, "/ready?verbose", 200, "[+]db ok\n[+]cache ok\nready check passed\n"},
		{details, "/readyz?verbose", 200, "[+]db ok\n[+]cache ok (degraded: cache miss rate 90%)\nreadyz check passed\n"},
		{plain, "/livez", 500, "[+]warm ok\n[-]cni failed: reason withheld\nlivez check failed\n"},
		{plain, "/alive", 500, "[+]warm ok\n[-]cni failed: reason withheld\nalive check failed\n"},
		{plain, "/healthz?exclude=cni", 200, "ok"},
		{details, "/livez", 500, "[+]warm ok (start period: no result yet)\n" +
			"[-]cni failed: failure budget exhausted: 1 consecutive failures (limit 1), last: add failed\nlivez check failed\n"},
		{plain, "/startupz?verbose", 200, "[+]warm ok\nstartupz check passed\n"},
		{plain, "/livez/cni", 500, "internal server error: reason withheld\n"},
		{plain, "/readyz/cache", 500, "internal server error: reason withheld\n"},
		{details, "/livez/cni", 500, "internal server error: failure budget exhausted: 1 consecutive failures (limit 1), last: add failed\n"},
		{details, "/readyz/cache", 500, "internal server error: cache miss rate 90%\n"},
		{plain, "/alive/warm", 200, "ok"},
		{plain, "/ready/db", 200, "ok"},
		{plain, "/readyz/warm", 404, "404 page not found\n"},
		{plain, "/metrics", 404, "404 page not found\n"},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			status, hdr, body := get(tc.h, http.MethodGet, tc.target)
			if status != tc.status || body != tc.body {
				t.Fatalf("%d %q, want %d %q", status, body, tc.status, tc.body)
			}
			if ct := hdr.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
	// Once its first result is overdue (start period, interval, timeout) the check without a result fails liveness (before Start the start
	// period has not begun: pretend it began at t0).
	w := entryOf(t, m, "warm")
	w.mu.Lock()
	w.startedAt = t0
	w.mu.Unlock()
	clk.Step(2 * time.Hour)
	b.Success()
	if status, _, body := get(plain, http.MethodGet, "/livez"); status != 500 || body != "[-]warm failed: reason withheld\n[+]cni ok\nlivez check failed\n" {
		t.Fatalf("after start period: %d %q", status, body)
	}
}

func TestHandlerHead(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(Check{Name: "a", Run: ok, Interval: time.Hour}, Check{Name: "b", Run: ok, Interval: time.Hour})
	entryOf(t, m, "a").record(clk.Now(), 0, nil)
	h := m.Handler(HandlerOptions{})
	tests := []struct {
		target string
		status int
	}{
		{"/readyz", 503}, // b has no result
		{"/readyz?exclude=b", 204},
		{"/readyz/a", 204},
		{"/readyz/b", 503},
		{"/livez", 204},
	}
	for _, tc := range tests {
		status, _, body := get(h, http.MethodHead, tc.target)
		if status != tc.status || body != "" {
			t.Errorf("HEAD %s: %d %q, want %d", tc.target, status, body, tc.status)
		}
	}
}

func TestHandlerJSON(t *testing.T) {
	m, clk := newTest(t)
	m.MustRegister(
		Check{Name: "a", Run: ok, Interval: time.Hour, Probes: AllProbes},
		Check{Name: "b", Run: ok, Interval: time.Hour, Probes: Readiness},
	)
	entryOf(t, m, "a").record(clk.Now(), 2*time.Millisecond, nil)
	entryOf(t, m, "b").record(clk.Now(), time.Millisecond, errBoom)
	for _, tc := range []struct {
		name    string
		details bool
		target  string
		hdr     []string
		status  int
		overall string
		n       int
		reason  string
	}{
		{"accept", false, "/readyz", []string{"Accept", "application/json"}, 500, "failed", 2, ""},
		{"format", true, "/readyz?format=json", nil, 500, "failed", 2, "boom"},
		{"exclude", true, "/readyz?format=json&exclude=b&exclude=x", nil, 200, "ok", 2, "boom"},
		{"liveness", false, "/livez?format=json", nil, 200, "ok", 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := m.Handler(HandlerOptions{Details: tc.details})
			status, hdr, body := get(h, http.MethodGet, tc.target, tc.hdr...)
			if status != tc.status || hdr.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %s", status, hdr.Get("Content-Type"), body)
			}
			var rep jsonReport
			if err := json.Unmarshal([]byte(body), &rep); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if rep.Status != tc.overall || len(rep.Checks) != tc.n {
				t.Fatalf("report %+v", rep)
			}
			a := rep.Checks[0]
			if a.Name != "a" || a.Status != StatusOK || a.Kind != KindCheck || a.Severity != "critical" ||
				a.DurationSeconds != 0.002 || a.LastSuccess != t0.Format(time.RFC3339Nano) || a.ConsecutiveSuccesses != 1 {
				t.Fatalf("check a: %+v", a)
			}
			if tc.n > 1 {
				b := rep.Checks[1]
				if b.Error != tc.reason || b.Status != StatusFailed || b.ConsecutiveFailures != 1 {
					t.Fatalf("check b: %+v", b)
				}
			}
			if strings.Contains(tc.target, "exclude") && (!rep.Checks[1].Excluded || len(rep.Unmatched) != 1 || rep.Unmatched[0] != "x") {
				t.Fatalf("exclusions: %+v", rep)
			}
		})
	}
	// A sub-path in JSON has the reason with details, or for a loopback client.
	for _, sub := range []struct {
		name   string
		h      http.Handler
		remote string
		want   string
	}{
		{"details", m.Handler(HandlerOptions{Details: true}), "", "boom"},
		{"loopback", m.Handler(HandlerOptions{}), "127.0.0.1:40000", "boom"},
		{"loopback v6", m.Handler(HandlerOptions{}), "[::1]:40000", "boom"},
		{"remote", m.Handler(HandlerOptions{}), "", ""},
		{"remote v4-mapped", m.Handler(HandlerOptions{}), "[::ffff:10.0.0.1]:40000", ""},
	} {
		status, _, body := getFrom(sub.h, sub.remote, "/readyz/b?format=json")
		var c jsonCheck
		if err := json.Unmarshal([]byte(body), &c); err != nil || status != 500 || c.Error != sub.want || !c.Failing {
			t.Errorf("sub-path JSON, %s: %d %s %v", sub.name, status, body, err)
		}
	}
}

func TestHandlerDrain(t *testing.T) {
	m, clk := newTest(t, WithDrainDelay(time.Second))
	m.MustRegister(Check{Name: "a", Run: ok, Interval: time.Hour, Probes: AllProbes})
	entryOf(t, m, "a").record(clk.Now(), 0, nil)
	h := m.Handler(HandlerOptions{})
	if status, _, _ := get(h, http.MethodGet, "/readyz/shutdown"); status != 404 {
		t.Fatalf("shutdown before drain: %d", status)
	}
	done := m.Drain()
	tests := []struct {
		target string
		status int
		body   string
	}{
		{"/readyz", 500, "[+]a ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"},
		{"/readyz?exclude=shutdown", 200, "ok"},
		{"/readyz/shutdown", 500, "internal server error: reason withheld\n"},
		{"/readyz/a", 200, "ok"},
		{"/livez", 200, "ok"},
	}
	for _, tc := range tests {
		status, _, body := get(h, http.MethodGet, tc.target)
		if status != tc.status || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.target, status, body, tc.status, tc.body)
		}
	}
	if status, _, body := getFrom(h, "127.0.0.1:40000", "/readyz/shutdown"); status != 500 || body != "internal server error: draining\n" {
		t.Errorf("/readyz/shutdown from loopback: %d %q", status, body)
	}
	eventually(t, clk.HasWaiters)
	clk.Step(time.Second)
	<-done
}

func TestHandlerDisableByFile(t *testing.T) {
	dir := t.TempDir()
	disable := filepath.Join(dir, "disable")
	portDisable := filepath.Join(dir, "disable-8080")
	enable := filepath.Join(dir, "enable-8080")
	touch := func(p string) {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		opts   HandlerOptions
		create string
		want   string // "" for healthy
	}{
		{"no files configured", HandlerOptions{}, "", ""},
		{"disable file absent", HandlerOptions{DisableByFilePath: disable}, "", ""},
		{"disable file present", HandlerOptions{DisableByFilePath: disable}, disable, ReasonDisabledByFile},
		{"port file present", HandlerOptions{Port: 8080, DisableByFilePaths: []string{"9090:" + disable, "8080:" + portDisable}}, portDisable, ReasonDisabledByFile},
		{"other port's file present", HandlerOptions{Port: 8080, DisableByFilePaths: []string{"9090:" + disable}}, disable, ""},
		{"enable file absent", HandlerOptions{Port: 8080, EnableByFilePaths: []string{"8080:" + enable}}, "", ReasonFilePathMissing},
		{"enable file present", HandlerOptions{Port: 8080, EnableByFilePaths: []string{"8080:" + enable}}, enable, ""},
		{"enable file of other port", HandlerOptions{Port: 8080, EnableByFilePaths: []string{"9090:" + enable}}, "", ""},
		{"bad pair ignored", HandlerOptions{Port: 8080, EnableByFilePaths: []string{"x:" + enable}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []string{disable, portDisable, enable} {
				_ = os.Remove(p)
			}
			if tc.create != "" {
				touch(tc.create)
			}
			m, clk := newTest(t)
			c, _ := m.Component("loop", ComponentOptions{Probes: AllProbes})
			h := m.Handler(tc.opts)
			for _, target := range []string{"/readyz", "/livez", "/readyz/loop"} {
				status, _, body := get(h, http.MethodGet, target)
				if tc.want == "" && (status != 200 || body != "ok") || tc.want != "" && (status != 503 || body != tc.want) {
					t.Fatalf("GET %s: %d %q, want %q", target, status, body, tc.want)
				}
			}
			if status, _, _ := get(h, http.MethodHead, "/readyz"); (status == 503) != (tc.want != "") {
				t.Fatalf("HEAD: %d", status)
			}
			if tc.want != "" {
				status, _, body := get(h, http.MethodGet, "/readyz?format=json")
				if status != 503 || !strings.Contains(body, `"status":"disabled"`) {
					t.Fatalf("JSON: %d %s", status, body)
				}
			}
			// The files are looked at no more than once a second.
			if tc.create != "" {
				_ = os.Remove(tc.create)
				c.Beat()
				if s1, _, _ := get(h, http.MethodGet, "/readyz"); (s1 == 503) != (tc.want != "") {
					t.Fatalf("answer changed within the stat interval: %d", s1)
				}
				clk.Step(time.Second)
				s2, _, _ := get(h, http.MethodGet, "/readyz")
				wantAfter := 200
				if tc.opts.EnableByFilePaths != nil && tc.want == "" && strings.HasPrefix(tc.opts.EnableByFilePaths[0], "8080:") {
					wantAfter = 503
				}
				if s2 != wantAfter {
					t.Fatalf("after removing %s: %d, want %d", tc.create, s2, wantAfter)
				}
			}
		})
	}
}

func TestRoute(t *testing.T) {
	tests := []struct {
		in    string
		path  int
		check string
		ok    bool
	}{
		{"/readyz", pathReadyz, "", true},
		{"/healthz/etcd", pathHealthz, "etcd", true},
		{"/ready/x.y", pathReady, "x.y", true},
		{"/alive/x", pathAlive, "x", true},
		{"/startupz/x", pathStartupz, "x", true},
		{"/readyz/", 0, "", false},
		{"/readyz/a/b", 0, "", false},
		{"/foo/a", 0, "", false},
		{"/", 0, "", false},
		{"", 0, "", false},
	}
	for _, tc := range tests {
		p, c, ok := route(tc.in)
		if ok != tc.ok || ok && (p != tc.path || c != tc.check) {
			t.Errorf("route(%q) = %d %q %v", tc.in, p, c, ok)
		}
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		raw  string
		want query
	}{
		{"verbose", query{verbose: true}},
		{"verbose=false", query{verbose: true}}, // presence counts, as in the apiserver
		{"exclude=a&exclude=b", query{exclude: []string{"a", "b"}}},
		{"exclude=a%2Db&format=json", query{exclude: []string{"a-b"}, json: true}},
		{"exclude=%zz&verbose", query{verbose: true}},
		{"format=text", query{}},
		{"&&x=1", query{}},
	}
	for _, tc := range tests {
		got := parseQuery(tc.raw)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseQuery(%q) = %+v, want %+v", tc.raw, got, tc.want)
		}
	}
}

// TestHandlerCheckDetail: a passing check's Detail is shown beside its "ok" to every client (text and
// JSON), taken at each successful run; a failed run drops it and the failure shows as any other.
func TestHandlerCheckDetail(t *testing.T) {
	m, clk := newTest(t)
	held := "holds 4 of 16: 0,1,2,3"
	m.MustRegister(Check{Name: "shard", Run: ok, Probes: Readiness, Interval: time.Hour, Detail: func() string { return held }})
	e := entryOf(t, m, "shard")
	plain := m.Handler(HandlerOptions{})
	steps := []struct {
		name   string
		err    error
		status int
		text   string
		json   string
	}{
		{"passing", nil, 200, "[+]shard ok (holds 4 of 16: 0,1,2,3)\nreadyz check passed\n", `"detail":"holds 4 of 16: 0,1,2,3"`},
		{"passing, ranges changed", nil, 200, "[+]shard ok (holds 2 of 16: 0,1)\nreadyz check passed\n", `"detail":"holds 2 of 16: 0,1"`},
		{"failing", errors.New("membership not renewed"), 500, "[-]shard failed: reason withheld\nreadyz check failed\n", ""},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if i == 1 {
				held = "holds 2 of 16: 0,1"
			}
			e.record(clk.Now(), 0, st.err)
			if status, _, body := get(plain, http.MethodGet, "/readyz?verbose"); status != st.status || body != st.text {
				t.Errorf("text: %d %q, want %d %q", status, body, st.status, st.text)
			}
			_, _, body := get(plain, http.MethodGet, "/readyz", "Accept", "application/json")
			if st.json != "" && !strings.Contains(body, st.json) || st.json == "" && strings.Contains(body, `"detail"`) {
				t.Errorf("json: %s, want %q in it", body, st.json)
			}
		})
	}
}
