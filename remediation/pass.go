package remediation

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/health"
)

// pass is one controller's pass over one cluster.
type pass struct {
	e          *Engine
	c          *v1alpha1.VitalsCluster
	key        types.NamespacedName
	controller string
	needs      []string
	scope      Scope
	s          settings
	// seedErr: the operator-wide window could not be seeded; the gate stays closed.
	seedErr error
	// storm is set when this pass's scope trips the storm rule.
	storm string
	// history: the status lines before the pass, to write a repeated hold only once.
	history []v1alpha1.Action
	// dry counts the actions this pass would have taken in a dry run, against the budgets.
	dry   int
	lines []v1alpha1.Action
	// reserved: when each allowed action (by verb and object) was counted against the budgets, to give it
	// back when its fence refuses the write.
	reservedMu sync.Mutex
	reserved   map[string]time.Time
	// outage is the last outage seen (checks, the scope, the status, the pass's own writes), outageWhy
	// what it was.
	outageMu  sync.Mutex
	outage    time.Time
	outageWhy string
	// pools: the object each pool's disruptive step allowed in this pass is for.
	poolMu sync.Mutex
	pools  map[string]string
}

// Ask decides on one action and records a Held or DryRun decision.
func (p *pass) Ask(ctx context.Context, a Action) Decision {
	now := p.e.clock.Now()
	d := p.decide(now, a)
	switch d.Outcome {
	case Held:
		p.record(ctx, now, a, outcomeHeld, d.Reason, d.Message, v1alpha1.ActionSkipped)
	case DryRun:
		kind := v1alpha1.ActionWouldDo
		if a.Removal {
			kind = v1alpha1.ActionWouldRemove
		}
		p.record(ctx, now, a, outcomeDryRun, ReasonDryRun, d.Message, kind)
	}
	return d
}

// Done records the outcome of an allowed action. A write its fence refused (a *fencing.Error) was never
// sent: it is recorded as a hold with the fence's reason, and gives its budget back. A write that found its
// API unreachable (Unreachable) is an outage this pass saw (a teardown's excepted): the pass's later
// disruptive and destructive actions are frozen, and so are the next passes', whose timers restart from it.
func (p *pass) Done(ctx context.Context, a Action, err error) {
	now := p.e.clock.Now()
	if reason, ok := fencing.ReasonOf(err); ok {
		p.reservedMu.Lock()
		at, counted := p.reserved[reservationKey(a)]
		delete(p.reserved, reservationKey(a))
		p.reservedMu.Unlock()
		if counted {
			p.e.mu.Lock()
			p.e.unreserveLocked(p.e.recordLocked(p.key, p.s.window), at)
			p.e.mu.Unlock()
		}
		p.record(ctx, now, a, outcomeHeld, string(reason), "refused at the write: "+err.Error(), v1alpha1.ActionSkipped)
		return
	}
	if err != nil {
		if !a.Teardown && Unreachable(err) {
			p.sawOutage(now, fmt.Sprintf("%s %s: the write found its API unreachable: %s", a.Verb, a.Object(), truncate(err.Error(), 512)))
		}
		p.record(ctx, now, a, outcomeFailed, ReasonAllowed, err.Error(), v1alpha1.ActionFailed)
		return
	}
	kind := v1alpha1.ActionDone
	if a.Removal {
		kind = v1alpha1.ActionRemoved
	}
	msg := "allowed by the remediation policy"
	if !a.Evidence.IsZero() {
		msg += "; evidence first seen " + a.Evidence.UTC().Format(time.RFC3339)
		if a.Removal && p.s.shortProofAge && now.Sub(a.Evidence) < MinProofAgeFloor {
			msg += fmt.Sprintf(" (%s ago, UNSAFE: below the %s floor, by annotation %s)", now.Sub(a.Evidence).Round(time.Second), MinProofAgeFloor, AnnotationUnsafeShortProofAge)
		}
	}
	p.record(ctx, now, a, outcomeTaken, ReasonAllowed, msg, kind)
}

func reservationKey(a Action) string { return a.Verb + " " + a.Object() }

// Lines are the status lines of this pass.
func (p *pass) Lines() []v1alpha1.Action { return append([]v1alpha1.Action(nil), p.lines...) }

