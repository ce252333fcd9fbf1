package deorbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// Name of the controller (events, metrics, status lines).
const Name = v1alpha1.ControllerDeorbit

// DefaultStepTimeout bounds one step (one reconcile): well below the operator's hung-pass deadline.
const DefaultStepTimeout = 2 * time.Minute

// Reconciler holds the deorbit finalizer of every deleted VitalsCluster until its cloud resources are
// gone (or it gives up), one step per reconcile, requeued at the step's next deadline.
type Reconciler struct {
	d      *pass.Deps
	o      Options
	engine *Engine
	// proven keeps the proofs that clusters' servers are gone (the interlock), for a while.
	proven provenCache
}

// Options tune deorbit.
type Options struct {
	// Rand gives the jitter of the backoff (nil: math/rand/v2).
	Rand backoff.Rand
	// Metrics (nil: unregistered).
	Metrics *Metrics
	// Workers bound the deletes and reads of one cluster running at once (default DefaultWorkers).
	Workers int
	// StepTimeout bounds one step (default DefaultStepTimeout).
	StepTimeout time.Duration
	// Namespace the operator watches ("": every namespace): the sweep's guard lists the VitalsClusters there.
	Namespace string
	// RecordInterval is how often a live cluster is looked at for status.deorbit.seen (default
	// DefaultRecordInterval).
	RecordInterval time.Duration
}

// New returns deorbit. d.Workload (nil: the Kubernetes phases count as unreachable) gives each cluster's
// workload cluster; d.Checks (nil: not set here) receives the cluster's cloud check after each resolution.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := d.RequirePolicy(); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	return &Reconciler{d: d, o: o, engine: &Engine{Clock: d.Clock, Rand: o.Rand, Workers: o.Workers, Metrics: o.Metrics}}, nil
}

// SetupWithManager registers the reconciler with opts. Deletion bumps the generation of an object with
// finalizers, so spec changes and deletion trigger a step, and so does a change of the annotations (the
// confirmation of a teardown, a pause); the steps requeue themselves.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return r.d.Setup(ctx, mgr, Name, opts, r, []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{},
		predicate.AnnotationChangedPredicate{})}, nil)
}

// SettingsOf are c's deorbit settings with defaults applied.
func SettingsOf(c *v1alpha1.VitalsCluster) Settings { return c.Spec.Controllers.Deorbit.Settings() }

// ClusterName is the name the cloud provider tags c's resources with (default: the resource's name).
func ClusterName(c *v1alpha1.VitalsCluster) string {
	if n := c.Spec.OpenStack.ClusterName; n != "" {
		return n
	}
	return c.Name
}

