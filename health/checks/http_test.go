package checks

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

func testHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "all good") })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database\nunreachable", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/broken", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/agent", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.UserAgent(), " ", r.Header.Get("X-Probe"))
	})
	return mux
}

func startServer(t *testing.T, network, addr string, tlsOn bool) *httptest.Server {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		prereq.Missing(t, "listen %s %s: %v", network, addr, err)
	}
	srv := httptest.NewUnstartedServer(testHandler())
	srv.Listener.Close()
	srv.Listener = l
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPRealServers(t *testing.T) {
	v4 := startServer(t, "tcp4", "127.0.0.1:0", false)
	host := strings.TrimPrefix(v4.URL, "http://")
	refused := "http://127.0.0.1:" + fmt.Sprint(freePort(t))
	tests := []struct {
		name    string
		opts    HTTPOptions
		wantErr string
		detail  string
	}{
		{name: "ok", opts: HTTPOptions{URL: v4.URL + "/ok"}, detail: "200 " + host + "/ok"},
		{name: "body contains", opts: HTTPOptions{URL: v4.URL + "/ok", Contains: "good"}},
		{name: "body lacks", opts: HTTPOptions{URL: v4.URL + "/ok", Contains: "great"}, wantErr: host + `/ok: status 200, body lacks "great"`},
		{name: "503 is a failure, with the reason on one line", opts: HTTPOptions{URL: v4.URL + "/broken"},
			wantErr: host + "/broken: status 503 (want 200-399): database unreachable"},
		{name: "status range accepts 503", opts: HTTPOptions{URL: v4.URL + "/broken", StatusMin: 500, StatusMax: 503}},
		{name: "418 outside 200-399", opts: HTTPOptions{URL: v4.URL + "/teapot"}, wantErr: "status 418 (want 200-399)"},
		{name: "redirect not followed, 302 in range", opts: HTTPOptions{URL: v4.URL + "/redirect"}, detail: "302 " + host + "/redirect"},
		{name: "redirect not followed, exact 200 wanted", opts: HTTPOptions{URL: v4.URL + "/redirect", StatusMin: 200, StatusMax: 200}, wantErr: "status 302"},
		{name: "HEAD", opts: HTTPOptions{URL: v4.URL + "/ok", Method: "head"}},
		{name: "connection refused", opts: HTTPOptions{URL: refused}, wantErr: strings.TrimPrefix(refused, "http://") + ": connection refused"},
		{name: "timeout", opts: HTTPOptions{URL: v4.URL + "/slow", Timeout: 100 * time.Millisecond}, wantErr: host + "/slow: timeout after 100ms"},
		{name: "headers and user agent", opts: HTTPOptions{URL: v4.URL + "/agent", Header: http.Header{"X-Probe": {"p1"}}, Contains: "vitals-healthcheck p1"}},
		{name: "proxy off by default even when the environment sets one", opts: HTTPOptions{URL: v4.URL + "/ok"}},
	}
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1") // would refuse every request if used
	if hasIPv6(t) {
		v6 := startServer(t, "tcp6", "[::1]:0", false)
		tests = append(tests, struct {
			name    string
			opts    HTTPOptions
			wantErr string
			detail  string
		}{name: "IPv6 literal", opts: HTTPOptions{URL: v6.URL + "/ok", Contains: "good"}, detail: "200 " + strings.TrimPrefix(v6.URL, "http://") + "/ok"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := HTTP(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if tc.detail != "" && detail != tc.detail {
				t.Errorf("detail %q, want %q", detail, tc.detail)
			}
		})
	}
}

func TestHTTPContextDeadline(t *testing.T) {
	srv := startServer(t, "tcp4", "127.0.0.1:0", false)
	f, err := HTTP(HTTPOptions{URL: srv.URL + "/slow"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	wantResult(t, f(ctx), "timeout (deadline of the check)")
}

func TestHTTPTLS(t *testing.T) {
	srv := startServer(t, "tcp4", "127.0.0.1:0", true)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		opts    HTTPOptions
		wantErr string
	}{
		{"unknown authority", HTTPOptions{URL: srv.URL + "/ok"}, "certificate"},
		{"insecure", HTTPOptions{URL: srv.URL + "/ok", Insecure: true}, ""},
		{"CA file", HTTPOptions{URL: srv.URL + "/ok", CAFile: caFile, Contains: "good"}, ""},
		{"CA file, wrong server name", HTTPOptions{URL: srv.URL + "/ok", CAFile: caFile, ServerName: "other.test"}, "other.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := HTTP(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
		})
	}
	if _, err := HTTP(HTTPOptions{URL: srv.URL, CAFile: filepath.Join(t.TempDir(), "none.pem")}); err == nil {
		t.Error("missing CA file accepted")
	}
	if _, err := HTTP(HTTPOptions{URL: srv.URL, CAFile: "/dev/null"}); err == nil {
		t.Error("empty CA file accepted")
	}
	if _, err := HTTP(HTTPOptions{URL: srv.URL, CertFile: caFile}); err == nil {
		t.Error("certificate without key accepted")
	}
}

// The proxy variables are read once per process by net/http, so each case runs in a child.
const httpHelperEnv = "VITALS_CHECKS_HTTP_HELPER"

func TestHTTPHelperProcess(t *testing.T) {
	url, ok := os.LookupEnv(httpHelperEnv)
	if !ok {
		return
	}
	f, err := HTTP(HTTPOptions{URL: url, Proxy: os.Getenv("USE_PROXY") == "1", Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println("invalid", err)
		os.Exit(0)
	}
	var o Observation
	if err := f(WithObservation(context.Background(), &o)); err != nil {
		fmt.Println("error", err)
	} else {
		fmt.Println("ok", o.Detail)
	}
	os.Exit(0)
}

func TestHTTPProxyEnvironment(t *testing.T) {
	target := "http://vitals-test.invalid/health" // resolves nowhere: only a proxy can answer
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"proxies off by default", []string{"HTTP_PROXY=$P"}, "error vitals-test.invalid/health: "},
		{"proxy when asked", []string{"USE_PROXY=1", "HTTP_PROXY=$P"}, "ok 200 vitals-test.invalid/health"},
		{"lower-case http_proxy", []string{"USE_PROXY=1", "http_proxy=$P"}, "ok 200"},
		{"NO_PROXY honoured", []string{"USE_PROXY=1", "HTTP_PROXY=$P", "NO_PROXY=vitals-test.invalid"}, "error vitals-test.invalid/health: "},
		{"no_proxy domain suffix honoured", []string{"USE_PROXY=1", "http_proxy=$P", "no_proxy=localhost,.invalid"}, "error vitals-test.invalid/health: "},
		{"no_proxy for another host", []string{"USE_PROXY=1", "HTTP_PROXY=$P", "NO_PROXY=example.test"}, "ok 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the direct cases wait for a DNS answer
			var proxied atomic.Int32
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				proxied.Add(1)
				fmt.Fprintln(w, "via proxy")
			}))
			defer proxy.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPHelperProcess$")
			cmd.Env = []string{httpHelperEnv + "=" + target, "PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0"}
			for _, e := range tc.env {
				cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "$P", proxy.URL))
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper: %v: %s", err, out)
			}
			if !strings.HasPrefix(string(out), tc.want) {
				t.Errorf("got %q, want prefix %q", out, tc.want)
			}
			if viaProxy := proxied.Load() > 0; viaProxy != strings.HasPrefix(tc.want, "ok") {
				t.Errorf("proxy saw %d requests", proxied.Load())
			}
		})
	}
}

func TestHTTPInvalidOptions(t *testing.T) {
	for _, o := range []HTTPOptions{
		{}, {URL: "ftp://x/"}, {URL: "http://"}, {URL: "http://[::1"}, {URL: "http://x/", Method: "POST"},
		{URL: "http://x/", StatusMin: 500, StatusMax: 400}, {URL: "http://x/", StatusMin: 99, StatusMax: 200},
		{URL: "http://x/", Method: "HEAD", Contains: "ok"}, {URL: "http://x/", Timeout: -1},
	} {
		if _, err := HTTP(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestParseStatusRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"200", 200, 200, true}, {"200-399", 200, 399, true}, {"2xx", 200, 299, true}, {"5XX", 500, 599, true},
		{" 204 ", 204, 204, true}, {"399-200", 0, 0, false}, {"600", 0, 0, false}, {"abc", 0, 0, false},
		{"200-", 0, 0, false}, {"6xx", 0, 0, false}, {"", 0, 0, false},
	} {
		lo, hi, err := ParseStatusRange(tc.in)
		if (err == nil) != tc.ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("ParseStatusRange(%q) = %d, %d, %v", tc.in, lo, hi, err)
		}
	}
}
