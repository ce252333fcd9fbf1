// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package deorbit

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// TestTeardownProven: a neighbour being deleted counts as present for the sweep's guard until its own teardown is
// proven: held NotConfirmed, Orphan, or not started, it is present.
func TestTeardownProven(t *testing.T) {
	now := metav1.Now()
	neighbour := func(policy v1alpha1.DeletionPolicy, deleting, started bool, reason string) *v1alpha1.VitalsCluster {
		c := &v1alpha1.VitalsCluster{}
		c.Spec.DeletionPolicy = policy
		if deleting {
			c.DeletionTimestamp = &now
		}
		if started {
			c.Status.Deorbit = &v1alpha1.DeorbitStatus{StartTime: &now, Interlock: "confirmed by annotation"}
		}
		if reason != "" {
			c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionCleanedUp, Status: metav1.ConditionFalse, Reason: reason}}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		c    *v1alpha1.VitalsCluster
		want bool
	}{
		{"live", neighbour(v1alpha1.DeletionPolicyDeorbit, false, false, ""), false},
		{"deleting, held NotConfirmed", neighbour(v1alpha1.DeletionPolicyDeorbit, true, false, ReasonNotConfirmed), false},
		{"deleting, started, then held NotConfirmed", neighbour(v1alpha1.DeletionPolicyDeorbit, true, true, ReasonNotConfirmed), false},
		{"deleting with Orphan", neighbour(v1alpha1.DeletionPolicyOrphan, true, true, "Orphaned"), false},
		{"deleting, its teardown running", neighbour(v1alpha1.DeletionPolicyDeorbit, true, true, "InProgress"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := teardownProven(tc.c); got != tc.want {
				t.Errorf("teardownProven = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestApplyLedger: the ledger's volumes are Kept by every step, whatever state they were tracked in, unless gone;
// the note of a cluster never seen reachable says that only the Cinder marker keeps a volume.
func TestApplyLedger(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	st := &v1alpha1.DeorbitStatus{
		Resources: []v1alpha1.DeorbitResource{{Type: v1alpha1.DeorbitVolume, ID: "v-pending", State: v1alpha1.DeorbitPending},
			{Type: v1alpha1.DeorbitVolume, ID: "v-gone", State: v1alpha1.DeorbitGone}},
		Seen: &v1alpha1.DeorbitSeen{KeepTime: &at, Keep: []v1alpha1.DeorbitKeepEntry{
			{Type: v1alpha1.DeorbitVolume, ID: "v-pending", Why: "persistent volume pv-a has reclaim policy Retain"},
			{Type: v1alpha1.DeorbitVolume, ID: "v-gone", Why: "x"},
			{Type: v1alpha1.DeorbitVolume, ID: "v-new", Name: "pv-b", Why: "its claim ns/b carries vitals.vitalsproject.io/keep"},
			{Type: v1alpha1.DeorbitSnapshot, ID: "s-1", Why: "y"}}},
	}
	s := &step{st: st}
	s.applyLedger()
	want := map[string]string{"v-pending": v1alpha1.DeorbitKept, "v-gone": v1alpha1.DeorbitGone, "v-new": v1alpha1.DeorbitKept}
	for _, r := range st.Resources {
		if r.State != want[r.ID] {
			t.Errorf("%s %s: state %s, want %s", r.Type, r.ID, r.State, want[r.ID])
		}
		if r.Type != v1alpha1.DeorbitVolume {
			t.Errorf("the ledger's snapshot %s is tracked: the sweep deletes no snapshot", r.ID)
		}
	}
	if len(st.Resources) != 3 {
		t.Errorf("%d resources, want 3", len(st.Resources))
	}
	if n := ledgerNote(st.Seen); !strings.Contains(n, "keeps 3 volumes") || !strings.Contains(n, "2026-12-01T00:00:00Z") {
		t.Errorf("ledger note %q", n)
	}
	if n := ledgerNote(nil); !strings.Contains(n, "never seen reachable") || !strings.Contains(n, v1alpha1.AnnotationKeep) {
		t.Errorf("note without a ledger %q", n)
	}
}
