package agent

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// tally is a FailureCounter and Beater that records what it is told.
type tally struct {
	mu        sync.Mutex
	failures  []error
	successes int
	beats     int
	failed    error
}

func (t *tally) Failure(err error) { t.mu.Lock(); t.failures = append(t.failures, err); t.mu.Unlock() }
func (t *tally) Success()          { t.mu.Lock(); t.successes++; t.mu.Unlock() }
func (t *tally) Beat()             { t.mu.Lock(); t.beats++; t.mu.Unlock() }
func (t *tally) Fail(err error)    { t.mu.Lock(); t.failed = err; t.mu.Unlock() }
func (t *tally) Recover()          { t.mu.Lock(); t.failed = nil; t.mu.Unlock() }
func (t *tally) snapshot() (int, int, int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures), t.successes, t.beats, t.failed
}

// startSocket runs a socket server in a temporary directory until the test ends.
func startSocket(t *testing.T, rep Reporter, hb Beater) (*SocketServer, string) {
	t.Helper()
	// Unix socket paths are limited to 108 bytes; t.TempDir() can be longer.
	dir := testenv.ShortDir(t, "vitals-sock")
	path := filepath.Join(dir, "run", "cni.sock")
	s := &SocketServer{Path: path, Reporter: rep, Heartbeat: hb, BeatPeriod: 20 * time.Millisecond}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket file left behind: %v", err)
		}
	})
	return s, path
}

func TestSocketWithClient(t *testing.T) {
	budget := &tally{}
	rep := &BudgetReporter{Budget: budget}
	_, path := startSocket(t, rep, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	resps, err := cnireport.Send(ctx, path,
		Report{Op: OpAdd, Result: Failure, Pod: "default/web-1", Error: "no IP addresses available"},
		Report{Op: "add", Result: "FAILURE", Pod: "default/web-2", Count: 2},
		Report{Op: OpDel, Result: Failure, Pod: "default/web-1"},
		Report{Op: OpAdd, Result: Success, Pod: "default/web-3"},
	)
	if err != nil {
		t.Fatalf("Send: %v (%+v)", err, resps)
	}
	if len(resps) != 4 {
		t.Fatalf("responses = %+v", resps)
	}
	f, s, _, _ := budget.snapshot()
	if f != 3 || s != 1 {
		t.Fatalf("budget saw %d failures and %d successes, want 3 and 1", f, s)
	}
	if got := budget.failures[0].Error(); got != "CNI ADD failed for pod default/web-1 (from socket): no IP addresses available" {
		t.Errorf("failure error = %q", got)
	}
	if rep.Count(OpDel, Failure) != 1 || rep.Count(OpAdd, Failure) != 3 {
		t.Errorf("counts: del failures %d, add failures %d", rep.Count(OpDel, Failure), rep.Count(OpAdd, Failure))
	}
}

func TestSocketRejectsBadLines(t *testing.T) {
	budget := &tally{}
	_, path := startSocket(t, &BudgetReporter{Budget: budget}, nil)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	lines := []struct {
		send string
		want string
	}{
		{`{"op":"ADD","result":"failure","pod":"kube-system/coredns-1"}`, `{"ok":true}`},
		{`not json`, `invalid report: invalid character`},
		{`{"op":"ADD"}`, `result: missing`},
		{`{"op":"RESIZE","result":"success"}`, `op: \"RESIZE\"`},
		{`{"op":"ADD","result":"failure","pod":"no-namespace"}`, `expected \"namespace/name\"`},
		{`{"op":"ADD","result":"success","future":"field"}`, `{"ok":true}`},
		{"  \r", ""}, // blank lines are skipped without an answer
		{`{"op":"DEL","result":"success"}`, `{"ok":true}`},
	}
	r := bufio.NewReader(conn)
	for _, l := range lines {
		if _, err := conn.Write([]byte(l.send + "\n")); err != nil {
			t.Fatal(err)
		}
		if l.want == "" {
			continue
		}
		got, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("after %q: %v", l.send, err)
		}
		if !strings.Contains(got, l.want) {
			t.Errorf("answer to %q = %q, want it to contain %q", l.send, got, l.want)
		}
	}
	if f, s, _, _ := budget.snapshot(); f != 1 || s != 1 {
		t.Fatalf("budget saw %d failures and %d successes, want 1 and 1", f, s)
	}
}

func TestSocketLineTooLong(t *testing.T) {
	_, path := startSocket(t, &BudgetReporter{}, nil)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = conn.Write([]byte(`{"error":"` + strings.Repeat("x", MaxReportLine+10) + "\"}\n")) }()
	got, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(got, "longer than") {
		t.Fatalf("answer = %q", got)
	}
}

func TestSocketHeartbeat(t *testing.T) {
	hb := &tally{}
	_, path := startSocket(t, &BudgetReporter{}, hb)
	waitFor(t, "beats", func() bool { _, _, b, _ := hb.snapshot(); return b >= 2 })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "heartbeat failure", func() bool { _, _, _, f := hb.snapshot(); return f != nil })
	_, _, _, f := hb.snapshot()
	if !strings.Contains(f.Error(), "removed or replaced") {
		t.Errorf("failure = %v", f)
	}
}

