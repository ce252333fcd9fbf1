package flight

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/clusterstatus"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// Repair is one failure mode flight looks after: it detects from one complete read, then repairs what
// it found. Each repair lives in its own file and sets its own condition on the cluster.
type Repair interface {
	// Name of the repair in camelCase: its key under spec.controllers.flight.repairs and its label in
	// vitals_flight_repairs_total.
	Name() string
	// Conditions are the condition types the repair sets on the cluster, its main one first.
	Conditions() []string
	// Enabled reports whether the cluster turns the repair on.
	Enabled(r *v1alpha1.FlightRepairs) bool
	// Detect finds what is wrong in one complete read. It changes nothing, and must be a pure function
	// of in (table-tested).
	Detect(in *Input) Finding
}

// Finding is what one repair detected in one pass.
type Finding interface {
	// Unhealthy names the cluster's servers (by ID) the finding holds broken. The storm rule counts
	// the union of every repair's, against every server of the cluster.
	Unhealthy() []string
	// Repair acts on the finding through env, asking the remediation policy before every change, and
	// reports the repair's conditions (one Report per type of Conditions). It also writes the repair's
	// own part of env.Status.
	Repair(ctx context.Context, env *Env) []Report
}

// Input is what every repair detects from: one complete read, the cluster's settings and flight's
// status before this pass.
type Input struct {
	Cluster  *v1alpha1.VitalsCluster
	Snapshot *Snapshot
	Settings *Settings
	// Prev is flight's status before this pass (never nil).
	Prev *v1alpha1.FlightStatus
	Now  time.Time
}

// Report is one of a repair's conditions after its pass.
type Report struct {
	// Type of the condition; empty: the repair's main condition.
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// Outcomes of one change, the values of vitals_flight_repairs_total's outcome label.
const (
	OutcomeDone   = "done"
	OutcomeFailed = "failed"
	OutcomeHeld   = "held"
	OutcomeDryRun = "dryrun"
)

// Env is what a repair acts with.
type Env struct {
	Cluster *v1alpha1.VitalsCluster
	// Cloud is the cluster's scoped cloud: it acts in the cluster's proven project and router only.
	Cloud tenancy.Cloud
	// Scope is the cluster's proven place in the cloud.
	Scope    *tenancy.Scope
	Snapshot *Snapshot
	Settings *Settings
	// Pass is the remediation policy's pass: every change asks it.
	Pass remediation.Pass
	// Status is flight's status after this pass, a copy of the previous one: a repair rewrites its own
	// fields (Errored, Escalations, StaleRoutes ...) and leaves the others alone.
	Status *v1alpha1.FlightStatus
	Now    time.Time

	r      *Reconciler
	o      *outcome
	repair string
}

// Ask asks the policy for a. A held or dry-run answer is counted in vitals_flight_repairs_total (the
// policy records it; a hold by the pass's own cap is recorded here); an allowed one must be followed
// by Done.
func (e *Env) Ask(ctx context.Context, a remediation.Action) remediation.Decision {
	d := e.Pass.Ask(ctx, a)
	switch d.Outcome {
	case remediation.Allowed:
		return d
	case remediation.DryRun:
		e.r.Metrics.Repairs.WithLabelValues(e.repair, OutcomeDryRun).Inc()
		return d
	}
	e.r.Metrics.Repairs.WithLabelValues(e.repair, OutcomeHeld).Inc()
	if d.Reason == ReasonPassBudget {
		// flight's own rule: the policy did not see it, so flight records it.
		e.Event(corev1.EventTypeNormal, ReasonPassBudget, a.Verb, a.Verb+" "+a.Object()+": "+d.Message)
		e.o.line(e.Cluster, v1alpha1.Action{Time: metav1.NewTime(e.Now), Controller: Name, Action: v1alpha1.ActionSkipped,
			Object: a.Object(), Reason: ReasonPassBudget, Message: d.Message})
	}
	return d
}

// Done reports the result of an allowed action to the policy and counts it (a write refused at its fence
// as held).
func (e *Env) Done(ctx context.Context, a remediation.Action, err error) {
	e.Pass.Done(ctx, a, err)
	outcome := OutcomeDone
	if _, fenced := fencing.ReasonOf(err); fenced {
		outcome = OutcomeHeld
	} else if err != nil {
		outcome = OutcomeFailed
	}
	e.r.Metrics.Repairs.WithLabelValues(e.repair, outcome).Inc()
}

// Act asks the policy for a, runs do when allowed, its writes fenced by the policy (Pass.Fence), and
// reports its result (Ask, then Done). It returns the outcome (OutcomeDone, OutcomeFailed, OutcomeHeld,
// OutcomeDryRun), the decision and do's error; a write refused at its fence is OutcomeHeld.
func (e *Env) Act(ctx context.Context, a remediation.Action, do func(context.Context) error) (string, remediation.Decision, error) {
	d := e.Ask(ctx, a)
	switch d.Outcome {
	case remediation.Allowed:
	case remediation.DryRun:
		return OutcomeDryRun, d, nil
	default:
		return OutcomeHeld, d, nil
	}
	// do's writes are sent only through the fence of a (fencing.With): it re-checks at each write
	err := do(fencing.With(ctx, e.Pass.Fence(a)))
	e.Done(ctx, a, err)
	if reason, ok := fencing.ReasonOf(err); ok {
		return OutcomeHeld, remediation.Decision{Outcome: remediation.Held, Reason: string(reason), Message: err.Error()}, nil
	}
	if err != nil {
		return OutcomeFailed, d, err
	}
	return OutcomeDone, d, nil
}

// Event records an Event on the cluster (reason in CamelCase, action the repair's verb).
func (e *Env) Event(typ, reason, action, note string) {
	clusterstatus.Event(e.r.Recorder, e.Cluster, typ, reason, action, note)
}

// Warn records a Warning Event.
func (e *Env) Warn(reason, action, note string) {
	e.Event(corev1.EventTypeWarning, reason, action, note)
}
