package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Option configures a Manager.
type Option func(*Manager)

// WithClock injects the clock (default: the real one).
func WithClock(c clock.WithTicker) Option { return func(m *Manager) { m.clock = c } }

// WithRand injects the randomness used for jitter (default: a source seeded at start).
func WithRand(r *rand.Rand) Option { return func(m *Manager) { m.rand = r } }

// WithLogger sets the logger for transitions and panics (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.log = l } }

// WithRegisterer registers the manager's Prometheus metrics there (default: none).
func WithRegisterer(r prometheus.Registerer) Option { return func(m *Manager) { m.registerer = r } }

// WithKubernetesMetricNames also exports kubernetes_healthcheck{name,type} and
// kubernetes_healthchecks_total{name,type,status}, counted as the apiserver counts them: per probe
// request and reported check, with the probe path as type (see metrics.go).
func WithKubernetesMetricNames() Option { return func(m *Manager) { m.k8sMetrics = true } }

// WithListener adds a listener called on every status transition.
func WithListener(l Listener) Option {
	return func(m *Manager) {
		if l != nil {
			m.listeners = append(m.listeners, l)
		}
	}
}

// WithLagGrace bounds the grace that liveness gives a stale result while the process itself is
// scheduled late (default DefaultLagGrace; 0 turns it off). The delay is measured on the real clock
// only; readiness never gets this grace.
func WithLagGrace(d time.Duration) Option { return func(m *Manager) { m.lag.max = max(d, 0) } }

// WithDrainDelay sets how long liveness keeps passing after Drain (default 0).
func WithDrainDelay(d time.Duration) Option { return func(m *Manager) { m.drainDelay = d } }

// Defaults of a Check's zero fields.
const (
	DefaultInterval = 10 * time.Second
	DefaultTimeout  = 5 * time.Second
)

// maxSnapshotAge bounds how long the request path trusts one snapshot even when no status can
// change, so that JSON timestamps (component heartbeats) stay fresh to about a second.
const maxSnapshotAge = time.Second

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Manager runs checks in the background and answers probes from their cached results.
//
// Every change of a result (a check run, a component failure, a budget event) rebuilds an immutable
// snapshot of all results and per-probe verdicts, published through an atomic pointer. Probes read
// the snapshot and the clock only; a snapshot carries the instant until which it is valid (the
// earliest staleness, heartbeat deadline, start-period end or budget expiry), after which the next
// reader rebuilds it.
type Manager struct {
	clock      clock.WithTicker
	rand       *rand.Rand
	randMu     sync.Mutex
	log        *slog.Logger
	registerer prometheus.Registerer
	k8sMetrics bool
	listeners  []Listener
	drainDelay time.Duration
	lag        *lagMeter

	metrics *metrics

	// mu guards the registry, the run state and snapshot rebuilds.
	mu      sync.Mutex
	entries []entry
	// emetrics[i] is entries[i]'s metrics, shared by snapshots (only appended to).
	emetrics []*entryMetrics
	names    map[string]struct{}
	index    map[string]int // name -> position in entries, shared by snapshots
	gen      uint64

	snap  atomic.Pointer[snapshot]
	dirty atomic.Bool
	// watched: the watcher goroutine runs on the real clock and rebuilds every snapshot when it
	// expires, so readers may trust the published snapshot without reading the clock (on this
	// machine's kind of VM a clock read costs more than the rest of a probe).
	watched atomic.Bool

	// Run state, set by Start.
	ctx     context.Context
	cancel  context.CancelFunc
	started bool
	stopped bool
	wg      sync.WaitGroup
	kick    chan struct{}

	drain drainState
}

// NewManager returns a manager with no checks.
func NewManager(opts ...Option) *Manager {
	m := &Manager{
		names: map[string]struct{}{},
		kick:  make(chan struct{}, 1),
		lag:   &lagMeter{max: DefaultLagGrace},
	}
	for _, o := range opts {
		o(m)
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	m.lag.clock = m.clock
	if m.rand == nil {
		m.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.metrics = newMetrics(m.registerer, m.k8sMetrics)
	m.mu.Lock()
	m.rebuildLocked(m.clock.Now())
	m.mu.Unlock()
	return m
}

// Register adds checks. It fails on an invalid or duplicate name, a nil Run, or bad durations.
// Checks registered after Start begin running at once.
func (m *Manager) Register(checks ...Check) error {
	prepared := make([]*checkEntry, 0, len(checks))
	seen := map[string]struct{}{}
	for _, c := range checks {
		if c.Probes == 0 {
			c.Probes = Readiness
		}
		if c.Interval == 0 {
			c.Interval = DefaultInterval
		}
		if c.Timeout == 0 {
			c.Timeout = min(DefaultTimeout, c.Interval)
		}
		if c.FailureThreshold == 0 {
			c.FailureThreshold = 1
		}
		if c.SuccessThreshold == 0 {
			c.SuccessThreshold = 1
		}
		if err := validateCheck(c); err != nil {
			return err
		}
		if _, dup := seen[c.Name]; dup {
			return fmt.Errorf("register check %q: %w", c.Name, ErrDuplicate)
		}
		seen[c.Name] = struct{}{}
		prepared = append(prepared, newCheckEntry(m, c))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range prepared {
		if _, dup := m.names[e.name]; dup {
			return fmt.Errorf("register check %q: %w", e.name, ErrDuplicate)
		}
	}
	for _, e := range prepared {
		m.addLocked(e)
		if m.started && !m.stopped {
			m.startCheckLocked(e)
		}
	}
	m.rebuildLocked(m.clock.Now())
	return nil
}

func validateCheck(c Check) error {
	var errs []error
	if !nameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("invalid name %q: expected [A-Za-z0-9_.-]+", c.Name))
	}
	if c.Run == nil {
		errs = append(errs, errors.New("run function is nil"))
	}
	if c.Probes&^AllProbes != 0 {
		errs = append(errs, fmt.Errorf("unknown probes %#x", uint8(c.Probes)))
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval %s is negative", c.Interval))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s is negative", c.Timeout))
	}
	if c.Timeout > c.Interval {
		errs = append(errs, fmt.Errorf("timeout %s is longer than interval %s", c.Timeout, c.Interval))
	}
	if c.StartPeriod < 0 {
		errs = append(errs, fmt.Errorf("start period %s is negative", c.StartPeriod))
	}
	if c.FailureThreshold < 0 || c.SuccessThreshold < 0 {
		errs = append(errs, errors.New("thresholds must be >= 1"))
	}
	if c.Severity > Degraded {
		errs = append(errs, fmt.Errorf("unknown severity %d", c.Severity))
	}
	if len(errs) > 0 {
		return fmt.Errorf("register check %q: %w", c.Name, errors.Join(errs...))
	}
	return nil
}