func TestSocketRefusesLiveSocketAndReplacesStale(t *testing.T) {
	_, path := startSocket(t, &BudgetReporter{}, nil)
	second := &SocketServer{Path: path, Reporter: &BudgetReporter{}}
	if err := second.Listen(); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}

	dir := testenv.ShortDir(t, "vitals-sock")
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // leaves the file behind, as a crashed agent would
	s := &SocketServer{Path: stale, Reporter: &BudgetReporter{}}
	if err := s.Listen(); err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Serve(ctx); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if err := (&SocketServer{Path: file}).Listen(); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 10*time.Second, what, cond)
}

func waitForWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSocketIsRootOnly: the socket file is 0600, a world-writable directory is refused, and a peer
// that is neither root nor the agent's user is disconnected unread, even when the file's mode would let
// it in.
func TestSocketIsRootOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root: connects as another user")
	}
	// The system interpreter: one under root's home is not executable by nobody.
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		prereq.Missing(t, "needs python3 to connect as another user")
	}
	budget := &tally{}
	_, path := startSocket(t, &BudgetReporter{Budget: budget}, nil)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi.Mode(), err)
	}

	dir := testenv.ShortDir(t, "vitals-sock")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := (&SocketServer{Path: filepath.Join(dir, "cni.sock"), Reporter: &BudgetReporter{}}).Listen(); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Fatalf("Listen in a world-writable directory: %v", err)
	}
	if err := (&SocketServer{Path: filepath.Join(dir, "x.sock"), Mode: 0o666}).Listen(); err == nil || !strings.Contains(err.Error(), "expected 0600 or 0660") {
		t.Fatalf("Listen with mode 0666: %v", err)
	}

	// Loosen the file behind the server's back: the peer check still refuses nobody.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "run", "cni.sock")
	s := &SocketServer{Path: loose, Reporter: &BudgetReporter{Budget: budget}}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	if err := os.Chmod(loose, 0o666); err != nil {
		t.Fatal(err)
	}
	send := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"op":"ADD","result":"failure","pod":"a/b"}\n')
s.shutdown(socket.SHUT_WR)
sys.stdout.write(s.recv(4096).decode())`
	cmd := exec.Command(python, "-c", send, loose)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	// The agent closes the connection unread: the client sees an empty answer or a reset.
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), `"ok"`) {
		t.Errorf("nobody got an answer: %q", out)
	}
	if n, _, _, _ := budget.snapshot(); n != 0 {
		t.Errorf("a report from nobody was counted (%d failures)", n)
	}
	// Root is admitted.
	cmd = exec.Command(python, "-c", send, loose)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("client as root: %v %q", err, out)
	}
}

func TestSocketHeartbeatFailsWhenLoosened(t *testing.T) {
	hb := &tally{}
	_, path := startSocket(t, &BudgetReporter{}, hb)
	waitFor(t, "beats", func() bool { _, _, b, _ := hb.snapshot(); return b >= 1 })
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "heartbeat failure", func() bool { _, _, _, f := hb.snapshot(); return f != nil })
	if _, _, _, f := hb.snapshot(); !strings.Contains(f.Error(), "has mode 0666, not 0600") {
		t.Errorf("failure = %v", f)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "recovery", func() bool { _, _, _, f := hb.snapshot(); return f == nil })
}

// TestSocketConnectionFlood: connections that send nothing, four times the default cap, as a root process
// gone wrong (or an attacker with root) would open: the agent closes all but the cap's worth, and a CNI
// reporter that comes after them is still answered. Each connection costs the agent a goroutine and its
// buffers: 10,000 took it to 76 MB, above the chart's 64 Mi limit (the RSS is measured in
// docs/benchmarks.md, not asserted here).
func TestSocketConnectionFlood(t *testing.T) {
	const flood = 4 * DefaultSocketMaxConnections
	budget := &tally{}
	s, path := startSocket(t, &BudgetReporter{Budget: budget}, nil)
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range flood {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cnireport.Send(ctx, path, Report{Op: OpAdd, Result: Failure, Pod: "default/web-1", Error: "no IP addresses available"}); err != nil {
		t.Fatalf("a report after %d silent connections: %v", flood, err)
	}
	if f, _, _, _ := budget.snapshot(); f != 1 {
		t.Fatalf("budget saw %d failures, want 1", f)
	}
	// The server closes the evicted ones: count them from the client's side.
	var wg sync.WaitGroup
	var mu sync.Mutex
	closed := 0
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				closed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if want := flood - DefaultSocketMaxConnections + 1; closed < want {
		t.Errorf("the agent closed %d of %d silent connections, want at least %d (it holds %d, cap %d)", closed, flood, want, s.cap.Open(), DefaultSocketMaxConnections)
	}
	if held := s.cap.Open(); held > DefaultSocketMaxConnections {
		t.Errorf("the agent holds %d connections, cap %d", held, DefaultSocketMaxConnections)
	}
}
