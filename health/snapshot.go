package health

import (
	"slices"
	"sync/atomic"
	"time"
)

// Probe indexes used in per-probe arrays.
const (
	liveIdx = iota
	readyIdx
	startIdx
	numProbes
)

var probeByIdx = [numProbes]Probe{Liveness, Readiness, Startup}

func probeIndex(p Probe) int {
	switch p {
	case Liveness:
		return liveIdx
	case Readiness:
		return readyIdx
	case Startup:
		return startIdx
	}
	return -1
}

// entry is anything that produces a Result: a check, a component or a budget.
type entry interface {
	base() *entryBase
	// evaluate returns the entry's state at now.
	evaluate(now time.Time) eval
}

// entryBase holds what every entry shares. The listener fields are guarded by Manager.mu.
type entryBase struct {
	name     string
	kind     Kind
	probes   Probe
	severity Severity
	metrics  *entryMetrics

	notified    Status
	notifiedAt  time.Time
	notifiedSet bool
}

func (b *entryBase) base() *entryBase { return b }

// eval is the state of one entry at one instant.
type eval struct {
	r Result
	// changesAt is the next instant at which the evaluation may change without any event (zero:
	// never).
	changesAt time.Time
	// grace: within the start period, so not a liveness or startup failure.
	grace bool
	// graceWhy explains the grace (shown with details).
	graceWhy string
}

// snapEntry is one entry's state in a snapshot with its per-probe verdict.
type snapEntry struct {
	Result
	reason string
	// fails[i]: fails probe i.
	fails [numProbes]bool
	// excused[i]: not OK, but does not fail probe i (degraded, start period, drain); why says so.
	excused [numProbes]string
}

// snapshot is an immutable view of every entry at one instant, plus rendered responses filled in
// lazily by the HTTP handlers.
type snapshot struct {
	gen     uint64
	built   time.Time
	expires time.Time // earliest instant a verdict may change without an event; zero: never
	valid   time.Time // until when the request path serves this snapshot
	entries []snapEntry
	index   map[string]int
	// metrics[i] is entries[i]'s metrics (nil entries without a registerer).
	metrics []*entryMetrics
	healthy [numProbes]bool
	// draining: readiness fails because of Drain.
	draining bool
	// anyProbe[i]: some entry feeds probe i.
	anyProbe [numProbes]bool

	rendered [2][numPaths][numForms]atomic.Pointer[response]
}

// current returns a snapshot valid at the clock's now, rebuilding it when it has expired or a
// change is pending.
func (m *Manager) current() *snapshot {
	s := m.snap.Load()
	if !m.dirty.Load() && (m.watched.Load() || m.clock.Now().Before(s.valid)) {
		return s
	}
	return m.refresh()
}

// refresh rebuilds the snapshot now and returns it.
func (m *Manager) refresh() *snapshot {
	m.mu.Lock()
	now := m.clock.Now()
	s := m.snap.Load()
	if s != nil && !m.dirty.Load() && now.Before(s.valid) && !s.built.After(now) {
		m.mu.Unlock()
		return s
	}
	ts := m.rebuildLocked(now)
	s = m.snap.Load()
	m.mu.Unlock()
	m.notify(ts)
	return s
}

// changed marks the snapshot out of date after an event and rebuilds it, so that the next probe
// sees the event. It calls the listeners for any transition.
func (m *Manager) changed() {
	m.dirty.Store(true)
	m.refresh()
}

