// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package enrol

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
)

// Name of the controller (events, logs, its field manager vitals-enrol).
const Name = "enrol"

// DefaultNotReadyRequeue is how soon a Cluster whose OpenStackCluster has not yet made what its VitalsCluster
// needs is looked at again (CAPO's status changes do requeue it too; this bounds a missed one).
const DefaultNotReadyRequeue = 15 * time.Second

// HoldRequeue is how often a Cluster whose Machines the deletion hook holds is looked at again (deorbit's
// release, the VitalsCluster's deletion, requeues it at once; this bounds a missed one, or a Done or GaveUp
// status before the release).
const HoldRequeue = 30 * time.Second

// Options tune the enrolment.
type Options struct {
	// Namespaces selects, by their labels, the namespaces whose OpenStack Clusters are enrolled without the label
	// clusterapi.EnrolLabel (nil: only the Clusters labelled "true").
	Namespaces labels.Selector
	// NotReadyRequeue (default DefaultNotReadyRequeue).
	NotReadyRequeue time.Duration
	// DeletionPolicy of the VitalsClusters the enrolment makes (default Deorbit; Orphan: enrolled for health
	// alone), unless the Cluster's label clusterapi.DeletionPolicyLabel says otherwise.
	DeletionPolicy v1alpha1.DeletionPolicy
}

// Reconciler enrols the Cluster API Clusters that opt in.
type Reconciler struct {
	d   *pass.Deps
	o   Options
	rec events.EventRecorder
}

// New returns the enrolment on d's Client (reads from the cache, fenced writes), APIReader (the fences' and
// the namespaces' reads), Fencer (the replica's validity; nil: the write timeout only), Recorder and Observer.
func New(d *pass.Deps, o Options) (*Reconciler, error) {
	if d == nil || d.Client == nil {
		return nil, errors.New(Name + ": controller dependencies missing: [Client]")
	}
	if d.APIReader == nil {
		d.APIReader = d.Client
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if o.NotReadyRequeue <= 0 {
		o.NotReadyRequeue = DefaultNotReadyRequeue
	}
	switch o.DeletionPolicy {
	case "":
		o.DeletionPolicy = v1alpha1.DeletionPolicyDeorbit
	case v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeletionPolicyOrphan:
	default:
		return nil, fmt.Errorf("%s: deletion policy %q: expected %s or %s", Name, o.DeletionPolicy, v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeletionPolicyOrphan)
	}
	r := &Reconciler{d: d, o: o}
	if d.Recorder != nil {
		r.rec = d.Recorder(Name)
	}
	return r, nil
}

// SetupWithManager registers the enrolment over Clusters, their OpenStackClusters, the VitalsClusters they own
// (spec, label and annotation changes, and status changes that change the Cluster's ConditionHealthy) and their
// Machines (metadata only: a new Machine, a deletion, a deletion hook changed).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if ctx == nil {
		return errors.New("setup " + Name + ": no context")
	}
	wrap := func(r reconcile.Reconciler) reconcile.Reconciler { return r }
	if r.d.Observer != nil {
		var err error
		if opts, wrap, err = r.d.Observer.Observe(Name, opts); err != nil {
			return fmt.Errorf("setup %s: %w", Name, err)
		}
	}
	// a label changed: the enrolment's own label put on by hand (a VitalsCluster handed over) or taken off
	owned := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})
	machine := &metav1.PartialObjectMetadata{}
	machine.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Machine"))
	err := ctrl.NewControllerManagedBy(mgr).Named(Name).WithOptions(opts).
		For(&clusterv1.Cluster{}).
		Owns(&v1alpha1.VitalsCluster{}, builder.WithPredicates(predicate.Or[client.Object](owned, healthChanged))).
		Watches(&infrav1.OpenStackCluster{}, handler.EnqueueRequestsFromMapFunc(r.clustersOf)).
		Watches(machine, handler.EnqueueRequestsFromMapFunc(clusterOf), builder.OnlyMetadata, builder.WithPredicates(hookChanged)).
		Complete(wrap(r))
	if err != nil {
		return fmt.Errorf("setup %s: %w", Name, err)
	}
	return nil
}

// clusterOf maps a Machine to its Cluster (label cluster.x-k8s.io/cluster-name).
func clusterOf(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
}

