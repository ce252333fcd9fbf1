package remediation

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/health"
)

// Defaults of the operator-wide limits (flags of `vitals operator`).
const (
	DefaultOperatorActions = 100
	DefaultOperatorWindow  = time.Hour
	DefaultStormCooldown   = 10 * time.Minute
)

// Limits are the operator's own rules, on top of every cluster's.
type Limits struct {
	// Actions is the most destructive actions of all controllers over all clusters in any Window;
	// 0 means none.
	Actions int
	Window  time.Duration
	// StormCooldown is how long actions stay held after a storm was last seen (0: resume at once).
	StormCooldown time.Duration
	// Paused holds every action back (the flag; see Switch for the runtime switch).
	Paused bool
	// DryRun makes every controller report instead of act.
	DryRun bool
}

// DefaultLimits are the limits of an operator started without flags.
func DefaultLimits() Limits {
	return Limits{Actions: DefaultOperatorActions, Window: DefaultOperatorWindow, StormCooldown: DefaultStormCooldown}
}

// Validate names the first limit out of range.
func (l Limits) Validate() error {
	switch {
	case l.Actions < 0:
		return fmt.Errorf("remediation budget: expected 0 or more actions, got %d", l.Actions)
	case l.Window <= 0:
		return fmt.Errorf("remediation window: expected a positive duration such as 1h, got %s", l.Window)
	case l.StormCooldown < 0:
		return fmt.Errorf("remediation storm cool-down: expected a non-negative duration such as 10m, got %s", l.StormCooldown)
	}
	return nil
}

// Readiness gives the operator's own health results (a *health.Manager).
type Readiness interface {
	Result(name string) (health.Result, bool)
}

// Switch is the operator-wide pause an operator flips at run time, without a restart.
type Switch interface {
	// Paused reports whether every action is held, and why.
	Paused() (paused bool, why string)
}

// Shard is this replica's part of the clusters when several replicas act at once, each on the clusters
// of the hash ranges it holds (a *sharding.Coordinator).
type Shard interface {
	// Holds reports whether this replica may act on the cluster with this UID now.
	Holds(uid types.UID) bool
	// Why says why it may not.
	Why(uid types.UID) string
	// Share is how many of the ranges this replica holds, of all.
	Share() (held, total int)
	// Generation changes whenever the held ranges do.
	Generation() uint64
}

// Options configure an Engine.
type Options struct {
	// Limits are the operator-wide rules (nil: DefaultLimits).
	Limits *Limits
	// Checks are the per-cluster checks the gate reads (nil: a new, empty CheckSet).
	Checks Checks
	// Readiness and ReadinessChecks: the operator's own checks that must all pass (status ok) for any
	// action; a check that is not registered or has no result yet closes the gate.
	Readiness       Readiness
	ReadinessChecks []string
	// Switch is the runtime operator-wide pause (nil: none).
	Switch Switch
	// Seed lists the VitalsClusters once, before the first decision, to seed the operator-wide window
	// from their statuses (nil: each cluster's actions are counted from its first pass on).
	Seed client.Reader
	// Shard, when several replicas act at once: actions on clusters this replica does not hold are held
	// back, and the operator-wide budget is split by the replicas' shares of the ranges (nil: one replica
	// acts on every cluster). Seed must then read every cluster from the API server (not a sharded
	// cache): the window is seeded again whenever the held ranges change.
	Shard Shard
	// Validity bounds every write by this replica's fenced validity for its cluster: the shard coordinator
	// with sharding, the leader election's lock (a *sharding.Leader) with leader election (nil: Shard's
	// when it has one, as a *sharding.Coordinator does; else a single replica, whose writes are bounded
	// by WriteTimeout only).
	Validity Validity
	// Live reads a cluster from the API server for the fences of its actions (an APIReader: a cache may
	// lag a pause by seconds; nil: Seed; with neither, the fences re-check the pass's copy, for tests).
	Live client.Reader
	// LiveMaxAge: one live read serves the fences of the writes entered within this time of when it was
	// sent (default DefaultLiveMaxAge).
	LiveMaxAge time.Duration
	// WriteTimeout bounds each write (default fencing.DefaultWriteTimeout): it must be shorter than the
	// safety margin of Validity (the operator checks it).
	WriteTimeout time.Duration
	// Recorder receives an Event on the VitalsCluster per decision (nil: none).
	Recorder events.EventRecorder
	// Metrics (nil: unregistered metrics).
	Metrics *Metrics
	// Clock (nil: the real clock).
	Clock clock.PassiveClock
}

