// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// Name of the controller (Events, metrics, logs, its field manager vitals-remediate).
const Name = v1alpha1.ControllerRemediate

// VerbRebootServer is the policy's verb of a step (flight's node reboots use the same).
const VerbRebootServer = nodes.VerbRebootServer

// Steps (the step label of vitals_remediate_steps_total).
const (
	StepSoft = "soft"
	StepHard = "hard"
)

// Reasons of a VitalsRemediation's status, besides the holds of the remediation policy and of the fence
// (Paused, Excluded, BudgetExhausted, Storm, DryRun, ...).
const (
	// ReasonRebooted: a reboot was taken; the Machine has its timeout to be healthy again.
	ReasonRebooted = "Rebooted"
	// ReasonRecovered: the Machine is healthy again after a reboot.
	ReasonRecovered = "Recovered"
	// ReasonNoRecovery: the hard reboot did not bring the Machine back within hardRebootTimeout.
	ReasonNoRecovery = "NoRecovery"
	// ReasonForeignServer: the server the Machine's providerID names is not in the project the VitalsCluster's
	// credentials prove.
	ReasonForeignServer = "ForeignServer"
	// ReasonServerGone: Nova has no server of the Machine's providerID.
	ReasonServerGone = "ServerGone"
	// ReasonNoServer: the Machine has no OpenStack providerID (yet).
	ReasonNoServer = "NoServer"
	// ReasonNotAMachine: the VitalsRemediation has no owner reference to a Machine named like it.
	ReasonNotAMachine = "NotAMachine"
	// ReasonMachineGone: the Machine is gone, another Machine of its name, or being deleted.
	ReasonMachineGone = "MachineGone"
	// ReasonMachinePaused: Cluster API pauses the Machine (annotation cluster.x-k8s.io/paused) or its Cluster
	// (spec.paused, or the annotation: clusterctl move pauses the Cluster).
	ReasonMachinePaused = "MachinePaused"
	// ReasonMachineHealthy: the Machine's HealthCheckSucceeded condition is True before a reboot: none is taken (its
	// MachineHealthCheck deletes the remediation of a healthy Machine).
	ReasonMachineHealthy = "MachineHealthy"
	// ReasonNoVitalsCluster: the VitalsCluster of the Machine's cluster is not there.
	ReasonNoVitalsCluster = "NoVitalsCluster"
	// ReasonCloudUnverified: the VitalsCluster's credentials could not be proven (tenancy's refusal says why).
	ReasonCloudUnverified = "CloudUnverified"
	// ReasonReadFailed: the Machine, its Cluster, the server, the other remediations of its pool or, for a
	// control-plane Machine, etcd's members could not be read; tried again.
	ReasonReadFailed = "ReadFailed"
	// ReasonServerNotActive: the server is not in a state the step can be taken in (a soft reboot needs ACTIVE).
	ReasonServerNotActive = "ServerNotActive"
	// ReasonRebootFailed: Nova refused the reboot; tried again.
	ReasonRebootFailed = "RebootFailed"
)

// Defaults of Options.
const (
	DefaultRetry   = time.Minute
	DefaultTimeout = 2 * time.Minute
)

// Options tune the controller.
type Options struct {
	// Metrics (nil: NewMetrics(nil), not registered).
	Metrics *Metrics
	// Retry is when a held, refused or failed step is tried again, unless the policy says when (default
	// DefaultRetry).
	Retry time.Duration
	// Timeout bounds one reconcile (default DefaultTimeout).
	Timeout time.Duration
}

// Reconciler carries out VitalsRemediations.
type Reconciler struct {
	d   *pass.Deps
	o   Options
	rec events.EventRecorder
}

// New returns the controller on d: Client (VitalsRemediations and VitalsClusters from the cache, fenced
// writes), APIReader (the Machine and its Cluster, read fresh, also by each write's fence; the remediations of a
// pool), Tenancy, Policy (required), Workload (etcd's members for a control-plane Machine's reboot; nil: those
// wait), Fencer, Writer, Recorder, Clock and Observer.
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
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	r := &Reconciler{d: d, o: o}
	if d.Recorder != nil {
		r.rec = d.Recorder(Name)
	}
	return r, nil
}