// hookChanged passes the Machine events that may change its deletion hook: a new Machine, one being deleted, and
// one whose hook someone else took off or put on.
var hookChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		_, had := e.ObjectOld.GetAnnotations()[clusterapi.MachineDeletionHook]
		_, has := e.ObjectNew.GetAnnotations()[clusterapi.MachineDeletionHook]
		return had != has || e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// clustersOf maps an OpenStackCluster to the Clusters whose infrastructure it is.
func (r *Reconciler) clustersOf(ctx context.Context, o client.Object) []reconcile.Request {
	var list clusterv1.ClusterList
	if err := r.d.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		logf.FromContext(ctx).Error(err, "cannot list the Clusters of an OpenStackCluster", "openStackCluster", o.GetNamespace()+"/"+o.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		cl := &list.Items[i]
		if clusterapi.IsOpenStack(cl) && cl.Spec.InfrastructureRef.Name == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cl)})
		}
	}
	return reqs
}

// Reconcile enrols one Cluster: it creates its VitalsCluster, makes it follow the Cluster and its
// OpenStackCluster, pauses it with the Cluster, and deletes it when the Cluster is torn down. A Cluster that no
// longer opts in keeps the VitalsCluster it controls: neither created again nor followed, but paused, its
// Machines hooked and deleted with the Cluster as before (its deletionPolicy decides what deorbit deletes).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx).WithValues("cluster", req.String())
	var cl clusterv1.Cluster
	if err := r.d.Client.Get(ctx, req.NamespacedName, &cl); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // its VitalsCluster goes with it (owner reference)
		}
		return ctrl.Result{}, fmt.Errorf("read Cluster %s: %w", req, err)
	}
	if !clusterapi.IsOpenStack(&cl) {
		return ctrl.Result{}, nil
	}
	in, why, err := r.optedIn(ctx, &cl)
	if err != nil {
		return ctrl.Result{}, err
	}
	var vcl v1alpha1.VitalsCluster
	exists := true
	if err := r.d.Client.Get(ctx, req.NamespacedName, &vcl); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("read VitalsCluster %s: %w", req, err)
		}
		exists = false
	}
	controlled := exists && metav1.IsControlledBy(&vcl, &cl)
	// the enrolment's own: controlled by the Cluster and made by the enrolment (its label); either alone is not
	mine := controlled && clusterapi.MadeByEnrolment(&vcl)
	switch {
	case controlled && !mine:
		log.V(1).Info("vitalsCluster controlled by the cluster but not made by the enrolment: left alone", "label", v1alpha1.LabelEnrolledBy)
		if in {
			r.event(&cl, corev1.EventTypeWarning, "NotEnrolment", "Enrol",
				fmt.Sprintf("VitalsCluster %s is controlled by this Cluster but the enrolment did not make it (no label %s=%s): it is left alone, and the Cluster is not enrolled",
					req, v1alpha1.LabelEnrolledBy, v1alpha1.EnrolledByEnrolment))
		}
		return r.notEnrolled(ctx, &cl)
	case exists && !mine:
		if in {
			r.event(&cl, corev1.EventTypeWarning, "NameTaken", "Enrol",
				fmt.Sprintf("VitalsCluster %s exists and this Cluster does not control it: it is left alone, and the Cluster is not enrolled", req))
		}
		return r.notEnrolled(ctx, &cl)
	case !in && !mine:
		log.V(1).Info("cluster not enrolled", "why", why)
		return r.notEnrolled(ctx, &cl)
	}
	// Enrolled, or no longer enrolled with a VitalsCluster the Cluster still controls: an opt-out ends the
	// creation and the spec's following, not that VitalsCluster's deletionPolicy. Its pause, its Machines' hooks
	// and its deletion with the Cluster go on, so that neither Cluster API's BeforeClusterDelete hook nor a
	// Machine's deletion waits for a deletion nobody makes.
	if !cl.DeletionTimestamp.IsZero() {
		return r.teardown(ctx, &cl, &vcl, exists)
	}
	paused := clusterapi.Paused(&cl, &cl)
	if exists {
		if err := r.followPause(ctx, &cl, &vcl, paused); err != nil {
			return r.held(ctx, err)
		}
	}
	if paused {
		log.V(1).Info("cluster paused: its VitalsCluster and Machines are left as they are")
		return ctrl.Result{}, nil
	}
	if exists {
		n, err := r.hookMachines(ctx, &cl, &vcl, false)
		if err != nil {
			return r.held(ctx, err)
		}
		if n != (hooks{}) {
			log.Info("machines' deletion hook", "held", n.held, "released", n.released)
		}
	}
	// the health on the Cluster: the VitalsCluster's while enrolled, none once opted out
	health := &vcl
	if !in || !exists {
		health = nil
	}
	if err := r.health(ctx, &cl, health); err != nil {
		// the condition says how the cluster is, it never holds the enrolment: written again at the next look
		log.Error(err, "health condition not written on the cluster")
	}
	if !in {
		log.V(1).Info("cluster no longer enrolled: its vitalsCluster is kept, not followed", "why", why)
		return ctrl.Result{}, nil
	}
	var osc infrav1.OpenStackCluster
	if err := r.d.Client.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Spec.InfrastructureRef.Name}, &osc); err != nil {
		if apierrors.IsNotFound(err) {
			log.V(1).Info("openStackCluster not there yet", "openStackCluster", cl.Spec.InfrastructureRef.Name)
			return ctrl.Result{RequeueAfter: r.o.NotReadyRequeue}, nil
		}
		return ctrl.Result{}, fmt.Errorf("read OpenStackCluster %s/%s: %w", cl.Namespace, cl.Spec.InfrastructureRef.Name, err)
	}
	policy, labelled, err := clusterapi.EnrolDeletionPolicy(cl.Labels, r.o.DeletionPolicy)
	if err != nil {
		// nothing made or changed: a misspelt Orphan must not enrol the cluster for its teardown
		r.event(&cl, corev1.EventTypeWarning, "Invalid", "Enrol", "the Cluster's deletion policy: "+err.Error())
		return ctrl.Result{}, nil
	}
	spec, err := clusterapi.Spec(&cl, &osc, cl.Name)
	if err != nil {
		var nr *clusterapi.NotReadyError
		if errors.As(err, &nr) {
			log.V(1).Info("openStackCluster not ready for a VitalsCluster", "missing", nr.Missing)
			return ctrl.Result{RequeueAfter: r.o.NotReadyRequeue}, nil
		}
		// a spec Cluster API accepts and Vitals does not: the next change of the Cluster is looked at
		r.event(&cl, corev1.EventTypeWarning, "Invalid", "Enrol", "no VitalsCluster can describe this Cluster: "+err.Error())
		return ctrl.Result{}, nil
	}
	if !exists {
		spec.DeletionPolicy = policy
		return r.create(ctx, &cl, spec)
	}
	before := vcl.DeepCopy()
	changed := clusterapi.Follow(&vcl.Spec, spec)
	if labelled && vcl.Spec.DeletionPolicy != policy {
		// the Cluster's label decides the policy while it is there; without it, the policy stays the user's
		vcl.Spec.DeletionPolicy, changed = policy, true
	}
	if !changed {
		return ctrl.Result{}, nil
	}
	if err := r.d.Client.Patch(r.fenced(ctx, &cl, notPaused), &vcl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return r.held(ctx, fmt.Errorf("update VitalsCluster %s to follow its Cluster: %w", req, err))
	}
	log.Info("vitalsCluster follows its cluster")
	r.event(&cl, corev1.EventTypeNormal, "Updated", "Enrol", fmt.Sprintf("VitalsCluster %s follows the Cluster and its OpenStackCluster", req))
	return ctrl.Result{}, nil
}

