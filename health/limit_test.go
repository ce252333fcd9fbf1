package health

import (
	"net"
	"net/http"
	"testing"
)

// fakeConn records Close and runs onClose; nothing else is called on it.
type fakeConn struct {
	net.Conn
	closed  bool
	onClose func()
}

func (c *fakeConn) Close() error {
	c.closed = true
	if c.onClose != nil {
		c.onClose()
	}
	return nil
}

// queueListener hands out queued connections.
type queueListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *queueListener) Accept() (net.Conn, error) { return <-l.conns, nil }

func TestLimitListenerEviction(t *testing.T) {
	// A step accepts a connection (accept: how many arrive, all refused but the last; the refusal of
	// the first moves connection conn to state), or moves connection conn to state; open lists which
	// connections are still open after the step, in arrival order.
	type step struct {
		accept int
		conn   int
		state  http.ConnState
		open   []bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"under the cap", []step{
			{accept: 1, open: []bool{true}},
			{accept: 1, open: []bool{true, true}},
		}},
		{"evicts the longest waiting", []step{
			{accept: 1},
			{accept: 1},
			{accept: 1, open: []bool{false, true, true}},
			{accept: 1, open: []bool{false, false, true, true}},
		}},
		{"a busy connection is kept", []step{
			{accept: 1},
			{accept: 1},
			{conn: 0, state: http.StateActive},
			{accept: 1, open: []bool{true, false, true}},
		}},
		// A connection idle after its answer goes before one still waiting for its first request,
		// however long that one has waited: under churn, the older new connection is the kubelet's
		// probe, its request not read yet, and the idle ones the flood's (issue 27).
		{"an idle connection goes before a new one", []step{
			{accept: 1},
			{accept: 1},
			{conn: 1, state: http.StateActive},
			{conn: 1, state: http.StateIdle},
			{accept: 1, open: []bool{true, false, true}},
		}},
		{"of idle connections, the longest idle goes", []step{
			{accept: 1},
			{accept: 1},
			{conn: 1, state: http.StateActive},
			{conn: 1, state: http.StateIdle},
			{conn: 0, state: http.StateActive},
			{conn: 0, state: http.StateIdle},
			{accept: 1, open: []bool{true, false, true}},
		}},
		{"idle again after a second request counts from then", []step{
			{accept: 1},
			{accept: 1},
			{conn: 0, state: http.StateActive},
			{conn: 0, state: http.StateIdle},
			{conn: 1, state: http.StateActive},
			{conn: 1, state: http.StateIdle},
			{conn: 0, state: http.StateActive},
			{conn: 0, state: http.StateIdle},
			{accept: 1, open: []bool{true, false, true}},
		}},
		{"a closed connection frees its slot", []step{
			{accept: 1},
			{accept: 1},
			{conn: 0, state: http.StateClosed},
			{accept: 1, open: []bool{true, true, true}},
		}},
		{"all busy: new ones are refused", []step{
			{accept: 1},
			{accept: 1},
			{conn: 0, state: http.StateActive},
			{conn: 1, state: http.StateActive},
			{accept: 2, conn: 1, state: http.StateClosed, open: []bool{true, true, false, true}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := &queueListener{conns: make(chan net.Conn, 8)}
			full := 0
			l := newLimitListener(base, 2, func(int) { full++ })
			var conns []*fakeConn
			for i, s := range tc.steps {
				if s.accept > 0 {
					for k := range s.accept {
						c := &fakeConn{}
						if k == 0 && s.accept > 1 {
							c.onClose = func() { l.track(conns[s.conn], s.state) }
						}
						conns = append(conns, c)
						base.conns <- c
					}
					c, err := l.Accept()
					if err != nil || c != conns[len(conns)-1] {
						t.Fatalf("step %d: Accept = %v, %v", i, c, err)
					}
					l.track(c, http.StateNew)
				} else {
					l.track(conns[s.conn], s.state)
				}
				for j, want := range s.open {
					if got := !conns[j].closed; got != want {
						t.Fatalf("step %d: connection %d open = %v, want %v", i, j, got, want)
					}
				}
				if held := l.open(); held > 2 {
					t.Fatalf("step %d: holds %d connections, cap 2", i, held)
				}
			}
			if full > 1 {
				t.Fatalf("onFull called %d times", full)
			}
		})
	}
}
