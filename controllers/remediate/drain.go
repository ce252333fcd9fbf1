// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

// StepDrain is the step label of vitals_remediate_steps_total for the cordon and drain before a reboot.
const StepDrain = "drain"

// Reasons of the drain.
const (
	// ReasonDraining: the Machine's Node is cordoned and its pods are being evicted before the reboot.
	ReasonDraining = "Draining"
	// ReasonDrainTimedOut: the drain did not finish within its timeout on a reachable Node: the reboot is not
	// taken, the Node is uncordoned, and the drain is tried again after perServer.cooldown.
	ReasonDrainTimedOut = "DrainTimedOut"
	// ReasonDrainForced: the drain timed out on an unreachable Node: the reboot goes on without it.
	ReasonDrainForced = "DrainForced"
	// ReasonDrainFailed: a drain round's read or write failed; tried again.
	ReasonDrainFailed = "DrainFailed"
	// ReasonUncordoned: the Node the remediation cordoned is schedulable again.
	ReasonUncordoned = "Uncordoned"
)

// maxLeft bounds status.drain.left.
const maxLeft = 20

// stepKit is what a step's writes need: the workload cluster (the Node, read uncached, and the fenced writes to
// it), the Node and server as they must still be at the write, the step's action and the cluster's node settings
// (drain.timeout, drain.force, perServer.cooldown: one set for both node-repair paths).
type stepKit struct {
	wc       workload.Cluster
	servers  nodes.ServerReader
	want     nodes.Want
	action   remediation.Action
	settings v1alpha1.NodeSettings
}

// drain cordons the Machine's Node and evicts its pods before step, as flight's node repair does before each of
// its steps: asked of the policy as a disruptive action (the reboot that follows is its continuation), the Node
// and the server read fresh before the round's first write, the cordon recorded (with the finalizer that undoes
// it) before it is made. It reports whether the reboot may go on now (drained, no Node to drain, or a timeout on
// an unreachable Node), and the policy's continuation for it; else when to look again.
func (r *Reconciler) drain(ctx context.Context, s *run, step string, k stepKit) (after time.Duration, ok, continuation bool) {
	if k.want.Node == "" {
		return 0, true, false // no Node: nothing runs there to drain
	}
	wcl := k.wc.Client()
	var n corev1.Node
	switch err := wcl.Get(ctx, client.ObjectKey{Name: k.want.Node}, &n); {
	case apierrors.IsNotFound(err):
		return 0, true, false // the fresh read at the reboot's write refuses it, saying so
	case err != nil:
		return r.hold(s, ReasonDrainFailed, fmt.Sprintf("read node %s before the drain: %v", k.want.Node, err), time.Time{}), false, false
	}
	draining := s.st.Phase == v1alpha1.RemediationDraining && s.st.Drain != nil && s.st.Drain.Step == step && s.st.Drain.Started != nil
	var res nodes.DrainResult
	evict := true
	if draining && n.Spec.Unschedulable {
		// A round with nothing to evict (every pod left is ending already) writes nothing: no action, asked or
		// recorded.
		pods, err := nodes.NodePods(ctx, wcl, n.Name)
		if err != nil {
			return r.hold(s, ReasonDrainFailed, "drain of node "+n.Name+": "+err.Error(), time.Time{}), false, false
		}
		res, evict = nodes.Waiting(pods)
	}
	if evict {
		da := k.action
		// named as flight names its drains: the server (the pool's member, which the reboot that follows names
		// too), with its Node
		da.Verb, da.Name, da.Continuation = nodes.VerbDrainNode, n.Name, draining
		d := s.policy.Ask(ctx, da)
		switch d.Outcome {
		case remediation.DryRun:
			r.o.Metrics.step(StepDrain, pass.OutcomeDryRun)
			return r.hold(s, d.Reason, "would cordon and drain node "+n.Name+" and reboot server "+k.want.Server+" "+step+": "+d.Message, d.RetryAt), false, false
		case remediation.Held:
			r.o.Metrics.step(StepDrain, pass.OutcomeHeld)
			return r.hold(s, d.Reason, "the drain of node "+n.Name+" before the "+step+" reboot of server "+k.want.Server+" is held: "+d.Message, d.RetryAt), false, false
		}
		var err error
		res, err = r.drainRound(ctx, s, step, k, da, &n, draining)
		s.policy.Done(ctx, da, err)
		if reason, ok := fencing.ReasonOf(err); ok {
			r.o.Metrics.step(StepDrain, pass.OutcomeHeld)
			return r.hold(s, string(reason), "the drain of node "+n.Name+" was refused at the write: "+err.Error(), time.Time{}), false, false
		}
		if err != nil {
			r.o.Metrics.step(StepDrain, pass.OutcomeFailed)
			return r.hold(s, ReasonDrainFailed, "drain of node "+n.Name+": "+err.Error(), time.Time{}), false, false
		}
		r.o.Metrics.step(StepDrain, pass.OutcomeDone)
	}
	// what the round came to, on the Node (a safe write; a round that evicted nothing may still end the drain)
	inProgress, drained, reason, cmsg := nodes.DrainRound(step+" reboot", "", res)
	r.drainConditions(ctx, s, k.wc, &n, inProgress, drained, reason, cmsg, true)
	s.st.Drain.Left = bounded(res.Left)
	if res.Done() {
		return 0, true, true
	}
	switch nodes.AfterDrain(&n, s.st.Drain.Started.Time, s.now, k.settings) {
	case nodes.DrainForced:
		r.note(s, corev1.EventTypeWarning, ReasonDrainForced, fmt.Sprintf("node %s is unreachable and its drain timed out (%s) with %d pods left (%s): the %s reboot of server %s goes on",
			n.Name, k.settings.DrainTimeout, len(res.Left), strings.Join(res.Left, ", "), step, k.want.Server))
		return 0, true, true
	case nodes.DrainEnds:
		return r.drainEnds(ctx, s, step, k, &n, res), false, false
	}
	msg := fmt.Sprintf("draining node %s before the %s reboot of server %s: %d pods left, %d evicted in this round", n.Name, step, k.want.Server, len(res.Left), len(res.Evicted))
	if len(res.Blocked) > 0 {
		msg += fmt.Sprintf(", %d held by a PodDisruptionBudget or refused by the API server (%s)", len(res.Blocked), strings.Join(res.Blocked, "; "))
	}
	return r.hold(s, ReasonDraining, msg, s.now.Add(min(r.o.Retry, 15*time.Second))), false, false
}