// SetupWithManager registers the controller over VitalsRemediations (created, their spec changed, or deleted
// while the finalizer that undoes a cordon holds them: the steps requeue themselves; a status write is no reason
// to look again).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	deleted := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil
	}}
	return r.d.SetupFor(ctx, mgr, Name, &v1alpha1.VitalsRemediation{}, opts, r, []predicate.Predicate{predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleted)}, nil)
}

// run is one reconcile of one VitalsRemediation.
type run struct {
	rem     *v1alpha1.VitalsRemediation
	st      v1alpha1.VitalsRemediationStatus
	machine *clusterv1.Machine
	cluster *v1alpha1.VitalsCluster
	policy  remediation.Pass
	now     time.Time
}

// Reconcile takes the remediation's next step when it is due, and writes what it did into its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rem v1alpha1.VitalsRemediation
	// From the API server, not the cache: a step recorded as started a moment ago (written ahead of its Nova
	// call) must be seen, or the step would be sent again.
	if err := r.d.APIReader.Get(ctx, req.NamespacedName, &rem); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get remediation %s: %w", req.NamespacedName, err)
	}
	deleting := !rem.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(&rem, v1alpha1.FinalizerUncordon) ||
		!deleting && (rem.Status.Phase == v1alpha1.RemediationSucceeded || rem.Status.Phase == v1alpha1.RemediationStopped) {
		return ctrl.Result{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	s := &run{rem: &rem, st: *rem.Status.DeepCopy(), now: r.d.Clock.Now()}
	if s.st.Phase == "" {
		s.st.Phase = v1alpha1.RemediationPending
	}
	if deleting {
		return r.finalize(ctx, s)
	}
	after := r.remediate(ctx, s)
	if err := r.write(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	logf.FromContext(ctx).V(1).Info("remediation step", "remediation", req.NamespacedName.String(), "phase", string(s.st.Phase),
		"reason", s.st.Reason, "server", s.st.Server, "requeueAfter", after.String())
	return ctrl.Result{RequeueAfter: after}, nil
}

// remediate takes the step that is due, if any; it returns when to look again (0: never, the phase is final).
func (r *Reconciler) remediate(ctx context.Context, s *run) time.Duration {
	ref, ok := machineOwner(s.rem)
	if !ok {
		r.stop(s, ReasonNotAMachine, fmt.Sprintf("no owner reference to a Cluster API Machine named %s: Vitals acts only on the remediations a MachineHealthCheck creates for a Machine", s.rem.Name))
		return 0
	}
	key := client.ObjectKey{Namespace: s.rem.Namespace, Name: ref.Name}
	var m clusterv1.Machine
	err := r.d.APIReader.Get(ctx, key, &m)
	switch {
	case apierrors.IsNotFound(err):
		r.stop(s, ReasonMachineGone, "Machine "+key.String()+" is gone")
		return 0
	case err != nil:
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("read Machine %s: %v", key, err), time.Time{})
	case m.UID != ref.UID:
		r.stop(s, ReasonMachineGone, fmt.Sprintf("Machine %s is another Machine now (uid %s, the remediation's owner %s)", key, m.UID, ref.UID))
		return 0
	case !m.DeletionTimestamp.IsZero():
		r.stop(s, ReasonMachineGone, "Machine "+key.String()+" is being deleted: Cluster API replaces it")
		return 0
	}
	s.machine = &m
	if c := healthy(&m); s.st.LastStepTime != nil && c != nil && !c.LastTransitionTime.Before(s.st.LastStepTime) {
		if after, ok := r.release(ctx, s, "the Machine is healthy again"); !ok {
			return after
		}
		step := stepOf(s.st.Phase)
		s.st.Phase = v1alpha1.RemediationSucceeded
		r.note(s, corev1.EventTypeNormal, ReasonRecovered, fmt.Sprintf("Machine %s is healthy again (%s True since %s) after the %s reboot of server %s",
			key, clusterv1.MachineHealthCheckSucceededCondition, c.LastTransitionTime.UTC().Format(time.RFC3339), step, s.st.Server))
		return 0
	}
	step := StepSoft
	if started := s.st.Phase == v1alpha1.RemediationSoftRebootStarted || s.st.Phase == v1alpha1.RemediationHardRebootStarted; started {
		// recorded as started, not known as taken: the operator stopped between the record and Nova's answer
		sent, after, ok := r.confirm(ctx, s)
		if !ok {
			return after
		}
		if !sent {
			// it never left: the same step is taken now, through every guard again
			if s.st.Phase == v1alpha1.RemediationHardRebootStarted {
				step = StepHard
			}
			s.st.Phase = v1alpha1.RemediationPending
		}
	}
	switch s.st.Phase {
	case v1alpha1.RemediationSoftRebooted, v1alpha1.RemediationSoftRebootStarted:
		step = StepHard
		if due := s.st.LastStepTime.Add(s.rem.Spec.SoftReboot().Duration); s.now.Before(due) {
			return due.Sub(s.now)
		}
	case v1alpha1.RemediationHardRebooted, v1alpha1.RemediationHardRebootStarted:
		if due := s.st.LastStepTime.Add(s.rem.Spec.HardReboot().Duration); s.now.Before(due) {
			return due.Sub(s.now)
		}
		return r.handBack(ctx, s)
	case v1alpha1.RemediationDraining, v1alpha1.RemediationDrainTimedOut:
		if s.st.Drain != nil && s.st.Drain.Step == StepHard {
			step = StepHard
		}
		if d := s.st.Drain; s.st.Phase == v1alpha1.RemediationDrainTimedOut && d != nil && d.RetryAfter != nil && s.now.Before(d.RetryAfter.Time) {
			return d.RetryAfter.Sub(s.now)
		}
	}
	if c := healthy(&m); c != nil {
		if s.st.Cordoned {
			// healthy again before any reboot, while its Node is cordoned for one: the cordon is undone
			if after, ok := r.release(ctx, s, "the Machine is healthy again before its reboot"); !ok {
				return after
			}
			s.st.Phase, s.st.Drain = v1alpha1.RemediationPending, nil
		}
		return r.hold(s, ReasonMachineHealthy, fmt.Sprintf("Machine %s is healthy (%s True since %s): no reboot", key, clusterv1.MachineHealthCheckSucceededCondition,
			c.LastTransitionTime.UTC().Format(time.RFC3339)), time.Time{})
	}
	if after, ok := r.notPaused(ctx, s, "no step while Cluster API pauses it"); !ok {
		return after
	}
	id := nodes.ServerID(m.Spec.ProviderID)
	if id == "" {
		r.stop(s, ReasonNoServer, fmt.Sprintf("Machine %s has no OpenStack providerID (%q): there is no server to reboot", key, m.Spec.ProviderID))
		return 0
	}
	s.st.Server = id
	return r.reboot(ctx, s, step, id)
}

// reboot proves the server the cluster's and takes the step through the policy and the fence.
func (r *Reconciler) reboot(ctx context.Context, s *run, step, id string) time.Duration {
	m := s.machine
	if after, ok := r.loadCluster(ctx, s); !ok {
		return after
	}
	vc := s.cluster
	scope, err := r.d.Tenancy.Resolve(ctx, vc)
	if err != nil {
		return r.hold(s, ReasonCloudUnverified, fmt.Sprintf("the credentials of VitalsCluster %s/%s are not proven: %v", vc.Namespace, vc.Name, err), time.Time{})
	}
	sv, err := scope.Cloud.GetServer(ctx, id)
	var refusal *tenancy.Refusal
	switch {
	case errors.As(err, &refusal) && refusal.Reason == tenancy.ReasonForeignResource:
		r.stop(s, ReasonForeignServer, fmt.Sprintf("server %s, named by Machine %s/%s's providerID, is not in project %s that VitalsCluster %s's credentials (%s) prove: Vitals never acts on it",
			id, m.Namespace, m.Name, scope.ProjectID, vc.Name, scope.Source))
		return 0
	case openstack.IsNotFound(err):
		r.stop(s, ReasonServerGone, fmt.Sprintf("server %s of Machine %s/%s is gone from Nova", id, m.Namespace, m.Name))
		return 0
	case err != nil:
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("read server %s: %v", id, err), time.Time{})
	}
	if nodes.Excluded(nil, sv.Metadata) {
		return r.hold(s, remediation.ReasonExcluded, "server "+id+" is excluded by its metadata "+nodes.LabelExclude, time.Time{})
	}
	if h, down, err := r.hostDown(ctx, vc, sv, m.Status.NodeRef.Name); err != nil {
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("server %s is on a compute host flight takes for down, and the finding is not proven fresh: %v", id, err), time.Time{})
	} else if down {
		// One failure of the host, not of the Machine: no reboot is sent to a dead hypervisor; the Machine goes
		// back to its owner, which replaces it elsewhere.
		return r.handBackFor(ctx, s, fmt.Sprintf("server %s of Machine %s/%s is on compute host %s (hostId), which flight takes for down since %s (%d of the cluster's nodes on it unreachable, none reporting): no reboot is sent to it",
			sv.ID, m.Namespace, m.Name, nodes.ShortHostID(h.HostID), h.Since.UTC().Format(time.RFC3339), len(h.Servers)), h.Since.Time)
	}
	if !rebootable(step, sv.Status) {
		return r.hold(s, ReasonServerNotActive, fmt.Sprintf("server %s is %s: a %s reboot waits for it to be ACTIVE", id, sv.Status, step), time.Time{})
	}
	a := remediation.Action{Verb: VerbRebootServer, Kind: "server", ID: sv.ID, Name: sv.Name, Class: remediation.Disruptive, Pool: poolOf(m)}
	var ps remediation.Scope
	if a.Pool != "" {
		if ps.InFlight, err = r.inFlight(ctx, s.rem, a.Pool); err != nil {
			return r.hold(s, ReasonReadFailed, fmt.Sprintf("read the reboots in flight of pool %s: %v", a.Pool, err), time.Time{})
		}
	}
	if controlPlane(m) {
		q, err := r.quorum(ctx, vc, m)
		if err != nil {
			return r.hold(s, ReasonReadFailed, fmt.Sprintf("control-plane Machine %s/%s is not rebooted without etcd's quorum: read etcd's members: %v", m.Namespace, m.Name, err), time.Time{})
		}
		a.Quorum = &q
	}
	// The Node and the server are read again at the write (nodes.Recheck), through the workload cluster's
	// uncached client: without it nothing proves the Node still unhealthy, unexcluded and the server's own.
	wc, err := r.workload(ctx, vc)
	if err != nil {
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("server %s is not rebooted without its Node read again at the write: %v", id, err), time.Time{})
	}
	want := nodes.Want{Server: sv.ID, Node: m.Status.NodeRef.Name, ServerState: func(sv *openstack.Server) string {
		if !rebootable(step, sv.Status) {
			return fmt.Sprintf("is %s now: no %s reboot", sv.Status, step)
		}
		return ""
	}}
	// The storm rule sees the cluster's real count: its Machines, and those its MachineHealthChecks found
	// unhealthy.
	if ps.Unhealthy, ps.Total, err = r.machineCounts(ctx, m); err != nil {
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("the storm rule cannot count the Machines of Cluster %s/%s: %v", m.Namespace, m.Spec.ClusterName, err), time.Time{})
	}
	// The outage freeze and the gate read the engine's own checks of the cluster: its cloud and its workload API.
	s.policy = r.d.Policy.Begin(ctx, vc, Name, []string{remediation.CheckCloud, remediation.CheckWorkload}, ps)
	// The Node is cordoned and drained before each reboot, as flight's node repair drains before each of its
	// steps, with the cluster's drain settings; the reboot is then the drain's continuation.
	after, drained, cont := r.drain(ctx, s, step, stepKit{wc: wc, servers: scope.Cloud, want: want, action: a, settings: vc.Spec.Controllers.Flight.Repairs.Nodes.Settings()})
	if !drained {
		return after
	}
	a.Continuation = cont
	d := s.policy.Ask(ctx, a)
	switch d.Outcome {
	case remediation.DryRun:
		r.o.Metrics.step(step, pass.OutcomeDryRun)
		return r.hold(s, d.Reason, "would reboot server "+id+" "+step+": "+d.Message, d.RetryAt)
	case remediation.Held:
		r.o.Metrics.step(step, pass.OutcomeHeld)
		return r.hold(s, d.Reason, "the "+step+" reboot of server "+id+" is held: "+d.Message, d.RetryAt)
	}
	// Recorded as started before the Nova call (with the count of the server's reboots in Nova's instance-action
	// log), as taken after it: an operator stopped in between, or a call whose answer was lost, finds the step
	// started and reads the log (confirm): one more reboot, and the step counts as taken at its record's time;
	// none, and it is sent then. So it is neither sent twice nor lost. The record goes in only when the fresh
	// reads at the write agree; a refusal, or Nova's answer that it did not take it, puts the phase back.
	started, taken := phases(step)
	before := s.st
	fence := r.fence(m, stillUnhealthy, recheck(wc.Client(), scope.Cloud, want, s.policy.Fence(a)))
	recorded := false
	record := fencing.Func(func(fctx context.Context) (context.Context, context.CancelFunc, error) {
		wctx, cancel, err := fence.Enter(fctx)
		if err != nil {
			return nil, nil, err
		}
		// what Nova's log holds before the step, so that an operator that finds it started can tell whether
		// it was sent (confirm)
		n, err := reboots(wctx, scope.Cloud, sv.ID)
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("record the %s reboot as started: %w", step, err)
		}
		at := metav1.NewTime(r.d.Clock.Now())
		s.st.Phase, s.st.LastStepTime, s.st.RebootsBefore = started, &at, &n
		s.st.Reason, s.st.Message = "", fmt.Sprintf("the %s reboot of server %s is sent to Nova", step, id)
		// through the cluster's fence, not the step's (whose Enter this is)
		if err := r.patchStatus(r.d.Fenced(ctx, vc), s); err != nil {
			cancel()
			return nil, nil, fmt.Errorf("record the %s reboot as started: %w", step, err)
		}
		recorded = true
		return wctx, cancel, nil
	})
	err = scope.Cloud.RebootServer(fencing.With(ctx, record), sv.ID, step == StepHard)
	s.policy.Done(ctx, a, err)
	if err != nil && recorded && nodes.AnswerLost(err) {
		// Sent, maybe: the connection failed or the time ran out before Nova's answer. The record stays
		// "started"; whether Nova took it is read from its instance-action log at the next look (confirm), so
		// that the step is neither sent twice nor lost.
		r.o.Metrics.step(step, pass.OutcomeFailed)
		return r.hold(s, ReasonRebootFailed, fmt.Sprintf("the %s reboot of server %s was sent and its answer lost (%s): whether Nova took it is read from its instance-action log next",
			step, id, openstack.Describe(err)), s.now.Add(min(r.o.Retry, 15*time.Second)))
	}
	if err != nil {
		s.st.Phase, s.st.LastStepTime, s.st.RebootsBefore = before.Phase, before.LastStepTime, before.RebootsBefore // not sent (or refused): not taken
	}
	if reason, ok := fencing.ReasonOf(err); ok {
		r.o.Metrics.step(step, pass.OutcomeHeld)
		return r.hold(s, string(reason), "the "+step+" reboot of server "+id+" was refused at the write: "+err.Error(), time.Time{})
	}
	if err != nil {
		r.o.Metrics.step(step, pass.OutcomeFailed)
		return r.hold(s, ReasonRebootFailed, fmt.Sprintf("%s reboot of server %s: %v", step, id, err), time.Time{})
	}
	r.o.Metrics.step(step, pass.OutcomeDone)
	timeout := s.rem.Spec.SoftReboot().Duration
	s.st.Phase = taken
	next := "else it is rebooted hard"
	if step == StepHard {
		timeout = s.rem.Spec.HardReboot().Duration
		next = "else it is handed back to the MachineSet or control plane that owns it for replacement (with none, the remediation stops)"
	}
	r.note(s, corev1.EventTypeNormal, ReasonRebooted, fmt.Sprintf("server %s (%s) of Machine %s/%s rebooted %s through Nova; the Machine must be healthy again within %s, %s",
		sv.ID, sv.Name, m.Namespace, m.Name, step, timeout, next))
	return timeout
}

