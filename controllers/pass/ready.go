package pass

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// OwnerReady owns the Ready condition and status.observedGeneration: the summary of the others.
const OwnerReady = "ready"

// Reasons of the Ready condition of its own (otherwise it takes the reason of the first condition that
// keeps the cluster from being ready).
const (
	ReasonReady       = "Ready"
	ReasonProgressing = "Progressing"
	ReasonDeleting    = "Deleting"
)

// Part is one controller that runs for a cluster, and the conditions that must not be Unknown for the
// cluster to be Ready: the controller can read what it looks after. A False one is a finding the
// controller reports and works on, not a reason the cluster is not Ready.
type Part struct {
	// Name of the controller: its block status.<name> tells which generation it has passed.
	Name string
	// Enabled reports whether the cluster turns the controller on.
	Enabled func(c *v1alpha1.VitalsCluster) bool
	// Conditions the controller sets.
	Conditions []string
}

// Summarize is c's Ready condition and the generation every enabled part has completed a pass of (0 when
// one has not): True when the cloud is verified, the workload cluster reachable (when it is known), and
// every enabled part has passed the current spec and can read what it looks after.
func Summarize(c *v1alpha1.VitalsCluster, parts []Part) (metav1.Condition, int64) {
	ready := metav1.Condition{Type: v1alpha1.ConditionReady}
	if !c.DeletionTimestamp.IsZero() {
		ready.Status, ready.Reason = metav1.ConditionFalse, ReasonDeleting
		ready.Message = "the cluster is being deleted"
		if cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCleanedUp); cd != nil {
			ready.Message += ": " + cd.Message
		}
		return ready, c.Status.ObservedGeneration
	}
	var reasons, msgs []string
	problem := func(reason, msg string) {
		reasons = append(reasons, reason)
		msgs = append(msgs, msg)
	}
	gen := c.Generation
	switch cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionCloudVerified); {
	case cd == nil:
		problem(ReasonProgressing, "CloudVerified: the cluster's project is not proven yet")
	case cd.Status != metav1.ConditionTrue:
		problem(cd.Reason, "CloudVerified: "+cd.Message)
	}
	if cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionWorkloadReachable); cd != nil && cd.Status != metav1.ConditionTrue {
		problem(cd.Reason, "WorkloadReachable: "+cd.Message)
	}
	for _, p := range parts {
		if !p.Enabled(c) {
			continue
		}
		if b := c.Status.Controller(p.Name, false); b == nil || b.ObservedGeneration != c.Generation {
			gen = 0
			problem(ReasonProgressing, fmt.Sprintf("%s: no complete pass of generation %d yet", p.Name, c.Generation))
			continue
		}
		for _, t := range p.Conditions {
			cd := meta.FindStatusCondition(c.Status.Conditions, t)
			if cd != nil && cd.Status == metav1.ConditionUnknown && cd.Reason != ReasonDisabled {
				problem(cd.Reason, t+": "+cd.Message)
			}
		}
	}
	if len(reasons) == 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, ReasonReady,
			"the cloud is verified, the workload cluster reachable, and every enabled controller passes"
		return ready, gen
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, reasons[0], strings.Join(msgs, "; ")
	if gen == 0 {
		gen = c.Status.ObservedGeneration
	}
	return ready, gen
}

// Summary writes the Ready condition and status.observedGeneration of every VitalsCluster from its other
// conditions, whenever they change: one writer, so that the summary never races the controllers that
// write the parts.
type Summary struct {
	d     *Deps
	parts []Part
}

// NewSummary returns the summary of parts.
func NewSummary(d *Deps, parts []Part) (*Summary, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", OwnerReady, err)
	}
	return &Summary{d: d, parts: parts}, nil
}

// SetupWithManager registers the summary: it runs on every change of a cluster's spec or conditions.
func (s *Summary) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return s.d.Setup(ctx, mgr, OwnerReady, opts, s, []predicate.Predicate{predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{}, conditionsChanged)}, nil)
}

// conditionsChanged passes an update that changes a condition other than Ready, or a block's
// observedGeneration, or the deletion.
var conditionsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*v1alpha1.VitalsCluster)
	n, ok2 := e.ObjectNew.(*v1alpha1.VitalsCluster)
	if !ok1 || !ok2 {
		return true
	}
	if o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() {
		return true
	}
	others := func(c *v1alpha1.VitalsCluster) []metav1.Condition {
		return slices.DeleteFunc(slices.Clone(c.Status.Conditions), func(cd metav1.Condition) bool { return cd.Type == v1alpha1.ConditionReady })
	}
	if !equalConditions(others(o), others(n)) {
		return true
	}
	for _, name := range v1alpha1.Controllers {
		ob, nb := o.Status.Controller(name, false), n.Status.Controller(name, false)
		if (ob == nil) != (nb == nil) || (ob != nil && ob.ObservedGeneration != nb.ObservedGeneration) {
			return true
		}
	}
	return false
}}

// Reconcile writes c's summary when it changed.
func (s *Summary) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c v1alpha1.VitalsCluster
	if err := s.d.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", req.NamespacedName, err)
	}
	ready, gen := Summarize(&c, s.parts)
	own := Owned{Owner: OwnerReady, Fields: []string{"observedGeneration"}, Types: []string{v1alpha1.ConditionReady}, Conditions: []metav1.Condition{ready}}
	own.Status.ObservedGeneration = gen
	_, err := s.d.Writer.Write(ctx, &c, own)
	return ctrl.Result{}, err
}
