// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"fmt"
	"reflect"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// EnrolLabel on a Cluster API Cluster ("true") opts it in: Vitals creates and owns its VitalsCluster. The
// operator's namespace selector (--capi-enrol-namespaces) opts in every OpenStack Cluster of the namespaces it
// selects; "false" on a Cluster opts it out of that.
const EnrolLabel = "vitals.vitalsproject.io/enrol"

// DeletionPolicyLabel on a Cluster API Cluster chooses the deletionPolicy of the VitalsCluster the enrolment
// makes for it, over the operator's --capi-enrol-deletion-policy: "Orphan" enrols it for health alone (deleting
// the VitalsCluster, or the Cluster, deletes nothing in the cloud), "Deorbit" has its teardown clean up after it.
// While the label is there the VitalsCluster's deletionPolicy follows it; without it, the policy the VitalsCluster
// was made with stays the user's.
const DeletionPolicyLabel = "vitals.vitalsproject.io/deletion-policy"

// EnrolDeletionPolicy returns the deletionPolicy of the VitalsCluster the enrolment makes for the Cluster of
// labels: DeletionPolicyLabel's value (labelled true), else def. A label of any other value than Orphan or Deorbit
// is an error (nothing is made: a misspelt "orphan" must not enrol the cluster for its teardown).
func EnrolDeletionPolicy(labels map[string]string, def v1alpha1.DeletionPolicy) (p v1alpha1.DeletionPolicy, labelled bool, err error) {
	v, ok := labels[DeletionPolicyLabel]
	if !ok {
		return def, false, nil
	}
	switch p := v1alpha1.DeletionPolicy(v); p {
	case v1alpha1.DeletionPolicyOrphan, v1alpha1.DeletionPolicyDeorbit:
		return p, true, nil
	}
	return "", true, fmt.Errorf("label %s is %q: expected %s or %s", DeletionPolicyLabel, v, v1alpha1.DeletionPolicyOrphan, v1alpha1.DeletionPolicyDeorbit)
}

// MadeByEnrolment reports whether vcl carries the enrolment's mark (v1alpha1.LabelEnrolledBy). With the Cluster's
// controller reference it makes vcl the enrolment's: neither alone does.
func MadeByEnrolment(vcl *v1alpha1.VitalsCluster) bool {
	return vcl.Labels[v1alpha1.LabelEnrolledBy] == v1alpha1.EnrolledByEnrolment
}

// PausedByAnnotation on an enrolled VitalsCluster says that the enrolment set its pause annotation
// (v1alpha1.AnnotationPaused) because its Cluster is paused (cluster.x-k8s.io/paused or spec.paused, as clusterctl
// move does); the enrolment takes both off when the Cluster is no longer paused, and leaves a pause the user set
// alone.
const PausedByAnnotation = "vitals.vitalsproject.io/paused-by"

// PausedByValue is PausedByAnnotation's value: the Cluster API pause.
const PausedByValue = "cluster.x-k8s.io/paused"

// Follow sets on dst the fields of the VitalsCluster spec that Cluster API and CAPO decide, from want (Spec's
// result), and reports whether any changed: the pod CIDRs, the workload kubeconfig Secret and the OpenStack
// credentials, cloud, router, network, subnet, the nodes' security group and the cloud provider's cluster name.
// Everything else (remediation, controllers, deletionPolicy, the project) stays the user's.
func Follow(dst *v1alpha1.ClusterSpec, want v1alpha1.ClusterSpec) bool {
	changed := false
	set := func(dst, want any) {
		d, w := reflect.ValueOf(dst).Elem(), reflect.ValueOf(want)
		if !reflect.DeepEqual(d.Interface(), w.Interface()) {
			d.Set(w)
			changed = true
		}
	}
	set(&dst.PodCIDRs, want.PodCIDRs)
	set(&dst.KubeconfigSecretRef, want.KubeconfigSecretRef)
	o, w := &dst.OpenStack, want.OpenStack
	set(&o.CredentialsSecretRef, w.CredentialsSecretRef)
	set(&o.CACertKey, w.CACertKey)
	set(&o.Cloud, w.Cloud)
	set(&o.RouterID, w.RouterID)
	set(&o.NetworkID, w.NetworkID)
	set(&o.SubnetID, w.SubnetID)
	set(&o.SecurityGroupID, w.SecurityGroupID)
	set(&o.ClusterName, w.ClusterName)
	return changed
}

// FollowPause sets or takes off the pause of an enrolled VitalsCluster's annotations (ann, nil when it has none)
// as its Cluster is paused or not, and reports whether they changed. A pause the user set (without
// PausedByAnnotation) is never taken off; a user's "false" is overridden while the Cluster is paused.
func FollowPause(ann map[string]string, paused bool) (map[string]string, bool) {
	by := ann[PausedByAnnotation] == PausedByValue
	switch {
	case paused && !by:
		if v, user := ann[v1alpha1.AnnotationPaused]; user && v != "false" {
			return ann, false // the user's pause holds already ("true", or a value treated as paused), and stays theirs
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[v1alpha1.AnnotationPaused] = "true"
		ann[PausedByAnnotation] = PausedByValue
		return ann, true
	case !paused && by:
		delete(ann, PausedByAnnotation)
		delete(ann, v1alpha1.AnnotationPaused)
		return ann, true
	}
	return ann, false
}
