// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

//lint:file-ignore SA1019 the hand-back writes the deprecated v1beta1 OwnerRemediated condition too: owners of Cluster API versions before the v1beta2 conditions read only that one

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbReplaceMachine is the policy's verb of handing a Machine back to its owner, which replaces it (the server
// is deleted by Cluster API and its provider, never by Vitals).
const VerbReplaceMachine = "ReplaceMachine"

// StepReplace is the step label of vitals_remediate_steps_total for the hand-back.
const StepReplace = "replace"

// ReasonHandedBack: the reboots did not bring the Machine back, and it was handed back to the MachineSet or
// control plane that owns it (its OwnerRemediated condition False), which replaces it.
const ReasonHandedBack = "HandedBack"

// handBackBy is the message the hand-back leaves on the Machine's OwnerRemediated condition.
const handBackBy = "Vitals rebooted the server soft and hard and the Machine did not recover: its owner replaces it"

// replacer is the controller owner of m that replaces m once its OwnerRemediated condition is False: a MachineSet
// (Cluster API core), or a control plane (group controlplane.cluster.x-k8s.io, e.g. KubeadmControlPlane, which
// keeps its own etcd-quorum checks). ok is false when there is none: nothing would replace the Machine.
func replacer(m *clusterv1.Machine) (ref metav1.OwnerReference, ok bool) {
	owner := metav1.GetControllerOfNoCopy(m)
	if owner == nil {
		return metav1.OwnerReference{}, false
	}
	group, _, _ := strings.Cut(owner.APIVersion, "/")
	switch {
	case group == clusterv1.GroupVersion.Group && owner.Kind == "MachineSet":
		return *owner, true
	case group == clusterv1.GroupVersionControlPlane.Group:
		return *owner, true
	}
	return *owner, false
}

// handBack ends a remediation whose hard reboot did not bring the Machine back within hardRebootTimeout: a
// Machine a MachineSet or control plane owns is handed back to it (asked of the policy as a destructive step:
// the replacement deletes the server), one no such owner would replace stops with NoRecovery. It returns when
// to look again (0: the phase is final).
func (r *Reconciler) handBack(ctx context.Context, s *run) time.Duration {
	key := client.ObjectKeyFromObject(s.machine)
	why := fmt.Sprintf("the hard reboot of server %s at %s did not bring Machine %s back within %s", s.st.Server, s.st.LastStepTime.UTC().Format(time.RFC3339),
		key, s.rem.Spec.HardReboot().Duration)
	return r.handBackFor(ctx, s, why, s.st.LastStepTime.Time)
}