// loadCluster reads the VitalsCluster of the remediation into s.cluster: spec.vitalsCluster, else the one named
// like the Machine's Cluster. ok is false when there is none or it cannot be read (the hold's retry is returned).
func (r *Reconciler) loadCluster(ctx context.Context, s *run) (time.Duration, bool) {
	if s.cluster != nil {
		return 0, true
	}
	name := s.rem.Spec.VitalsCluster
	switch {
	case name != "":
	case s.machine != nil:
		name = s.machine.Spec.ClusterName
	default: // a deleted remediation whose Machine may be gone: the cluster label Cluster API puts on it
		name = s.rem.Labels[clusterv1.ClusterNameLabel]
	}
	var vc v1alpha1.VitalsCluster
	if err := r.d.Client.Get(ctx, client.ObjectKey{Namespace: s.rem.Namespace, Name: name}, &vc); err != nil {
		if apierrors.IsNotFound(err) {
			return r.hold(s, ReasonNoVitalsCluster, fmt.Sprintf("no VitalsCluster %s/%s (spec.vitalsCluster, or the Machine's spec.clusterName): its credentials prove the server the cluster's, and its remediation policy decides each step", s.rem.Namespace, name), time.Time{}), false
		}
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("read VitalsCluster %s/%s: %v", s.rem.Namespace, name, err), time.Time{}), false
	}
	s.cluster = &vc
	return 0, true
}

