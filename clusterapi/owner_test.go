// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestTeardown(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	deleting := func(o metav1.Object) { o.SetDeletionTimestamp(&now) }
	annotate := func(k string) func(metav1.Object) {
		return func(o metav1.Object) { o.SetAnnotations(map[string]string{k: ""}) }
	}
	for _, tc := range []struct {
		name     string
		cl, osc  []func(metav1.Object)
		paused   bool
		noOSC    bool
		want     bool
		contains string
	}{
		{name: "live", contains: "is not being deleted"},
		{name: "no OpenStackCluster, live", noOSC: true, contains: "is not being deleted"},
		{name: "Cluster deleting", cl: []func(metav1.Object){deleting}, want: true, contains: "Cluster team-a/prod (uid u1) is being deleted since 2026-11-26T12:00:00Z"},
		{name: "OpenStackCluster deleting", osc: []func(metav1.Object){deleting}, want: true, contains: "OpenStackCluster team-a/prod-osc of Cluster team-a/prod is being deleted"},
		{name: "deleting while paused (spec)", cl: []func(metav1.Object){deleting}, paused: true, contains: "paused: a move"},
		{name: "deleting while paused (annotation)", cl: []func(metav1.Object){deleting, annotate(clusterv1.PausedAnnotation)}, contains: "paused: a move"},
		{name: "deleted by clusterctl move", cl: []func(metav1.Object){deleting, annotate(DeleteForMoveAnnotation)}, contains: "deleted by clusterctl move"},
		{name: "OpenStackCluster deleted by clusterctl move", osc: []func(metav1.Object){deleting, annotate(DeleteForMoveAnnotation)}, contains: "a move, not a teardown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, osc := testCluster()
			cl.UID = "u1"
			cl.Spec.Paused = ptr.To(tc.paused)
			for _, f := range tc.cl {
				f(cl)
			}
			for _, f := range tc.osc {
				f(osc)
			}
			var o *infrav1.OpenStackCluster
			if !tc.noOSC {
				o = osc
			}
			got, why := Teardown(cl, o)
			if got != tc.want || !strings.Contains(why, tc.contains) {
				t.Errorf("Teardown = %v %q, want %v and a reason containing %q", got, why, tc.want, tc.contains)
			}
		})
	}
}

func TestOwnerOf(t *testing.T) {
	obj := &metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "not-controller", UID: "u0"},
		{APIVersion: "example.com/v1", Kind: "Cluster", Name: "other-group", UID: "u9", Controller: ptr.To(true)},
	}}
	if _, ok := OwnerOf(obj); ok {
		t.Fatal("an owner without controller, or of another group, is no Cluster API owner")
	}
	obj.OwnerReferences = append(obj.OwnerReferences, metav1.OwnerReference{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Cluster", Name: "prod", UID: "u1", Controller: ptr.To(true)})
	if ref, ok := OwnerOf(obj); !ok || ref.Name != "prod" {
		t.Fatalf("OwnerOf = %+v %v, want prod", ref, ok)
	}
}
