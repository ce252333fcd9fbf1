// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package clusterapi

import (
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func TestHealth(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg}
	}
	ready := cond(v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready", "ok")
	for _, tc := range []struct {
		name    string
		gen     int64
		conds   []metav1.Condition
		status  metav1.ConditionStatus
		reason  string
		message []string
	}{
		{name: "not reported", gen: 0, status: metav1.ConditionUnknown, reason: ReasonNotReported},
		{name: "no Ready yet", gen: 1, conds: []metav1.Condition{cond(v1alpha1.ConditionCloudVerified, metav1.ConditionTrue, "Verified", "")},
			status: metav1.ConditionUnknown, reason: ReasonNotReported},
		{name: "healthy", gen: 1, conds: []metav1.Condition{ready, cond(v1alpha1.ConditionRoutesHealthy, metav1.ConditionTrue, "Healthy", "")},
			status: metav1.ConditionTrue, reason: ReasonHealthy},
		{name: "remediation held back is no failure", gen: 1, conds: []metav1.Condition{ready, cond(v1alpha1.ConditionRemediationAllowed, metav1.ConditionFalse, "Paused", "")},
			status: metav1.ConditionTrue, reason: ReasonHealthy},
		{name: "not ready", gen: 1, conds: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionFalse, "InvalidCredentials", "CloudVerified: bad")},
			status: metav1.ConditionFalse, reason: "InvalidCredentials", message: []string{"Ready: CloudVerified: bad"}},
		{name: "a finding failing", gen: 1, conds: []metav1.Condition{ready, cond(v1alpha1.ConditionRoutesHealthy, metav1.ConditionFalse, "OrphanedRoutes", "2 routes"),
			cond(v1alpha1.ConditionNodesHealthy, metav1.ConditionFalse, "NodesNotReady", "n1")},
			status: metav1.ConditionFalse, reason: "OrphanedRoutes", message: []string{"RoutesHealthy (OrphanedRoutes): 2 routes", "NodesHealthy (NodesNotReady): n1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
			vcl.Status.ObservedGeneration, vcl.Status.Conditions = tc.gen, tc.conds
			got := Health(vcl)
			if got.Type != ConditionHealthy || got.Status != tc.status || got.Reason != tc.reason {
				t.Fatalf("Health = %s %s %s, want %s %s", got.Type, got.Status, got.Reason, tc.status, tc.reason)
			}
			for _, m := range tc.message {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q lacks %q", got.Message, m)
				}
			}
		})
	}
}

func TestHealthMessageBounded(t *testing.T) {
	vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	vcl.Status.ObservedGeneration = 1
	vcl.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "X", Message: strings.Repeat("é", 2000)}}
	got := Health(vcl)
	if len(got.Message) > MaxHealthMessage || !utf8.ValidString(got.Message) || !strings.HasSuffix(got.Message, "…") {
		t.Fatalf("message of %d bytes, valid %v: %q", len(got.Message), utf8.ValidString(got.Message), got.Message)
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 6, "abc…"},
		{"ééé", 5, "é…"},
		{"ééé", 4, "…"},
		{"aééé", 6, "aé…"},
		{"aééé", 5, "a…"},
	} {
		if got := Truncate(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