// optedIn reports whether cl opts in: its label, else its namespace's labels and the operator's selector.
func (r *Reconciler) optedIn(ctx context.Context, cl *clusterv1.Cluster) (bool, string, error) {
	v, ok := cl.Labels[clusterapi.EnrolLabel]
	marked, valid := v1alpha1.ParseMarker(v)
	switch {
	case ok && valid && marked:
		return true, "", nil
	case ok && valid:
		return false, fmt.Sprintf("label %s is %q", clusterapi.EnrolLabel, v), nil
	case ok:
		return false, fmt.Sprintf("label %s is %q (expected a boolean: true or false): not enrolled", clusterapi.EnrolLabel, v), nil
	case r.o.Namespaces == nil:
		return false, "no label " + clusterapi.EnrolLabel + " and no namespace selector", nil
	}
	var ns corev1.Namespace
	if err := r.d.APIReader.Get(ctx, client.ObjectKey{Name: cl.Namespace}, &ns); err != nil {
		return false, "", fmt.Errorf("read namespace %s of Cluster %s: %w", cl.Namespace, cl.Name, err)
	}
	if r.o.Namespaces.Matches(labels.Set(ns.Labels)) {
		return true, "", nil
	}
	return false, "namespace " + cl.Namespace + " not selected by " + r.o.Namespaces.String(), nil
}

