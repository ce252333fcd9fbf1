package remediation

import (
	"k8s.io/apimachinery/pkg/types"

	"fmt"
	"slices"
	"strings"
	"time"
)

// Class is how much an action can hurt when the evidence behind it is wrong. The storm rule, the outage
// freeze, the pool rule and the budgets hold actions by class: the repairs meant for a storm (a missed
// security-group update cuts most nodes off at once) are never held by it.
type Class int

const (
	// Destructive: takes something away that does not come back by itself (a server deleted, a route
	// removed, a volume deleted). The zero value: an action that names no class is destructive.
	Destructive Class = iota
	// Disruptive: interrupts work that comes back (a cordon, a drain, a reboot, the out-of-service taint).
	Disruptive
	// Safe: puts back what the cluster needs and takes nothing away (a security-group rule or
	// association, a forced sync, a re-added route, an uncordon). Never held by the storm rule, the outage
	// freeze or the pool rule, and not counted against the budgets; exclusions, pauses, the gate, dry-run,
	// the pass's cap and the audit apply as to every action.
	Safe
)

func (c Class) String() string {
	switch c {
	case Safe:
		return "safe"
	case Disruptive:
		return "disruptive"
	}
	return "destructive"
}

// Quorum describes the members of a group an action takes one of down (etcd's members when the action
// reboots a control-plane node): the action is held when the members left healthy would be fewer than a
// majority.
type Quorum struct {
	// Members of the group (etcd members).
	Members int
	// Healthy members now.
	Healthy int
	// TargetHealthy: the action's object is one of the healthy members (taking it down costs one).
	TargetHealthy bool
}

// HealthyAfter is how many members are left healthy once the action's object is down.
func (q Quorum) HealthyAfter() int {
	if q.TargetHealthy {
		return q.Healthy - 1
	}
	return q.Healthy
}

// Needed is the majority of Members.
func (q Quorum) Needed() int { return q.Members/2 + 1 }

// More reasons a decision holds an action back (by its class).
const (
	// ReasonFrozen: an outage was seen recently (the workload API server or the cloud unreachable, most
	// node Leases stale): disruptive and destructive actions wait spec.remediation.outageFreeze after it.
	ReasonFrozen = "Frozen"
	// ReasonPoolBusy: another disruptive step of the same node pool is in flight.
	ReasonPoolBusy = "PoolBusy"
	// ReasonQuorum: the members left healthy would lose their quorum.
	ReasonQuorum = "QuorumAtRisk"
)

// classRule is the first rule of an action's class that holds it ("" when none): the storm rule and its
// cool-down, the outage freeze, the pool rule and the quorum. Safe actions pass, and so does a teardown: its
// evidence is the cluster's own confirmed deletion, not its health, and a cluster that goes away is expected
// to lose its workload API and nodes (an outage) while the region may be failing (a storm); holding its
// deletes would leave the cloud's resources behind the cluster, not protect it.
func (p *pass) classRule(now time.Time, a Action) (reason, msg string, retry time.Time) {
	if a.Class == Safe || a.Teardown {
		return "", "", time.Time{}
	}
	if reason, msg, retry = p.stormRule(now); reason != "" {
		return reason, msg, retry
	}
	if until := p.frozenUntil(); now.Before(until) {
		return ReasonFrozen, p.freezeMessage(until), until
	}
	if a.Pool != "" {
		if other := p.poolBusy(a); other != "" {
			return ReasonPoolBusy, fmt.Sprintf("node pool %q has a disruptive step in flight (%s): one at a time per pool", a.Pool, other), time.Time{}
		}
	}
	if q := a.Quorum; q != nil && q.HealthyAfter() < q.Needed() {
		return ReasonQuorum, fmt.Sprintf("%d of %d members would be left healthy, fewer than the %d a quorum needs", max(q.HealthyAfter(), 0), q.Members, q.Needed()), time.Time{}
	}
	return "", "", time.Time{}
}