// handBackFor hands the Machine back for the reason why, the removal's evidence first seen at evidence (the
// minimum proof age counts from it): after the reboots, or at once when its server's compute host is down.
func (r *Reconciler) handBackFor(ctx context.Context, s *run, why string, evidence time.Time) time.Duration {
	m := s.machine
	key := client.ObjectKeyFromObject(m)
	owner, ok := replacer(m)
	if !ok {
		by := "no owner"
		if owner.Kind != "" {
			by = "its controller " + owner.Kind + " " + owner.Name + ", which does not replace Machines on Cluster API's OwnerRemediated condition"
		}
		r.stop(s, ReasonNoRecovery, fmt.Sprintf("%s, and nothing would replace it (%s): "+
			"Vitals does nothing more and never deletes the server; replace it by hand (kubectl delete machine -n %s %s)",
			why, by, key.Namespace, key.Name))
		return 0
	}
	if after, ok := r.notPaused(ctx, s, "it is handed back to its "+owner.Kind+" once it is not"); !ok {
		return after
	}
	if after, ok := r.loadCluster(ctx, s); !ok {
		return after
	}
	s.policy = r.d.Policy.Begin(ctx, s.cluster, Name, nil, remediation.Scope{})
	a := remediation.Action{Verb: VerbReplaceMachine, Kind: "machine", ID: m.Name, Class: remediation.Destructive, Removal: true, Evidence: evidence}
	d := s.policy.Ask(ctx, a)
	switch d.Outcome {
	case remediation.DryRun:
		r.o.Metrics.step(StepReplace, pass.OutcomeDryRun)
		return r.hold(s, d.Reason, "would hand Machine "+key.String()+" back to its "+owner.Kind+" "+owner.Name+" for replacement: "+d.Message, d.RetryAt)
	case remediation.Held:
		r.o.Metrics.step(StepReplace, pass.OutcomeHeld)
		return r.hold(s, d.Reason, "the hand-back of Machine "+key.String()+" to its "+owner.Kind+" "+owner.Name+" for replacement is held: "+d.Message, d.RetryAt)
	}
	before := m.DeepCopy()
	setOwnerRemediated(m, s.now)
	// The optimistic lock sends the patch only onto the Machine this reconcile read: a Machine changed since
	// (healthy again, another remediation) is read again on the next try.
	err := r.d.Client.Status().Patch(fencing.With(ctx, r.fence(m, stillUnhealthy, s.policy.Fence(a))), m,
		client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	s.policy.Done(ctx, a, err)
	if reason, ok := fencing.ReasonOf(err); ok {
		r.o.Metrics.step(StepReplace, pass.OutcomeHeld)
		return r.hold(s, string(reason), "the hand-back of Machine "+key.String()+" was refused at the write: "+err.Error(), time.Time{})
	}
	if err != nil {
		r.o.Metrics.step(StepReplace, pass.OutcomeFailed)
		if apierrors.IsConflict(err) {
			return r.hold(s, ReasonReadFailed, "Machine "+key.String()+" changed while it was handed back: read again", time.Time{})
		}
		return r.hold(s, ReasonReadFailed, fmt.Sprintf("hand Machine %s back to its %s: %v", key, owner.Kind, err), time.Time{})
	}
	r.o.Metrics.step(StepReplace, pass.OutcomeDone)
	r.stop(s, ReasonHandedBack, fmt.Sprintf("%s: handed back to its %s %s (condition %s False, reason %s), "+
		"which replaces it under its own limits (a MachineDeployment's remediation.maxInFlight, a control plane's quorum checks); Vitals deletes nothing",
		why, owner.Kind, owner.Name, clusterv1.MachineOwnerRemediatedCondition, clusterv1.MachineOwnerRemediatedWaitingForRemediationReason))
	return 0
}

// setOwnerRemediated sets m's OwnerRemediated condition False with reason WaitingForRemediation, in the
// conditions of Cluster API v1beta2 and in the deprecated v1beta1 ones, as Cluster API's MachineHealthCheck does
// for the remediation its owner carries out: the MachineSet or control plane then deletes and replaces m. A
// condition already False is left as it is (the owner may be remediating it already).
func setOwnerRemediated(m *clusterv1.Machine, now time.Time) {
	if c := meta.FindStatusCondition(m.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition); c == nil || c.Status != metav1.ConditionFalse {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: clusterv1.MachineOwnerRemediatedCondition, Status: metav1.ConditionFalse,
			Reason: clusterv1.MachineOwnerRemediatedWaitingForRemediationReason, Message: handBackBy, ObservedGeneration: m.Generation,
			LastTransitionTime: metav1.NewTime(now)})
	}
	if m.Status.Deprecated == nil {
		m.Status.Deprecated = &clusterv1.MachineDeprecatedStatus{}
	}
	if m.Status.Deprecated.V1Beta1 == nil {
		m.Status.Deprecated.V1Beta1 = &clusterv1.MachineV1Beta1DeprecatedStatus{}
	}
	conds := m.Status.Deprecated.V1Beta1.Conditions
	for i := range conds {
		if conds[i].Type == clusterv1.MachineOwnerRemediatedV1Beta1Condition {
			if conds[i].Status != corev1.ConditionFalse {
				conds[i] = ownerRemediatedV1Beta1(now)
			}
			return
		}
	}
	m.Status.Deprecated.V1Beta1.Conditions = append(conds, ownerRemediatedV1Beta1(now))
}

func ownerRemediatedV1Beta1(now time.Time) clusterv1.Condition {
	return clusterv1.Condition{Type: clusterv1.MachineOwnerRemediatedV1Beta1Condition, Status: corev1.ConditionFalse,
		Severity: clusterv1.ConditionSeverityWarning, Reason: clusterv1.WaitingForRemediationV1Beta1Reason, Message: handBackBy,
		LastTransitionTime: metav1.NewTime(now)}
}

// stillUnhealthy refuses the reboot or hand-back of a Machine its MachineHealthCheck sees healthy again at the
// write.
func stillUnhealthy(live *clusterv1.Machine) *fencing.Error {
	if healthy(live) != nil {
		return &fencing.Error{Reason: fencing.ReasonInterlock, Message: "Machine " + live.Namespace + "/" + live.Name + " is healthy again (" +
			clusterv1.MachineHealthCheckSucceededCondition + " True): no step is taken"}
	}
	return nil
}