// decide applies the rules in order; the first that holds the action back decides.
func (p *pass) decide(now time.Time, a Action) Decision {
	held := func(reason, msg string, retry time.Time) Decision {
		return Decision{Outcome: Held, Reason: reason, Message: msg, RetryAt: retry}
	}
	if p.s.excluded(a) {
		return held(ReasonExcluded, "excluded by annotation "+v1alpha1.AnnotationExclude, time.Time{})
	}
	if reason, msg, retry := p.clusterRule(now); reason != "" {
		return held(reason, msg, retry)
	}
	if reason, msg, retry := p.classRule(now, a); reason != "" {
		return held(reason, msg, retry)
	}
	if a.Removal && !a.Evidence.IsZero() {
		if due := a.Evidence.Add(p.s.minProofAge); now.Before(due) {
			return held(ReasonProofPending, fmt.Sprintf("evidence first seen %s; minProofAge %s: allowed from %s",
				a.Evidence.UTC().Format(time.RFC3339), p.s.minProofAge, due.UTC().Format(time.RFC3339)), due)
		}
	}
	if a.Teardown {
		if why := p.dryRunWhy(); why != "" {
			return Decision{Outcome: DryRun, Reason: ReasonDryRun, Message: "dry run (" + why + "): would " + a.Verb}
		}
		return Decision{Outcome: Allowed, Reason: ReasonAllowed, Message: "allowed (teardown: outside the budgets)"}
	}
	if a.Class == Safe || a.Continuation {
		if why := p.dryRunWhy(); why != "" {
			return Decision{Outcome: DryRun, Reason: ReasonDryRun, Message: "dry run (" + why + "): would " + a.Verb}
		}
		p.claimPool(a)
		return Decision{Outcome: Allowed, Reason: ReasonAllowed, Message: "allowed (" + map[bool]string{true: "safe", false: "a step allowed before"}[a.Class == Safe] + ": outside the budgets)"}
	}
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.recordLocked(p.key, p.s.window)
	if used := r.times.since(now.Add(-p.s.window)) + p.dry; used >= p.s.actions {
		return held(ReasonBudget, p.budgetMessage(r, now), p.budgetRetry(r, now))
	}
	if used := e.operatorUsedLocked(now) + p.dry; used >= e.operatorBudget() {
		var retry time.Time
		if t, ok := e.operatorOldestLocked(now); ok && e.operatorBudget() > 0 {
			retry = t.Add(e.limits.Window)
		}
		return held(ReasonOperatorBudget, e.operatorBudgetText()+" is spent", retry)
	}
	if why := p.dryRunWhy(); why != "" {
		p.dry++
		return Decision{Outcome: DryRun, Reason: ReasonDryRun, Message: "dry run (" + why + "): would " + a.Verb}
	}
	e.reserveLocked(r, now)
	p.claimPool(a)
	p.reservedMu.Lock()
	if p.reserved == nil {
		p.reserved = map[string]time.Time{}
	}
	p.reserved[reservationKey(a)] = now
	p.reservedMu.Unlock()
	return Decision{Outcome: Allowed, Reason: ReasonAllowed, Message: "allowed"}
}

// clusterRule is the first rule that holds back every action of this pass, whatever its class: the shard,
// an invalid policy, the operator-wide pause, the cluster's pause, the gate.
func (p *pass) clusterRule(now time.Time) (reason, msg string, retry time.Time) {
	return p.rule(now, true)
}

// rule is clusterRule; without pass, only the rules of the cluster as a whole (not this pass's gate,
// which differs from controller to controller), for the RemediationAllowed condition: every
// controller's pass then writes the same condition, and a condition that stays is not written again.
func (p *pass) rule(now time.Time, pass bool) (reason, msg string, retry time.Time) {
	if sh := p.e.shard; sh != nil && !sh.Holds(p.c.UID) {
		return ReasonShardNotHeld, "not this replica's cluster: " + sh.Why(p.c.UID), time.Time{}
	}
	if p.s.invalid != nil {
		return ReasonInvalidPolicy, p.s.invalid.Error(), time.Time{}
	}
	if ok, why := p.e.operatorPaused(); ok {
		return ReasonOperatorPaused, "operator-wide pause: " + why, time.Time{}
	}
	if p.s.paused {
		return ReasonPaused, "paused: " + p.s.pausedWhy, time.Time{}
	}
	needs := p.needs
	if !pass {
		// the cluster's own condition: what every controller needs (the cloud check), not one pass's needs
		needs = []string{CheckCloud}
	}
	if why := p.gateClosed(needs); why != "" {
		return ReasonGateClosed, "gate closed: " + why, time.Time{}
	}
	return "", "", time.Time{}
}