// poolBusy names another server of a's pool with a disruptive step in flight, before this pass or allowed
// in it ("" when none).
func (p *pass) poolBusy(a Action) string {
	for _, id := range p.scope.InFlight[a.Pool] {
		if id != a.ID {
			return a.Kind + " " + id
		}
	}
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	if id, ok := p.pools[a.Pool]; ok && id != a.ID {
		return a.Kind + " " + id + ", allowed in this pass"
	}
	return ""
}

// claimPool records an allowed disruptive action of a's pool.
func (p *pass) claimPool(a Action) {
	if a.Class == Safe || a.Pool == "" {
		return
	}
	p.poolMu.Lock()
	defer p.poolMu.Unlock()
	if p.pools == nil {
		p.pools = map[string]string{}
	}
	if _, ok := p.pools[a.Pool]; !ok {
		p.pools[a.Pool] = a.ID
	}
}

// lastOutage is the last outage this pass knows of, and what it was.
func (p *pass) lastOutage() (time.Time, string) {
	p.outageMu.Lock()
	defer p.outageMu.Unlock()
	return p.outage, p.outageWhy
}

// sawOutage records an outage seen during the pass (a write that found its API unreachable, a check that
// failed after the pass began): it holds the pass's later disruptive and destructive actions, and is kept
// for the next passes and the status as one seen at Begin is.
func (p *pass) sawOutage(at time.Time, why string) {
	e := p.e
	e.mu.Lock()
	r := e.recordLocked(p.key, p.s.window)
	if at = stamp(at); at.After(r.lastOutage) {
		r.lastOutage, r.lastOutageWhy = at, why
	}
	last, lastWhy := r.lastOutage, r.lastOutageWhy
	e.mu.Unlock()
	p.outageMu.Lock()
	p.outage, p.outageWhy = last, lastWhy
	p.outageMu.Unlock()
}

// frozenUntil is when the outage freeze ends (zero: no outage seen).
func (p *pass) frozenUntil() time.Time {
	last, _ := p.lastOutage()
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(p.s.outageFreeze)
}

func (p *pass) freezeMessage(until time.Time) string {
	last, why := p.lastOutage()
	if why == "" {
		why = "an outage"
	}
	return fmt.Sprintf("%s, last seen %s: disruptive and destructive actions wait until %s (spec.remediation.outageFreeze %s), and every unhealthy timer starts again",
		why, last.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), p.s.outageFreeze)
}

// Outage is what a pass knows of the cluster's last outage.
type Outage struct {
	// Last is when an outage was last seen (zero: never, as far as this replica and the status know).
	Last time.Time
	// Why says what it was.
	Why string
	// Until is when disruptive and destructive actions may resume (Last + spec.remediation.outageFreeze).
	Until time.Time
}

// Outage returns the cluster's last outage as this pass sees it: the timers of unhealthy objects never
// start before Last (an outage never becomes mass repairs once it is over).
func (p *pass) Outage() Outage {
	last, why := p.lastOutage()
	return Outage{Last: last, Why: why, Until: p.frozenUntil()}
}

// outageOf finds the latest outage among the checks of cluster key that a pass needs (see outageOf), and the
// scope's own.
func (e *Engine) outageOf(now time.Time, key types.NamespacedName, needs []string, scope Scope) (time.Time, string) {
	var results []CheckResult
	var names []string
	for _, n := range needs {
		if res, ok := e.checks.Get(key, n); ok {
			results, names = append(results, res), append(names, n)
		}
	}
	return outageOf(now, results, names, scope)
}

// outageOf finds the latest outage among the cluster's checks (a failure of a check this pass needs), the
// scope's own (a controller's read saw one), and what the status remembers.
func outageOf(now time.Time, checks []CheckResult, names []string, scope Scope) (time.Time, string) {
	var last time.Time
	var why []string
	for i, r := range checks {
		if r.LastFailure.After(last) {
			last, why = r.LastFailure, []string{"cluster check " + names[i] + " failed: " + r.LastErr}
		}
	}
	if scope.Outage != "" {
		last, why = now, []string{scope.Outage}
	}
	return last, strings.Join(slices.Compact(why), "; ")
}
