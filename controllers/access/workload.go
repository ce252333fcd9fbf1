package access

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/workload"
)

// ReasonSecretUnreadable: the kubeconfig Secret could not be read from the management cluster (its API
// failed); the access there was is kept.
const ReasonSecretUnreadable = "SecretUnreadable"

// WorkloadChanges turns the health changes of the workload accesses into reconcile requests of the
// access controller, so that WorkloadReachable follows an outage within a probe interval.
type WorkloadChanges struct {
	ch chan event.TypedGenericEvent[*v1alpha1.VitalsCluster]
}

// NewWorkloadChanges returns an empty queue of changes.
func NewWorkloadChanges() *WorkloadChanges {
	return &WorkloadChanges{ch: make(chan event.TypedGenericEvent[*v1alpha1.VitalsCluster], 1024)}
}

// Changed enqueues the VitalsCluster key (give it to workload.Options.Changed). It never blocks: when
// the queue is full the change waits for the cluster's next periodic reconcile.
func (w *WorkloadChanges) Changed(key types.NamespacedName) {
	e := event.TypedGenericEvent[*v1alpha1.VitalsCluster]{Object: &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	select {
	case w.ch <- e:
	default:
	}
}

// Source feeds the changes to the controller.
func (w *WorkloadChanges) Source() source.Source {
	return source.Channel(w.ch, &handler.TypedEnqueueRequestForObject[*v1alpha1.VitalsCluster]{})
}

// workloadResult is one look at a cluster's workload access, ready to be written into its status.
type workloadResult struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func (wr workloadResult) apply(o *pass.Owned) {
	if wr.reason == "" {
		return
	}
	o.Conditions = append(o.Conditions, metav1.Condition{Type: v1alpha1.ConditionWorkloadReachable, Status: wr.status, Reason: wr.reason, Message: wr.message})
}

// reachWorkload connects c's workload cluster (again when its kubeconfig Secret changed) and records an
// Event when the result changed; it returns the cluster when it is healthy (nil otherwise). The workload access
// reports the cluster's remediation.CheckWorkload itself, at every probe.
func (r *Reconciler) reachWorkload(ctx context.Context, c *v1alpha1.VitalsCluster) (workloadResult, workload.Cluster) {
	if r.d.Workload == nil {
		return workloadResult{}, nil
	}
	res := workloadResult{}
	wc, err := r.d.Workload.For(ctx, c)
	if err == nil {
		err = wc.Healthy()
	}
	var we *workload.Error
	switch {
	case err == nil:
		res.status, res.reason = metav1.ConditionTrue, workload.ReasonReachable
		res.message = fmt.Sprintf("the API answers and the informers have synced (kubeconfig: %s)", wc.Source())
	case errors.As(err, &we):
		res.status, res.reason, res.message = metav1.ConditionFalse, we.Reason, we.Message
		if we.Reason == workload.ReasonConnecting {
			res.status = metav1.ConditionUnknown
		}
	default:
		res.status, res.reason, res.message = metav1.ConditionUnknown, ReasonSecretUnreadable, err.Error()
	}
	prev := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionWorkloadReachable)
	if prev == nil || prev.Reason != res.reason || prev.Message != res.message {
		typ := corev1.EventTypeWarning
		if res.reason == workload.ReasonReachable {
			typ = corev1.EventTypeNormal
		}
		r.event(c, typ, "Workload"+res.reason, "ReachWorkload", res.message)
		logf.FromContext(ctx).Info("workload access changed", "reason", res.reason, "message", res.message)
	}
	if err != nil {
		return res, nil
	}
	return res, wc
}
