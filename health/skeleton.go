package health

// SKELETON: public API of the manager, written first so that dependent packages compile while the
// implementation is built. The health-core work replaces this file with manager.go, component.go,
// budget.go, http.go and metrics.go keeping these signatures (it may add to them).

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// Option configures a Manager.
type Option func(*Manager)

// WithClock injects the clock (default: the real one).
func WithClock(c clock.WithTicker) Option { return func(m *Manager) {} }

// WithRand injects the randomness used for jitter (default: a source seeded at start).
func WithRand(r *rand.Rand) Option { return func(m *Manager) {} }

// WithLogger sets the logger for transitions and panics (default: slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) {} }

// WithRegisterer registers the manager's Prometheus metrics there (default: none).
func WithRegisterer(r prometheus.Registerer) Option { return func(m *Manager) {} }

// WithKubernetesMetricNames also exports kubernetes_healthcheck{name,type} and
// kubernetes_healthchecks_total{name,type,status}, as the apiserver does.
func WithKubernetesMetricNames() Option { return func(m *Manager) {} }

// WithListener adds a listener called on every status transition.
func WithListener(l Listener) Option { return func(m *Manager) {} }

// WithDrainDelay sets how long liveness keeps passing after Drain (default 0).
func WithDrainDelay(d time.Duration) Option { return func(m *Manager) {} }

// Manager runs checks in the background and answers probes from their cached results.
type Manager struct{}

// NewManager returns a manager with no checks.
func NewManager(opts ...Option) *Manager { return &Manager{} }

// Register adds checks. It fails on an invalid or duplicate name, a nil Run, or bad durations.
// Checks registered after Start begin running at once.
func (m *Manager) Register(checks ...Check) error { return nil }

// MustRegister is Register that panics on error (for static wiring).
func (m *Manager) MustRegister(checks ...Check) {}

// Start runs every check in the background until ctx is done or Stop is called. It returns at once.
func (m *Manager) Start(ctx context.Context) {}

// Stop stops the checks and waits for their goroutines.
func (m *Manager) Stop() {}

// Results returns a copy of every result, in registration order.
func (m *Manager) Results() []Result { return nil }

// Result returns one result by name.
func (m *Manager) Result(name string) (Result, bool) { return Result{}, false }

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

// Evaluate computes a probe's verdict now, leaving out the excluded names.
func (m *Manager) Evaluate(p Probe, exclude ...string) Report { return Report{} }

// Drain starts a drain: readiness fails at once, liveness keeps passing for the drain delay.
// It returns a channel closed when the delay is over.
func (m *Manager) Drain() <-chan struct{} { c := make(chan struct{}); close(c); return c }

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
type Component struct{}

// Component registers a component, alive from now on.
func (m *Manager) Component(name string, opts ComponentOptions) (*Component, error) {
	return &Component{}, nil
}

// Beat records progress.
func (c *Component) Beat() {}

// Fail marks the component dead with a reason.
func (c *Component) Fail(err error) {}

// Recover marks a failed component alive again (no effect when latched).
func (c *Component) Recover() {}

// BudgetMode selects how a failure budget counts.
type BudgetMode uint8

const (
	// Window: tripped when Limit failures happened within Window.
	Window BudgetMode = iota
	// Consecutive: tripped after Limit failures in a row; any success resets the count.
	Consecutive
)

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

// Budget counts failure events, such as CNI ADD failures.
type Budget struct{}

// Budget registers a failure budget.
func (m *Manager) Budget(name string, opts BudgetOptions) (*Budget, error) { return &Budget{}, nil }

// Failure records one failure event with its error.
func (b *Budget) Failure(err error) {}

// Success records one success (resets a Consecutive budget).
func (b *Budget) Success() {}

// Count returns the failures the budget currently holds.
func (b *Budget) Count() int { return 0 }

// HandlerOptions configure the HTTP handler.
type HandlerOptions struct {
	// Details shows failure reasons in aggregate endpoints and JSON (sub-paths always show them).
	Details bool
	// DisableByFilePath: when this file exists every probe answers 503 "disabled by file" (oslo).
	DisableByFilePath string
	// DisableByFilePaths: "port:path" pairs, matched against Port.
	DisableByFilePaths []string
	// EnableByFilePaths: "port:path" pairs; the server is disabled unless the file for Port exists.
	EnableByFilePaths []string
	// Port this handler serves on, for the port:path options.
	Port int
}

// Handler returns the HTTP handler for /livez, /readyz, /startupz, /healthz, /alive, /ready and their
// /<probe>/<check> sub-paths.
func (m *Manager) Handler(opts HandlerOptions) http.Handler { return http.NotFoundHandler() }
