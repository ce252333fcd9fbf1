package checks

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests start real processes: this test binary run again under another name (through a
// symlink, so that the kernel names the process after it) as a helper that opens the sockets it
// is told to and waits until its stdin closes.

const helperEnv = "VITALS_CHECKS_HELPER"

// TestHelperProcess is the helper's body; as a test it does nothing.
func TestHelperProcess(t *testing.T) {
	spec, ok := os.LookupEnv(helperEnv)
	if !ok {
		return
	}
	var addrs []string
	var keep []io.Closer
	for _, s := range strings.Split(spec, ";") {
		if s == "" {
			continue
		}
		kind, arg, _ := strings.Cut(s, "=")
		var addr string
		switch kind {
		case "tcp4", "tcp6", "unix":
			l, err := net.Listen(kind, arg)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(3)
			}
			keep, addr = append(keep, l), l.Addr().String()
		case "udp4", "udp6":
			c, err := net.ListenPacket(kind, arg)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(3)
			}
			keep, addr = append(keep, c), c.LocalAddr().String()
		case "dial":
			c, err := net.Dial("tcp", arg)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(3)
			}
			keep, addr = append(keep, c), c.LocalAddr().String()
		}
		addrs = append(addrs, addr)
	}
	fmt.Println("ready " + strings.Join(addrs, " "))
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range keep {
		_ = c.Close()
	}
	os.Exit(0)
}

type child struct {
	pid   int
	addrs []string // one per spec item, in order
}

// startChild runs the helper as a process named name with extra arguments, opening the sockets
// in spec ("tcp4=127.0.0.1:0;udp6=[::1]:0;unix=/path;dial=host:port").
func startChild(t *testing.T, name, spec string, args ...string) child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"="+spec, "GORACE=atexit_sleep_ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		t.Fatalf("helper %s did not start: %q %v", name, line, err)
	}
	return child{pid: cmd.Process.Pid, addrs: strings.Fields(strings.TrimPrefix(line, "ready"))}
}

// portOf returns the port of "host:port".
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(p, &n)
	return n
}

// freePort returns a TCP and UDP port that nothing on the machine held a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return portOf(t, l.Addr().String())
}

func hasIPv6(t *testing.T) bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Logf("no IPv6 loopback here: %v", err)
		return false
	}
	l.Close()
	return true
}
