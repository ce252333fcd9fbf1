package pass

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Outcomes of one change, the values of vitals_<controller>_repairs_total's outcome label.
const (
	OutcomeDone   = "done"
	OutcomeFailed = "failed"
	OutcomeHeld   = "held"
	OutcomeDryRun = "dryrun"
)

// ReasonPassBudget: the cap on changes per pass (spec.controllers.<controller>.budget) is spent.
const ReasonPassBudget = "PassBudget"

// Env is what a repair acts with.
type Env[T any] struct {
	Cluster *v1alpha1.VitalsCluster
	// Cloud is the cluster's scoped cloud: it acts in the cluster's proven project and router only.
	Cloud tenancy.Cloud
	// Scope is the cluster's proven place in the cloud.
	Scope *tenancy.Scope
	// Workload is the cluster's workload cluster (nil unless the controller needs it).
	Workload workload.Cluster
	// Read is the controller's complete read; a repair writes its own part of the status into it.
	Read T
	// Pass is the remediation policy's pass, capped by the pass's budget: every change asks it.
	Pass remediation.Pass
	// Unhealthy is the union of every repair's findings (the storm rule's count).
	Unhealthy []string
	Now       time.Time

	r          *Metrics
	o          *outcome
	repair     string
	controller string
	// types are the controller's conditions; writer and clock those of the runner (WriteAhead, Time).
	types  []string
	writer *Writer
	clock  clock.PassiveClock
}

// Time is the time now, on the runner's clock: the time of a write made in the middle of the pass (Now is
// the pass's start).
func (e *Env[T]) Time() time.Time { return e.clock.Now() }

// WriteAhead writes the controller's block of the cluster's status now, in the middle of the pass, before a
// step is taken: the block as last written, changed by record, with the controller's conditions as they
// stand. A step recorded so before its cloud call is neither lost nor repeated early when the process stops
// between the call and the pass's one status write (or that write fails). The write goes through the
// Writer's fence; an error means nothing was recorded, and the step must not be taken.
func (e *Env[T]) WriteAhead(ctx context.Context, record func(*v1alpha1.ClusterStatus)) error {
	own := Owned{Owner: e.controller, Fields: []string{e.controller}, Types: e.types}
	own.Status.CopyBlock(e.controller, &e.Cluster.Status)
	record(&own.Status)
	own.Conditions = owned(e.Cluster.Status.Conditions, e.types)
	if _, err := e.writer.Write(ctx, e.Cluster, own); err != nil {
		return fmt.Errorf("record the step before it is taken: %w", err)
	}
	return nil
}

// Ask asks the policy for a. A held or dry-run answer is counted in vitals_<controller>_repairs_total
// (the policy records it; a hold by the pass's own cap is recorded here); an allowed one must be followed
// by Done.
func (e *Env[T]) Ask(ctx context.Context, a remediation.Action) remediation.Decision {
	d := e.Pass.Ask(ctx, a)
	switch d.Outcome {
	case remediation.Allowed:
		return d
	case remediation.DryRun:
		e.r.repair(e.repair, OutcomeDryRun)
		return d
	}
	e.r.repair(e.repair, OutcomeHeld)
	if d.Reason == ReasonPassBudget {
		// the runner's own rule: the policy did not see it, so the runner records it
		e.Event(corev1.EventTypeNormal, ReasonPassBudget, a.Verb, a.Verb+" "+a.Object()+": "+d.Message)
		e.Line(v1alpha1.Action{Time: metav1.NewTime(e.Now), Action: v1alpha1.ActionSkipped, Object: a.Object(), Reason: ReasonPassBudget, Message: d.Message})
	}
	return d
}

// Done reports the result of an allowed action to the policy and counts it (a write refused at its fence
// as held).
func (e *Env[T]) Done(ctx context.Context, a remediation.Action, err error) {
	e.Pass.Done(ctx, a, err)
	outcome := OutcomeDone
	if _, fenced := fencing.ReasonOf(err); fenced {
		outcome = OutcomeHeld
	} else if err != nil {
		outcome = OutcomeFailed
	}
	e.r.repair(e.repair, outcome)
}

// Fenced is ctx carrying the fence of actions: the writes that carry them out are sent only through it,
// which checks again, at each write, that this replica still holds the cluster and that no pause,
// exclusion or dry-run has come since the policy allowed them (package fencing).
func (e *Env[T]) Fenced(ctx context.Context, actions ...remediation.Action) context.Context {
	return fencing.With(ctx, e.Pass.Fence(actions...))
}

// Act asks the policy for a, runs do when allowed, its writes fenced (Fenced), and reports its result (Ask,
// then Done). It returns the outcome (OutcomeDone, OutcomeFailed, OutcomeHeld, OutcomeDryRun), the decision
// and do's error; a write refused at its fence is OutcomeHeld.
func (e *Env[T]) Act(ctx context.Context, a remediation.Action, do func(context.Context) error) (string, remediation.Decision, error) {
	d := e.Ask(ctx, a)
	switch d.Outcome {
	case remediation.Allowed:
	case remediation.DryRun:
		return OutcomeDryRun, d, nil
	default:
		return OutcomeHeld, d, nil
	}
	err := do(e.Fenced(ctx, a))
	e.Done(ctx, a, err)
	if reason, ok := fencing.ReasonOf(err); ok {
		return OutcomeHeld, remediation.Decision{Outcome: remediation.Held, Reason: string(reason), Message: err.Error()}, nil
	}
	if err != nil {
		return OutcomeFailed, d, err
	}
	return OutcomeDone, d, nil
}

// Event records an Event on the cluster (reason in CamelCase, action the repair's verb). It is sent after
// the pass, and only when the repair's conditions changed: a finding that stays is announced once.
func (e *Env[T]) Event(typ, reason, action, note string) {
	e.o.events[e.repair] = append(e.o.events[e.repair], notice{typ, reason, action, note})
}

// Warn records a Warning Event (see Event).
func (e *Env[T]) Warn(reason, action, note string) {
	e.Event(corev1.EventTypeWarning, reason, action, note)
}

// Line adds a status line of the controller's own (its Controller is set here), unless the history or
// this pass has it already.
func (e *Env[T]) Line(l v1alpha1.Action) {
	l.Controller = e.controller
	e.o.lines = append(e.o.lines, l)
}

// cappedPass holds back every change once the pass's own cap is spent (dry-run answers count: they are the
// changes a pass would make).
type cappedPass struct {
	remediation.Pass
	controller string

	mu   sync.Mutex
	left int
}

func (p *cappedPass) Ask(ctx context.Context, a remediation.Action) remediation.Decision {
	p.mu.Lock()
	spent := p.left <= 0
	p.mu.Unlock()
	if spent {
		return remediation.Decision{Outcome: remediation.Held, Reason: ReasonPassBudget,
			Message: "this pass's cap on changes (spec.controllers." + p.controller + ".budget) is spent"}
	}
	d := p.Pass.Ask(ctx, a)
	if d.Outcome == remediation.Allowed || d.Outcome == remediation.DryRun {
		p.mu.Lock()
		p.left--
		p.mu.Unlock()
	}
	return d
}