// drainRound reads the Node and the server fresh (nodes.Recheck), records the cordon ahead of it when the Node is
// not cordoned yet (the finalizer first, then the status: an operator stopped after the cordon still knows to
// undo it), cordons the Node and evicts its pods, every write through the step's fence.
func (r *Reconciler) drainRound(ctx context.Context, s *run, step string, k stepKit, da remediation.Action, n *corev1.Node, draining bool) (nodes.DrainResult, error) {
	if _, err := nodes.Recheck(ctx, k.wc.Client(), k.servers, k.want); err != nil {
		return nodes.DrainResult{}, err
	}
	fctx := fencing.With(ctx, r.fence(s.machine, stillUnhealthy, s.policy.Fence(da)))
	if !draining || !n.Spec.Unschedulable {
		if err := r.addFinalizer(r.d.Fenced(ctx, s.cluster), s); err != nil {
			return nodes.DrainResult{}, err
		}
		at := metav1.NewTime(r.d.Clock.Now())
		if !draining {
			s.st.Drain = &v1alpha1.RemediationDrain{Step: step, Started: &at}
		}
		s.st.Phase, s.st.Node = v1alpha1.RemediationDraining, n.Name
		if !n.Spec.Unschedulable {
			s.st.Cordoned = true
		}
		s.st.Reason, s.st.Message = ReasonDraining, fmt.Sprintf("node %s is cordoned and drained before the %s reboot of server %s", n.Name, step, k.want.Server)
		if err := r.patchStatus(r.d.Fenced(ctx, s.cluster), s); err != nil {
			return nodes.DrainResult{}, fmt.Errorf("record the cordon of node %s: %w", n.Name, err)
		}
	}
	if err := nodes.Cordon(fctx, k.wc.Client(), n, true); err != nil {
		return nodes.DrainResult{}, err
	}
	return nodes.Drain(fctx, k.wc.Client(), n.Name)
}

