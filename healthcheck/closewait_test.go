package healthcheck

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// A real half-closed connection: a process named like a service connected to a listener that
// closed its end at once, so that the process's socket stays in CLOSE_WAIT. On the command line
// (TripleO's healthcheck_port form) it counts; in a config file, where established is on by
// default, it does not; either way the option, given, wins.
func TestBinaryPortCloseWaitByForm(t *testing.T) {
	bin := binary(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		prereq.Missing(t, "bash, to hold a TCP connection: %v", err)
	}
	server, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := strconv.Itoa(server.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	name := "vhc-cw-" + strconv.Itoa(os.Getpid())
	link := filepath.Join(dir, name)
	if err := os.Symlink(bash, link); err != nil {
		t.Fatal(err)
	}
	svc := exec.Command(link, "-c", "exec 3<>/dev/tcp/127.0.0.1/"+port+"; sleep 60; exit 0")
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Process.Kill(); _ = svc.Wait() })
	select {
	case <-accepted:
	case <-time.After(30 * time.Second):
		t.Fatal("the service never connected")
	}
	// The FIN reaches the peer at once on loopback; wait until the command line form sees the
	// socket at all (the process must have its descriptor).
	cli := []string{"port", name, port, "--protocols", "tcp"}
	for i := 0; ; i++ {
		if code, _ := runBinary(t, bin, cli...); code == 0 {
			break
		}
		if i > 300 {
			t.Fatalf("%v never healthy", cli)
		}
		time.Sleep(20 * time.Millisecond)
	}
	config := func(extra string) string {
		p := filepath.Join(dir, "hc-"+strconv.Itoa(len(extra))+".yaml")
		body := "checks:\n  - port: " + name + "\n    ports: [" + port + "]\n    protocols: [tcp]\n" + extra
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{cli, 0},
		{append(append([]string{}, cli...), "--established"), 1},
		{[]string{"--config", config("")}, 1},
		{[]string{"--config", config("    established: false\n")}, 0},
	} {
		code, line := runBinary(t, bin, tc.args...)
		if code != tc.want {
			t.Errorf("%s: exit %d %q, want %d", strings.Join(tc.args, " "), code, line, tc.want)
		}
	}
}
