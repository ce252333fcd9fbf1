// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// ConditionHealthy is the condition the enrolment puts on an enrolled Cluster: the health of its VitalsCluster
// (Health), what `clusterctl describe cluster` and `kubectl describe cluster` show of Vitals.
const ConditionHealthy = "VitalsHealthy"

// Reasons of ConditionHealthy of its own (a False one otherwise takes the reason of the first failing condition
// of the VitalsCluster).
const (
	ReasonHealthy     = "Healthy"
	ReasonNotReported = "NotReported"
)

// MaxHealthMessage bounds the message of ConditionHealthy: a line for `clusterctl describe`, the details are on
// the VitalsCluster.
const MaxHealthMessage = 512

// notFindings are the VitalsCluster's conditions that are no finding of a controller when False: Ready is the
// summary itself (taken first), RemediationAllowed False is the policy holding actions back, not ill health.
var notFindings = []string{v1alpha1.ConditionReady, v1alpha1.ConditionRemediationAllowed}

// Health is ConditionHealthy of the Cluster of vcl, from the conditions the operator reports on it: Unknown
// (NotReported) while vcl has no Ready condition of its current generation; True when its Ready is True and no
// other condition (a controller's finding, RemediationAllowed aside) is False; else False, with the reason of
// the first failing condition (Ready first) and a message naming each failing condition, cut at
// MaxHealthMessage on a rune boundary. LastTransitionTime and ObservedGeneration are left to the write.
func Health(vcl *v1alpha1.VitalsCluster) metav1.Condition {
	cd := metav1.Condition{Type: ConditionHealthy}
	ready := meta.FindStatusCondition(vcl.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status == metav1.ConditionUnknown || vcl.Status.ObservedGeneration == 0 {
		cd.Status, cd.Reason = metav1.ConditionUnknown, ReasonNotReported
		cd.Message = fmt.Sprintf("VitalsCluster %s has not reported its health yet", vcl.Name)
		return cd
	}
	var reasons, msgs []string
	if ready.Status != metav1.ConditionTrue {
		reasons, msgs = append(reasons, ready.Reason), append(msgs, "Ready: "+ready.Message)
	}
	for _, c := range vcl.Status.Conditions {
		if c.Status == metav1.ConditionFalse && !slices.Contains(notFindings, c.Type) {
			reasons, msgs = append(reasons, c.Reason), append(msgs, c.Type+" ("+c.Reason+"): "+c.Message)
		}
	}
	if len(reasons) == 0 {
		cd.Status, cd.Reason = metav1.ConditionTrue, ReasonHealthy
		cd.Message = fmt.Sprintf("VitalsCluster %s is Ready and no controller reports a failure", vcl.Name)
		return cd
	}
	cd.Status, cd.Reason = metav1.ConditionFalse, reasons[0]
	if cd.Reason == "" {
		cd.Reason = "Unhealthy"
	}
	cd.Message = Truncate(fmt.Sprintf("VitalsCluster %s: %s", vcl.Name, strings.Join(msgs, "; ")), MaxHealthMessage)
	return cd
}

// Truncate cuts s to at most n bytes on a rune boundary, ending it with "…" when it was cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// SetCondition puts cd on the Cluster key of uid, or takes the condition of cd.Type off it when cd is nil, in
// status.conditions and in Cluster API's deprecated v1beta1 conditions (status.deprecated.v1beta1.conditions,
// which clients of v1beta1 and older clusterctl read). The Cluster is read from rd (the API server) and patched
// by a merge patch of its status with an optimistic lock: the rest of both lists is what was read, so a change of
// Cluster API's own conditions in between makes the write fail with a conflict rather than undo it. Nothing is
// written when the Cluster is gone, another Cluster of the name, or Cluster API is not installed, or when the
// condition is already so (status, reason, message, observed generation; LastTransitionTime is kept while the
// status stays, else it is now). ctx carries the caller's fence. It reports whether it wrote.
func SetCondition(ctx context.Context, rd client.Reader, w client.Client, key client.ObjectKey, uid types.UID, cd *metav1.Condition, now metav1.Time) (bool, error) {
	var cl clusterv1.Cluster
	switch err := rd.Get(ctx, key, &cl); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the Cluster %s for its condition: %w", key, err)
	case cl.UID != uid:
		return false, nil
	}
	before := cl.DeepCopy()
	var changed bool
	if cd == nil {
		changed = removeConditions(&cl, ConditionHealthy)
	} else {
		changed = setConditions(&cl, *cd, now)
	}
	if !changed {
		return false, nil
	}
	err := w.Status().Patch(ctx, &cl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("patch the condition %s of the Cluster %s: %w", ConditionHealthy, key, err)
	}
	return true, nil
}

// setConditions puts cd on both lists of cl; it reports whether either changed.
func setConditions(cl *clusterv1.Cluster, cd metav1.Condition, now metav1.Time) bool {
	cd.ObservedGeneration = cl.Generation
	cd.Message = Truncate(cd.Message, MaxConditionMessage)
	cd.LastTransitionTime = now
	changed := false
	if old := meta.FindStatusCondition(cl.Status.Conditions, cd.Type); old == nil || old.Status != cd.Status ||
		old.Reason != cd.Reason || old.Message != cd.Message || old.ObservedGeneration != cd.ObservedGeneration {
		meta.SetStatusCondition(&cl.Status.Conditions, cd) // keeps LastTransitionTime while the status stays
		changed = true
	}
	v1 := clusterv1.Condition{Type: clusterv1.ConditionType(cd.Type), Status: corev1.ConditionStatus(cd.Status), Reason: cd.Reason,
		Message: cd.Message, LastTransitionTime: now}
	if cd.Status == metav1.ConditionFalse {
		v1.Severity = clusterv1.ConditionSeverityWarning
	}
	old := cl.GetV1Beta1Conditions()
	i := slices.IndexFunc(old, func(c clusterv1.Condition) bool { return c.Type == v1.Type })
	switch {
	case i < 0:
		cl.SetV1Beta1Conditions(append(slices.Clone(old), v1))
		return true
	case old[i].Status == v1.Status && old[i].Reason == v1.Reason && old[i].Message == v1.Message && old[i].Severity == v1.Severity:
		return changed
	case old[i].Status == v1.Status:
		v1.LastTransitionTime = old[i].LastTransitionTime
	}
	conds := slices.Clone(old)
	conds[i] = v1
	cl.SetV1Beta1Conditions(conds)
	return true
}

// removeConditions takes the condition typ off both lists of cl; it reports whether it was on either.
func removeConditions(cl *clusterv1.Cluster, typ string) bool {
	changed := meta.RemoveStatusCondition(&cl.Status.Conditions, typ)
	old := cl.GetV1Beta1Conditions()
	if i := slices.IndexFunc(old, func(c clusterv1.Condition) bool { return string(c.Type) == typ }); i >= 0 {
		cl.SetV1Beta1Conditions(slices.Delete(slices.Clone(old), i, i+1))
		changed = true
	}
	return changed
}
