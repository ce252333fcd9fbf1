package e2e

// Deorbit's record of a live cluster (status.deorbit.seen), end to end on the workload cluster (kcm, OCCM, Cinder
// CSI) and the real Cinder and Octavia: the keep ledger outlives the workload API, a selector that matches none
// of the cluster's servers proves nothing, and a same-named neighbour held NotConfirmed loses nothing.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
)

// seenLedger waits until the live VitalsCluster key has its keep ledger recorded, and returns it.
func (f *deorbitFixture) seenLedger(key client.ObjectKey) *v1alpha1.DeorbitSeen {
	f.t.Helper()
	var seen *v1alpha1.DeorbitSeen
	opEventually(f.t, 2*time.Minute, "the keep ledger recorded (status.deorbit.seen.keepTime)", func() (bool, string) {
		var vc v1alpha1.VitalsCluster
		if err := f.c.Get(context.Background(), key, &vc); err != nil {
			return false, err.Error()
		}
		if vc.Status.Deorbit == nil || vc.Status.Deorbit.Seen == nil || vc.Status.Deorbit.Seen.KeepTime == nil {
			return false, "no ledger yet"
		}
		seen = vc.Status.Deorbit.Seen
		return true, ""
	})
	return seen
}

// TestOperatorDeorbitKeepLedger: a Retain PersistentVolume's volume and a kept claim's volume survive a teardown
// whose workload API was stopped before the deletion (so the claims phase, which honours both, never ran): the
// ledger recorded while the cluster lived keeps them from the sweep, which deletes the third claim's volume.
func TestOperatorDeorbitKeepLedger(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 3, 0, false)
	ctx := context.Background()
	pvc, err := f.w.cs.CoreV1().PersistentVolumeClaims(f.wns).Get(ctx, f.claims[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	retain := pvc.Spec.VolumeName
	if _, err := f.w.cs.CoreV1().PersistentVolumes().Patch(ctx, retain, types.MergePatchType,
		[]byte(`{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.w.cs.CoreV1().PersistentVolumes().Delete(context.Background(), retain, metav1.DeleteOptions{})
	})
	if _, err := f.w.cs.CoreV1().PersistentVolumeClaims(f.wns).Patch(ctx, f.claims[1], types.MergePatchType,
		[]byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, v1alpha1.AnnotationKeep)), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.operatorStart("keep-ledger")
	key := f.create(func(vc *v1alpha1.VitalsCluster) {
		vc.Name = "keep-ledger"
		vc.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: 5 * time.Second}
	})
	seen := f.seenLedger(key)
	var ledger []string
	for _, k := range seen.Keep {
		ledger = append(ledger, k.ID)
	}
	t.Logf("keep ledger: %+v", seen.Keep)
	if !slices.Contains(ledger, f.volumes[0]) || !slices.Contains(ledger, f.volumes[1]) || slices.Contains(ledger, f.volumes[2]) {
		t.Fatalf("keep ledger %v, want the Retain volume %s and the kept claim's %s, not %s", ledger, f.volumes[0], f.volumes[1], f.volumes[2])
	}
	// The workload API stops before the deletion: the claims phase never runs.
	if err := f.kube.Add(faultproxy.Rule{Name: "stopped", Path: "/**", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	f.deleteAndWait(key)
	d := f.last().Status.Deorbit
	if d == nil || d.Phase != v1alpha1.DeorbitPhaseDone || !strings.Contains(d.WorkloadSkipped, "keep ledger recorded at") {
		t.Fatalf("last status %+v, want Done with the Kubernetes phases skipped and the ledger named", d)
	}
	t.Logf("workload skipped: %s", d.WorkloadSkipped)
	for _, id := range f.volumes[:2] {
		if v, err := f.w.cloud.GetVolume(ctx, id); err != nil {
			t.Errorf("kept volume %s: %v, want it in Cinder", id, err)
		} else if v.Status == "deleting" {
			t.Errorf("kept volume %s is being deleted", id)
		}
	}
	for _, r := range d.Resources {
		if r.Type == v1alpha1.DeorbitVolume && slices.Contains(f.volumes[:2], r.ID) && r.State != v1alpha1.DeorbitKept {
			t.Errorf("volume %s: state %s (%s), want Kept", r.ID, r.State, r.LastError)
		}
	}
	if _, err := f.w.cloud.GetVolume(ctx, f.volumes[2]); err == nil {
		t.Errorf("volume %s of the claim not kept is still in Cinder after Done", f.volumes[2])
	}
}

// TestOperatorDeorbitHeldNeighbour: a live cluster's VitalsCluster with a selector that matches none of its servers
// (a typo) warns (ServersSelected False) and, deleted, is held NotConfirmed: its servers being "gone" proves nothing.
// A confirmed VitalsCluster of the same cloud cluster name, deleted with its workload API gone, sweeps nothing of
// it (the neighbour being deleted but held counts as present), gives up, and reports the volume and load
// balancer as not proven its own, never as debris: the debris metric stays at zero.
func TestOperatorDeorbitHeldNeighbour(t *testing.T) {
	parallel(t, &workloadCluster)
	f := newDeorbitFixture(t, 1, 1, false)
	for _, p := range []*faultproxy.Proxy{f.cinder, f.octavia} {
		if err := p.Add(faultproxy.Rule{Name: "any-delete", Method: "DELETE", Path: "/**", Fault: faultproxy.Pass()}); err != nil {
			t.Fatal(err)
		}
	}
	op := f.operatorStart("held-neighbour")
	ctx := context.Background()
	held := f.createAs(func(vc *v1alpha1.VitalsCluster) {
		vc.Name = "held"
		vc.Spec.Controllers.Flight.Servers.Metadata = map[string]string{"kubernikus:cluster": "no-such-cluster-typo"}
	}, false)
	opEventually(t, 2*time.Minute, "ServersSelected False/NoServerMatched on the live VitalsCluster", func() (bool, string) {
		var vc v1alpha1.VitalsCluster
		if err := f.c.Get(ctx, held, &vc); err != nil {
			return false, err.Error()
		}
		cd := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionServersSelected)
		if cd == nil {
			return false, "no ServersSelected"
		}
		return cd.Status == metav1.ConditionFalse && cd.Reason == deorbit.ReasonNoServerMatched, cd.Reason + ": " + cd.Message
	})
	f.seenLedger(held)
	f.delete(held)
	_, msg := deorbitHeld(t, f.c, held, time.Minute)
	if !strings.Contains(msg, "was ever seen matching its selector") {
		t.Errorf("NotConfirmed does not say the selector never matched: %s", msg)
	}
	t.Cleanup(func() {
		var vc v1alpha1.VitalsCluster
		if err := f.c.Get(context.Background(), held, &vc); err == nil {
			_ = f.c.Patch(context.Background(), &vc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"deletionPolicy":"Orphan"}}`)))
		}
	})

	doomed := f.create(func(vc *v1alpha1.VitalsCluster) {
		vc.Name = "doomed"
		vc.Spec.PodCIDRs = []v1alpha1.CIDR{"100.64.0.0/16"} // tenancy refuses two clusters of overlapping pod CIDRs on one router
		vc.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: 5 * time.Second}
		vc.Spec.Controllers.Deorbit.GiveUpAfter = &metav1.Duration{Duration: time.Minute}
	})
	// The neighbour's workload API is gone (in the field it is another workload cluster): only the sweep acts.
	if err := f.kube.Add(faultproxy.Rule{Name: "gone", Path: "/**", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	f.deleteAndWait(doomed)
	if n := f.cinder.Matched("any-delete") + f.octavia.Matched("any-delete"); n != 0 {
		t.Errorf("%d DELETE requests to Cinder or Octavia, want none", n)
	}
	for _, id := range f.volumes {
		if v, err := f.w.cloud.GetVolume(ctx, id); err != nil || v.Status == "deleting" {
			t.Errorf("the held neighbour's volume %s: %v", id, err)
		}
	}
	for _, id := range f.lbs {
		if lb, err := f.w.cloud.GetLoadBalancer(ctx, id); err != nil || lb.ProvisioningStatus == "PENDING_DELETE" {
			t.Errorf("the held neighbour's load balancer %s: %v", id, err)
		}
	}
	var last *v1alpha1.DeorbitStatus
	for _, vc := range f.versions() {
		if vc.Name == doomed.Name && vc.Status.Deorbit != nil {
			last = vc.Status.Deorbit
		}
	}
	if last == nil || last.Phase != v1alpha1.DeorbitPhaseGaveUp {
		t.Fatalf("doomed's last status %+v, want GaveUp", last)
	}
	for _, d := range last.Debris {
		if d.Type == v1alpha1.DeorbitVolume || d.Type == v1alpha1.DeorbitLoadBalancer {
			t.Errorf("debris %s %s (%s): the neighbour's, want it in notProven", d.Type, d.ID, d.LastError)
		}
	}
	var notProven []string
	for _, d := range last.NotProven {
		notProven = append(notProven, d.ID)
	}
	t.Logf("not proven: %v", notProven)
	for _, id := range append(append([]string(nil), f.volumes...), f.lbs...) {
		if !slices.Contains(notProven, id) {
			t.Errorf("%s not in status.deorbit.notProven %v", id, notProven)
		}
	}
	for _, typ := range []string{v1alpha1.DeorbitVolume, v1alpha1.DeorbitLoadBalancer} {
		if v := metricValue(t, op, "vitals_deorbit_debris_left_total", map[string]string{"type": typ}); v != 0 {
			t.Errorf("vitals_deorbit_debris_left_total{type=%q} = %v, want 0 (the alert would fire for the neighbour's)", typ, v)
		}
	}
	var hv v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, held, &hv); err != nil || hv.DeletionTimestamp.IsZero() {
		t.Errorf("the held neighbour: %v, want it still held", err)
	}
}