// Reconcile takes one step of a deleted cluster's deorbit and writes it into the status; it releases
// the finalizer when the cloud confirms everything gone, when it gives up, or at once when the deletion
// policy is Orphan, deorbit is disabled or the workload cluster is the operator's own. With the policy
// Deorbit, nothing is deleted until the interlock proves the cluster itself going: the finalizer holds
// with a condition that says how to go on.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.String()
	var c v1alpha1.VitalsCluster
	if err := r.d.Client.Get(ctx, req.NamespacedName, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.o.Metrics.forget(key)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", key, err)
	}
	if c.DeletionTimestamp.IsZero() {
		// Managed (again): nothing of an earlier cluster of that name is left to report. While it lives, its
		// servers and its keep ledger are recorded for its teardown.
		r.o.Metrics.forget(key)
		return r.record(ctx, &c)
	}
	if !controllerutil.ContainsFinalizer(&c, v1alpha1.FinalizerDeorbit) {
		r.o.Metrics.forget(key)
		return ctrl.Result{}, nil
	}
	settings := SettingsOf(&c)
	switch {
	case c.Spec.Deletion() == v1alpha1.DeletionPolicyOrphan:
		return ctrl.Result{}, r.releaseAt(ctx, &c, "Orphaned", orphaned(c.Status.Deorbit))
	case !settings.Enabled:
		return ctrl.Result{}, r.releaseAt(ctx, &c, "Disabled", "deorbit is disabled for this cluster: nothing was cleaned up")
	case c.Spec.KubeconfigSecretRef == nil:
		return ctrl.Result{}, r.releaseAt(ctx, &c, "LocalCluster",
			"the workload cluster is the operator's own: deorbit never deletes in it or in its cloud")
	}
	// The step resumes from the status: read it from the API server, not from the cache, which may not
	// show the last step's write yet (a step on an older status would undo the newer one).
	if err := r.d.APIReader.Get(ctx, req.NamespacedName, &c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(&c, v1alpha1.FinalizerDeorbit) {
		return ctrl.Result{}, nil
	}
	if c.Spec.Deletion() != v1alpha1.DeletionPolicyDeorbit {
		return ctrl.Result{}, nil // set to Orphan since the cache's version: the next event releases it
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.StepTimeout)
	defer cancel()
	in, scope, err := r.input(ctx, &c, settings)
	if err != nil {
		return ctrl.Result{}, err
	}
	var servers serverLister
	var project string
	if scope != nil {
		servers, project = scope.Cloud, scope.ProjectID
	}
	proof := r.interlock(ctx, &c, servers, project)
	if !proof.holds() {
		return ctrl.Result{RequeueAfter: NotConfirmedRequeue}, r.holdUnconfirmed(ctx, &c, proof)
	}
	policy := r.d.Policy.Begin(ctx, &c, Name, nil, remediation.Scope{DryRun: settings.DryRun, Interlock: proof.recheck(c.UID)})
	in.Policy = policy
	st := &v1alpha1.DeorbitStatus{}
	if c.Status.Deorbit != nil {
		st = c.Status.Deorbit.DeepCopy()
	}
	before := st.Phase
	st.Interlock = strings.Join(proof.why, "; ")
	if proof.kind == proofOwner {
		st.OwnerDeletionSeen = ownerDeletionSeen(&c, st.OwnerDeletionSeen, r.d.Clock.Now())
	}
	res := r.engine.Step(ctx, in, st)
	r.o.Metrics.observe(key, st)
	log := logf.FromContext(ctx)
	if st.Phase != before {
		r.event(&c, corev1.EventTypeNormal, "DeorbitPhase", "Deorbit", fmt.Sprintf("phase %s: %d of %d resources done", st.Phase, st.Counts.Done, st.Counts.Total))
		log.Info("deorbit phase", "phase", st.Phase, "done", st.Counts.Done, "remaining", st.Counts.Remaining)
	}
	switch changed := st.Phase != before; {
	case changed && st.Phase == v1alpha1.DeorbitPhaseGaveUp:
		r.event(&c, corev1.EventTypeWarning, "DeorbitGaveUp", "Deorbit", debrisNote(st))
		for _, d := range st.Debris {
			log.Info("deorbit debris", "type", d.Type, "id", d.ID, "name", d.Name, "status", d.Status, "lastError", d.LastError)
		}
		for _, d := range st.NotProven {
			log.Info("deorbit not proven the cluster's, never touched", "type", d.Type, "id", d.ID, "name", d.Name)
		}
	case changed && st.Phase == v1alpha1.DeorbitPhaseDone:
		r.event(&c, corev1.EventTypeNormal, "DeorbitDone", "Deorbit", fmt.Sprintf("the cloud confirmed every resource of the cluster gone (%d tracked)", st.Counts.Total)+notProvenNote(st))
	}
	reason, status, msg := conditionOf(st, in)
	own := cleanedUp(&c, metav1.Condition{Type: v1alpha1.ConditionCleanedUp, Status: status, Reason: reason, Message: msg})
	own.Status.Deorbit = st
	st.ObservedGeneration = c.Generation
	var history []v1alpha1.Action
	if c.Status.Deorbit != nil {
		history = c.Status.Deorbit.Actions
	}
	st.Actions = pass.AppendActions(history, policy.Lines()...)
	if _, err := r.d.Writer.Write(ctx, &c, own); err != nil {
		return ctrl.Result{}, err
	}
	onOwner := own.Conditions[0]
	if st.Phase == v1alpha1.DeorbitPhaseGaveUp {
		onOwner.Message += "; " + debrisNote(st) // the VitalsCluster and its status go
	}
	r.onOwner(ctx, &c, onOwner)
	if err := pass.WriteRemediation(ctx, r.d.Writer, &c, policy); err != nil {
		return ctrl.Result{}, err
	}
	if res.Release {
		return ctrl.Result{}, r.release(ctx, &c)
	}
	after := max(res.Next.Sub(r.d.Clock.Now()), time.Millisecond)
	log.V(1).Info("deorbit step", "phase", st.Phase, "done", st.Counts.Done, "remaining", st.Counts.Remaining,
		"requeueAfter", after.Round(time.Millisecond).String(), "lastError", st.LastError)
	return ctrl.Result{RequeueAfter: after}, nil
}

