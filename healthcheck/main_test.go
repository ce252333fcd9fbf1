package healthcheck

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

func startHTTP(t *testing.T, network, addr string, h http.Handler) string {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		prereq.Missing(t, "listen %s %s: %v", network, addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func serviceHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "service broken", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("broken") {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "[+]ping ok\n[-]keystone failed: reason withheld\n[+]log ok\n[-]neutron failed: reason withheld\nreadyz check failed\n")
			return
		}
		fmt.Fprint(w, "[+]ping ok\nreadyz check passed\n")
	})
	return mux
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

const dur = `[0-9]+\.[0-9]+(ms|s)`

func TestMainLinesAndExitCodes(t *testing.T) {
	base := startHTTP(t, "tcp4", "127.0.0.1:0", serviceHandler())
	host := strings.TrimPrefix(base, "http://")
	dead := freeAddr(t)
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh")
	if err := os.WriteFile(fresh, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "healthcheck.yaml")
	if err := os.WriteFile(cfg, []byte("checks:\n  - http: "+base+"/health\n  - file: "+fresh+"\n    max_age: 1h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, []byte("checks:\n  - http: "+base+"/health\n    status: sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		argv     []string
		env      Env
		wantCode int
		wantLine string // a regular expression of the whole line
	}{
		{"http healthy", []string{"healthcheck", "http", base + "/health"}, env(), 0,
			`healthy: http 200 ` + host + `/health ` + dur},
		{"http refused", []string{"healthcheck", "http", "http://" + dead + "/health"}, env(), 1,
			`unhealthy: http ` + dead + `/health: connection refused`},
		{"http 503", []string{"healthcheck", "http", base + "/broken"}, env(), 1,
			`unhealthy: http ` + host + `/broken: status 503 \(want 200-399\): service broken`},
		{"http 503 accepted by --status", []string{"healthcheck", "http", base + "/broken", "--status", "503"}, env(), 0,
			`healthy: http 503 .*`},
		{"HEALTHCHECK_CURL_MAX_TIME", []string{"healthcheck", "http", base + "/slow"}, env("HEALTHCHECK_CURL_MAX_TIME", "0.2"), 1,
			`unhealthy: http ` + host + `/slow: timeout after 200ms`},
		{"--timeout beats the environment", []string{"healthcheck", "http", base + "/slow", "--timeout", "100ms"}, env("HEALTHCHECK_CURL_MAX_TIME", "5"), 1,
			`unhealthy: http .*timeout after 100ms`},
		{"HEALTHCHECK_USE_PROXY on, loopback still direct", []string{"healthcheck", "http", base + "/health"}, env("HEALTHCHECK_USE_PROXY", "1"), 0,
			`healthy: http 200 .*`},
		{"two checks, both pass", []string{"healthcheck", "http", base + "/health", "--", "file", fresh}, env(), 0,
			`healthy: http 200 ` + host + `/health ` + dur + `; file ` + fresh + ` age .* ` + dur},
		{"two checks, one fails: only the failure named", []string{"healthcheck", "http", base + "/health", "--", "file", filepath.Join(dir, "none")}, env(), 1,
			`unhealthy: file ` + dir + `/none: no such file`},
		{"vitals healthy", []string{"healthcheck", "vitals", base + "/readyz?verbose"}, env(), 0,
			`healthy: vitals 200 ` + host + `/readyz ` + dur},
		{"vitals names the failing checks", []string{"healthcheck", "vitals", base + "/readyz?verbose&broken"}, env(), 1,
			`unhealthy: vitals ` + host + `/readyz: status 500, failing: keystone, neutron`},
		{"vitals default URL", []string{"healthcheck", "vitals"}, env(), -1, `(un)?healthy: vitals .*127\.0\.0\.1:8080/readyz.*`},
		{"bad arguments", []string{"healthcheck", "http"}, env(), 1, `unhealthy: invalid check: http: expected URL`},
		{"no arguments and no config", []string{"healthcheck"}, env(), -1, `(unhealthy: invalid check: no check given and no config \(/etc/healthcheck.yaml or \$HEALTHCHECK_CONFIG\); try: healthcheck --help|(un)?healthy: .*)`},
		{"--config", []string{"healthcheck", "--config", cfg}, env(), 0, `healthy: http 200 .*; file .*`},
		{"--config=", []string{"healthcheck", "--config=" + cfg}, env(), 0, `healthy: http 200 .*; file .*`},
		{"--config without file", []string{"healthcheck", "--config"}, env(), 1, `unhealthy: invalid check: --config takes one FILE and nothing else`},
		{"bad config names file and line", []string{"healthcheck", "--config", badCfg}, env(), 1,
			`unhealthy: invalid check: ` + badCfg + `: line 2: http: status: status "sometimes": .*`},
		{"symlink name reads HEALTHCHECK_CONFIG", []string{"/openstack/healthcheck"}, env("HEALTHCHECK_CONFIG", cfg), 0, `healthy: http 200 .*; file .*`},
		{"plain name with HEALTHCHECK_CONFIG", []string{"/healthcheck"}, env("HEALTHCHECK_CONFIG", cfg), 0, `healthy: .*`},
		{"symlink, default path", []string{"/openstack/healthcheck"}, env(), -1, `(un)?healthy: .*`},
		{"symlink name with arguments", []string{"/openstack/healthcheck", "http", base + "/health"}, env(), 0, `healthy: http 200 .*`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), tc.argv, tc.env, &stdout, &stderr)
			out := stdout.String()
			if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
				t.Fatalf("want exactly one line, got %q", out)
			}
			line := strings.TrimSuffix(out, "\n")
			if !regexp.MustCompile(`^` + tc.wantLine + `$`).MatchString(line) {
				t.Errorf("line %q\nwant  %q", line, tc.wantLine)
			}
			if tc.wantCode >= 0 && code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if (code == 0) != strings.HasPrefix(line, "healthy: ") {
				t.Errorf("exit code %d with line %q", code, line)
			}
			if stderr.Len() != 0 {
				t.Errorf("stderr without HEALTHCHECK_DEBUG: %q", stderr.String())
			}
		})
	}
}

