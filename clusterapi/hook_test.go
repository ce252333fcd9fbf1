package clusterapi

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func TestBeforeClusterDelete(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	deleting := metav1.NewTime(now.Add(-time.Minute))
	vcl := func(st *v1alpha1.DeorbitStatus, del bool) *v1alpha1.VitalsCluster {
		c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "prod"}}
		if del {
			c.DeletionTimestamp = &deleting
		}
		c.Status.Deorbit = st
		return c
	}
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	ago := func(d time.Duration) Deleting { return Deleting{Since: now.Add(-d)} } // the Cluster deleted d ago
	for _, tc := range []struct {
		name  string
		vcl   *v1alpha1.VitalsCluster
		cl    Deleting // the Cluster's deletion
		retry int32
		msg   string
	}{
		{"no VitalsCluster", nil, Deleting{}, 0, "nothing for Vitals to clean up"},
		{"not deleting", vcl(nil, false), ago(time.Minute), 5, "not deleting yet"},
		{"not deleting, the Cluster's deletion unknown", vcl(nil, false), Deleting{}, 5, "deorbit has not started"},
		{"not deleting, the Cluster paused long", vcl(nil, false), Deleting{Since: now.Add(-time.Hour), Paused: true}, 5, "the Cluster is paused"},
		{"not deleting, just within the bound", vcl(nil, false), ago(NotDeletedAfter - time.Second), 5, "the hook waits for that until"},
		{"not deleting at the bound: nothing deletes it", vcl(nil, false), ago(NotDeletedAfter), 0, "nothing deletes it"},
		{"not deleting long after the bound", vcl(nil, false), ago(24 * time.Hour), 0, "The deletion goes on without waiting for deorbit"},
		{"deleting long after the bound: waited for", vcl(nil, true), ago(24 * time.Hour), 5, "deorbit is starting"},
		{"deleting, no status yet", vcl(nil, true), ago(time.Minute), 5, "deorbit is starting"},
		{"in a phase, next step in 12s", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseClaims, NextAttemptTime: at(12 * time.Second),
			Counts: v1alpha1.DeorbitCounts{Total: 9, Done: 4}}, true), ago(time.Minute), 12, "phase PersistentVolumeClaims, 4 of 9 resources done"},
		{"next step overdue", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseSweep, NextAttemptTime: at(-time.Minute)}, true), ago(time.Minute), 2, "phase Sweep"},
		{"next step far", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseWaitForCloud, NextAttemptTime: at(time.Hour)}, true), ago(time.Minute), 30, "phase WaitForCloud"},
		{"no next step time", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseRoutes}, true), ago(time.Minute), 2, "phase Routes"},
		{"done", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseDone, Counts: v1alpha1.DeorbitCounts{Total: 7, Done: 7}}, true), ago(time.Minute), 0, "deorbit done, the cloud confirmed 7"},
		{"gave up", vcl(&v1alpha1.DeorbitStatus{Phase: v1alpha1.DeorbitPhaseGaveUp, Debris: make([]v1alpha1.DeorbitResource, 2)}, true), ago(time.Minute), 0, "gave up with 2 resources left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp runtimehooksv1.BeforeClusterDeleteResponse
			notDeleted := BeforeClusterDelete(tc.vcl, tc.cl, now, &resp)
			if resp.Status != runtimehooksv1.ResponseStatusSuccess || resp.RetryAfterSeconds != tc.retry || !strings.Contains(resp.Message, tc.msg) {
				t.Errorf("got %s retry %d %q, want Success retry %d and a message containing %q", resp.Status, resp.RetryAfterSeconds, resp.Message, tc.retry, tc.msg)
			}
			if want := strings.Contains(resp.Message, "nothing deletes it"); notDeleted != want {
				t.Errorf("notDeleted = %v, want %v (%q)", notDeleted, want, resp.Message)
			}
		})
	}
}

func TestHoldMachines(t *testing.T) {
	vcl := func(policy v1alpha1.DeletionPolicy, phase string) *v1alpha1.VitalsCluster {
		c := &v1alpha1.VitalsCluster{Spec: v1alpha1.ClusterSpec{DeletionPolicy: policy}}
		if phase != "" {
			c.Status.Deorbit = &v1alpha1.DeorbitStatus{Phase: phase}
		}
		return c
	}
	for _, tc := range []struct {
		name string
		vcl  *v1alpha1.VitalsCluster
		want bool
	}{
		{"no VitalsCluster (gone: deorbit released it)", nil, false},
		{"Deorbit, not started", vcl(v1alpha1.DeletionPolicyDeorbit, ""), true},
		{"Deorbit, in a phase", vcl(v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeorbitPhaseClaims), true},
		{"Deorbit, done", vcl(v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeorbitPhaseDone), false},
		{"Deorbit, gave up", vcl(v1alpha1.DeletionPolicyDeorbit, v1alpha1.DeorbitPhaseGaveUp), false},
		{"Orphan", vcl(v1alpha1.DeletionPolicyOrphan, v1alpha1.DeorbitPhaseClaims), false},
		{"no policy (Orphan by default)", vcl("", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HoldMachines(tc.vcl); got != tc.want {
				t.Errorf("HoldMachines = %v, want %v", got, tc.want)
			}
		})
	}
}
