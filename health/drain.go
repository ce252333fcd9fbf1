package health

import (
	"errors"
	"sync"
	"time"
)

// ErrDraining is the reason readiness fails after Drain.
var ErrDraining = errors.New("draining")

// DrainName is the pseudo-check shown in readiness output while draining (as the apiserver's
// "shutdown" check).
const DrainName = "shutdown"

type drainState struct {
	mu sync.Mutex
	at time.Time
	on bool
	// shown: the snapshot published since shows the drain (readiness fails from then on).
	shown bool
	done  chan struct{}
}

func (d *drainState) started() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.at, d.on
}

// Drain starts a drain: readiness fails at once, liveness keeps passing for the drain delay.
// It returns a channel closed when the delay is over. Calling it again returns the same channel.
func (m *Manager) Drain() <-chan struct{} {
	d := &m.drain
	d.mu.Lock()
	if d.on {
		ch := d.done
		d.mu.Unlock()
		return ch
	}
	d.on = true
	d.at = m.clock.Now()
	d.done = make(chan struct{})
	ch := d.done
	d.mu.Unlock()
	m.log.Info("health drain started", "delay", m.drainDelay)
	m.changed()
	d.mu.Lock()
	d.shown = true
	d.mu.Unlock()
	if m.drainDelay <= 0 {
		close(ch)
		return ch
	}
	t := m.clock.NewTimer(m.drainDelay)
	go func() {
		<-t.C()
		close(ch)
		m.changed()
	}()
	return ch
}

// Draining reports whether Drain was called and its snapshot is published: from then on every probe
// sees readiness failing (a caller that sees Draining never reads a readiness from before the drain).
func (m *Manager) Draining() bool {
	d := &m.drain
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.shown
}
