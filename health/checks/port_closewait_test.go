package checks

import (
	"net"
	"strconv"
	"testing"
	"time"
)

const tcpCloseWait = 0x08

// halfClosed starts a helper process named name connected to a listener of this process that
// closes its end at once: the helper's socket stays in CLOSE_WAIT (it never reads nor closes).
// It returns the listener's port once the kernel shows that state.
func halfClosed(t *testing.T, name string) (child, int) {
	t.Helper()
	server, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			c.Close() // FIN: the peer's socket goes to CLOSE_WAIT
		}
	}()
	port := portOf(t, server.Addr().String())
	c := startChild(t, name, "dial="+server.Addr().String())
	for i := 0; ; i++ {
		seen := false
		err := readInetSockets("", []string{"tcp"}, func(s inetSocket) int {
			if s.remote.Port() == uint16(port) && s.state == tcpCloseWait && s.inode != 0 {
				seen = true
				return stopAll
			}
			return nextSocket
		})
		if err != nil {
			t.Fatal(err)
		}
		if seen {
			return c, port
		}
		if i > 500 {
			t.Fatalf("no socket in CLOSE_WAIT towards port %d", port)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A connection the peer closed (CLOSE_WAIT) is no connection with Established; without it, it
// counts, as TripleO's healthcheck_port (ss -ntp) counts it.
func TestPortEstablishedRefusesCloseWait(t *testing.T) {
	c, port := halfClosed(t, "vitals-halfclosed")
	m := ProcessMatch{Name: "vitals-halfclosed"}
	strict, err := Port(PortOptions{Process: m, Ports: []int{port}, Protocols: []string{"tcp"}, Established: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, strict)
	wantResult(t, err, `process "vitals-halfclosed" (pid `+strconv.Itoa(c.pid)+") holds no socket on port "+strconv.Itoa(port))
	compat, err := Port(PortOptions{Process: m, Ports: []int{port}, Protocols: []string{"tcp"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, compat)
	wantResult(t, err, "")
}