// create makes cl's VitalsCluster, owned (controlled) by cl and marked as the enrolment's (v1alpha1.LabelEnrolledBy),
// with spec's deletionPolicy.
func (r *Reconciler) create(ctx context.Context, cl *clusterv1.Cluster, spec v1alpha1.ClusterSpec) (ctrl.Result, error) {
	vcl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl.Namespace, Name: cl.Name, Labels: map[string]string{
			clusterv1.ClusterNameLabel: cl.Name, v1alpha1.LabelEnrolledBy: v1alpha1.EnrolledByEnrolment}},
		Spec: spec,
	}
	if err := controllerutil.SetControllerReference(cl, vcl, r.d.Client.Scheme()); err != nil {
		return ctrl.Result{}, fmt.Errorf("own VitalsCluster %s/%s by its Cluster: %w", cl.Namespace, cl.Name, err)
	}
	if err := r.d.Client.Create(r.fenced(ctx, cl, notPaused), vcl); err != nil {
		return r.held(ctx, fmt.Errorf("create VitalsCluster %s/%s: %w", cl.Namespace, cl.Name, err))
	}
	logf.FromContext(ctx).Info("cluster enrolled", "vitalsCluster", cl.Namespace+"/"+cl.Name, "uid", string(vcl.UID), "deletionPolicy", string(spec.DeletionPolicy))
	r.event(cl, corev1.EventTypeNormal, "Enrolled", "Enrol", fmt.Sprintf("VitalsCluster %s/%s created (deletionPolicy %s)", cl.Namespace, cl.Name, spec.DeletionPolicy))
	return ctrl.Result{}, nil
}

// followPause pauses vcl while cl is paused, and takes the pause off (only the one it set) when cl is not.
func (r *Reconciler) followPause(ctx context.Context, cl *clusterv1.Cluster, vcl *v1alpha1.VitalsCluster, paused bool) error {
	before := vcl.DeepCopy()
	ann, changed := clusterapi.FollowPause(maps.Clone(vcl.Annotations), paused)
	if !changed {
		return nil
	}
	vcl.Annotations = ann
	// pausing is written while the Cluster is paused; unpausing only while it is not
	check := notPaused
	if paused {
		check = nil
	}
	if err := r.d.Client.Patch(r.fenced(ctx, cl, check), vcl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("follow the pause of Cluster %s/%s on its VitalsCluster: %w", cl.Namespace, cl.Name, err)
	}
	logf.FromContext(ctx).Info("vitalsCluster pause follows its cluster", "paused", paused)
	return nil
}