// drainEnds ends a drain that timed out on a reachable Node: no PodDisruptionBudget is overridden and a drain
// that cannot finish must not hold its pool for ever. The reboot is not taken, the Node is uncordoned when the
// remediation cordoned it, the phase says DrainTimedOut (not in flight: the pool is free) and the next drain waits
// perServer.cooldown; the Warning and status.drain.left name the pods and budgets that held it.
func (r *Reconciler) drainEnds(ctx context.Context, s *run, step string, k stepKit, n *corev1.Node, res nodes.DrainResult) time.Duration {
	held := nodes.HeldBy(ctx, k.wc.Client(), n.Name, res.Left)
	if _, err := r.uncordon(ctx, s, k.wc, n.Name); err != nil {
		return r.hold(s, ReasonDrainFailed, fmt.Sprintf("the drain of node %s timed out; uncordoning it did not go through: %v", n.Name, err), time.Time{})
	}
	r.drainConditions(ctx, s, k.wc, n, corev1.ConditionFalse, corev1.ConditionFalse, nodes.ConditionReasonDrainTimedOut,
		fmt.Sprintf("the drain before a %s reboot timed out (%s) with %d pods left; it is tried again after perServer.cooldown", step, k.settings.DrainTimeout, len(res.Left)), false)
	retry := metav1.NewTime(s.now.Add(k.settings.Cooldown))
	s.st.Phase = v1alpha1.RemediationDrainTimedOut
	s.st.Drain.Left, s.st.Drain.RetryAfter = bounded(held), &retry
	r.note(s, corev1.EventTypeWarning, ReasonDrainTimedOut, fmt.Sprintf("the drain of node %s before the %s reboot of server %s timed out (%s) with %d pods left: %s; the node is reachable, so no PodDisruptionBudget is overridden: the reboot is not taken, the node is uncordoned, its pool is free, and the drain is tried again at %s (perServer.cooldown %s)",
		n.Name, step, k.want.Server, k.settings.DrainTimeout, len(res.Left), strings.Join(held, ", "), retry.UTC().Format(time.RFC3339), k.settings.Cooldown))
	return k.settings.Cooldown
}

// uncordon makes the Node the remediation cordoned schedulable again, only while it still names the Machine's
// server and is still unschedulable: a safe action asked of the policy (recorded; held in dry-run, a pause or a
// freeze like every write), sent through its fence. Then the remediation holds no cordon; a Node that is gone
// holds none either.
func (r *Reconciler) uncordon(ctx context.Context, s *run, wc workload.Cluster, name string) (*corev1.Node, error) {
	if !s.st.Cordoned {
		return nil, nil
	}
	var n corev1.Node
	switch err := wc.Client().Get(ctx, client.ObjectKey{Name: name}, &n); {
	case apierrors.IsNotFound(err):
		s.st.Cordoned = false
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read node %s: %w", name, err)
	}
	if n.Spec.Unschedulable && (s.st.Server == "" || nodes.ServerID(n.Spec.ProviderID) == s.st.Server) {
		if s.policy == nil {
			s.policy = r.d.Policy.Begin(ctx, s.cluster, Name, nil, remediation.Scope{})
		}
		a := remediation.Action{Verb: nodes.VerbUncordonNode, Kind: "node", ID: name, Class: remediation.Safe}
		if d := s.policy.Ask(ctx, a); d.Outcome != remediation.Allowed {
			return nil, fmt.Errorf("uncordon node %s: %s (%s)", name, d.Message, d.Reason)
		}
		err := nodes.Cordon(fencing.With(ctx, s.policy.Fence(a)), wc.Client(), &n, false)
		s.policy.Done(ctx, a, err)
		if err != nil {
			return nil, fmt.Errorf("uncordon node %s: %w", name, err)
		}
		r.note(s, corev1.EventTypeNormal, ReasonUncordoned, "node "+name+", cordoned by the remediation, is schedulable again")
	}
	s.st.Cordoned = false
	return &n, nil
}

// drainConditions sets the drain conditions on the Machine's Node that change (nodes.DrainConditions), as flight's
// node repair does: a safe action each, asked of the policy and sent through its fence. They say what the
// remediation does; a failed write is logged and never holds it.
func (r *Reconciler) drainConditions(ctx context.Context, s *run, wc workload.Cluster, n *corev1.Node, inProgress, drained corev1.ConditionStatus, reason, msg string, all bool) {
	for _, cond := range nodes.DrainConditions(n, inProgress, drained, reason, msg, all) {
		if s.policy == nil {
			s.policy = r.d.Policy.Begin(ctx, s.cluster, Name, nil, remediation.Scope{})
		}
		a := remediation.Action{Verb: nodes.VerbSetNodeCondition, Kind: "node", ID: n.Name, Name: string(cond.Type) + "=" + string(cond.Status), Class: remediation.Safe}
		d := s.policy.Ask(ctx, a)
		if d.Outcome != remediation.Allowed {
			continue
		}
		err := nodes.WriteCondition(fencing.With(ctx, s.policy.Fence(a)), wc.Client(), n, cond, r.d.Clock.Now())
		s.policy.Done(ctx, a, err)
		if err != nil {
			logf.FromContext(ctx).Error(err, "node condition not written", "node", n.Name, "condition", cond.Type)
		}
	}
}