// Engine is the Policy of one operator. The per-cluster windows are kept in each cluster's status
// (status.remediation.actionTimes) and merged into memory on every pass; the operator-wide window is
// the sum of the per-cluster ones as this replica knows them: seeded from every cluster's status before
// the first decision, and kept in memory after.
//
// With a Shard (several active replicas), the operator-wide budget stays one budget: each replica may
// spend Actions × held ranges / all ranges (rounded down) in the window, counted over the clusters of the
// ranges it holds, whoever acted on them. The shares never add up to more than Actions, since a range is
// held by one replica at a time, and a range's past actions move with it: they are in its clusters'
// statuses, read again whenever the held ranges change.
type Engine struct {
	limits    Limits
	checks    Checks
	readiness Readiness
	ready     []string
	sw        Switch
	seed      client.Reader
	shard     Shard
	validity  Validity
	live      *liveReads
	// writeTimeout bounds each write.
	writeTimeout time.Duration
	recorder     events.EventRecorder
	metrics      *Metrics
	clock        clock.PassiveClock

	mu     sync.Mutex
	seeded bool
	// seededGen: the shard generation the window was seeded at.
	seededGen uint64
	clusters  map[types.NamespacedName]*record
	// all holds every cluster's action times in the operator-wide window: each time a record gains.
	all window
}

// record is what the engine remembers of one cluster.
type record struct {
	// uid of the cluster (which range it falls in).
	uid   types.UID
	times window
	// keep: how long times are kept (the longer of the cluster's and the operator's windows).
	keep       time.Duration
	stormSince time.Time
	// stormWhy describes the storm last seen (in memory only: after a restart the cool-down says when).
	stormWhy string
	// lastOutage is when an outage was last seen, lastOutageWhy what it was (both in the status).
	lastOutage    time.Time
	lastOutageWhy string
}

var _ Policy = (*Engine)(nil)

// New returns an Engine.
func New(o Options) (*Engine, error) {
	e := &Engine{
		checks: o.Checks, readiness: o.Readiness, ready: append([]string(nil), o.ReadinessChecks...),
		sw: o.Switch, seed: o.Seed, shard: o.Shard, validity: o.Validity, writeTimeout: o.WriteTimeout,
		recorder: o.Recorder, metrics: o.Metrics, clock: o.Clock, clusters: map[types.NamespacedName]*record{},
	}
	e.limits = DefaultLimits()
	if o.Limits != nil {
		e.limits = *o.Limits
	}
	if err := e.limits.Validate(); err != nil {
		return nil, err
	}
	if len(e.ready) > 0 && e.readiness == nil {
		return nil, fmt.Errorf("remediation: readiness checks %v named without a source of results", e.ready)
	}
	if e.checks == nil {
		e.checks = NewChecks(o.Clock)
	}
	if e.metrics == nil {
		e.metrics = NewMetrics(nil)
	}
	if e.clock == nil {
		e.clock = clock.RealClock{}
	}
	if e.writeTimeout <= 0 {
		e.writeTimeout = fencing.DefaultWriteTimeout
	}
	if e.validity == nil {
		if v, ok := o.Shard.(Validity); ok {
			e.validity = v
		}
	}
	if o.Live == nil {
		o.Live = o.Seed
	}
	if o.Live != nil {
		age := o.LiveMaxAge
		if age <= 0 {
			age = DefaultLiveMaxAge
		}
		e.live = &liveReads{r: o.Live, clock: e.clock, maxAge: age, timeout: e.writeTimeout, reads: map[types.NamespacedName]*liveRead{}}
	}
	return e, nil
}

