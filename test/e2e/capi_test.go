package e2e

import (
	"testing"
	"time"
)

// TestCAPIClusterOnOpenStack: the Cluster API core manager and CAPO of the harness reconcile a Cluster with an
// OpenStackCluster (no control plane) against the real Keystone, Neutron and Octavia: CAPO creates the network,
// subnet, router, security groups and API load balancer in its project, the Cluster's infrastructure is
// provisioned; `kubectl delete cluster` ends with CAPO's teardown done and the project holding none of them.
func TestCAPIClusterOnOpenStack(t *testing.T) {
	parallel(t, &capiCluster)
	m := capiOpen(t)
	ns := m.Namespace("capi")
	start := time.Now()
	cl, _ := m.Cluster(ns, "c1", "10.6.0.0/24", "10.244.0.0/16")
	osc := m.Ready(cl)
	t.Logf("the OpenStackCluster ready and the Cluster's infrastructure provisioned %.1f s after their creation", time.Since(start).Seconds())
	s := osc.Status
	t.Logf("CAPO made network %s, subnet %s, router %s (gateway %v), security groups %s and %s, load balancer %s (VIP %s)",
		s.Network.ID, s.Network.Subnets[0].ID, s.Router.ID, s.Router.IPs, s.ControlPlaneSecurityGroup.Name,
		s.WorkerSecurityGroup.Name, s.APIServerLoadBalancer.ID, s.APIServerLoadBalancer.InternalIP)
	if held := m.CloudHolds(s); len(held) != 6 {
		t.Fatalf("the project holds %v of the cluster, want network, subnet, router, two security groups and the load balancer", held)
	}
	if s.Router.IPs == nil {
		t.Errorf("the router has no gateway address on the external network")
	}
	start = time.Now()
	m.DeleteCluster(cl)
	t.Logf("the Cluster and its OpenStackCluster gone %.1f s after the delete", time.Since(start).Seconds())
	if held := m.CloudHolds(s); len(held) != 0 {
		t.Fatalf("after the Cluster's deletion the project still holds %v", held)
	}
}
