package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/canary"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
	"github.com/vitalsproject/vitals/netprobe"
)

// startCanaryLink runs a CanaryLink on a socket in a fresh directory until the test ends.
func startCanaryLink(t *testing.T) *CanaryLink {
	t.Helper()
	l := &CanaryLink{Path: filepath.Join(testenv.ShortDir(t, "vcan"), "canary.sock"), HelloTimeout: time.Second}
	if err := l.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// TestCanaryLink: the agent's end and a real canary (package canary) over the unix socket. Probes
// run in the canary; without a canary there is nothing to probe from; a second canary waits while the
// first answers, and takes over when it goes.
func TestCanaryLink(t *testing.T) {
	l := startCanaryLink(t)
	ctx := context.Background()
	if _, err := l.probe(ctx, []netprobe.Probe{{TCP: "127.0.0.1:1"}}); err != netprobe.NoCanary {
		t.Fatalf("probe without a canary: %v", err)
	}
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	go canary.Serve(cctx, target)
	runCanary := func(ip string) context.CancelFunc {
		c, cancel := context.WithCancel(cctx)
		go canary.Link(c, canary.Options{Socket: l.Path, Hello: canary.Hello{Pod: "vitals/c", PodIP: ip}, MinBackoff: 10 * time.Millisecond})
		return cancel
	}
	stop1 := runCanary("10.1.0.5")
	waitFor(t, "the canary linked", func() bool { h, ok := l.Canary(); return ok && h.PodIP == "10.1.0.5" })
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	errs, err := l.probe(pctx, []netprobe.Probe{{TCP: target.Addr().String()}, {TCP: "127.0.0.1:1"}})
	cancel()
	if err != nil || errs[0] != nil || errs[1] != netprobe.Refused {
		t.Fatalf("probe = %v, %v", errs, err)
	}
	stop2 := runCanary("10.1.0.6")
	defer stop2()
	time.Sleep(100 * time.Millisecond) // the second one tries a few times
	if h, _ := l.Canary(); h.PodIP != "10.1.0.5" {
		t.Fatalf("the linked canary that answers was replaced by %s", h.PodIP)
	}
	stop1()
	waitFor(t, "the second canary linked once the first left", func() bool { h, ok := l.Canary(); return ok && h.PodIP == "10.1.0.6" })
	stop2()
	waitFor(t, "the canary gone", func() bool { _, ok := l.Canary(); return !ok })
}

// TestCanaryLinkDistrustsItsCanary: a canary's answers are fixed words or "failed"; a wrong hello or
// no hello is disconnected; a canary that does not answer in time is "did not answer".
func TestCanaryLinkDistrustsItsCanary(t *testing.T) {
	l := startCanaryLink(t)
	dial := func(hello string) (net.Conn, *bufio.Scanner) {
		c, err := net.Dial("unix", l.Path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if hello != "" {
			if _, err := c.Write([]byte(hello + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		sc := bufio.NewScanner(c)
		sc.Buffer(nil, canary.MaxLine)
		return c, sc
	}
	// A hello of another version is refused: the connection is closed.
	c, sc := dial(`{"version":99}`)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if sc.Scan() {
		t.Fatalf("a canary of version 99 was sent %s", sc.Bytes())
	}
	// No hello at all: closed after the hello timeout.
	c, sc = dial("")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if sc.Scan() {
		t.Fatal("a silent connection was sent a request")
	}
	// A hostile canary answers with text of its own.
	c, sc = dial(`{"version":1,"podIP":"10.1.0.9"}`)
	waitFor(t, "the canary linked", func() bool { h, ok := l.Canary(); return ok && h.PodIP == "10.1.0.9" })
	go func() {
		for sc.Scan() {
			var req canary.Request
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			resp := canary.Response{ID: req.ID, Results: []string{"evil.attacker.example answered", "timed out"}}
			if req.Probes[0].TCP == "127.0.0.1:3" {
				continue // never answered
			}
			b, _ := json.Marshal(resp)
			_, _ = c.Write(append(b, '\n'))
		}
	}()
	pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	errs, err := l.probe(pctx, []netprobe.Probe{{TCP: "127.0.0.1:1"}, {TCP: "127.0.0.1:2"}})
	cancel()
	if err != nil || errs[0] != netprobe.Failed || errs[1] != netprobe.TimedOut {
		t.Fatalf("probe = %v, %v", errs, err)
	}
	pctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err = l.probe(pctx, []netprobe.Probe{{TCP: "127.0.0.1:3"}})
	cancel()
	if err != netprobe.CanaryUnavailable {
		t.Fatalf("a canary that does not answer: %v", err)
	}
	// It left a request unanswered: another canary may take its place.
	dial(`{"version":1,"podIP":"10.1.0.10"}`)
	waitFor(t, "a canary that answers replaced it", func() bool { h, ok := l.Canary(); return ok && h.PodIP == "10.1.0.10" })
}

// TestCanaryLinkAdmitsTheChartsCanary: the chart's socket (0660, root:root) admits its canary, a
// non-root user of group 0, and refuses the same user in another group; at 0600 only root.
func TestCanaryLinkAdmitsTheChartsCanary(t *testing.T) {
	if os.Geteuid() != 0 || os.Getegid() != 0 {
		prereq.Missing(t, "needs root: connects as other users")
	}
	// The system interpreter: one under root's home is not executable by others.
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		prereq.Missing(t, "needs python3 to connect as another user")
	}
	hello := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"version":1,"podIP":"' + sys.argv[2].encode() + b'"}\n')
s.settimeout(2)
try:
    s.recv(1)
except Exception:
    pass`
	tests := []struct {
		name     string
		mode     os.FileMode
		uid, gid uint32
		linked   bool
	}{
		{"the chart's canary: user 65532, group 0, socket 0660", 0o660, 65532, 0, true},
		{"the same user in its own group", 0o660, 65532, 65532, false},
		{"a non-root canary at 0600", 0o600, 65532, 0, false},
		{"root at 0600", 0o600, 0, 0, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := testenv.ShortDir(t, "vcanp")
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			l := &CanaryLink{Path: filepath.Join(dir, "canary.sock"), Mode: tt.mode}
			if err := l.Listen(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { _ = l.Serve(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			ip := fmt.Sprintf("10.1.0.%d", i+1)
			cmd := exec.Command(python, "-c", hello, l.Path, ip)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tt.uid, Gid: tt.gid}}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Wait() }()
			linked := false
			for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end) && !linked; time.Sleep(10 * time.Millisecond) {
				h, ok := l.Canary()
				linked = ok && h.PodIP == ip
			}
			if linked != tt.linked {
				t.Errorf("linked = %v, want %v", linked, tt.linked)
			}
		})
	}
}