// Checks are the per-cluster checks the gate reads; their owners (tenancy, workload access) set them.
func (e *Engine) Checks() Checks { return e.checks }

// Limits are the operator-wide limits in force.
func (e *Engine) Limits() Limits { return e.limits }

// Begin opens a pass.
func (e *Engine) Begin(ctx context.Context, c *v1alpha1.VitalsCluster, controller string, needs []string, scope Scope) Pass {
	now := e.clock.Now()
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	p := &pass{e: e, c: c, key: key, controller: controller, needs: append([]string(nil), needs...), scope: scope, s: settingsOf(c)}
	if b := c.Status.Controller(controller, false); b != nil {
		// the controller's own history: a hold already recorded there is not written again
		p.history = append([]v1alpha1.Action(nil), b.Actions...)
	}
	p.seedErr = e.seedOnce(ctx)
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.recordLocked(key, p.s.window)
	r.uid = c.UID
	if st := c.Status.Remediation; st != nil {
		e.absorbLocked(r, st, now, p.s)
	}
	if storm, why := Storm(c, scope); storm {
		p.storm = why
		r.stormSince = stamp(now)
		r.stormWhy = controller + ": " + why
	}
	if last, why := e.outageOf(now, key, needs, scope); last.After(r.lastOutage) && !last.After(now.Add(maxClockSkew)) {
		r.lastOutage, r.lastOutageWhy = stamp(last), why
	}
	p.outage, p.outageWhy = r.lastOutage, r.lastOutageWhy
	return p
}

// Forget drops the gauges and checks of a cluster that is gone (its action times stay).
func (e *Engine) Forget(cluster types.NamespacedName) {
	e.checks.Forget(cluster)
	e.metrics.BudgetRemaining.DeleteLabelValues(cluster.String())
	if e.live != nil {
		e.live.forget(cluster)
	}
}

// seedOnce merges every cluster's persisted action times into memory before the first decision, and
// again whenever the held shard ranges changed.
func (e *Engine) seedOnce(ctx context.Context) error {
	var gen uint64
	if e.shard != nil {
		gen = e.shard.Generation()
	}
	e.mu.Lock()
	done := (e.seeded && e.seededGen == gen) || e.seed == nil
	e.mu.Unlock()
	if done {
		return nil
	}
	var list v1alpha1.VitalsClusterList
	if err := e.seed.List(ctx, &list); err != nil {
		return fmt.Errorf("seed the operator-wide budget from the clusters' statuses: list VitalsClusters: %w", err)
	}
	now := e.clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seeded && e.seededGen == gen {
		return nil
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Status.Remediation == nil {
			continue
		}
		s := settingsOf(c)
		r := e.recordLocked(types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, s.window)
		r.uid = c.UID
		e.absorbLocked(r, c.Status.Remediation, now, s)
	}
	e.seeded, e.seededGen = true, gen
	return nil
}

// recordLocked returns the record of a cluster, creating it.
func (e *Engine) recordLocked(key types.NamespacedName, clusterWindow time.Duration) *record {
	r := e.clusters[key]
	if r == nil {
		r = &record{}
		e.clusters[key] = r
	}
	r.keep = max(clusterWindow, e.limits.Window)
	return r
}