// rebuildLocked evaluates every entry at now and publishes a new snapshot. It returns the
// transitions found, for the caller to pass to listeners once m.mu is released.
func (m *Manager) rebuildLocked(now time.Time) []Transition {
	m.dirty.Store(false)
	m.gen++
	s := &snapshot{
		gen:     m.gen,
		built:   now,
		entries: make([]snapEntry, len(m.entries)),
		index:   m.index,
		metrics: m.emetrics,
		healthy: [numProbes]bool{true, true, true},
	}
	drainStart, draining := m.drain.started()
	drainLiveUntil := time.Time{}
	if draining {
		s.draining = true
		s.healthy[readyIdx] = false
		drainLiveUntil = drainStart.Add(m.drainDelay)
		if now.Before(drainLiveUntil) {
			s.expires = drainLiveUntil
		}
	}
	if len(m.index) != len(m.entries) {
		// Names only get added: share one index between snapshots until the next registration.
		m.index = make(map[string]int, len(m.entries))
		for i, e := range m.entries {
			m.index[e.base().name] = i
		}
		s.index = m.index
	}
	var ts []Transition
	for i, e := range m.entries {
		b := e.base()
		ev := e.evaluate(now)
		r := ev.r
		r.Name, r.Kind, r.Probes, r.Severity = b.name, b.kind, b.probes, b.severity
		se := &s.entries[i]
		se.Result = r
		if r.Err != nil {
			se.reason = r.Err.Error()
		}
		if !ev.changesAt.IsZero() && (s.expires.IsZero() || ev.changesAt.Before(s.expires)) {
			s.expires = ev.changesAt
		}
		for pi, p := range probeByIdx {
			if r.Probes&p == 0 {
				continue
			}
			s.anyProbe[pi] = true
			if r.Status == StatusOK {
				continue
			}
			switch {
			case r.Severity == Degraded:
				se.excused[pi] = "degraded"
			case ev.grace && (p == Liveness || p == Startup):
				se.excused[pi] = ev.graceWhy
			case draining && p == Liveness && now.Before(drainLiveUntil):
				se.excused[pi] = "draining"
			default:
				se.fails[pi] = true
				s.healthy[pi] = false
			}
		}
		b.metrics.setStatus(r, se.fails)
		if !b.notifiedSet {
			b.notifiedSet, b.notified, b.notifiedAt = true, r.Status, now
			continue
		}
		if b.notified != r.Status {
			ts = append(ts, Transition{
				Name: b.name, Kind: b.kind, From: b.notified, To: r.Status, Result: r,
				Since: now.Sub(b.notifiedAt),
			})
			b.notified, b.notifiedAt = r.Status, now
		}
	}
	m.metrics.setProbes(s.healthy)
	s.valid = now.Add(maxSnapshotAge)
	if !s.expires.IsZero() && s.expires.Before(s.valid) {
		s.valid = s.expires
	}
	old := m.snap.Load()
	m.snap.Store(s)
	if m.started && !m.stopped && old != nil && s.valid.Before(old.valid) {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	return ts
}

// notify logs transitions and calls the listeners.
func (m *Manager) notify(ts []Transition) {
	for _, t := range ts {
		attrs := []any{"name", t.Name, "kind", string(t.Kind), "from", string(t.From), "to", string(t.To),
			"after", t.Since, "consecutiveFailures", t.Result.ConsecutiveFailures,
			"consecutiveSuccesses", t.Result.ConsecutiveSuccesses}
		if t.Result.Err != nil {
			attrs = append(attrs, "reason", t.Result.Err.Error())
		}
		if t.To == StatusOK {
			m.log.Info("health status changed", attrs...)
		} else {
			m.log.Warn("health status changed", attrs...)
		}
		for _, l := range m.listeners {
			l(t)
		}
	}
}

// exclusions is the ?exclude= set of one request.
type exclusions struct {
	names []string
	used  []bool
}

func newExclusions(names []string) *exclusions {
	if len(names) == 0 {
		return nil
	}
	return &exclusions{names: names, used: make([]bool, len(names))}
}

func (x *exclusions) has(name string) bool {
	if x == nil {
		return false
	}
	found := false
	for i, n := range x.names {
		if n == name {
			x.used[i] = true
			found = true
		}
	}
	return found
}

// unmatched returns the sorted, de-duplicated names that matched nothing.
func (x *exclusions) unmatched() []string {
	if x == nil {
		return nil
	}
	var out []string
	for i, n := range x.names {
		if !x.used[i] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