// stormRule holds disruptive and destructive actions while this pass sees a storm, and for the cool-down
// after the last one any controller saw.
func (p *pass) stormRule(now time.Time) (reason, msg string, retry time.Time) {
	if p.storm != "" {
		return ReasonStorm, "storm: " + p.storm, now.Add(p.e.limits.StormCooldown)
	}
	p.e.mu.Lock()
	rec := p.e.recordLocked(p.key, p.s.window)
	since, why := rec.stormSince, rec.stormWhy
	p.e.mu.Unlock()
	if !since.IsZero() {
		if until := since.Add(p.e.limits.StormCooldown); now.Before(until) {
			msg := fmt.Sprintf("cooling down after a storm last seen %s: actions resume at %s",
				since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
			if why != "" {
				msg = "storm (" + why + "); " + msg
			}
			return ReasonStorm, msg, until
		}
	}
	return "", "", time.Time{}
}

// gateClosed says why the gate is closed ("" when open): the operator's own readiness, the seeding
// of the operator-wide window, and the checks of the cluster this pass needs. A check that never
// reported closes the gate.
func (p *pass) gateClosed(needs []string) string {
	var why []string
	for _, n := range p.e.ready {
		r, ok := p.e.readiness.Result(n)
		switch {
		case !ok:
			why = append(why, "operator check "+n+" is not registered")
		case r.Status == health.StatusUnknown:
			why = append(why, "operator check "+n+" has no result yet")
		case r.Status != health.StatusOK:
			reason := string(r.Status)
			if r.Err != nil {
				reason = r.Err.Error()
			}
			why = append(why, "operator check "+n+": "+reason)
		}
	}
	if p.seedErr != nil {
		why = append(why, p.seedErr.Error())
	}
	for _, n := range needs {
		r, ok := p.e.checks.Get(p.key, n)
		switch {
		case !ok:
			why = append(why, "cluster check "+n+" has not reported")
		case r.Err != nil:
			why = append(why, "cluster check "+n+": "+r.Err.Error())
		}
	}
	return strings.Join(why, "; ")
}

// dryRunWhy names the dry-run settings in force ("" when none).
func (p *pass) dryRunWhy() string {
	var why []string
	if p.e.limits.DryRun {
		why = append(why, "operator --dry-run")
	}
	if p.s.dryRun {
		why = append(why, "spec.remediation.dryRun")
	}
	if p.scope.DryRun {
		why = append(why, p.controller+" dryRun")
	}
	return strings.Join(why, ", ")
}

func (p *pass) budgetMessage(r *record, now time.Time) string {
	if p.s.actions == 0 {
		return "the cluster's budget is 0 actions: none allowed"
	}
	msg := fmt.Sprintf("the cluster's budget of %d actions per %s is spent", p.s.actions, p.s.window)
	if t := p.budgetRetry(r, now); !t.IsZero() {
		msg += "; next action allowed from " + t.UTC().Format(time.RFC3339)
	}
	return msg
}

func (p *pass) budgetRetry(r *record, now time.Time) time.Time {
	if p.s.actions == 0 {
		return time.Time{}
	}
	if t, ok := r.times.oldestSince(now.Add(-p.s.window)); ok {
		return t.Add(p.s.window)
	}
	return time.Time{}
}

// record writes the audit record of one decision: an Event, a metric, a log line and a status line
// (a hold or dry run already in the history is not written again).
func (p *pass) record(ctx context.Context, now time.Time, a Action, outcome, reason, msg string, kind v1alpha1.ActionKind) {
	e := p.e
	e.metrics.Actions.WithLabelValues(p.controller, a.Verb, outcome, reason).Inc()
	line := v1alpha1.Action{Time: metav1.NewTime(now), Controller: p.controller, Action: kind, Object: a.Object(), Reason: reason, Message: msg}
	if kind == v1alpha1.ActionSkipped || kind == v1alpha1.ActionWouldRemove || kind == v1alpha1.ActionWouldDo {
		for _, l := range append(p.history, p.lines...) {
			if l.Controller == line.Controller && l.Action == line.Action && l.Object == line.Object && l.Reason == line.Reason {
				// recorded already, and still so: counted, not announced again
				logf.FromContext(ctx).V(2).Info("remediation decision", "controller", p.controller, "verb", a.Verb,
					"object", a.Object(), "outcome", outcome, "reason", reason)
				return
			}
		}
	}
	p.lines = append(p.lines, line)
	log := logf.FromContext(ctx)
	if outcome != outcomeTaken && outcome != outcomeFailed {
		log = log.V(1) // a decision not to act; an action is logged at the default level
	}
	log.Info("remediation decision", "controller", p.controller,
		"verb", a.Verb, "object", a.Object(), "outcome", outcome, "reason", reason, "message", msg)
	if e.recorder != nil {
		typ, evReason := corev1.EventTypeNormal, reason
		switch outcome {
		case outcomeTaken:
			evReason = "ActionTaken"
		case outcomeFailed:
			typ, evReason = corev1.EventTypeWarning, "ActionFailed"
		case outcomeHeld:
			switch reason {
			case ReasonPaused, ReasonOperatorPaused, ReasonExcluded, ReasonProofPending, ReasonDryRun:
			default:
				typ = corev1.EventTypeWarning
			}
		}
		note := fmt.Sprintf("%s %s: %s", a.Verb, a.Object(), msg)
		if len(note) > 1000 {
			note = note[:1000]
		}
		e.recorder.Eventf(p.c, nil, typ, evReason, a.Verb, "%s", note)
	}
}

// Apply writes the policy's state into a (freshly read) status: the merged window, what it still
// allows, the last storm, and the RemediationAllowed condition.
func (p *pass) Apply(st *v1alpha1.ClusterStatus) {
	e := p.e
	now := e.clock.Now()
	e.mu.Lock()
	r := e.recordLocked(p.key, p.s.window)
	if st.Remediation != nil {
		e.absorbLocked(r, st.Remediation, now, p.s)
	}
	cutoff := now.Add(-p.s.window)
	rs := &v1alpha1.RemediationStatus{}
	for _, t := range r.times {
		if t.After(cutoff) {
			rs.ActionTimes = append(rs.ActionTimes, metav1.NewTime(t))
		}
	}
	if n := len(rs.ActionTimes) - maxActionTimes; n > 0 {
		rs.ActionTimes = rs.ActionTimes[n:]
	}
	left := max(p.s.actions-len(rs.ActionTimes), 0)
	rs.BudgetRemaining = int32(left)
	if !r.stormSince.IsZero() {
		rs.StormSince = &metav1.Time{Time: r.stormSince}
	}
	if !r.lastOutage.IsZero() {
		rs.LastOutage, rs.LastOutageReason = &metav1.Time{Time: r.lastOutage}, truncate(r.lastOutageWhy, 1024)
	}
	opBudget := e.operatorBudget()
	opLeft := max(opBudget-e.operatorUsedLocked(now), 0)
	budgetMsg := p.budgetMessage(r, now)
	e.mu.Unlock()
	st.Remediation = rs
	e.metrics.BudgetRemaining.WithLabelValues(p.key.String()).Set(float64(left))
	e.metrics.OperatorBudgetRemaining.Set(float64(opLeft))
	paused, _ := e.operatorPaused()
	e.metrics.OperatorPaused.Set(b2f(paused))

	status, reason, msg := metav1.ConditionTrue, ReasonAllowed, fmt.Sprintf("%d of %d actions left in the cluster's %s window", left, p.s.actions, p.s.window)
	if cr, cmsg, _ := p.rule(now, false); cr != "" {
		status, reason, msg = metav1.ConditionFalse, cr, cmsg
	} else if sr, smsg, _ := p.stormRule(now); sr != "" {
		status, reason, msg = metav1.ConditionFalse, sr, smsg+"; safe repairs go on"
	} else if until := p.frozenUntil(); now.Before(until) {
		status, reason, msg = metav1.ConditionFalse, ReasonFrozen, p.freezeMessage(until)+"; safe repairs go on"
	} else if left == 0 {
		status, reason, msg = metav1.ConditionFalse, ReasonBudget, budgetMsg
	} else if opLeft == 0 {
		status, reason, msg = metav1.ConditionFalse, ReasonOperatorBudget, e.operatorBudgetText()+" is spent"
	} else if why := p.dryRunWhy(); why != "" {
		status, reason, msg = metav1.ConditionFalse, ReasonDryRun, "dry run ("+why+"): controllers report and change nothing"
	}
	if p.s.proofAgeNote != "" {
		msg += "; " + p.s.proofAgeNote
	}
	if len(msg) > 32000 {
		msg = msg[:32000]
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionRemediationAllowed, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: p.c.Generation})
}

// maxActionTimes is the most action times the status holds (the CRD's limit).
const maxActionTimes = 10000

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
