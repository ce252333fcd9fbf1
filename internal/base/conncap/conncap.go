package conncap

import (
	"net"
	"sync"
)

// Cap holds up to max connections. A server Admits each connection it accepts and tells the Cap when one
// is Busy (a request or report being handled), Idle (answered, waiting for another) and Released (closed).
//
// At the cap, a new connection evicts (closes), in this order:
//  1. the connection idle longest after an answer: it has had one, and closing it costs its client only
//     a reconnect;
//  2. the connection waiting longest for its first request with nothing of it in the kernel's receive
//     buffer (silent);
//  3. the connection waiting longest with its first request arriving.
//
// Only when every connection is busy is the new one refused. A listener that stops accepting at its cap
// instead leaves the next probe queued in the kernel behind whoever filled it.
//
// The order matters under churn: a client that connects, asks once and keeps its connection open,
// thousands of times a second, leaves behind connections that went idle after a probe was accepted but
// before its request was read; evicting by waiting time alone took the probe (issue 27: one liveness probe
// in 80 failed at 2,700 connections a second). And a probe's request is in the kernel's buffer as soon as
// it connects, a silent client's never: the kernel is asked (FIONREAD, once per connection until it says
// yes), so that a flood of silent connections does not evict a probe the server has not had the time to
// read.
type Cap struct {
	max    int           // 0: no cap
	onFull func(max int) // called the first time the cap is reached
	mu     sync.Mutex    // guards what follows
	conns  map[net.Conn]*slot
	seq    uint64 // orders slots by when they last started waiting
	full   bool
}

type slot struct {
	busy     bool   // a request is being handled
	served   bool   // a request was answered on it (it is idle, or busy again)
	arriving bool   // bytes of its first request were seen in the kernel's buffer
	seq      uint64 // when it last started waiting (admitted, or went idle)
}

// rank orders eviction: lower goes first.
func (s *slot) rank() int {
	switch {
	case s.served:
		return 0
	case !s.arriving:
		return 1
	}
	return 2
}

// New returns a Cap of max connections (0 or less: no cap). onFull, when set, is called the first time the
// cap is reached (to log it once).
func New(max int, onFull func(max int)) *Cap {
	return &Cap{max: max, onFull: onFull, conns: map[net.Conn]*slot{}}
}

// Admit takes c in. At the cap it closes the connection to evict (see Cap) and returns true, or returns false
// when every connection is busy: the caller then closes c.
func (p *Cap) Admit(c net.Conn) bool {
	if p.max <= 0 {
		return true
	}
	p.mu.Lock()
	var victim net.Conn
	first := false
	if len(p.conns) >= p.max {
		if victim = p.victimLocked(); victim == nil {
			p.mu.Unlock()
			return false
		}
		delete(p.conns, victim)
		first, p.full = !p.full, true
	}
	p.seq++
	p.conns[c] = &slot{seq: p.seq}
	p.mu.Unlock()
	if victim != nil {
		_ = victim.Close()
	}
	if first && p.onFull != nil {
		p.onFull(p.max)
	}
	return true
}

// victimLocked returns the connection to evict, nil when all are busy. A silent candidate is asked whether
// its request has begun to arrive; one that has is ranked again.
func (p *Cap) victimLocked() net.Conn {
	for {
		var (
			victim net.Conn
			best   *slot
		)
		for c, s := range p.conns {
			if s.busy {
				continue
			}
			if best == nil || s.rank() < best.rank() || (s.rank() == best.rank() && s.seq < best.seq) {
				victim, best = c, s
			}
		}
		if best == nil || best.rank() != 1 || !pending(victim) {
			return victim
		}
		best.arriving = true
	}
}

// Busy marks c as handling a request: it is not evicted until Idle.
func (p *Cap) Busy(c net.Conn) {
	p.update(c, func(s *slot) { s.busy = true })
}

// Idle marks c as answered and waiting for another request.
func (p *Cap) Idle(c net.Conn) {
	p.update(c, func(s *slot) {
		p.seq++
		s.busy, s.served, s.seq = false, true, p.seq
	})
}

// Release forgets c (closed, or taken over).
func (p *Cap) Release(c net.Conn) {
	if p.max <= 0 {
		return
	}
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Cap) update(c net.Conn, f func(*slot)) {
	if p.max <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.conns[c]; ok { // else evicted already
		f(s)
	}
}

// Max returns the cap (0: none).
func (p *Cap) Max() int { return p.max }

// Open returns the number of connections held.
func (p *Cap) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Holds reports whether c is held (admitted, neither evicted nor released).
func (p *Cap) Holds(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.conns[c]
	return ok
}

// Idling returns the number of connections idle after an answer.
func (p *Cap) Idling() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.conns {
		if s.served && !s.busy {
			n++
		}
	}
	return n
}