// rebootable reports whether Nova takes the step on a server in status: a soft reboot needs an ACTIVE server; a
// hard one is also taken on a server stuck in a soft reboot or off.
func rebootable(step, status string) bool {
	if step == StepSoft {
		return status == "ACTIVE"
	}
	return status == "ACTIVE" || status == "REBOOT" || status == "SHUTOFF"
}

// stepOf is the step that led to phase.
func stepOf(p v1alpha1.RemediationPhase) string {
	switch p {
	case v1alpha1.RemediationHardRebooted, v1alpha1.RemediationHardRebootStarted:
		return StepHard
	case v1alpha1.RemediationSoftRebooted, v1alpha1.RemediationSoftRebootStarted:
		return StepSoft
	}
	return ""
}

// started is the phase that records step as started (before its Nova call), and taken the one after it.
func phases(step string) (started, taken v1alpha1.RemediationPhase) {
	if step == StepHard {
		return v1alpha1.RemediationHardRebootStarted, v1alpha1.RemediationHardRebooted
	}
	return v1alpha1.RemediationSoftRebootStarted, v1alpha1.RemediationSoftRebooted
}

// machineOwner is the remediation's owner reference to a Machine of its own name, as Cluster API's
// MachineHealthCheck sets it.
func machineOwner(rem *v1alpha1.VitalsRemediation) (metav1.OwnerReference, bool) {
	for _, ref := range rem.OwnerReferences {
		group, _, _ := strings.Cut(ref.APIVersion, "/")
		if group == clusterv1.GroupVersion.Group && ref.Kind == "Machine" && ref.Name == rem.Name {
			return ref, true
		}
	}
	return metav1.OwnerReference{}, false
}

