package health

import (
	"net"
	"net/http"
	"sync"
)

// limitListener caps the connections a Server holds. Unlike a listener that stops accepting at
// its cap (which leaves the kubelet's next probe waiting in the kernel's queue behind the clients
// that filled it), it makes room: a new connection evicts the one that has waited longest without
// a request in progress, that is an idle keep-alive connection or one still sending its headers.
// Only when every connection is busy in a handler (bounded by the write timeout) is the new one
// closed. The Server's ConnState hook keeps the states (track).
type limitListener struct {
	net.Listener
	max    int           // 0: no cap
	onFull func(max int) // called the first time the cap is reached
	mu     sync.Mutex    // guards what follows
	conns  map[net.Conn]*connSlot
	seq    uint64 // orders slots by when they last started waiting
	full   bool
}

type connSlot struct {
	busy bool   // a request is being handled
	seq  uint64 // when it last started waiting (accepted, or went idle)
}

func newLimitListener(l net.Listener, max int, onFull func(int)) *limitListener {
	return &limitListener{Listener: l, max: max, onFull: onFull, conns: map[net.Conn]*connSlot{}}
}

// Accept returns the next connection, evicting a waiting one when the cap is reached.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.max <= 0 {
			return c, err
		}
		l.mu.Lock()
		var victim net.Conn
		first := false
		if len(l.conns) >= l.max {
			victim = l.longestWaitingLocked()
			if victim == nil {
				l.mu.Unlock()
				_ = c.Close() // every connection is busy: refuse this one
				continue
			}
			delete(l.conns, victim)
			first, l.full = !l.full, true
		}
		l.seq++
		l.conns[c] = &connSlot{seq: l.seq}
		l.mu.Unlock()
		if victim != nil {
			_ = victim.Close()
		}
		if first && l.onFull != nil {
			l.onFull(l.max)
		}
		return c, nil
	}
}

func (l *limitListener) longestWaitingLocked() net.Conn {
	var (
		victim net.Conn
		oldest uint64
	)
	for c, s := range l.conns {
		if !s.busy && (victim == nil || s.seq < oldest) {
			victim, oldest = c, s.seq
		}
	}
	return victim
}

// track is the http.Server's ConnState hook.
func (l *limitListener) track(c net.Conn, state http.ConnState) {
	if l.max <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.conns[c]
	if !ok {
		return // evicted already
	}
	switch state {
	case http.StateActive:
		s.busy = true
	case http.StateIdle:
		l.seq++
		s.busy, s.seq = false, l.seq
	case http.StateHijacked, http.StateClosed:
		delete(l.conns, c)
	}
}

// open returns the number of connections held.
func (l *limitListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
