package health

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ErrMissedDeadline is wrapped by the reason of a component that has not beaten within its deadline.
var ErrMissedDeadline = errors.New("missed heartbeat deadline")

// ComponentOptions configure a component.
type ComponentOptions struct {
	// Probes the component feeds; zero means Liveness.
	Probes Probe
	// Deadline: the component is dead if it has not beaten for this long (0: no deadline, only Fail).
	Deadline time.Duration
	// Latch: once dead, dead for good (Kuryr's behaviour). Off by default.
	Latch bool
	// Severity: Critical by default.
	Severity Severity
}

// Component is a heartbeat handle for a long-running part of a program (a controller loop, a watcher).
// Its methods are safe for concurrent use; Beat is cheap enough to call on every loop iteration.
type Component struct {
	entryBase
	m    *Manager
	opts ComponentOptions

	// lastBeat is the time of the last beat in Unix nanoseconds.
	lastBeat atomic.Int64
	beats    atomic.Int64
	// deadSeen: the published snapshot shows the component dead, so a beat must refresh it.
	deadSeen atomic.Bool
	// dead: latched dead; beats change nothing any more.
	dead atomic.Bool

	mu       sync.Mutex
	lastErr  error // last reason of death, kept after recovery
	err      error // reported failure, nil when alive
	failedAt time.Time
	fails    int
	latched  error // the reason it died, for good
}

// Component registers a component, alive from now on.
func (m *Manager) Component(name string, opts ComponentOptions) (*Component, error) {
	if opts.Probes == 0 {
		opts.Probes = Liveness
	}
	if opts.Deadline < 0 {
		return nil, fmt.Errorf("register component %q: deadline %s is negative", name, opts.Deadline)
	}
	if opts.Probes&^AllProbes != 0 || opts.Severity > Degraded {
		return nil, fmt.Errorf("register component %q: unknown probes or severity", name)
	}
	c := &Component{
		entryBase: entryBase{name: name, kind: KindComponent, probes: opts.Probes, severity: opts.Severity},
		m:         m,
		opts:      opts,
	}
	m.mu.Lock()
	if err := m.checkNameLocked(KindComponent, name); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	now := m.clock.Now()
	c.lastBeat.Store(now.UnixNano())
	m.addLocked(c)
	ts := m.rebuildLocked(now)
	m.mu.Unlock()
	m.notify(ts)
	return c, nil
}

// Beat records progress.
func (c *Component) Beat() {
	if c.dead.Load() {
		return
	}
	now := c.m.clock.Now()
	prev := c.lastBeat.Swap(now.UnixNano())
	c.beats.Add(1)
	if c.opts.Deadline > 0 && c.opts.Latch && now.Sub(time.Unix(0, prev)) > c.opts.Deadline {
		// The deadline passed unnoticed between two evaluations: a latched component stays dead.
		c.mu.Lock()
		if c.latched == nil {
			c.latched = fmt.Errorf("%w: no beat for %s (deadline %s)", ErrMissedDeadline,
				now.Sub(time.Unix(0, prev)).Round(time.Millisecond), c.opts.Deadline)
			c.failedAt = now
			c.dead.Store(true)
		}
		c.mu.Unlock()
		c.m.changed()
		return
	}
	if c.deadSeen.Load() {
		c.m.changed()
	}
}

// Fail marks the component dead with a reason.
func (c *Component) Fail(err error) {
	if err == nil {
		err = errors.New("failed")
	}
	now := c.m.clock.Now()
	c.mu.Lock()
	c.err = err
	c.lastErr = err
	c.failedAt = now
	c.fails++
	if c.opts.Latch && c.latched == nil {
		c.latched = err
		c.dead.Store(true)
	}
	c.mu.Unlock()
	c.m.changed()
}

// Recover marks a failed component alive again (no effect when latched). It counts as a beat.
func (c *Component) Recover() {
	c.mu.Lock()
	latched := c.latched != nil
	if !latched {
		c.err = nil
		c.fails = 0
	}
	c.mu.Unlock()
	if latched {
		return
	}
	c.lastBeat.Store(c.m.clock.Now().UnixNano())
	c.beats.Store(0)
	c.m.changed()
}

func (c *Component) evaluate(now time.Time) eval {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := time.Unix(0, c.lastBeat.Load())
	ev := eval{r: Result{
		Status:               StatusOK,
		LastRun:              last,
		LastSuccess:          last,
		LastFailure:          c.failedAt,
		ConsecutiveSuccesses: int(c.beats.Load()),
		ConsecutiveFailures:  c.fails,
	}}
	var reason error
	switch {
	case c.latched != nil:
		reason = c.latched
	case c.err != nil:
		reason = c.err
	case c.opts.Deadline > 0:
		deadline := last.Add(c.opts.Deadline)
		if now.After(deadline) {
			reason = fmt.Errorf("%w: no beat for %s (deadline %s)", ErrMissedDeadline,
				now.Sub(last).Round(time.Millisecond), c.opts.Deadline)
			ev.r.LastFailure = deadline
			if lag := c.m.lag.grace(now); lag > 0 && !now.After(deadline.Add(lag)) {
				// The process was scheduled late: liveness waits for the beat (see lagMeter).
				ev.grace, ev.graceWhy = true, "scheduling delay "+lag.Round(time.Millisecond).String()
				ev.changesAt = deadline.Add(lag).Add(time.Nanosecond)
			} else if c.opts.Latch {
				c.latched = reason
				c.failedAt = deadline
				c.dead.Store(true)
			}
		} else {
			ev.changesAt = deadline.Add(time.Nanosecond)
		}
	}
	if reason != nil {
		c.lastErr = reason
	}
	ev.r.LastErr = c.lastErr
	if reason != nil {
		ev.r.Status = StatusFailed
		ev.r.Err = reason
		if ev.r.ConsecutiveFailures == 0 {
			ev.r.ConsecutiveFailures = 1
		}
		ev.r.ConsecutiveSuccesses = 0
	}
	c.deadSeen.Store(reason != nil)
	return ev
}