func TestMainIPv6(t *testing.T) {
	base := startHTTP(t, "tcp6", "[::1]:0", serviceHandler())
	var stdout bytes.Buffer
	code := Main(context.Background(), []string{"healthcheck", "http", base + "/health", "--contains", "ok"}, env(), &stdout, &bytes.Buffer{})
	if code != 0 || !strings.HasPrefix(stdout.String(), "healthy: http 200 [::1]:") {
		t.Errorf("%d %q", code, stdout.String())
	}
}

func TestMainDebugOnStderr(t *testing.T) {
	base := startHTTP(t, "tcp4", "127.0.0.1:0", serviceHandler())
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"healthcheck", "http", base + "/broken"}, env("HEALTHCHECK_DEBUG", "1"), &stdout, &stderr)
	if code != 1 || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("%d %q", code, stdout.String())
	}
	if !strings.Contains(stderr.String(), "healthcheck: http "+base+"/broken: FAILED after") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestMainHelp(t *testing.T) {
	var stdout bytes.Buffer
	if code := Main(context.Background(), []string{"healthcheck", "--help"}, env(), &stdout, &bytes.Buffer{}); code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(stdout.String(), "usage: healthcheck") {
		t.Errorf("%q", stdout.String())
	}
}

// TestMainWarnsOnceAboutOldSpellings: a deprecated flag still works and is named once on stderr,
// however often it is used; stdout keeps its one line.
func TestMainWarnsOnceAboutOldSpellings(t *testing.T) {
	url := startHTTP(t, "tcp", "127.0.0.1:0", serviceHandler())
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"healthcheck", "vitals", url + "/readyz", "--cacert", "/dev/null", "--", "vitals", url + "/readyz", "--cacert=/dev/null"},
		func(string) string { return "" }, &stdout, &stderr)
	// /dev/null is no CA file: the option was read (and the check is invalid).
	if code != 1 || !strings.Contains(stdout.String(), "read CA file: /dev/null: not a regular file") || strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"healthcheck", "memory", "-1", "--cg-path", "/x", "--", "memory", "-1", "--cg-path", "/y", "--rss"},
		func(string) string { return "" }, &stdout, &stderr)
	if code != 0 || !strings.HasPrefix(stdout.String(), "healthy: memory disabled") {
		t.Errorf("exit %d, stdout %q", code, stdout.String())
	}
	want := "healthcheck: warning: --cg-path is deprecated; use --cgroup-path\nhealthcheck: warning: --rss is deprecated; use --source rss\n"
	if stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