// input gathers what a step works with: the proven cloud, the workload cluster, the sweep's guard; and the
// cluster's scope (nil when its cloud is not verified).
func (r *Reconciler) input(ctx context.Context, c *v1alpha1.VitalsCluster, s Settings) (Input, *tenancy.Scope, error) {
	key := client.ObjectKeyFromObject(c)
	in := Input{Settings: s, Target: Target{Key: key.String(), ClusterName: ClusterName(c), RouterID: c.Spec.OpenStack.RouterID,
		SubnetID: c.Spec.OpenStack.SubnetID}}
	for _, p := range c.Spec.PodCIDRs {
		pfx, err := netip.ParsePrefix(string(p))
		if err != nil {
			// The CRD refuses such a spec; without the pod CIDRs no route is provably the cluster's.
			in.Target.RouterID = ""
			break
		}
		in.Target.PodCIDRs = append(in.Target.PodCIDRs, pfx.Masked())
	}
	if in.Target.RouterID != "" {
		protected, err := routes.ProtectedRoutes(c.Spec.Controllers.RouteGC.ProtectedRoutes)
		if err != nil {
			// The CRD refuses such a spec; without the protected list no route may be removed.
			in.Target.RouterID = ""
		}
		in.Target.Protected = protected
	}
	scope, err := r.d.Tenancy.Resolve(ctx, c)
	if r.d.Checks != nil {
		r.d.Checks.Set(key, remediation.CheckCloud, err)
	}
	if err == nil {
		in.Cloud = scope.Cloud
		in.Target.Narrow(scope)
		if len(scope.Gone) > 0 {
			logf.FromContext(ctx).V(1).Info("cluster's network resources gone", "gone", strings.Join(scope.Gone, ", "))
		}
		project, cluster := scope.ProjectID, in.Target.ClusterName
		in.SweepGuard = NeighbourGuard(r.d.APIReader, r.o.Namespace, c.UID, project, cluster)
	} else {
		in.CloudErr = err
		scope = nil
	}
	if r.d.Workload == nil {
		in.WorkloadErr = errors.New("the operator has no workload access")
	} else if wc, err := r.d.Workload.For(ctx, c); err != nil {
		in.WorkloadErr = err
	} else {
		// Uncached: a list that fails counts as unreachable.
		in.Workload, in.WorkloadErr = wc.Teardown() // a bucket of the teardown's own
	}
	return in, scope, nil
}

// conditionOf is the CleanedUp condition of a step.
func conditionOf(st *v1alpha1.DeorbitStatus, in Input) (reason string, status metav1.ConditionStatus, msg string) {
	counts := fmt.Sprintf("%d of %d resources done, %d remaining", st.Counts.Done, st.Counts.Total, st.Counts.Remaining)
	switch {
	case st.Phase == v1alpha1.DeorbitPhaseDone:
		return "CleanedUp", metav1.ConditionTrue, "the cloud confirmed every resource of the cluster gone: " + counts + notProvenNote(st)
	case st.Phase == v1alpha1.DeorbitPhaseGaveUp:
		return "GaveUp", metav1.ConditionFalse, fmt.Sprintf("gave up after %s: %d resources in the debris report (status.deorbit.debris); the finalizer goes", in.Settings.GiveUpAfter, len(st.Debris)) + notProvenNote(st)
	case st.Phase == v1alpha1.DeorbitPhaseDryRunPlanned:
		return "DryRun", metav1.ConditionFalse, "dry run: status.deorbit.resources lists what would be deleted (state WouldDelete); nothing was deleted and the finalizer is held until the dry run ends or deorbit gives up at " +
			st.StartTime.Add(in.Settings.GiveUpAfter).UTC().Format(time.RFC3339)
	case in.Cloud == nil && phaseIndex(st.Phase) >= phaseIndex(v1alpha1.DeorbitPhaseRoutes):
		return "CloudUnverified", metav1.ConditionFalse, "the cloud could not be verified; waiting until it can, or until the give-up: " + errString(in.CloudErr)
	case st.UnreachableSince != nil && st.WorkloadSkipped == "":
		return "WorkloadUnreachable", metav1.ConditionFalse, fmt.Sprintf("the workload cluster is unreachable since %s; its phases are skipped after %s", st.UnreachableSince.UTC().Format(time.RFC3339), in.Settings.UnreachableGracePeriod)
	}
	return "InProgress", metav1.ConditionFalse, fmt.Sprintf("phase %s: %s", st.Phase, counts)
}

func errString(err error) string {
	if err == nil {
		return "no verified cloud"
	}
	return err.Error()
}

// debrisNote summarises the debris report for an Event: counts by type and the first IDs, since the
// status goes with the cluster once the finalizer went.
func debrisNote(st *v1alpha1.DeorbitStatus) string {
	byType := map[string][]string{}
	for _, d := range st.Debris {
		byType[d.Type] = append(byType[d.Type], cmp.Or(d.ID, d.Name))
	}
	var parts []string
	for t, ids := range byType {
		shown := ids[:min(len(ids), maxNoteIDs)]
		more := ""
		if len(ids) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s%s)", len(ids), t, strings.Join(shown, " "), more))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "gave up; nothing of the cluster is left in the cloud" + notProvenNote(st)
	}
	return "gave up; debris left in the cloud: " + strings.Join(parts, ", ") + " (status.deorbit.debris while the cluster is there)" + notProvenNote(st)
}

