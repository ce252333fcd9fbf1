package access

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/workload"
)

// ReasonSecretUnreadable: the kubeconfig Secret could not be read from the management cluster (its API
// failed); the access there was is kept.
const ReasonSecretUnreadable = "SecretUnreadable"

// Workload is the access reconciler's workload part: it connects each VitalsCluster's workload cluster,
// reports the WorkloadReachable condition (the workload.Manager reports the remediation check itself),
// and turns the access's health changes into reconcile requests.
type Workload struct {
	Access workload.Access
	// Recheck is how soon a cluster is reconciled again to notice a changed kubeconfig Secret (the
	// operator never watches Secrets; default 1m).
	Recheck time.Duration

	changes chan event.TypedGenericEvent[*v1alpha1.VitalsCluster]
}

// NewWorkload returns the workload part; set Access before the first Reconcile, and pass Changed to the
// workload.Manager.
func NewWorkload() *Workload {
	return &Workload{changes: make(chan event.TypedGenericEvent[*v1alpha1.VitalsCluster], 1024)}
}

// Changed enqueues a VitalsCluster whose workload health changed. It never blocks: when the queue is
// full the change is left to the next periodic reconcile.
func (w *Workload) Changed(key types.NamespacedName) {
	e := event.TypedGenericEvent[*v1alpha1.VitalsCluster]{Object: &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	select {
	case w.changes <- e:
	default:
	}
}

// Source feeds the health changes to the access controller (add it with builder.WatchesRawSource).
func (w *Workload) Source() source.Source {
	return source.Channel(w.changes, &handler.TypedEnqueueRequestForObject[*v1alpha1.VitalsCluster]{})
}

// Reconcile connects c's workload cluster (again when its kubeconfig changed) and returns the
// WorkloadReachable condition and when to look again.
func (w *Workload) Reconcile(ctx context.Context, c *v1alpha1.VitalsCluster) (metav1.Condition, time.Duration) {
	recheck := w.Recheck
	if recheck <= 0 {
		recheck = time.Minute
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionWorkloadReachable, ObservedGeneration: c.Generation}
	cl, err := w.Access.For(ctx, c)
	if err == nil {
		err = cl.Healthy()
	}
	var we *workload.Error
	switch {
	case err == nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, workload.ReasonReachable
		cond.Message = fmt.Sprintf("the API answers and the informers have synced (kubeconfig: %s)", cl.Source())
	case errors.As(err, &we):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, we.Reason, we.Message
		if we.Reason == workload.ReasonConnecting {
			cond.Status = metav1.ConditionUnknown
		}
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, ReasonSecretUnreadable, err.Error()
	}
	return cond, recheck
}

// Forget stops the access of a VitalsCluster that is gone (not found). A VitalsCluster being deleted
// keeps its access until its finalizer goes: deorbit reads the workload cluster meanwhile.
func (w *Workload) Forget(key types.NamespacedName) {
	w.Access.Forget(key)
}
