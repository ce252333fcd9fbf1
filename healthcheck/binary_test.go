package healthcheck

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// These tests run the real command (cmd/healthcheck, built static) as Docker would.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func binary(t *testing.T) string {
	t.Helper()
	prereq.Short(t, "builds the command")
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "healthcheck-bin")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "healthcheck")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "github.com/vitalsproject/vitals/cmd/healthcheck")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestBinaryNeverDiesOfSIGPIPE(t *testing.T) {
	bin := binary(t)
	base := startHTTP(t, "tcp4", "127.0.0.1:0", serviceHandler())
	for _, tc := range []struct {
		args     []string
		wantCode int
	}{
		{[]string{"http", base + "/health"}, 0},
		{[]string{"http", base + "/broken"}, 1},
		{[]string{"http"}, 1},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // nobody reads: the line's write fails with EPIPE
		cmd := exec.Command(bin, tc.args...)
		cmd.Stdout = w
		cmd.Stderr = w
		err = cmd.Run()
		w.Close()
		code := cmd.ProcessState.ExitCode()
		if code != tc.wantCode {
			t.Errorf("%v with a closed pipe: exit %d (%v), want %d", tc.args, code, err, tc.wantCode)
		}
	}
}

func TestBinaryExitCodesAndOneLine(t *testing.T) {
	bin := binary(t)
	base := startHTTP(t, "tcp4", "127.0.0.1:0", serviceHandler())
	link := filepath.Join(t.TempDir(), "openstack-healthcheck")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "hc.yaml")
	if err := os.WriteFile(cfg, []byte("checks:\n  - [http, "+base+"/broken]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path     string
		args     []string
		env      []string
		wantCode int
		prefix   string
	}{
		{bin, []string{"http", base + "/health"}, nil, 0, "healthy: http 200"},
		{bin, []string{"http", base + "/broken"}, nil, 1, "unhealthy: http"},
		{bin, []string{"nonsense"}, nil, 1, "unhealthy: invalid check: unknown check"},
		{link, nil, []string{"HEALTHCHECK_CONFIG=" + cfg}, 1, "unhealthy: http"},
		{link, nil, []string{"HEALTHCHECK_CONFIG=" + cfg + ".missing"}, 1, "unhealthy: invalid check: read config"},
	} {
		cmd := exec.Command(tc.path, tc.args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tc.env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
			t.Errorf("%v: exit %d, want %d (%q)", tc.args, code, tc.wantCode, out)
		}
		if strings.Count(string(out), "\n") != 1 || !strings.HasPrefix(string(out), tc.prefix) {
			t.Errorf("%v: output %q, want one line starting %q", tc.args, out, tc.prefix)
		}
		if stderr.Len() > 0 {
			t.Errorf("stderr %q", stderr.String())
		}
	}
}

func TestBinaryProxyEnvironment(t *testing.T) {
	bin := binary(t)
	target := "http://vitals-test.invalid/health" // resolves nowhere: only a proxy can answer
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		prefix string
	}{
		{"proxy variables ignored by default", []string{"http_proxy=$P", "HTTP_PROXY=$P"}, nil, "unhealthy: http vitals-test.invalid/health: "},
		{"HEALTHCHECK_USE_PROXY", []string{"HEALTHCHECK_USE_PROXY=1", "http_proxy=$P"}, nil, "healthy: http 200 vitals-test.invalid/health"},
		{"--proxy", []string{"HTTP_PROXY=$P"}, []string{"--proxy"}, "healthy: http 200"},
		{"no_proxy honoured", []string{"HEALTHCHECK_USE_PROXY=yes", "http_proxy=$P", "no_proxy=.invalid"}, nil, "unhealthy: http vitals-test.invalid/health: "},
		{"NO_PROXY for other hosts", []string{"HEALTHCHECK_USE_PROXY=true", "HTTP_PROXY=$P", "NO_PROXY=example.test,10.0.0.0/8"}, nil, "healthy: http 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the direct cases wait for a DNS answer
			var proxied atomic.Int32
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				proxied.Add(1)
				fmt.Fprintln(w, "via proxy")
			}))
			defer proxy.Close()
			cmd := exec.Command(bin, append([]string{"http", target}, tc.args...)...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			for _, e := range tc.env {
				cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "$P", proxy.URL))
			}
			out, _ := cmd.Output()
			if !strings.HasPrefix(string(out), tc.prefix) {
				t.Errorf("got %q, want prefix %q", out, tc.prefix)
			}
			if (proxied.Load() > 0) != strings.HasPrefix(tc.prefix, "healthy") {
				t.Errorf("proxy saw %d requests", proxied.Load())
			}
		})
	}
}

// TestBinaryLinksOnlyTheStandardLibraryAndChecks guards the binary's diet: it runs in every
// container every few seconds, so client-go, gophercloud, Prometheus, cobra or a YAML library
// must never creep in (their package init alone costs more than the check).
func TestBinaryLinksOnlyTheStandardLibraryAndChecks(t *testing.T) {
	prereq.Short(t, "runs go list")
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/vitalsproject/vitals/cmd/healthcheck").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/vitalsproject/vitals/cmd/healthcheck":       true,
		"github.com/vitalsproject/vitals/healthcheck":           true,
		"github.com/vitalsproject/vitals/health/checks":         true,
		"github.com/vitalsproject/vitals/health/checktype":      true,
		"github.com/vitalsproject/vitals/internal/base/bounded": true,
		"github.com/vitalsproject/vitals/internal/base/version": true, // --version: the standard library only
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("cmd/healthcheck links %s", p)
		}
	}
}

// A config that is not a small regular file is an invalid check, answered at once: not a process that reads
// /dev/zero until the container's memory runs out, nor one that waits for ever on a named pipe. The command runs
// under a 512 MiB data limit (prlimit --data), so that a build without the bound fails here instead of
// taking the machine's memory, and is killed after a minute, so that a hang fails rather than blocks the run.
func TestBinaryConfigThatIsNotAFile(t *testing.T) {
	bin := binary(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) not found: %v", err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil { // 8 GiB of holes
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct{ path, says string }{
		{"/dev/zero", "not a regular file (a character device; expected a file)"},
		{"/dev/urandom", "not a regular file (a character device; expected a file)"},
		{fifo, "not a regular file (a named pipe; expected a file)"},
		{dir, "not a regular file (a directory; expected a file)"},
		{huge, "too large: 8 GiB (expected at most 1 MiB)"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, prlimit, "--data=536870912", bin)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HEALTHCHECK_CONFIG=" + tc.path}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, _ := cmd.Output()
			if ctx.Err() != nil {
				t.Fatalf("HEALTHCHECK_CONFIG=%s: still running after a minute (killed)", tc.path)
			}
			want := "unhealthy: invalid check: read config: " + tc.path + ": " + tc.says + "\n"
			if code := cmd.ProcessState.ExitCode(); code != 1 || string(out) != want {
				t.Fatalf("HEALTHCHECK_CONFIG=%s: exit %d, output %q (stderr %q); want exit 1 and %q", tc.path, code, out, stderr.String(), want)
			}
		})
	}
}
