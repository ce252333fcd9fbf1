package access

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
)

// Name of the controller (events, metrics, logs).
const Name = v1alpha1.ControllerAccess

// DefaultInterval between two resolutions of a cluster's tenancy.
const DefaultInterval = time.Minute

// Reconciler keeps every VitalsCluster's access proven.
type Reconciler struct {
	d  *pass.Deps
	o  Options
	wl wlCache // the last authentication with each workload consumer Secret
}

// Options tune the access controller.
type Options struct {
	// Interval between resolutions (default DefaultInterval); a spec change resolves at once.
	Interval time.Duration
	// WorkloadChanges, given to the workload access as its Changed, reconciles a cluster when its
	// workload health changes (nil: at the interval only).
	WorkloadChanges *WorkloadChanges
	// Deorbit: the deorbit controller owns the finalizer of a deleted cluster, and the cluster keeps
	// its cloud and workload access until it is gone (deorbit uses them). False: the finalizer goes at
	// once on deletion.
	Deorbit bool
	// Metrics count the proofs as the other controllers count their passes (vitals_access_passes_total,
	// vitals_access_pass_duration_seconds, vitals_access_last_success_timestamp_seconds; nil: not
	// registered). A proof is ok when the cloud was verified, error when tenancy refused the cluster,
	// aborted when the cloud could not be asked.
	Metrics *pass.Metrics
	// ExpiryWarning is how long before the credentials of a cluster expire its CredentialsHealthy turns False
	// (default DefaultExpiryWarning).
	ExpiryWarning time.Duration
	// Credentials export when each cluster's credentials expire (nil: not registered).
	Credentials *CredentialMetrics
}

// New returns the access controller. d.Workload (nil: WorkloadReachable is not reported) connects each
// cluster's workload cluster; d.Checks (nil: none kept) receives the cloud check of each cluster.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Metrics == nil {
		o.Metrics = pass.NewMetrics(Name, nil)
	}
	if o.ExpiryWarning <= 0 {
		o.ExpiryWarning = DefaultExpiryWarning
	}
	if o.Credentials == nil {
		o.Credentials = NewCredentialMetrics(nil)
	}
	return &Reconciler{d: d, o: o}, nil
}

// SetupWithManager registers the reconciler with opts. Status-only updates do not trigger a resolution;
// spec changes and deletion (which bumps the generation of an object with finalizers) do.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	var more func(*builder.Builder) *builder.Builder
	if r.o.WorkloadChanges != nil {
		more = func(b *builder.Builder) *builder.Builder { return b.WatchesRawSource(r.o.WorkloadChanges.Source()) }
	}
	return r.d.Setup(ctx, mgr, Name, opts, r, []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting)}, more)
}

// deleting passes the update that marks a cluster for deletion.
var deleting = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

// Reconcile sets the finalizer, resolves the cluster's tenancy and reports it; on deletion it forgets
// the cluster and lets it go.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var c v1alpha1.VitalsCluster
	if err := r.d.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", req.NamespacedName, err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &c)
	}
	if err := pass.RetryOnConflict(ctx, r.d.APIReader, &c, func() error {
		// The finalizer is deorbit's, for a cluster whose deletion tears it down; any other cluster goes at
		// once when deleted, also while the operator is away (an uninstalled operator leaves no namespace
		// Terminating behind an Orphan cluster).
		want := r.o.Deorbit && c.Spec.Deletion() == v1alpha1.DeletionPolicyDeorbit
		if controllerutil.ContainsFinalizer(&c, v1alpha1.FinalizerDeorbit) == want {
			return nil
		}
		patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
		if want {
			controllerutil.AddFinalizer(&c, v1alpha1.FinalizerDeorbit)
		} else {
			controllerutil.RemoveFinalizer(&c, v1alpha1.FinalizerDeorbit)
		}
		return r.d.Client.Patch(r.d.Fenced(ctx, &c), &c, patch)
	}); err != nil {
		if apierrors.IsNotFound(err) { // deleted meanwhile
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("set the finalizer of cluster %s: %w", req.NamespacedName, err)
	}
	start := r.d.Clock.Now()
	cloud := r.verifyCloud(ctx, &c)
	creds := r.checkCredentials(ctx, &c, cloud)
	wl, wc := r.reachWorkload(ctx, &c)
	wlCreds := r.checkWorkloadCredentials(ctx, &c, cloud, wc)
	end := r.d.Clock.Now()
	r.o.Metrics.Observe(req.NamespacedName, cloud.result(), end.Sub(start), end)
	own := pass.Owned{Owner: Name, Fields: []string{Name, "projectID"}, Types: []string{v1alpha1.ConditionCloudVerified, v1alpha1.ConditionCredentialsHealthy, v1alpha1.ConditionWorkloadReachable, v1alpha1.ConditionWorkloadCredentialsHealthy}}
	own.Status.Access = &v1alpha1.AccessStatus{ControllerStatus: v1alpha1.ControllerStatus{ObservedGeneration: c.Generation}}
	own.Status.ProjectID = c.Status.ProjectID
	cloud.apply(&own)
	creds.apply(&own, &c)
	wl.apply(&own)
	wlCreds.apply(&own, &c)
	if _, err := r.d.Writer.Write(ctx, &c, own); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.o.Interval}, nil
}

// release lets a deleted cluster go: without the deorbit controller, the finalizer is removed at
// once so that deletion never hangs; with it, deorbit removes it and the accesses stay until the
// cluster is gone.
func (r *Reconciler) release(ctx context.Context, c *v1alpha1.VitalsCluster) error {
	if r.o.Deorbit {
		return nil
	}
	key := client.ObjectKeyFromObject(c)
	r.forget(key)
	if !controllerutil.ContainsFinalizer(c, v1alpha1.FinalizerDeorbit) {
		return nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c, v1alpha1.FinalizerDeorbit)
	if err := r.d.Client.Patch(r.d.Fenced(ctx, c), c, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from cluster %s: %w", key, err)
	}
	logf.FromContext(ctx).Info("cluster released")
	return nil
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.o.Metrics.Forget(key)
	r.o.Credentials.forget(key)
	r.o.Credentials.forgetWorkload(key)
	r.wl.forget(key)
	r.d.Tenancy.Forget(key)
	if r.d.Workload != nil {
		r.d.Workload.Forget(key)
	}
	if r.d.Checks != nil {
		r.d.Checks.Forget(key)
	}
}

func (r *Reconciler) event(c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	pass.Event(r.d.Recorder, Name, c, typ, reason, action, note)
}
