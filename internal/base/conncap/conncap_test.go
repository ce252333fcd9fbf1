package conncap

import (
	"net"
	"testing"
	"time"
)

// TestCapKeepsARequestInTheKernel: with real sockets and nobody reading, a connection whose request waits
// in the kernel's buffer (a probe the server has not had the time to read) outlives silent ones that came
// after it, and a connection idle after its answer goes before both.
func TestCapKeepsARequestInTheKernel(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	p := New(2, nil)
	var all []net.Conn
	defer func() {
		for _, c := range all {
			c.Close()
		}
	}()
	accept := func(request string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if request != "" {
			if _, err := c.Write([]byte(request)); err != nil {
				t.Fatal(err)
			}
		}
		sc, err := tcp.Accept()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c, sc)
		for deadline := time.Now().Add(20 * time.Second); request != "" && !pending(sc); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the request never reached the server's kernel buffer")
			}
		}
		if !p.Admit(sc) {
			t.Fatal("refused, with no connection busy")
		}
		return sc
	}
	probe := accept("GET /livez HTTP/1.1\r\nHost: kubelet\r\n\r\n")
	silent := []net.Conn{accept(""), accept(""), accept("")}
	if !p.Holds(probe) || !p.Holds(silent[2]) || p.Open() != 2 {
		t.Fatalf("after a probe and three silent connections at a cap of 2: probe held %v, newest held %v, %d held; want the probe and the newest",
			p.Holds(probe), p.Holds(silent[2]), p.Open())
	}
	buf := make([]byte, 64)
	if n, err := probe.Read(buf); err != nil || n == 0 {
		t.Fatalf("probe's request: %d bytes, %v", n, err)
	}
	// Answered and idle now: the next newcomer evicts it, not the silent one.
	p.Busy(probe)
	p.Idle(probe)
	next := accept("")
	if p.Holds(probe) || !p.Holds(silent[2]) || !p.Holds(next) {
		t.Fatalf("after the probe went idle and another came: probe held %v, silent held %v, newcomer held %v; want the probe evicted",
			p.Holds(probe), p.Holds(silent[2]), p.Holds(next))
	}
}

// TestCapRefusesWhenAllBusy: busy connections are never evicted; the newcomer is refused, and admitted
// again once one is released.
func TestCapRefusesWhenAllBusy(t *testing.T) {
	p := New(2, nil)
	a, b, c := &conn{}, &conn{}, &conn{}
	for _, x := range []*conn{a, b} {
		if !p.Admit(x) {
			t.Fatal("refused under the cap")
		}
		p.Busy(x)
	}
	if p.Admit(c) || a.closed || b.closed {
		t.Fatalf("all busy: newcomer admitted or a busy one closed (a %v, b %v)", a.closed, b.closed)
	}
	p.Release(a)
	if !p.Admit(c) || p.Open() != 2 {
		t.Fatalf("after a release: not admitted, or %d held", p.Open())
	}
}

// TestCapOff: a cap of 0 holds everything and tracks nothing.
func TestCapOff(t *testing.T) {
	p := New(0, nil)
	for range 10 {
		if !p.Admit(&conn{}) {
			t.Fatal("refused without a cap")
		}
	}
	if p.Open() != 0 {
		t.Fatalf("tracks %d connections without a cap", p.Open())
	}
}

type conn struct {
	net.Conn
	closed bool
}

func (c *conn) Close() error { c.closed = true; return nil }
