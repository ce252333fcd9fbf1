package serve

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const serveHelperEnv = "VITALS_SERVE_HELPER_CONFIG"

// TestServeHelperProcess is not a test: run by TestServeReapsExecChildren as a process of its own,
// it serves the config named by serveHelperEnv until SIGTERM, as `vitals serve` does.
func TestServeHelperProcess(t *testing.T) {
	path := os.Getenv(serveHelperEnv)
	if path == "" {
		return
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, Options{Listener: ln, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

// pidIn waits for a pid written to path by a check's command.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	for i := 0; i < 1500; i++ {
		if b, err := os.ReadFile(path); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return 0
}

// state is the state letter of a process ('-' when it no longer exists).
func state(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return '-'
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return '?'
	}
	return b[i+2]
}

// Exec checks' commands whose children leave their process group with setsid are killed and
// reaped by vitals serve: the child of a command that exited, while serve runs; the child of a
// command in flight, when serve exits on SIGTERM. This test process is a subreaper itself, so
// that a process serve left behind comes here (running, or a zombie serve never reaped) instead
// of to init, and shows.
func TestServeReapsExecChildren(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	dir := t.TempDir()
	done, inflight := filepath.Join(dir, "done.pid"), filepath.Join(dir, "inflight.pid")
	cfgPath := filepath.Join(dir, "serve.yaml")
	cfg := `drain_delay: 100ms
shutdown_timeout: 1s
checks:
  - name: leaves-a-child
    type: exec
    command: ["/bin/sh", "-c", "setsid sleep 301 </dev/null >/dev/null 2>&1 & echo $! >` + done + `.tmp && mv ` + done + `.tmp ` + done + `"]
    interval: 1h
    timeout: 30s
  - name: in-flight
    type: exec
    command: ["/bin/sh", "-c", "setsid sleep 302 </dev/null >/dev/null 2>&1 & echo $! >` + inflight + `.tmp && mv ` + inflight + `.tmp ` + inflight + `; sleep 300"]
    interval: 1h
    timeout: 1m
`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(exe, "-test.run=^TestServeHelperProcess$")
	srv.Env = append(os.Environ(), serveHelperEnv+"="+cfgPath)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	var strays []int
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
		for _, pid := range strays {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_, _ = syscall.Wait4(pid, nil, 0, nil)
		}
	})
	a, b := pidIn(t, done), pidIn(t, inflight)
	strays = []int{a, b}

	// The child of the command that exited: reparented to serve, killed and reaped there.
	for i := 0; state(a) != '-'; i++ {
		if i > 1000 {
			t.Fatalf("pid %d, left by a finished exec check, is still there (state %c) while serve runs", a, state(a))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if s := state(b); s == '-' || s == 'Z' {
		t.Fatalf("pid %d of the check in flight already gone (state %c)", b, s)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- srv.Wait() }()
	select {
	case err := <-werr:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit on SIGTERM")
	}
	if s := state(b); s != '-' {
		t.Errorf("pid %d, the setsid child of the check in flight, outlived serve (state %c)", b, s)
	}
}

// A file given by mistake as the config (a one-line token, a list) is refused with its position,
// never echoed.
func TestLoadNeverEchoesAFileThatIsNoConfig(t *testing.T) {
	dir := t.TempDir()
	for i, body := range []string{
		"glpat-SECRETi43token0123456789\n",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJTRUNSRVQifQ.SECRETsig\n",
		"- SECRETi43\n",
	} {
		p := filepath.Join(dir, "token"+strconv.Itoa(i))
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil {
			t.Fatalf("%q accepted as a config", body)
		}
		if strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), p+":1: column 1: expected a mapping") {
			t.Errorf("error %q: want the position and what was expected, never the content", err)
		}
	}
}
