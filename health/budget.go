package health

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBudgetExhausted is wrapped by the reason of a tripped failure budget.
var ErrBudgetExhausted = errors.New("failure budget exhausted")

// BudgetMode selects how a failure budget counts.
type BudgetMode uint8

const (
	// Window: tripped when Limit failures happened within Window.
	Window BudgetMode = iota
	// Consecutive: tripped after Limit failures in a row; any success resets the count.
	Consecutive
)

func (b BudgetMode) String() string {
	if b == Consecutive {
		return "consecutive"
	}
	return "window"
}

// BudgetOptions configure a failure budget.
type BudgetOptions struct {
	Mode BudgetMode
	// Limit failures trip the budget (must be >= 1).
	Limit int
	// Window for Mode Window.
	Window time.Duration
	// Probes the budget feeds; zero means Liveness.
	Probes Probe
	// Severity: Critical by default.
	Severity Severity
}

// maxBudgetEvents bounds the timestamps a Window budget keeps beyond its limit.
const maxBudgetEvents = 4096

// Budget counts failure events, such as CNI ADD failures. Its methods are safe for concurrent use.
type Budget struct {
	entryBase
	m    *Manager
	opts BudgetOptions

	mu sync.Mutex
	// events: failure times within the window, oldest first (Window mode).
	events      []time.Time
	consecutive int
	successes   int
	lastErr     error
	lastFailure time.Time
	lastSuccess time.Time
	tripped     bool // as last evaluated or recorded
}

// Budget registers a failure budget.
func (m *Manager) Budget(name string, opts BudgetOptions) (*Budget, error) {
	if opts.Probes == 0 {
		opts.Probes = Liveness
	}
	switch {
	case opts.Limit < 1:
		return nil, fmt.Errorf("register budget %q: limit %d must be >= 1", name, opts.Limit)
	case opts.Mode == Window && opts.Window <= 0:
		return nil, fmt.Errorf("register budget %q: window mode needs a positive window", name)
	case opts.Mode > Consecutive:
		return nil, fmt.Errorf("register budget %q: unknown mode %d", name, opts.Mode)
	case opts.Probes&^AllProbes != 0 || opts.Severity > Degraded:
		return nil, fmt.Errorf("register budget %q: unknown probes or severity", name)
	}
	b := &Budget{
		entryBase: entryBase{name: name, kind: KindBudget, probes: opts.Probes, severity: opts.Severity},
		m:         m,
		opts:      opts,
	}
	m.mu.Lock()
	if err := m.checkNameLocked(KindBudget, name); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	m.addLocked(b)
	ts := m.rebuildLocked(m.clock.Now())
	m.mu.Unlock()
	m.notify(ts)
	return b, nil
}

// Failure records one failure event with its error.
func (b *Budget) Failure(err error) {
	if err == nil {
		err = errors.New("failure")
	}
	now := b.m.clock.Now()
	b.mu.Lock()
	b.lastErr = err
	b.lastFailure = now
	b.consecutive++
	b.successes = 0
	if b.opts.Mode == Window {
		b.pruneLocked(now)
		if len(b.events) >= maxBudgetEvents {
			b.events = append(b.events[:0], b.events[1:]...)
		}
		b.events = append(b.events, now)
	}
	changed := b.trippedLocked(now) != b.tripped
	b.mu.Unlock()
	if changed {
		b.m.changed()
	} else {
		// Counts are shown in JSON: let the next probe see them without a rebuild per event.
		b.m.dirty.Store(true)
	}
}

// Success records one success (resets a Consecutive budget).
func (b *Budget) Success() {
	now := b.m.clock.Now()
	b.mu.Lock()
	b.lastSuccess = now
	b.successes++
	reset := b.consecutive > 0
	b.consecutive = 0
	changed := b.trippedLocked(now) != b.tripped
	b.mu.Unlock()
	switch {
	case changed:
		b.m.changed()
	case reset && b.opts.Mode == Consecutive:
		// The count shown by probes dropped; other fields may lag by up to a second.
		b.m.dirty.Store(true)
	}
}

// Count returns the failures the budget currently holds.
func (b *Budget) Count() int {
	now := b.m.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.countLocked(now)
}

func (b *Budget) pruneLocked(now time.Time) {
	cut := now.Add(-b.opts.Window)
	i := 0
	for i < len(b.events) && !b.events[i].After(cut) {
		i++
	}
	if i > 0 {
		b.events = append(b.events[:0], b.events[i:]...)
	}
}

func (b *Budget) countLocked(now time.Time) int {
	if b.opts.Mode == Consecutive {
		return b.consecutive
	}
	b.pruneLocked(now)
	return len(b.events)
}

func (b *Budget) trippedLocked(now time.Time) bool {
	return b.countLocked(now) >= b.opts.Limit
}

func (b *Budget) evaluate(now time.Time) eval {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.countLocked(now)
	ev := eval{r: Result{
		Status:               StatusOK,
		LastRun:              later(b.lastFailure, b.lastSuccess),
		LastSuccess:          b.lastSuccess,
		LastFailure:          b.lastFailure,
		ConsecutiveFailures:  b.consecutive,
		ConsecutiveSuccesses: b.successes,
		Count:                n,
		LastErr:              b.lastErr,
	}}
	b.tripped = n >= b.opts.Limit
	if b.tripped {
		ev.r.Status = StatusFailed
		if b.opts.Mode == Window {
			ev.r.Err = fmt.Errorf("%w: %d failures within %s (limit %d), last: %w", ErrBudgetExhausted,
				n, b.opts.Window, b.opts.Limit, b.lastErr)
		} else {
			ev.r.Err = fmt.Errorf("%w: %d consecutive failures (limit %d), last: %w", ErrBudgetExhausted,
				n, b.opts.Limit, b.lastErr)
		}
	}
	if b.opts.Mode == Window && n > 0 {
		// The count drops when the oldest event leaves the window.
		ev.changesAt = b.events[0].Add(b.opts.Window).Add(time.Nanosecond)
	}
	return ev
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
