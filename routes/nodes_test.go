package routes

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/openstack"
)

func TestPlanNodes(t *testing.T) {
	pods := []netip.Prefix{netip.MustParsePrefix("10.100.0.0/16")}
	live := NewAddresses()
	for _, ip := range []string{"10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"} {
		live.Add(ip, "port")
	}
	rt := func(d, h string) openstack.Route { return openstack.Route{Destination: d, NextHop: h} }
	tests := []struct {
		name       string
		routes     []openstack.Route
		protected  []ProtectedRoute
		nodes      []corev1.Node
		dups       []string // destination: stale nexthops
		missing    []openstack.Route
		conflicts  int
		unroutable int
	}{
		{name: "healthy", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.3")}, nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}},
		{name: "missing route is re-added", nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, missing: []openstack.Route{rt("10.100.1.0/24", "10.0.0.3")}},
		{name: "duplicate with a dead nexthop: stale", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.9"), rt("10.100.1.0/24", "10.0.0.3")},
			nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, dups: []string{"10.100.1.0/24:10.0.0.9"}},
		{name: "duplicate of live nexthops: reported, nothing stale", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.4"), rt("10.100.1.0/24", "10.0.0.3")},
			nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, dups: []string{"10.100.1.0/24:"}},
		{name: "protected dead nexthop is not stale", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.9"), rt("10.100.1.0/24", "10.0.0.3")},
			protected: []ProtectedRoute{{Destination: netip.MustParsePrefix("10.100.1.0/24")}},
			nodes:     []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, dups: []string{"10.100.1.0/24:"}},
		{name: "destination held by another live nexthop: conflict, not added", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.4")},
			nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, conflicts: 1},
		{name: "destination held by a dead nexthop only: the node's route is added", routes: []openstack.Route{rt("10.100.1.0/24", "10.0.0.9")},
			nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.0.0.3")}, missing: []openstack.Route{rt("10.100.1.0/24", "10.0.0.3")}},
		{name: "InternalIP of no port: not added (routegc would remove it)", nodes: []corev1.Node{node("n1", "10.100.1.0/24", "10.9.9.9")}, unroutable: 1},
		{name: "no InternalIP", nodes: []corev1.Node{node("n1", "10.100.1.0/24", "")}, unroutable: 1},
		{name: "pod CIDR outside the cluster's: not ours", nodes: []corev1.Node{node("n1", "192.168.1.0/24", "10.0.0.3")}},
		{name: "node without pod CIDR", nodes: []corev1.Node{node("n1", "", "10.0.0.3")}},
		{name: "foreign routes are never duplicates", routes: []openstack.Route{rt("0.0.0.0/0", "10.0.0.9"), rt("0.0.0.0/0", "10.0.0.3")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanNodes(tc.routes, pods, tc.protected, live, tc.nodes)
			if plan.Err != nil {
				t.Fatal(plan.Err)
			}
			var dups []string
			for _, d := range plan.Duplicates {
				var stale []string
				for _, s := range d.Stale {
					stale = append(stale, s.NextHop)
				}
				dups = append(dups, d.Destination+":"+strings.Join(stale, ","))
			}
			if !slices.Equal(dups, tc.dups) {
				t.Errorf("duplicates %q, want %q", dups, tc.dups)
			}
			if !slices.Equal(plan.Missing, tc.missing) {
				t.Errorf("missing %v, want %v", plan.Missing, tc.missing)
			}
			if len(plan.Conflicts) != tc.conflicts || len(plan.Unroutable) != tc.unroutable {
				t.Errorf("conflicts %q, unroutable %q; want %d and %d", plan.Conflicts, plan.Unroutable, tc.conflicts, tc.unroutable)
			}
		})
	}
}

func node(name, podCIDR, ip string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
	if podCIDR != "" {
		n.Spec.PodCIDRs = []string{podCIDR}
	}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}