// notProvenNote names the resources never proven the cluster's, apart from the debris ("" without any).
func notProvenNote(st *v1alpha1.DeorbitStatus) string {
	if len(st.NotProven) == 0 {
		return ""
	}
	ids := make([]string, 0, maxNoteIDs)
	for _, d := range st.NotProven[:min(len(st.NotProven), maxNoteIDs)] {
		ids = append(ids, d.Type+" "+cmp.Or(d.ID, d.Name))
	}
	more := ""
	if n := len(st.NotProven) - len(ids); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("; not debris: %d resources the workload cluster named were never proven the cluster's and never touched (%s%s; status.deorbit.notProven): "+
		"they may be another cluster's, do not delete them for this one", len(st.NotProven), strings.Join(ids, ", "), more)
}

// maxNoteIDs bounds the IDs of each type a DeorbitGaveUp Event names (the log names every one).
const maxNoteIDs = 5

// holdUnconfirmed keeps the finalizer of a deleted cluster whose deletion policy is Deorbit while nothing proves
// the cluster itself going: the condition (and an Event when it changes) says why and how to go on, the status
// of an earlier step stays, and nothing is deleted.
func (r *Reconciler) holdUnconfirmed(ctx context.Context, c *v1alpha1.VitalsCluster, p proof) error {
	msg := notConfirmed(c, p)
	own := cleanedUp(c, metav1.Condition{Type: v1alpha1.ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: ReasonNotConfirmed, Message: msg})
	own.Status.Deorbit = c.Status.Deorbit
	changed, err := r.d.Writer.Write(ctx, c, own)
	if err != nil {
		return err
	}
	r.onOwner(ctx, c, own.Conditions[0])
	if changed {
		r.event(c, corev1.EventTypeWarning, "Deorbit"+ReasonNotConfirmed, "Deorbit", msg)
		logf.FromContext(ctx).Info("deorbit not confirmed", "why", strings.Join(p.why, "; "))
	}
	return nil
}

// orphaned is the message of a cluster released by the deletion policy Orphan: nothing deleted, or what an
// earlier teardown (under Deorbit) had deleted before the policy changed.
func orphaned(st *v1alpha1.DeorbitStatus) string {
	const msg = "deletionPolicy is Orphan: the VitalsCluster goes and "
	if st == nil || st.StartTime == nil {
		return msg + "nothing was deleted, in the workload cluster or in the cloud"
	}
	return msg + fmt.Sprintf("nothing more is deleted: the teardown stopped in phase %s with %d of %d resources done (status.deorbit)", st.Phase, st.Counts.Done, st.Counts.Total)
}

// ReasonNotConfirmed: the CleanedUp reason of a deleted cluster whose teardown waits for its interlock.
const ReasonNotConfirmed = "NotConfirmed"

// cleanedUp is deorbit's part of a deleted cluster's status with the CleanedUp condition cd; the ServersSelected
// condition its life left stays (the warning of a selector that matches nothing explains a NotConfirmed).
func cleanedUp(c *v1alpha1.VitalsCluster, cd metav1.Condition) pass.Owned {
	own := pass.Owned{Owner: Name, Fields: []string{Name}, Types: []string{v1alpha1.ConditionCleanedUp, v1alpha1.ConditionServersSelected},
		Conditions: []metav1.Condition{cd}}
	if sc := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionServersSelected); sc != nil {
		own.Conditions = append(own.Conditions, metav1.Condition{Type: sc.Type, Status: sc.Status, Reason: sc.Reason, Message: sc.Message})
	}
	return own
}

// releaseAt records why the finalizer goes without a deorbit, and lets the cluster go.
func (r *Reconciler) releaseAt(ctx context.Context, c *v1alpha1.VitalsCluster, reason, msg string) error {
	r.event(c, corev1.EventTypeNormal, "Deorbit"+reason, "Deorbit", msg)
	own := cleanedUp(c, metav1.Condition{Type: v1alpha1.ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	own.Status.Deorbit = c.Status.Deorbit
	if _, err := r.d.Writer.Write(ctx, c, own); err != nil {
		return err
	}
	r.onOwner(ctx, c, own.Conditions[0])
	return r.release(ctx, c)
}

// release removes the finalizer.
func (r *Reconciler) release(ctx context.Context, c *v1alpha1.VitalsCluster) error {
	key := client.ObjectKeyFromObject(c)
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c, v1alpha1.FinalizerDeorbit)
	if err := r.d.Client.Patch(r.d.Fenced(ctx, c), c, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer from cluster %s: %w", key, err)
	}
	r.o.Metrics.forget(key.String())
	r.proven.forget(c.UID)
	logf.FromContext(ctx).Info("cluster released")
	return nil
}

func (r *Reconciler) event(c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	pass.Event(r.d.Recorder, Name, c, typ, reason, action, note)
}