// fence is the fence of a step: the Machine and its Cluster as the API server has them at the write (the same
// Machine, not being deleted, neither paused by Cluster API, then more, if any), then the pass's fence (the
// cluster's pause, exclusions, dry-run and this replica's validity, read live).
func (r *Reconciler) fence(m *clusterv1.Machine, more func(*clusterv1.Machine) *fencing.Error, next fencing.Fence) fencing.Fence {
	key, uid := client.ObjectKeyFromObject(m), m.UID
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		var live clusterv1.Machine
		err := r.d.APIReader.Get(ctx, key, &live)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Machine " + key.String() + " is gone"}
		case err != nil:
			return nil, nil, &fencing.Error{Reason: fencing.ReasonUnverified, Message: "read Machine " + key.String() + ": " + err.Error()}
		case live.UID != uid:
			return nil, nil, &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Machine " + key.String() + " is another Machine now (uid " + string(live.UID) + ")"}
		case !live.DeletionTimestamp.IsZero():
			return nil, nil, &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Machine " + key.String() + " is being deleted"}
		}
		cl, err := r.capiCluster(ctx, &live)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil, &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Cluster " + live.Namespace + "/" + live.Spec.ClusterName + " of Machine " + key.String() + " is gone"}
		case err != nil:
			return nil, nil, &fencing.Error{Reason: fencing.ReasonUnverified, Message: err.Error()}
		}
		if why := pausedWhy(cl, &live); why != "" {
			return nil, nil, &fencing.Error{Reason: fencing.ReasonPaused, Message: why}
		}
		if more != nil {
			if ferr := more(&live); ferr != nil {
				return nil, nil, ferr
			}
		}
		return next.Enter(ctx)
	})
}

