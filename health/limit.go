package health

import (
	"net"
	"net/http"

	"github.com/vitalsproject/vitals/internal/base/conncap"
)

// limitListener caps the connections a Server holds with a conncap.Cap, which makes room for a new
// connection (evicting idle, then silent ones) rather than refusing it: see conncap.Cap for the order
// and why. Only when every connection is busy in a handler (bounded by the write timeout) is the new
// one closed. The Server's ConnState hook keeps the states (track).
type limitListener struct {
	net.Listener
	cap *conncap.Cap
}

func newLimitListener(l net.Listener, max int, onFull func(int)) *limitListener {
	return &limitListener{Listener: l, cap: conncap.New(max, onFull)}
}

// Accept returns the next connection, evicting a waiting one when the cap is reached.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return c, err
		}
		if l.cap.Admit(c) {
			return c, nil
		}
		_ = c.Close() // every connection is busy: refuse this one
	}
}

// track is the http.Server's ConnState hook.
func (l *limitListener) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateActive:
		l.cap.Busy(c)
	case http.StateIdle:
		l.cap.Idle(c)
	case http.StateHijacked, http.StateClosed:
		l.cap.Release(c)
	}
}

// open returns the number of connections held.
func (l *limitListener) open() int { return l.cap.Open() }
