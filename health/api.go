package health

// This file holds the package's public types. Behaviour lives in manager.go (registry, Start/Stop,
// Evaluate), check.go (the runner), snapshot.go (cached verdicts), component.go, budget.go, drain.go,
// http.go and render.go (probes), disable.go (oslo's disable/enable by file) and metrics.go.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Probe is a set of Kubernetes probe kinds that a check feeds.
type Probe uint8

const (
	// Liveness: a failure means the process should be restarted.
	Liveness Probe = 1 << iota
	// Readiness: a failure means the process should not receive work.
	Readiness
	// Startup: a failure means the process has not finished starting.
	Startup
)

// AllProbes feeds every probe.
const AllProbes = Liveness | Readiness | Startup

// Has reports whether p includes every probe in q.
func (p Probe) Has(q Probe) bool { return p&q == q && q != 0 }

// String lists the probes, e.g. "liveness,readiness".
func (p Probe) String() string {
	var parts []string
	if p&Liveness != 0 {
		parts = append(parts, "liveness")
	}
	if p&Readiness != 0 {
		parts = append(parts, "readiness")
	}
	if p&Startup != 0 {
		parts = append(parts, "startup")
	}
	return strings.Join(parts, ",")
}

// ParseProbe parses one probe name: liveness|live|livez, readiness|ready|readyz, startup|startupz.
func ParseProbe(s string) (Probe, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "liveness", "live", "livez", "alive":
		return Liveness, nil
	case "readiness", "ready", "readyz":
		return Readiness, nil
	case "startup", "startupz":
		return Startup, nil
	}
	return 0, fmt.Errorf("unknown probe %q (expected liveness, readiness or startup)", s)
}

// Severity says what a failing check does to the probes it feeds.
type Severity uint8

const (
	// Critical checks fail their probes.
	Critical Severity = iota
	// Degraded checks are reported but never fail a probe.
	Degraded
)

func (s Severity) String() string {
	if s == Degraded {
		return "degraded"
	}
	return "critical"
}

// Status is the state of one check, component or budget.
type Status string

const (
	// StatusUnknown: no result yet.
	StatusUnknown Status = "unknown"
	// StatusOK: passing.
	StatusOK Status = "ok"
	// StatusFailed: failing (including stale results, dead components and tripped budgets).
	StatusFailed Status = "failed"
)

// Func is the body of a check. It must honour ctx: the manager cancels it at the check's timeout.
type Func func(ctx context.Context) error

// Check describes one named background check. Zero values take the defaults noted on each field.
type Check struct {
	// Name is unique within a manager: [A-Za-z0-9_.-]+ (it is used as a URL path segment).
	Name string
	// Probes the check feeds; zero means Readiness.
	Probes Probe
	// Run is the check itself.
	Run Func
	// Interval between runs; default 10s.
	Interval time.Duration
	// Timeout of one run; default 5s, and never more than Interval.
	Timeout time.Duration
	// FailureThreshold consecutive failures turn an OK check failed; default 1.
	FailureThreshold int
	// SuccessThreshold consecutive successes turn a failed check OK; default 1.
	SuccessThreshold int
	// StartPeriod during which a check without a result, or failing, does not fail liveness or
	// startup (it still fails readiness: not ready until proven).
	StartPeriod time.Duration
	// Severity: Critical (default) fails probes; Degraded only reports.
	Severity Severity
	// Detail, when set, says what a passing check found (e.g. which shard ranges a replica holds): it is
	// called after each successful run, and shown to every client beside the check's "ok" in the
	// verbose and JSON answers, so that it must say nothing secret. It must return quickly.
	Detail func() string
}

// Kind tells what produced a result.
type Kind string

const (
	KindCheck     Kind = "check"
	KindComponent Kind = "component"
	KindBudget    Kind = "budget"
)

// Result is a point-in-time copy of one check's (or component's, or budget's) state.
type Result struct {
	Name     string
	Kind     Kind
	Probes   Probe
	Severity Severity
	Status   Status
	// Err is the reason of the current failure (nil when OK). For a stale check it says so.
	Err error
	// LastErr is the last error seen, kept after recovery and below thresholds (a check under its
	// failure threshold, a budget not yet tripped); nil if there was none.
	LastErr              error
	LastRun              time.Time
	LastSuccess          time.Time
	LastFailure          time.Time
	ConsecutiveSuccesses int
	ConsecutiveFailures  int
	// Duration of the last run.
	Duration time.Duration
	// Detail is what the last successful run reported through Check.Detail, while the check passes.
	Detail string
	// Stale: the last result is older than interval+timeout.
	Stale bool
	// Count is the number of events a budget currently holds (0 for other kinds).
	Count int
}

// Failing reports whether r fails the given probe (degraded results never do).
func (r Result) Failing(p Probe) bool {
	return r.Probes&p != 0 && r.Severity == Critical && r.Status != StatusOK
}

// Transition is passed to listeners each time a check, component or budget changes status.
type Transition struct {
	Name   string
	Kind   Kind
	From   Status
	To     Status
	Result Result
	// Since is how long the previous status lasted.
	Since time.Duration
}

// Listener receives transitions. It is called synchronously from the goroutine that caused the
// transition, so it must not block.
type Listener func(Transition)

// ErrDuplicate is returned when a name is registered twice.
var ErrDuplicate = errors.New("duplicate name")
