package e2e

// End-to-end scenario of `vitals serve`: build the real binary, start it from a real config file
// (examples/serve.yaml on a free port), probe it over HTTP, then SIGTERM it and watch the drain.

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// serveBuild builds cmd/vitals into a temporary directory of the test.
func serveBuild(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vitals")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/vitals")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/vitals: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type serveResp struct {
	code   int
	body   string
	header http.Header
}

func serveDo(t *testing.T, method, url string, hdr ...string) serveResp {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return serveResp{code: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return serveResp{code: resp.StatusCode, body: string(b), header: resp.Header}
}

func TestServeEndToEnd(t *testing.T) {
	parallel(t)
	prereq.Short(t, "end-to-end: builds and runs the vitals binary")
	root := opRepoRoot()
	bin := serveBuild(t, root)
	t.Run("bad config exits 2", func(t *testing.T) { serveBadConfig(t, bin) })

	example, err := os.ReadFile(filepath.Join(root, "examples", "serve.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(example), "8080", strconv.Itoa(port))), 0o600); err != nil {
		t.Fatal(err)
	}

	var logs lockedBuffer
	cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "json")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("vitals serve output:\n%s", logs.String())
		}
	})

	base := "http://127.0.0.1:" + strconv.Itoa(port)
	// Every check of the example passes on a plain machine: wait for readiness.
	deadline := time.Now().Add(30 * time.Second)
	// Ready, and every liveness-only check (memory, goroutines) has its first result: a liveness check
	// without one passes, but says "first result due".
	for serveDo(t, "GET", base+"/readyz").code != 200 || strings.Contains(serveDo(t, "GET", base+"/livez?verbose").body, "first result due") {
		select {
		case err := <-exited:
			t.Fatalf("vitals serve exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not 200 or a liveness check without a result within 30s: %s\n%s",
				serveDo(t, "GET", base+"/readyz?verbose").body, serveDo(t, "GET", base+"/livez?verbose").body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	tests := []struct {
		name     string
		method   string
		path     string
		hdr      []string
		code     int
		contains []string
	}{
		{"livez", "GET", "/livez", nil, 200, []string{"ok"}},
		{"healthz alias", "GET", "/healthz", nil, 200, []string{"ok"}},
		{"kuryr alive", "GET", "/alive", nil, 200, nil},
		{"kuryr ready", "GET", "/ready", nil, 200, nil},
		{"startupz", "GET", "/startupz", nil, 200, nil},
		{"readyz verbose", "GET", "/readyz?verbose", nil, 200, []string{"[+]tcp-self ok\n", "[+]http-self ok\n", "[+]port-" + strconv.Itoa(port) + " ok\n", "readyz check passed\n"}},
		{"livez verbose", "GET", "/livez?verbose", nil, 200, []string{"[+]goroutines ok\n", "[+]memory ok\n", "livez check passed\n"}},
		{"exclude unknown", "GET", "/readyz?verbose&exclude=nope", nil, 200, []string{"nope"}},
		{"sub-path", "GET", "/readyz/tcp-self", nil, 200, []string{"ok"}},
		{"sub-path unknown", "GET", "/readyz/nope", nil, 404, nil},
		{"json accept", "GET", "/readyz", []string{"Accept", "application/json"}, 200, []string{`"status":"ok"`, `"name":"tcp-self"`}},
		{"json format", "GET", "/livez?format=json", nil, 200, []string{`"name":"goroutines"`}},
		{"head", "HEAD", "/readyz", nil, 204, nil},
		{"metrics", "GET", "/metrics", nil, 200, []string{"vitals_health_check_status", `name="tcp-self"`, "go_goroutines"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := serveDo(t, tt.method, base+tt.path, tt.hdr...)
			if r.code != tt.code {
				t.Fatalf("%s %s: %d, want %d\n%s", tt.method, tt.path, r.code, tt.code, r.body)
			}
			for _, c := range tt.contains {
				if !strings.Contains(r.body, c) {
					t.Errorf("%s %s: body does not contain %q:\n%s", tt.method, tt.path, c, r.body)
				}
			}
		})
	}
	r := serveDo(t, "GET", base+"/readyz", "Accept", "application/json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(r.body), &doc); err != nil {
		t.Fatalf("JSON body: %v\n%s", err, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.Contains(ct, "application/json") {
		t.Errorf("JSON Content-Type %q", ct)
	}

	// SIGTERM: readiness fails at once, liveness holds for the 2s drain delay, then a clean exit.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for serveDo(t, "GET", base+"/readyz").code == 200 {
		if time.Now().After(deadline) {
			t.Fatal("readiness still passes after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := serveDo(t, "GET", base+"/livez"); r.code != 200 {
		t.Errorf("/livez during the drain: %d %s", r.code, r.body)
	}
	if r := serveDo(t, "HEAD", base+"/readyz"); r.code != 503 {
		t.Errorf("HEAD /readyz during the drain: %d, want 503", r.code)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("vitals serve exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("vitals serve did not exit after the drain")
	}
	out := logs.String()
	for _, want := range []string{`"msg":"serving health checks"`, `"msg":"draining: readiness fails now, liveness holds"`, `"msg":"stopped"`} {
		if !strings.Contains(out, want) {
			t.Errorf("logs do not contain %s:\n%s", want, out)
		}
	}
}

// serveBadConfig runs the real binary on a bad config: exit code 2, file:line in stderr.
func serveBadConfig(t *testing.T, bin string) {
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(cfg, []byte("checks:\n  - name: a\n    type: tcp\n    address: x:1\n    interval: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "serve", "--config", cfg).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want code 2\n%s", err, out)
	}
	if want := cfg + ":5: checks[0].interval: expected a duration"; !strings.Contains(string(out), want) {
		t.Errorf("output %q does not contain %q", out, want)
	}
}