// teardown deletes the VitalsCluster of a Cluster being deleted, unless the deletion is a move (clusterctl), and
// holds the Cluster's Machines with the deletion hook while deorbit works (clusterapi.HoldMachines), so that the
// servers, the workload API and CAPO's network outlive the cleanup; the hook goes when deorbit has released the
// VitalsCluster. A move leaves the Machines as they are.
func (r *Reconciler) teardown(ctx context.Context, cl *clusterv1.Cluster, vcl *v1alpha1.VitalsCluster, exists bool) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	going, why := clusterapi.Teardown(cl, nil)
	if going && exists && vcl.DeletionTimestamp.IsZero() {
		uid := vcl.UID
		err := r.d.Client.Delete(r.fenced(ctx, cl, stillGoing), vcl, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return r.held(ctx, fmt.Errorf("delete VitalsCluster %s/%s of a Cluster being deleted: %w", vcl.Namespace, vcl.Name, err))
		}
		log.Info("vitalsCluster deleted with its cluster", "why", why)
		r.event(cl, corev1.EventTypeNormal, "Deorbit", "Delete", fmt.Sprintf("VitalsCluster %s/%s deleted: %s", vcl.Namespace, vcl.Name, why))
	}
	if going {
		// torn down: the Cluster is no longer enrolled (deorbit's VitalsCleanedUp says where the teardown is)
		if err := r.health(ctx, cl, nil); err != nil {
			log.Error(err, "cannot take the health condition off a cluster being deleted")
		}
	}
	// After the deletion: Machines that cannot be listed or patched never keep deorbit from starting.
	var mine *v1alpha1.VitalsCluster
	if exists {
		mine = vcl
	}
	if !going {
		// a move (the Cluster paused, or deleted for clusterctl move): its Machines are left as they are, hooks
		// with them, for the target's enrolment
		log.V(1).Info("cluster deleting", "teardown", false, "why", why)
		return ctrl.Result{}, nil
	}
	hold := clusterapi.HoldMachines(mine)
	n, err := r.hookMachines(ctx, cl, mine, true)
	if err != nil {
		return r.held(ctx, err)
	}
	if n.held > 0 {
		r.event(cl, corev1.EventTypeNormal, "MachinesHeld", "Hold", fmt.Sprintf("deletion hook %s on %d more Machines: their servers stay until deorbit has released VitalsCluster %s/%s",
			clusterapi.MachineDeletionHook, n.held, vcl.Namespace, vcl.Name))
	}
	if n.released > 0 {
		r.event(cl, corev1.EventTypeNormal, "MachinesReleased", "Release", fmt.Sprintf("deletion hook %s taken off %d Machines: Cluster API deletes them", clusterapi.MachineDeletionHook, n.released))
	}
	log.V(1).Info("cluster deleting", "teardown", true, "why", why, "holdMachines", hold)
	if hold {
		return ctrl.Result{RequeueAfter: HoldRequeue}, nil // deorbit's status is not watched: its release (a deletion) is
	}
	return ctrl.Result{}, nil
}

// notEnrolled takes the enrolment's health condition off a Cluster that has no VitalsCluster of its own, and
// its Machines' deletion hooks (notHeld).
func (r *Reconciler) notEnrolled(ctx context.Context, cl *clusterv1.Cluster) (ctrl.Result, error) {
	if !clusterapi.Paused(cl, cl) {
		if err := r.health(ctx, cl, nil); err != nil {
			logf.FromContext(ctx).Error(err, "health condition not taken off the cluster")
		}
	}
	return r.notHeld(ctx, cl)
}

// notHeld takes the deletion hook off the Machines of a Cluster that has no VitalsCluster of its own (not enrolled
// and none left of an enrolment, or its VitalsCluster's name is taken), so that no hook of an enrolment that has
// ended holds a Machine's deletion for ever. A paused Cluster's Machines are left as they are.
func (r *Reconciler) notHeld(ctx context.Context, cl *clusterv1.Cluster) (ctrl.Result, error) {
	if clusterapi.Paused(cl, cl) {
		return ctrl.Result{}, nil
	}
	n, err := r.hookMachines(ctx, cl, nil, false)
	if err != nil {
		return r.held(ctx, err)
	}
	if n.released > 0 {
		logf.FromContext(ctx).Info("machines' deletion hook", "held", 0, "released", n.released)
		r.event(cl, corev1.EventTypeNormal, "MachinesReleased", "Release", fmt.Sprintf("deletion hook %s taken off %d Machines: the Cluster is not enrolled", clusterapi.MachineDeletionHook, n.released))
	}
	return ctrl.Result{}, nil
}

// held turns a write its fence refused into a quiet result (logged; a pause, a Cluster gone or another
// replica's shard is no failure), and passes any other error on.
func (r *Reconciler) held(ctx context.Context, err error) (ctrl.Result, error) {
	reason, ok := fencing.ReasonOf(err)
	if !ok {
		return ctrl.Result{}, err
	}
	if reason == fencing.ReasonUnverified || reason == fencing.ReasonExpired {
		return ctrl.Result{}, err // try again once the API server answers, or the validity is renewed
	}
	logf.FromContext(ctx).V(1).Info("write held by its fence", "reason", string(reason), "error", err.Error())
	return ctrl.Result{}, nil
}

func (r *Reconciler) event(cl *clusterv1.Cluster, typ, reason, action, note string) {
	if r.rec == nil {
		return
	}
	if len(note) > pass.MaxEventNote {
		note = note[:pass.MaxEventNote]
	}
	r.rec.Eventf(cl, nil, typ, reason, action, "%s", note)
}
