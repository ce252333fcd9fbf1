package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/cli"
)

// TestServeBadConfig runs `vitals serve` on bad configs: each must fail at start with exit code 2
// and name the file, line, field and what was expected.
func TestServeBadConfig(t *testing.T) {
	const goodCheck = "  - name: g\n    type: goroutines\n    max: 100\n"
	tests := []struct {
		name string
		yaml string
		args []string
		want string // expected in stderr, after "<file>:"
	}{
		{
			name: "unknown check type",
			yaml: "checks:\n  - name: a\n    type: htttp\n    url: http://x\n",
			want: `:3: checks[0].type: unknown check type "htttp" (expected one of: capability, exec, file, goroutines, http, kubernetes, listen, memory, port, process, socket, tcp, vitals)`,
		},
		{
			name: "bad duration",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 10\n    interval: 10\n",
			want: `:5: checks[0].interval: expected a duration with a unit, such as "10s"`,
		},
		{
			name: "bad drain delay",
			yaml: "drain_delay: soon\n" + "checks:\n" + goodCheck,
			want: `:1: drain_delay: expected a duration with a unit`,
		},
		{
			name: "missing field",
			yaml: "checks:\n  - name: a\n    type: tcp\n",
			want: `:2: checks[0].address: missing required field`,
		},
		{
			name: "missing type",
			yaml: "checks:\n  - name: a\n",
			want: `:2: checks[0].type: missing required field`,
		},
		{
			name: "missing checks",
			yaml: "listen: \":8080\"\n",
			want: `:1: checks: missing required field`,
		},
		{
			name: "duplicate names",
			yaml: "checks:\n" + goodCheck + "  - name: g\n    type: tcp\n    address: 127.0.0.1:1\n",
			want: `:5: checks[1].name: duplicate check name "g" (already used by checks[0])`,
		},
		{
			name: "bad listen port",
			yaml: "listen: \":70000\"\nchecks:\n" + goodCheck,
			want: `:1: listen: expected host:port with a port number (1-65535)`,
		},
		{
			name: "bad check port",
			yaml: "checks:\n  - name: p\n    type: port\n    ports: [8080, 0]\n",
			want: `:4: checks[0].ports[1]: expected a port number (1-65535), got "0"`,
		},
		{
			name: "bad --listen",
			yaml: "checks:\n" + goodCheck,
			args: []string{"--listen", "localhost"},
			want: `--listen: expected host:port`,
		},
		{
			name: "unknown field",
			yaml: "checks:\n  - name: a\n    type: tcp\n    adress: x:1\n",
			want: `:4: checks[0].adress: unknown field for a check of type "tcp" (expected one of: address, failure_threshold, interval, name, probes, severity, start_period, success_threshold, timeout, type)`,
		},
		{
			name: "unknown top-level field",
			yaml: "lisen: \":1\"\nchecks:\n" + goodCheck,
			want: `:1: lisen: unknown field (expected one of: checks, details,`,
		},
		{
			name: "bad probe",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 1\n    probes: [liveliness]\n",
			want: `:5: checks[0].probes: unknown probe "liveliness" (expected liveness, readiness or startup)`,
		},
		{
			name: "bad severity",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 1\n    severity: fatal\n",
			want: `:5: checks[0].severity: expected critical or degraded, got "fatal"`,
		},
		{
			name: "timeout above interval",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 1\n    interval: 1s\n    timeout: 2s\n",
			want: `:6: checks[0].timeout: expected at most the interval (1s), got 2s`,
		},
		{
			name: "interval below the floor",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 1\n    interval: 1ns\n",
			want: `:5: checks[0].interval: expected at least 100ms, got 1ns`,
		},
		{
			name: "timeout above the default interval",
			yaml: "checks:\n  - name: a\n    type: goroutines\n    max: 1\n    timeout: 30s\n",
			want: `:5: checks[0].timeout: expected at most the default interval (10s), got 30s`,
		},
		{
			name: "invalid parameter value",
			yaml: "checks:\n  - name: a\n    type: capability\n    capabilities: [NET_WIZARD]\n",
			want: `:2: checks[0]: invalid capability check:`,
		},
		{
			name: "bad name",
			yaml: "checks:\n  - name: a/b\n    type: goroutines\n    max: 1\n",
			want: `:2: checks[0].name: expected letters, digits`,
		},
		{
			name: "bad disable_by_file_paths",
			yaml: "disable_by_file_paths: [\"8080\"]\nchecks:\n" + goodCheck,
			want: `:1: disable_by_file_paths[0]: expected "port:path"`,
		},
		{
			name: "YAML syntax",
			yaml: "checks:\n  - name: a\n   type: x\n",
			want: `:1: invalid YAML: did not find expected '-' indicator`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "serve.yaml")
			if err := os.WriteFile(path, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"serve", "--config", path}, tt.args...)
			code := cli.Main(args, &stdout, &stderr)
			if code != cli.ExitConfig {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, cli.ExitConfig, stderr.String())
			}
			want := tt.want
			if strings.HasPrefix(want, ":") {
				want = path + want
			}
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr:\n%s\nwant it to contain:\n%s", stderr.String(), want)
			}
		})
	}
}

func TestServeUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no config", []string{"serve"}, "--config FILE is required"},
		{"missing file", []string{"serve", "--config", "/nonexistent/serve.yaml"}, "/nonexistent/serve.yaml: read config"},
		{"bad log level", []string{"serve", "--config", "x", "--log-level", "loud"}, "--log-level: expected"},
		{"unknown flag", []string{"serve", "--confg", "x"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := cli.Main(tt.args, &stdout, &stderr); code != cli.ExitConfig {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.want)
			}
		})
	}
}
