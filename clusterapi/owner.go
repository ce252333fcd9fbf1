// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ManagedSecurityGroupDescription is the description CAPO gives the security groups it manages
// (OpenStackCluster spec.managedSecurityGroups): it deletes every rule of them its spec does not name, so a rule
// anyone else adds is taken away again at its next reconcile.
const ManagedSecurityGroupDescription = "Cluster API managed group"

// DeleteForMoveAnnotation is what clusterctl move sets on the objects it deletes from the old management
// cluster once they exist in the new one (sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3): such a
// deletion moves a cluster, it does not end it.
const DeleteForMoveAnnotation = "clusterctl.cluster.x-k8s.io/delete-for-move"

// ClusterKind is Cluster API's kind of a cluster.
const ClusterKind = "Cluster"

// ConditionCleanedUp is the condition Vitals puts on a Cluster API Cluster whose VitalsCluster deorbit tears down:
// the VitalsCluster's CleanedUp condition (InProgress, WorkloadUnreachable, CleanedUp, GaveUp with the debris
// report, ...), where `clusterctl describe cluster` and `kubectl describe cluster` show it, and where it stays
// once the VitalsCluster is gone while the Cluster waits for its own teardown.
const ConditionCleanedUp = "VitalsCleanedUp"

// OwnerOf returns the owner reference of the Cluster API Cluster that controls obj (kind Cluster of the group
// cluster.x-k8s.io, any version), or false.
func OwnerOf(obj metav1.Object) (metav1.OwnerReference, bool) {
	for _, ref := range obj.GetOwnerReferences() {
		group, _, _ := strings.Cut(ref.APIVersion, "/")
		if ref.Kind == ClusterKind && group == clusterv1.GroupVersion.Group && ptr.Deref(ref.Controller, false) {
			return ref, true
		}
	}
	return metav1.OwnerReference{}, false
}

// Paused reports whether Cluster API's controllers leave the object of cl alone: the Cluster's spec.paused, or
// the annotation cluster.x-k8s.io/paused on the object (clusterctl move pauses both before it moves them).
func Paused(cl *clusterv1.Cluster, o metav1.Object) bool {
	if cl != nil && ptr.Deref(cl.Spec.Paused, false) {
		return true
	}
	_, ok := o.GetAnnotations()[clusterv1.PausedAnnotation]
	return ok
}

// Teardown reports whether cl is ending: the Cluster, or its infrastructure OpenStackCluster (osc, nil when
// there is none), is being deleted, and neither is paused nor deleted by clusterctl move (which deletes a
// cluster's objects from the old management cluster once they exist in the new one: the cluster lives on). why
// says which, for a condition or the answer of a hook, and always names the Cluster.
func Teardown(cl *clusterv1.Cluster, osc *infrav1.OpenStackCluster) (bool, string) {
	key := cl.Namespace + "/" + cl.Name
	moving := func(o metav1.Object) string {
		if Paused(cl, o) {
			return "paused"
		}
		if _, ok := o.GetAnnotations()[DeleteForMoveAnnotation]; ok {
			return "deleted by clusterctl move (annotation " + DeleteForMoveAnnotation + ")"
		}
		return ""
	}
	since := func(t *metav1.Time) string { return t.UTC().Format(time.RFC3339) }
	if !cl.DeletionTimestamp.IsZero() {
		if m := moving(cl); m != "" {
			return false, fmt.Sprintf("Cluster %s is being deleted but %s: a move, not a teardown", key, m)
		}
		return true, fmt.Sprintf("Cluster %s (uid %s) is being deleted since %s", key, cl.UID, since(cl.DeletionTimestamp))
	}
	if osc != nil && !osc.DeletionTimestamp.IsZero() {
		if m := moving(osc); m != "" {
			return false, fmt.Sprintf("OpenStackCluster %s/%s of Cluster %s is being deleted but %s: a move, not a teardown", osc.Namespace, osc.Name, key, m)
		}
		return true, fmt.Sprintf("OpenStackCluster %s/%s of Cluster %s is being deleted since %s", osc.Namespace, osc.Name, key, since(osc.DeletionTimestamp))
	}
	return false, fmt.Sprintf("Cluster %s is not being deleted", key)
}