// hold keeps the phase and says why no step was taken; it returns when to try again (at retry, when the policy
// gave one).
func (r *Reconciler) hold(s *run, reason, msg string, retry time.Time) time.Duration {
	r.note(s, corev1.EventTypeNormal, reason, msg)
	if !retry.IsZero() && retry.After(s.now) {
		return retry.Sub(s.now)
	}
	return r.o.Retry
}

// stop ends the remediation: nothing more is done.
func (r *Reconciler) stop(s *run, reason, msg string) {
	s.st.Phase = v1alpha1.RemediationStopped
	r.o.Metrics.stopped(reason)
	r.note(s, corev1.EventTypeWarning, reason, msg)
}

// note sets the status's reason and message, and sends an Event on the remediation and one on its Machine when
// they changed (a hold that stays is announced once).
func (r *Reconciler) note(s *run, typ, reason, msg string) {
	changed := s.st.Reason != reason || s.st.Message != msg
	s.st.Reason, s.st.Message = reason, truncate(msg, 4096)
	if !changed || r.rec == nil {
		return
	}
	var related runtime.Object
	if s.machine != nil {
		related = s.machine
	}
	note := truncate(msg, pass.MaxEventNote)
	r.rec.Eventf(s.rem, related, typ, reason, VerbRebootServer, "%s", note)
	if s.machine != nil {
		r.rec.Eventf(s.machine, s.rem, typ, reason, VerbRebootServer, "%s", note)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// write writes the remediation's status when it changed (with the policy's lines of this reconcile), and the
// policy's state into the VitalsCluster's status; both fenced by this replica's validity for the cluster (for
// the remediation's own UID while no cluster is known).
func (r *Reconciler) write(ctx context.Context, s *run) error {
	s.st.ObservedGeneration = s.rem.Generation
	if s.policy != nil {
		s.st.Actions = pass.AppendActions(s.rem.Status.Actions, s.policy.Lines()...)
	}
	if err := r.patchStatus(r.d.Fenced(ctx, r.fenceBy(s)), s); err != nil {
		return err
	}
	if s.policy != nil && s.cluster != nil {
		if err := pass.WriteRemediation(ctx, r.d.Writer, s.cluster, s.policy); err != nil {
			return fmt.Errorf("write the remediation policy's status of cluster %s/%s: %w", s.cluster.Namespace, s.cluster.Name, err)
		}
	}
	return nil
}

// fenceBy is the cluster whose fence holds the remediation's own writes: its VitalsCluster, else its own UID.
func (r *Reconciler) fenceBy(s *run) *v1alpha1.VitalsCluster {
	if s.cluster != nil {
		return s.cluster
	}
	return &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: s.rem.Namespace, Name: s.rem.Name, UID: s.rem.UID}}
}

// patchStatus writes s.st into the remediation's status when it differs from what was last written (a merge
// patch, through the fence of ctx).
func (r *Reconciler) patchStatus(ctx context.Context, s *run) error {
	if reflect.DeepEqual(s.st, s.rem.Status) {
		return nil
	}
	patch := client.MergeFrom(s.rem.DeepCopy())
	s.rem.Status = *s.st.DeepCopy()
	if err := r.d.Client.Status().Patch(ctx, s.rem, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("write the status of remediation %s/%s: %w", s.rem.Namespace, s.rem.Name, err)
	}
	return nil
}
