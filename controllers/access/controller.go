package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/clusterstatus"
	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Name of the controller (events, metrics, logs).
const Name = "access"

// DefaultInterval between two resolutions of a cluster's tenancy.
const DefaultInterval = time.Minute

// Reconciler keeps every VitalsCluster's access proven.
type Reconciler struct {
	Client client.Client
	// APIReader reads a cluster again after a status write conflicted (nil: Client, its cache).
	APIReader client.Reader
	// Tenancy resolves each cluster's cloud scope, or refuses it.
	Tenancy tenancy.Resolver
	// Checks receives the per-cluster checks that gate remediation (nil: none kept).
	Checks remediation.Checks
	// Fencer fences the cluster's status and finalizer writes (the remediation policy; nil: none, for a
	// client that does not fence).
	Fencer   remediation.Fencer
	Recorder events.EventRecorder // nil: no events
	Clock    clock.PassiveClock   // nil: the real clock
	// Interval between resolutions (default DefaultInterval); a spec change resolves at once.
	Interval time.Duration
	// Workload connects each cluster's workload cluster and reports WorkloadReachable (nil: not done).
	Workload workload.Access
	// WorkloadChanges, given to the workload access as its Changed, reconciles a cluster when its
	// workload health changes (nil: at the interval only).
	WorkloadChanges *WorkloadChanges
	// Progress observes reconciles and the work queue (the operator's liveness); nil: not observed.
	Progress *progress.Controller
	// Deorbit: the deorbit controller owns the finalizer of a deleted cluster, and the cluster keeps
	// its cloud and workload access until it is gone (deorbit uses them). False: the finalizer goes at
	// once on deletion.
	Deorbit bool

	once sync.Once // defaults applied
}

// SetupWithManager registers the reconciler. Status-only updates do not trigger a resolution; spec
// changes and deletion (which bumps the generation of an object with finalizers) do.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.VitalsCluster{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting)))
	if r.WorkloadChanges != nil {
		b = b.WatchesRawSource(r.WorkloadChanges.Source())
	}
	return r.Progress.Complete(b, r)
}

// deleting passes the update that marks a cluster for deletion.
var deleting = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

func (r *Reconciler) defaults() { r.once.Do(r.setDefaults) }

// setDefaults fills the unset fields once: Reconcile runs on several workers at a time.
func (r *Reconciler) setDefaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Interval <= 0 {
		r.Interval = DefaultInterval
	}
}

// Reconcile sets the finalizer, resolves the cluster's tenancy and reports it; on deletion it forgets
// the cluster and lets it go.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.defaults()
	var c v1alpha1.VitalsCluster
	if err := r.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", req.NamespacedName, err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &c)
	}
	if err := clusterstatus.RetryOnConflict(ctx, r.APIReader, r.Client, &c, func() error {
		if controllerutil.ContainsFinalizer(&c, v1alpha1.FinalizerDeorbit) {
			return nil
		}
		patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(&c, v1alpha1.FinalizerDeorbit)
		return r.Client.Patch(clusterstatus.Fenced(ctx, r.Fencer, &c), &c, patch)
	}); err != nil {
		if apierrors.IsNotFound(err) { // deleted meanwhile
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("add finalizer to cluster %s: %w", req.NamespacedName, err)
	}
	cloud := r.verifyCloud(ctx, &c)
	wl := r.reachWorkload(ctx, &c)
	if err := r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) { cloud.apply(st); wl.apply(st) }); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of cluster %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{RequeueAfter: r.Interval}, nil
}

// release lets a deleted cluster go: without the deorbit controller, the finalizer is removed at
// once so that deletion never hangs; with it, deorbit removes it and the accesses stay until the
// cluster is gone.
func (r *Reconciler) release(ctx context.Context, c *v1alpha1.VitalsCluster) error {
	if r.Deorbit {
		return nil
	}
	key := client.ObjectKeyFromObject(c)
	r.forget(key)
	if !controllerutil.ContainsFinalizer(c, v1alpha1.FinalizerDeorbit) {
		return nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c, v1alpha1.FinalizerDeorbit)
	if err := r.Client.Patch(clusterstatus.Fenced(ctx, r.Fencer, c), c, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from cluster %s: %w", key, err)
	}
	logf.FromContext(ctx).Info("cluster released", "cluster", key.String())
	return nil
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.Tenancy.Forget(key)
	if r.Workload != nil {
		r.Workload.Forget(key)
	}
	if r.Checks != nil {
		r.Checks.Forget(key)
	}
}

func (r *Reconciler) event(c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	clusterstatus.Event(r.Recorder, c, typ, reason, action, note)
}

func (r *Reconciler) writeStatus(ctx context.Context, c *v1alpha1.VitalsCluster, mutate func(*v1alpha1.ClusterStatus)) error {
	return clusterstatus.Write(clusterstatus.Fenced(ctx, r.Fencer, c), r.Client, r.APIReader, c, mutate)
}
