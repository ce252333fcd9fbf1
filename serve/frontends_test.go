package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/healthcheck"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// TestSameCheckEveryFrontend gives each check as healthcheck arguments, as an item of the
// healthcheck YAML and as an entry of vitals serve's YAML, runs the three bodies against the
// same real targets (an HTTP server, sockets, files, processes, commands), once healthy and once
// not, and asserts that they behave identically: same verdict, same reason, same detail. The
// table covers every type that all three offer.
func TestSameCheckEveryFrontend(t *testing.T) {
	tmp := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("X-Probe") != "vitals" {
				http.Error(w, "no probe header", http.StatusBadRequest)
				return
			}
			fmt.Fprint(w, "all ok")
		case "/readyz":
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "[+]ping ok\n[-]db failed: reason withheld\nreadyz check failed\n")
		default:
			http.Error(w, "broken", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(host)
	const closed = "127.0.0.1:1" // port 1: nothing listens there
	_, closedPort, _ := net.SplitHostPort(closed)
	sock := filepath.Join(tmp, "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	heartbeat := filepath.Join(tmp, "heartbeat")
	if err := os.WriteFile(heartbeat, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour) // its age reads 0 in every run
	if err := os.Chtimes(heartbeat, future, future); err != nil {
		t.Fatal(err)
	}
	startNamed(t, "vitals-3way")

	type form struct {
		args   []string // healthcheck arguments
		hcYAML string   // one item of the healthcheck YAML's checks list
		serve  string   // the type's keys of a vitals serve entry (name, type and timeout are added)
	}
	tests := []struct {
		typ, name string
		form
	}{
		{"http", "healthy", form{words("http "+srv.URL+"/ok --status 200 --contains ok --timeout 2s --header", "X-Probe: vitals"),
			"http: " + srv.URL + "/ok\n    status: 200\n    contains: ok\n    header:\n      X-Probe: vitals\n    timeout: 2s",
			"url: " + srv.URL + "/ok\n    status: \"200\"\n    contains: ok\n    header: {X-Probe: vitals}"}},
		{"http", "unhealthy", form{words("http " + host + "/broken --timeout 2s"), "http: " + host + "/broken\n    timeout: 2s", "url: " + host + "/broken"}},
		{"vitals", "failing checks named", form{words("vitals " + srv.URL + "/readyz --timeout 2s"), "vitals: " + srv.URL + "/readyz\n    timeout: 2s", "url: " + srv.URL + "/readyz"}},
		{"vitals", "unreachable", form{words("vitals http://" + closed + "/readyz --timeout 2s"), "vitals: http://" + closed + "/readyz\n    timeout: 2s", "url: http://" + closed + "/readyz"}},
		{"tcp", "healthy", form{words("tcp " + host + " --timeout 2s"), "tcp: " + host + "\n    timeout: 2s", "address: " + host}},
		{"tcp", "refused", form{words("tcp " + closed + " --timeout 2s"), "tcp: " + closed + "\n    timeout: 2s", "address: " + closed}},
		{"port", "healthy", form{words("port --ports " + port + " --protocols tcp --timeout 2s"), "port:\n    ports: [" + port + "]\n    protocols: [tcp]\n    timeout: 2s", "ports: [" + port + "]\n    protocols: [tcp]\n    listen: false"}},
		{"port", "process holds none", form{words("port vitals-3way " + port + " --timeout 2s"), "port: vitals-3way\n    ports: " + port + "\n    timeout: 2s", "process: vitals-3way\n    ports: [" + port + "]\n    listen: false"}},
		{"listen", "healthy", form{words("listen --ports " + port + " --timeout 2s"), "listen:\n    ports: [" + port + "]\n    timeout: 2s", "ports: [" + port + "]"}},
		{"listen", "nothing listens", form{words("listen --ports " + closedPort + " --protocols udp --timeout 2s"), "listen:\n    ports: [" + closedPort + "]\n    protocols: [udp]\n    timeout: 2s", "ports: [" + closedPort + "]\n    protocols: [udp]"}},
		{"socket", "healthy", form{words("socket --path " + sock + " --timeout 2s"), "socket:\n    path: " + sock + "\n    timeout: 2s", "path: " + sock}},
		{"socket", "no socket", form{words("socket vitals-3way " + sock + " --timeout 2s"), "socket: [vitals-3way, " + sock + "]\n    timeout: 2s", "process: vitals-3way\n    path: " + sock}},
		{"process", "healthy", form{words("process vitals-3way --timeout 2s"), "process: vitals-3way\n    timeout: 2s", "process: vitals-3way"}},
		{"process", "absent", form{words("process vitals-absent --cmdline --timeout 2s"), "process: vitals-absent\n    cmdline: true\n    timeout: 2s", "process: vitals-absent\n    cmdline: true"}},
		{"file", "fresh", form{words("file " + heartbeat + " --max-age 1h --timeout 2s"), "file: " + heartbeat + "\n    max_age: 1h\n    timeout: 2s", "path: " + heartbeat + "\n    max_age: 1h"}},
		{"file", "missing", form{words("file " + heartbeat + ".gone --timeout 2s"), "file: " + heartbeat + ".gone\n    timeout: 2s", "path: " + heartbeat + ".gone"}},
		{"exec", "expected exit code", form{words("exec --exit-code 3 --timeout 2s sh -c", "echo fine; exit 3"), "exec: [sh, -c, 'echo fine; exit 3']\n    exit_code: 3\n    timeout: 2s", "command: [sh, -c, 'echo fine; exit 3']\n    exit_code: 3"}},
		{"exec", "failing with output", form{words("exec --timeout 2s --dir / sh -c", "echo db down; exit 1"), "exec: [sh, -c, 'echo db down; exit 1']\n    dir: /\n    timeout: 2s", "command: [sh, -c, 'echo db down; exit 1']\n    dir: /"}},
		{"exec", "killed at the timeout", form{words("exec --timeout 0.3 sleep 5"), "exec: [sleep, '5']\n    timeout: 300ms", "command: [sleep, \"5\"]"}},
		{"capability", "as this process", form{words("capability NET_ADMIN cap_chown --timeout 2s"), "capability: [NET_ADMIN, cap_chown]\n    timeout: 2s", "capabilities: [NET_ADMIN, cap_chown]"}},
		{"memory", "under a large limit", form{words("memory 1000000 --source cgroup --timeout 2s"), "memory: 1000000\n    source: cgroup\n    timeout: 2s", "limit_mib: 1000000\n    source: cgroup"}},
		{"memory", "over 1 MiB", form{words("memory 1 --source cgroup --timeout 2s"), "memory: 1\n    source: cgroup\n    timeout: 2s", "limit_mib: 1\n    source: cgroup"}},
	}

	covered := map[string]bool{}
	for _, tc := range tests {
		covered[tc.typ] = true
		t.Run(tc.typ+"/"+tc.name, func(t *testing.T) {
			timeout := 2 * time.Second
			if strings.Contains(tc.name, "timeout") {
				timeout = 300 * time.Millisecond
			}
			cs, err := healthcheck.ParseArgs(tc.args, noEnv)
			if err != nil {
				t.Fatalf("arguments: %v", err)
			}
			fromArgs := cs[0]
			cs, err = healthcheck.ParseConfig([]byte("checks:\n  - "+tc.hcYAML+"\n"), noEnv)
			if err != nil {
				t.Fatalf("healthcheck YAML: %v", err)
			}
			fromYAML := cs[0]
			cfg, err := Parse("serve.yaml", []byte(fmt.Sprintf("checks:\n  - name: c\n    type: %s\n    interval: 10s\n    timeout: %s\n    %s\n", tc.typ, timeout, tc.serve)))
			if err != nil {
				t.Fatalf("serve YAML: %v", err)
			}
			if len(cfg.Warnings) > 0 {
				t.Errorf("serve warnings: %v", cfg.Warnings)
			}
			fromServe := cfg.HealthChecks()[0]
			if fromServe.Timeout != timeout {
				t.Errorf("serve timeout %s, want %s", fromServe.Timeout, timeout)
			}
			for _, c := range []healthcheck.Check{fromArgs, fromYAML} {
				if c.Kind != tc.typ || len(c.Warnings) > 0 {
					t.Errorf("healthcheck check %s, warnings %v", c.Kind, c.Warnings)
				}
			}

			// The healthcheck runs its checks; serve's manager runs its bodies under the check's
			// timeout: do the same here.
			a := outcome(healthcheck.Run(context.Background(), []healthcheck.Check{fromArgs}, time.Now)[0])
			y := outcome(healthcheck.Run(context.Background(), []healthcheck.Check{fromYAML}, time.Now)[0])
			s := runBody(checks.Func(fromServe.Run), fromServe.Timeout)
			if a != y || a != s {
				t.Errorf("different behaviour:\n  arguments:        %s\n  healthcheck YAML: %s\n  serve YAML:       %s", a, y, s)
			}
			t.Logf("%s", a)
		})
	}
	for _, name := range healthcheck.Registry().Names() {
		if !covered[name] {
			t.Errorf("type %s, offered by the healthcheck and serve, is not in the table", name)
		}
		if !slices.Contains(TypeNames(), name) {
			t.Errorf("type %s is not offered by serve", name)
		}
	}
}

func noEnv(string) string { return "" }

// words splits s on spaces and appends tail, words that hold spaces.
func words(s string, tail ...string) []string { return append(strings.Fields(s), tail...) }

func outcome(r healthcheck.Result) string {
	if r.Err != nil {
		return normalize("fail: " + r.Err.Error())
	}
	return normalize("pass: " + r.Detail)
}

// normalize hides what changes between two runs of one check: measured amounts (memory in use).
func normalize(s string) string { return amount.ReplaceAllString(s, "#$1") }

var amount = regexp.MustCompile(`[0-9]+\.[0-9]+( MiB|/)`)

func runBody(f checks.Func, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var o checks.Observation
	if err := f(checks.WithObservation(ctx, &o)); err != nil {
		return normalize("fail: " + err.Error())
	}
	return normalize("pass: " + o.Detail)
}

// startNamed runs sleep under another name (a copy, so that the kernel names the process after
// it) until the test ends.
func startNamed(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		prereq.Missing(t, "no sleep command")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}