// release undoes the remediation's cordon (why: the reason, for the message of a failure) before its phase moves
// on; ok is false when it did not go through (the hold's retry is returned).
func (r *Reconciler) release(ctx context.Context, s *run, why string) (time.Duration, bool) {
	if !s.st.Cordoned {
		return 0, true
	}
	if after, ok := r.loadCluster(ctx, s); !ok {
		return after, false
	}
	wc, err := r.workload(ctx, s.cluster)
	var n *corev1.Node
	if err == nil {
		n, err = r.uncordon(ctx, s, wc, s.st.Node)
	}
	if err != nil {
		return r.hold(s, ReasonDrainFailed, fmt.Sprintf("%s: node %s, cordoned by the remediation, is not uncordoned yet: %v", why, s.st.Node, err), time.Time{}), false
	}
	if n != nil {
		r.drainConditions(ctx, s, wc, n, corev1.ConditionFalse, corev1.ConditionFalse, nodes.ConditionReasonRecovered, "the remediation's drain is over: "+why, false)
	}
	return 0, true
}

// uncordonGiveUp is how long a deleted remediation keeps its finalizer while its Node cannot be uncordoned (the
// workload cluster unreachable, the policy holding the write): then it goes, with a Warning naming the Node.
const uncordonGiveUp = 10 * time.Minute

// finalize is the reconcile of a deleted remediation that holds FinalizerUncordon (its MachineHealthCheck deletes
// it once the Machine is healthy again, or with the Machine): the Node it cordoned is uncordoned, then the
// finalizer is removed.
func (r *Reconciler) finalize(ctx context.Context, s *run) (ctrl.Result, error) {
	if s.st.Cordoned {
		if _, ok := r.release(ctx, s, "the remediation is deleted"); !ok {
			if s.now.Before(s.rem.DeletionTimestamp.Add(uncordonGiveUp)) {
				if err := r.write(ctx, s); err != nil {
					return ctrl.Result{}, err
				}
				return ctrl.Result{RequeueAfter: r.o.Retry}, nil
			}
			r.note(s, corev1.EventTypeWarning, ReasonDrainFailed, fmt.Sprintf("node %s, cordoned by the remediation, could not be uncordoned within %s of its deletion: it is left cordoned (kubectl uncordon %s)",
				s.st.Node, uncordonGiveUp, s.st.Node))
			s.st.Cordoned = false
		}
	}
	if err := r.write(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	patch := client.MergeFrom(s.rem.DeepCopy())
	if controllerutil.RemoveFinalizer(s.rem, v1alpha1.FinalizerUncordon) {
		if err := r.d.Client.Patch(r.d.Fenced(ctx, r.fenceBy(s)), s.rem, patch); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("remove finalizer %s of remediation %s/%s: %w", v1alpha1.FinalizerUncordon, s.rem.Namespace, s.rem.Name, err)
		}
	}
	return ctrl.Result{}, nil
}

// addFinalizer puts FinalizerUncordon on the remediation before its first cordon (a metadata patch, through the
// fence of ctx).
func (r *Reconciler) addFinalizer(ctx context.Context, s *run) error {
	if controllerutil.ContainsFinalizer(s.rem, v1alpha1.FinalizerUncordon) {
		return nil
	}
	patch := client.MergeFrom(s.rem.DeepCopy())
	controllerutil.AddFinalizer(s.rem, v1alpha1.FinalizerUncordon)
	if err := r.d.Client.Patch(ctx, s.rem, patch); err != nil {
		return fmt.Errorf("add finalizer %s to remediation %s/%s: %w", v1alpha1.FinalizerUncordon, s.rem.Namespace, s.rem.Name, err)
	}
	return nil
}

// bounded is at most maxLeft of ids, the last naming how many more there were.
func bounded(ids []string) []string {
	if len(ids) <= maxLeft {
		return ids
	}
	out := append([]string(nil), ids[:maxLeft-1]...)
	return append(out, fmt.Sprintf("... and %d more", len(ids)-maxLeft+1))
}
