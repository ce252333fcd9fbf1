package serve

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health"
)

func TestLoadExample(t *testing.T) {
	c, err := Load("../examples/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8080" || !c.Details || c.DrainDelay != 2*time.Second || !c.MetricsEnabled() {
		t.Errorf("config %+v", c)
	}
	seen := map[string]bool{}
	for _, ch := range c.HealthChecks() {
		if ch.Run == nil {
			t.Errorf("check %s has no body", ch.Name)
		}
		seen[ch.Name] = true
	}
	if len(seen) < 6 {
		t.Errorf("only %d checks", len(seen))
	}
}

// TestParseEveryType builds one check of every type from its minimal parameters.
func TestParseEveryType(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"kubernetes": "kubeconfig: " + kubeconfig,
		"http":       "url: http://127.0.0.1:1/livez\n    status: 200-299\n    headers: {X-A: b}",
		"tcp":        "address: 127.0.0.1:1",
		"port":       "ports: [8080]\n    listen: false\n    protocols: [tcp, udp]",
		"listen":     "ports: [8080]\n    process: x",
		"vitals":     "url: http://127.0.0.1:1/readyz",
		"socket":     "path: /run/x.sock\n    process: x",
		"process":    "process: kthreadd",
		"file":       "path: /etc/passwd\n    max_age: 1h",
		"exec":       "command: [\"true\"]\n    exit_code: 0",
		"capability": "capabilities: [NET_ADMIN]",
		"memory":     "limit_mib: -1\n    source: cgroup",
		"goroutines": "max: 10",
	}
	if len(tests) != len(TypeNames()) {
		t.Fatalf("test covers %d types, want %d", len(tests), len(TypeNames()))
	}
	for typ, params := range tests {
		t.Run(typ, func(t *testing.T) {
			in := "checks:\n  - name: c\n    type: " + typ + "\n    probes: [liveness, readiness]\n    interval: 2s\n    timeout: 1s\n    failure_threshold: 2\n    success_threshold: 2\n    start_period: 3s\n    severity: degraded\n    " + params + "\n"
			c, err := Parse("t.yaml", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			hc := c.HealthChecks()[0]
			want := health.Check{Name: "c", Probes: health.Liveness | health.Readiness, Interval: 2 * time.Second, Timeout: time.Second,
				FailureThreshold: 2, SuccessThreshold: 2, StartPeriod: 3 * time.Second, Severity: health.Degraded}
			got := hc
			got.Run = nil
			if !reflect.DeepEqual(got, want) || hc.Run == nil {
				t.Errorf("got %+v", hc)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse("t.yaml", []byte("checks:\n  - {name: g, type: goroutines, max: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || c.ShutdownTimeout != 10*time.Second || !c.MetricsEnabled() || c.Details {
		t.Errorf("defaults %+v", c)
	}
	if err := c.SetListen("[::1]:9000"); err != nil || c.Listen != "[::1]:9000" {
		t.Errorf("SetListen: %v", err)
	}
	var ce *config.Error
	if err := c.SetListen("9000"); !errors.As(err, &ce) || ce.Field != "--listen" {
		t.Errorf("SetListen(9000) = %v", err)
	}
}

func TestParseServerLimits(t *testing.T) {
	const checks = "checks:\n  - {name: g, type: goroutines, max: 5}\n"
	tests := []struct {
		name, in string
		check    func(*Config) bool
		wantErr  string
	}{
		{"absent: the server's defaults", "", func(c *Config) bool {
			return c.ReadHeaderTimeout == 0 && c.IdleTimeout == 0 && c.MaxConnections == 0
		}, ""},
		{"given", "read_header_timeout: 2s\nread_timeout: 3s\nwrite_timeout: 4s\nidle_timeout: 1m\nmax_header_bytes: 4096\nmax_connections: 32\n",
			func(c *Config) bool {
				return c.ReadHeaderTimeout == 2*time.Second && c.ReadTimeout == 3*time.Second && c.WriteTimeout == 4*time.Second &&
					c.IdleTimeout == time.Minute && c.MaxHeaderBytes == 4096 && c.MaxConnections == 32
			}, ""},
		{"negative timeout", "idle_timeout: -1s\n", nil, `t.yaml:1: idle_timeout: expected a positive duration, got a value of 3 bytes (not shown)`},
		{"negative drain delay", "listen: \":8080\"\ndrain_delay: -2s\n", nil, `t.yaml:2: drain_delay: expected a positive duration, got a value of 3 bytes (not shown)`},
		{"negative cap", "max_connections: -1\n", nil, "t.yaml:1: max_connections: expected a positive integer, got -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.in+checks))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("got %+v, %v", c, err)
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	in := `listen: nowhere
checks:
  - name: a
    type: nope
  - name: a
    type: tcp
    interval: 5
`
	_, err := Parse("t.yaml", []byte(in))
	es := config.Flatten(err)
	want := []string{
		`t.yaml:7: checks[1].interval: expected a duration`,
	}
	// Decoding errors come first; validation stops there. Fix, then:
	if len(es) != 1 || !strings.HasPrefix(es[0].Error(), want[0]) {
		t.Fatalf("got %v", err)
	}
	_, err = Parse("t.yaml", []byte(strings.Replace(in, "interval: 5", "address: x:1", 1)))
	es = config.Flatten(err)
	want = []string{
		`t.yaml:1: listen: expected host:port`,
		`t.yaml:4: checks[0].type: unknown check type "nope"`,
		`t.yaml:5: checks[1].name: duplicate check name "a"`,
	}
	if len(es) != len(want) {
		t.Fatalf("got %d errors:\n%v", len(es), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("error %d: %s, want prefix %s", i, es[i], w)
		}
	}
}

func TestRunServesAndDrains(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	in := `drain_delay: 300ms
shutdown_timeout: 2s
details: true
checks:
  - name: goroutines
    type: goroutines
    max: 10000
    probes: [liveness, readiness]
    interval: 100ms
  - name: tcp-self
    type: tcp
    address: "` + addr + `"
    interval: 100ms
    timeout: 50ms
`
	c, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { done <- Run(ctx, c, Options{Logger: log, Listener: ln}) }()

	base := "http://" + addr
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor(t, func() bool { code, _ := get("/readyz"); return code == 200 })
	if code, body := get("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]tcp-self ok") {
		t.Errorf("/readyz?verbose: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d", code)
	}
	// oslo.middleware's healthcheck application (package health/oslo), mounted beside the probes.
	if code, body := get("/healthcheck"); code != 200 || body != "OK\nOK" {
		t.Errorf("/healthcheck: %d %q, want 200 and one OK per readiness check", code, body)
	}

	cancel()
	// During the drain readiness fails and liveness passes.
	waitFor(t, func() bool { code, _ := get("/readyz"); return code != 200 })
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez during drain: %d", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the drain")
	}
}

func TestRunListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Parse("t.yaml", []byte("listen: \""+ln.Addr().String()+"\"\nchecks:\n  - {name: g, type: goroutines, max: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), c, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Fatalf("got %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func FuzzLoadServeConfig(f *testing.F) {
	if data, err := os.ReadFile("../examples/serve.yaml"); err == nil {
		f.Add(string(data))
	}
	f.Add("checks:\n  - {name: a, type: tcp, address: \"x:1\", interval: 1s}\n")
	f.Add("listen: \":0\"\nchecks: [{name: a, type: port, ports: [1, 70000]}]\n")
	f.Add("checks:\n  - name: a\n    type: http\n    url: http://x\n    status: 2xx\n")
	f.Add("checks: &a [*a]\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Parse("fuzz.yaml", []byte(in))
		if err != nil {
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
			for _, e := range config.Flatten(err) {
				if e.File != "fuzz.yaml" {
					t.Fatalf("error without the file: %v", e)
				}
			}
			return
		}
		for _, ch := range c.HealthChecks() {
			if ch.Run == nil || ch.Name == "" {
				t.Fatalf("valid config built an incomplete check: %+v", ch)
			}
		}
		if _, err := ListenPort(c.Listen); err != nil {
			t.Fatalf("valid config with a bad listen address %q", c.Listen)
		}
	})
}

// TestOldSpellingsAndDefaultsWarn: what older releases accepted still works, with one warning
// per occurrence naming file, line, field and what to write instead.
func TestOldSpellingsAndDefaultsWarn(t *testing.T) {
	in := `checks:
  - name: h
    type: http
    url: https://127.0.0.1:1/
    headers: {X-A: b}
  - name: p
    type: port
    ports: [8080]
  - name: m
    type: memory
    limit_mib: 512
    cg_path: /sys/fs/cgroup
`
	c, err := Parse("t.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"t.yaml:5: checks[0].headers: deprecated spelling; use header",
		"t.yaml:6: checks[1].listen: not given; keeping serve's former default true",
		"t.yaml:9: checks[2].source: not given; keeping serve's former default rss",
		"t.yaml:12: checks[2].cg_path: deprecated spelling; use cgroup_path",
	}
	if len(c.Warnings) != len(want) {
		t.Fatalf("warnings %q", c.Warnings)
	}
	for i, w := range want {
		if !strings.HasPrefix(c.Warnings[i], w) {
			t.Errorf("warning %q, want prefix %q", c.Warnings[i], w)
		}
	}
	if ex, err := Load("../examples/serve.yaml"); err != nil || len(ex.Warnings) > 0 {
		t.Errorf("the example warns: %v %q", err, ex.Warnings)
	}
}