// MustRegister is Register that panics on error (for static wiring).
func (m *Manager) MustRegister(checks ...Check) {
	if err := m.Register(checks...); err != nil {
		panic(err)
	}
}

// addLocked appends a validated entry whose name is free.
func (m *Manager) addLocked(e entry) {
	b := e.base()
	m.names[b.name] = struct{}{}
	m.entries = append(m.entries, e)
	b.metrics = m.metrics.forEntry(b.name, b.kind, b.probes, b.severity)
	m.emetrics = append(m.emetrics, b.metrics)
}

// reserve checks a component's or budget's name.
func (m *Manager) checkNameLocked(kind Kind, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("register %s %q: invalid name: expected [A-Za-z0-9_.-]+", kind, name)
	}
	if _, dup := m.names[name]; dup {
		return fmt.Errorf("register %s %q: %w", kind, name, ErrDuplicate)
	}
	return nil
}

// Start runs every check in the background until ctx is done or Stop is called. It returns at once.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	m.ctx, m.cancel = context.WithCancel(ctx)
	for _, e := range m.entries {
		if c, ok := e.(*checkEntry); ok {
			m.startCheckLocked(c)
		}
	}
	m.wg.Add(1)
	go m.watch()
	m.rebuildLocked(m.clock.Now())
	if _, real := m.clock.(clock.RealClock); real {
		m.watched.Store(true)
		if m.lag.max > 0 {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.lag.run(m.ctx)
			}()
		}
	}
}

// Stop stops the checks and waits for their goroutines and for the runs in flight, each at most its
// timeout. A check function that ignores its context beyond its timeout may outlive Stop; its result is
// discarded.
func (m *Manager) Stop() {
	m.mu.Lock()
	if !m.started || m.stopped {
		m.stopped = true
		m.mu.Unlock()
		return
	}
	m.stopped = true
	m.watched.Store(false)
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
}

// watch rebuilds the snapshot when it expires, so that heartbeat deadlines, staleness and budget
// expiry produce transitions (listeners, logs, metrics) even when nobody probes.
func (m *Manager) watch() {
	defer m.wg.Done()
	defer m.watched.Store(false)
	for {
		s := m.snap.Load()
		d := s.valid.Sub(m.clock.Now())
		if d <= 0 {
			m.refresh()
			continue
		}
		t := m.clock.NewTimer(d)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return
		case <-m.kick:
		case <-t.C():
		}
		t.Stop()
		m.refresh()
	}
}

// Results returns a copy of every result, in registration order.
func (m *Manager) Results() []Result {
	s := m.current()
	out := make([]Result, len(s.entries))
	for i := range s.entries {
		out[i] = s.entries[i].Result
	}
	return out
}

// Result returns one result by name.
func (m *Manager) Result(name string) (Result, bool) {
	s := m.current()
	i, ok := s.index[name]
	if !ok {
		return Result{}, false
	}
	return s.entries[i].Result, true
}

// Report is the verdict of one probe.
type Report struct {
	Probe   Probe
	Healthy bool
	// Results feeding the probe (after exclusions), in registration order.
	Results []Result
	// Unmatched exclusions: names given to exclude that match nothing.
	Unmatched []string
	// Draining is true when readiness fails because of Drain.
	Draining bool
}

// Evaluate computes a probe's verdict now, leaving out the excluded names. p must be a single probe.
func (m *Manager) Evaluate(p Probe, exclude ...string) Report {
	s := m.current()
	pi := probeIndex(p)
	rep := Report{Probe: p, Healthy: true}
	if pi < 0 {
		rep.Healthy = false
		return rep
	}
	ex := newExclusions(exclude)
	for i := range s.entries {
		e := &s.entries[i]
		if e.Probes&p == 0 {
			continue
		}
		if ex.has(e.Name) {
			continue
		}
		rep.Results = append(rep.Results, e.Result)
		if e.fails[pi] {
			rep.Healthy = false
		}
	}
	if pi == readyIdx && s.draining {
		rep.Draining = true
		if !ex.has(DrainName) {
			rep.Healthy = false
		}
	}
	rep.Unmatched = ex.unmatched()
	return rep
}

func (m *Manager) jitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	m.randMu.Lock()
	defer m.randMu.Unlock()
	return time.Duration(m.rand.Int64N(int64(max)))
}