// absorbLocked merges a status into the record: action times it does not hold yet (another replica's,
// another controller's), and a later storm. The status is written by the operator only, but it is
// not taken on trust beyond what it could hold: times in the future are ignored, and a status never
// adds more actions than the cluster's budget allows in its window (a forged list cannot spend the
// operator-wide budget of every other cluster).
func (e *Engine) absorbLocked(r *record, st *v1alpha1.RemediationStatus, now time.Time, s settings) {
	r.times = r.times.prune(now.Add(-r.keep))
	cutoff, latest := now.Add(-s.window), stamp(now.Add(maxClockSkew))
	in := make([]time.Time, 0, len(st.ActionTimes))
	for _, t := range st.ActionTimes {
		if t.After(cutoff) && !t.After(latest) {
			in = append(in, t.Time)
		}
	}
	room := max(s.actions-r.times.since(cutoff), 0)
	var added []time.Time
	r.times, added = r.times.merge(in, room)
	for _, t := range added {
		e.all = e.all.add(t)
	}
	if st.StormSince != nil && st.StormSince.After(r.stormSince) && !st.StormSince.After(latest) {
		r.stormSince = stamp(st.StormSince.Time)
	}
	if st.LastOutage != nil && st.LastOutage.After(r.lastOutage) && !st.LastOutage.After(latest) {
		r.lastOutage, r.lastOutageWhy = stamp(st.LastOutage.Time), st.LastOutageReason
	}
}

// maxClockSkew is how far in the future a time in a status may lie (another replica's clock).
const maxClockSkew = time.Minute

// operatorWindowLocked is the window the operator-wide budget counts: every cluster's actions, or with a
// Shard the actions on the clusters of the ranges this replica holds.
func (e *Engine) operatorWindowLocked(now time.Time) window {
	cutoff := now.Add(-e.limits.Window)
	e.all = e.all.prune(cutoff)
	if e.shard == nil {
		return e.all
	}
	var w window
	for _, r := range e.clusters {
		if r.uid == "" || !e.shard.Holds(r.uid) {
			continue
		}
		for _, t := range r.times {
			if t.After(cutoff) {
				w = append(w, t)
			}
		}
	}
	slices.SortFunc(w, func(a, b time.Time) int { return a.Compare(b) })
	return w
}

// operatorUsedLocked counts the actions in the operator-wide window (this replica's part with a Shard).
func (e *Engine) operatorUsedLocked(now time.Time) int { return len(e.operatorWindowLocked(now)) }

// operatorOldestLocked is the oldest action in the operator-wide window.
func (e *Engine) operatorOldestLocked(now time.Time) (time.Time, bool) {
	w := e.operatorWindowLocked(now)
	if len(w) == 0 {
		return time.Time{}, false
	}
	return w[0], true
}

// operatorBudget is the operator-wide budget this replica may spend: all of it, or with a Shard its share
// by held ranges (rounded down).
func (e *Engine) operatorBudget() int {
	if e.shard == nil {
		return e.limits.Actions
	}
	held, total := e.shard.Share()
	if total <= 0 {
		return 0
	}
	return e.limits.Actions * held / total
}

// operatorBudgetText names the operator-wide budget in messages.
func (e *Engine) operatorBudgetText() string {
	if e.shard == nil {
		return fmt.Sprintf("the operator-wide budget of %d actions per %s", e.limits.Actions, e.limits.Window)
	}
	held, total := e.shard.Share()
	return fmt.Sprintf("this replica's share (%d of %d shard ranges) of the operator-wide budget: %d of %d actions per %s",
		held, total, e.operatorBudget(), e.limits.Actions, e.limits.Window)
}

// reserveLocked records an allowed action of a cluster.
func (e *Engine) reserveLocked(r *record, now time.Time) {
	r.times = r.times.add(now)
	e.all = e.all.add(now)
}

// unreserveLocked drops an action reserved at t that was never sent (its fence refused the write).
func (e *Engine) unreserveLocked(r *record, t time.Time) {
	r.times = r.times.remove(t)
	e.all = e.all.remove(t)
}

// operatorPaused reports the flag and the runtime switch.
func (e *Engine) operatorPaused() (bool, string) {
	if e.limits.Paused {
		return true, "the operator was started paused (--remediation-paused)"
	}
	if e.sw != nil {
		if ok, why := e.sw.Paused(); ok {
			return true, why
		}
	}
	return false, ""
}
