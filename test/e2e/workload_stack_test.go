package e2e

// The workload cluster the deorbit scenarios stand on, proven by itself: a PVC becomes an available Cinder
// volume, a VolumeSnapshot of it an available Cinder snapshot, and a LoadBalancer Service an ACTIVE Octavia
// load balancer, all in the cluster's own project and tagged with its name; deleting them in Kubernetes deletes
// them in the cloud.

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWorkloadClusterStack(t *testing.T) {
	parallel(t, &workloadCluster)
	w := wlOpen(t)
	w.Sweep()
	ctx := context.Background()
	ns := w.Namespace("stack")
	w.PVC(ns, "data")
	w.LBService(ns, "web")
	vol := w.Volume(ns, "data")
	w.Snapshot(ns, "data-1", "data")
	lb := w.LoadBalancer(ns, "web")
	snap := w.CinderSnapshot(ns, "data-1")
	if _, ok := w.CloudVolumes()[vol.ID]; !ok {
		t.Fatalf("volume %s is not in the list of the cluster's volumes", vol.ID)
	}
	if _, ok := w.CloudSnapshots()[snap]; !ok {
		t.Fatalf("snapshot %s is not in the list of the tenant's snapshots", snap)
	}
	if _, ok := w.CloudLBs()[lb.ID]; !ok {
		t.Fatalf("load balancer %s (%s) is not in the list of the cluster's load balancers", lb.ID, lb.Name)
	}
	t.Logf("PVC %s/data: Cinder volume %s, snapshot %s; Service %s/web: Octavia load balancer %s (%s)", ns, vol.ID, snap, ns, lb.ID, lb.Name)

	// In deorbit's order: snapshots first (Cinder keeps a volume that has snapshots).
	if err := w.dyn.Resource(wlSnapshots).Namespace(ns).Delete(ctx, "data-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	opEventually(t, wlCloudTimeout, "snapshot gone from Cinder", func() (bool, string) {
		st, ok := w.CloudSnapshots()[snap]
		return !ok, st
	})
	if err := w.cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Gone([]string{vol.ID}, []string{lb.ID})
}
