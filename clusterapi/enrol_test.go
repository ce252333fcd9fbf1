// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"maps"
	"reflect"
	"testing"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func TestFollow(t *testing.T) {
	want := v1alpha1.ClusterSpec{
		PodCIDRs:            []v1alpha1.CIDR{"10.244.0.0/16"},
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "c1-kubeconfig", Key: KubeconfigKey},
		OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "id", Key: CloudsYAMLKey}, CACertKey: CACertKey, Cloud: "openstack",
			RouterID: "r", NetworkID: "n", SubnetID: "s", SecurityGroupID: "sg", ClusterName: "c1"},
	}
	for _, tc := range []struct {
		name    string
		edit    func(*v1alpha1.ClusterSpec)
		changed bool
	}{
		{"same", func(*v1alpha1.ClusterSpec) {}, false},
		{"the user's fields differ", func(s *v1alpha1.ClusterSpec) {
			s.Remediation.DryRun, s.DeletionPolicy, s.OpenStack.ProjectID, s.OpenStack.SecurityGroupName = true, v1alpha1.DeletionPolicyOrphan, "p", "x"
		}, false},
		{"pod CIDRs", func(s *v1alpha1.ClusterSpec) { s.PodCIDRs = append(s.PodCIDRs, "10.250.0.0/16") }, true},
		{"router", func(s *v1alpha1.ClusterSpec) { s.OpenStack.RouterID = "other" }, true},
		{"subnet", func(s *v1alpha1.ClusterSpec) { s.OpenStack.SubnetID = "" }, true},
		{"security group", func(s *v1alpha1.ClusterSpec) { s.OpenStack.SecurityGroupID = "other" }, true},
		{"credentials", func(s *v1alpha1.ClusterSpec) { s.OpenStack.CredentialsSecretRef = nil }, true},
		{"CA bundle key", func(s *v1alpha1.ClusterSpec) { s.OpenStack.CACertKey = "" }, true},
		{"kubeconfig", func(s *v1alpha1.ClusterSpec) { s.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: "x"} }, true},
		{"cloud provider's cluster name", func(s *v1alpha1.ClusterSpec) { s.OpenStack.ClusterName = "" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := *want.DeepCopy()
			tc.edit(&dst)
			user := dst.DeepCopy()
			if got := Follow(&dst, want); got != tc.changed {
				t.Errorf("changed %v, want %v", got, tc.changed)
			}
			// what the owner decides is want's; the rest stays the user's
			exp := want.DeepCopy()
			exp.Remediation, exp.Controllers, exp.DeletionPolicy = user.Remediation, user.Controllers, user.DeletionPolicy
			exp.OpenStack.ProjectID, exp.OpenStack.SecurityGroupName = user.OpenStack.ProjectID, user.OpenStack.SecurityGroupName
			if !reflect.DeepEqual(&dst, exp) {
				t.Errorf("followed spec %+v, want %+v", dst, *exp)
			}
		})
	}
}

func TestFollowPause(t *testing.T) {
	const p, by = v1alpha1.AnnotationPaused, PausedByAnnotation
	for _, tc := range []struct {
		name    string
		in      map[string]string
		paused  bool
		want    map[string]string
		changed bool
	}{
		{"unpaused, nothing", nil, false, nil, false},
		{"paused: pause and mark", nil, true, map[string]string{p: "true", by: PausedByValue}, true},
		{"paused, already", map[string]string{p: "true", by: PausedByValue}, true, map[string]string{p: "true", by: PausedByValue}, false},
		{"unpaused: take ours off", map[string]string{p: "true", by: PausedByValue, "x": "y"}, false, map[string]string{"x": "y"}, true},
		{"the user's pause is left on", map[string]string{p: "true"}, false, map[string]string{p: "true"}, false},
		{"paused over the user's pause: not marked (it stays theirs)", map[string]string{p: "yes"}, true, map[string]string{p: "yes"}, false},
		{"paused over the user's \"false\": paused and marked", map[string]string{p: "false"}, true, map[string]string{p: "true", by: PausedByValue}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := FollowPause(maps.Clone(tc.in), tc.paused)
			if changed != tc.changed || !maps.Equal(got, tc.want) {
				t.Errorf("got %v changed %v, want %v changed %v", got, changed, tc.want, tc.changed)
			}
		})
	}
}

func TestEnrolDeletionPolicy(t *testing.T) {
	const (
		orphan  = v1alpha1.DeletionPolicyOrphan
		deorbit = v1alpha1.DeletionPolicyDeorbit
	)
	for _, tc := range []struct {
		name     string
		labels   map[string]string
		def      v1alpha1.DeletionPolicy
		want     v1alpha1.DeletionPolicy
		labelled bool
		err      bool
	}{
		{"no label: the operator's", nil, deorbit, deorbit, false, false},
		{"no label, health alone by the operator", map[string]string{EnrolLabel: "true"}, orphan, orphan, false, false},
		{"the label over the operator's", map[string]string{DeletionPolicyLabel: "Orphan"}, deorbit, orphan, true, false},
		{"the label Deorbit over the operator's Orphan", map[string]string{DeletionPolicyLabel: "Deorbit"}, orphan, deorbit, true, false},
		{"a misspelt label is refused, never the default", map[string]string{DeletionPolicyLabel: "orphan"}, deorbit, "", true, true},
		{"an empty label is refused", map[string]string{DeletionPolicyLabel: ""}, deorbit, "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, labelled, err := EnrolDeletionPolicy(tc.labels, tc.def)
			if got != tc.want || labelled != tc.labelled || (err != nil) != tc.err {
				t.Errorf("EnrolDeletionPolicy = %q, %v, %v; want %q, %v, error %v", got, labelled, err, tc.want, tc.labelled, tc.err)
			}
		})
	}
}

func TestMadeByEnrolment(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{nil, false},
		{map[string]string{v1alpha1.LabelEnrolledBy: v1alpha1.EnrolledByEnrolment}, true},
		{map[string]string{v1alpha1.LabelEnrolledBy: "someone-else"}, false},
		{map[string]string{"cluster.x-k8s.io/cluster-name": "c1"}, false},
	} {
		vcl := &v1alpha1.VitalsCluster{}
		vcl.Labels = tc.labels
		if got := MadeByEnrolment(vcl); got != tc.want {
			t.Errorf("MadeByEnrolment(labels %v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
