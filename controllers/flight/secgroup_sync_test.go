package flight

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/openstack"
)

// TestCutOffNode: a Node's spec is no authority for what a port may send: only PodCIDRs inside the
// cluster's spec.podCIDRs are written, and the port is the one holding the Node's address.
func TestCutOffNode(t *testing.T) {
	s := &Settings{PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")}, Read: ReadOptions{NetworkID: "net"}}
	sv := openstack.Server{ID: "s1"}
	port := func(id, network, ip string) openstack.Port {
		return openstack.Port{ID: id, NetworkID: network, FixedIPs: []openstack.FixedIP{{IPAddress: ip}}}
	}
	node := func(ip string, cidrs ...string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{PodCIDRs: cidrs},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	}
	tests := []struct {
		name                 string
		node                 *corev1.Node
		ports                []openstack.Port
		wantPort, wantCIDRs  string
		wantRefused, problem bool
	}{
		{"the port holding the node's address", node("10.0.0.5", "198.19.3.0/24"),
			[]openstack.Port{port("p0", "net", "10.0.0.4"), port("p1", "net", "10.0.0.5"), port("p2", "other", "10.9.0.5")}, "p1", "[198.19.3.0/24]", false, false},
		{"the only port on the nodes' network", node("10.0.0.9", "198.19.3.0/24"),
			[]openstack.Port{port("p1", "net", "10.0.0.5"), port("p2", "other", "10.9.0.5")}, "p1", "[198.19.3.0/24]", false, false},
		{"a forged PodCIDR outside the cluster's is refused", node("10.0.0.5", "0.0.0.0/0", "198.19.3.0/24", "198.18.0.0/15"),
			[]openstack.Port{port("p1", "net", "10.0.0.5")}, "p1", "[198.19.3.0/24]", true, false},
		{"a PodCIDR wider than the cluster's is refused", node("10.0.0.5", "198.0.0.0/8"),
			[]openstack.Port{port("p1", "net", "10.0.0.5")}, "p1", "[]", true, true},
		{"several ports and none holds the address", node("10.0.0.9", "198.19.3.0/24"),
			[]openstack.Port{port("p1", "net", "10.0.0.5"), port("p2", "net", "10.0.0.6")}, "", "[198.19.3.0/24]", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cutOffNode(sv, tt.node, tt.ports, s)
			gotPort := ""
			if c.port != nil {
				gotPort = c.port.ID
			}
			cidrs := "[]"
			if len(c.cidrs) > 0 {
				cidrs = "["
				for i, p := range c.cidrs {
					if i > 0 {
						cidrs += " "
					}
					cidrs += p.String()
				}
				cidrs += "]"
			}
			if gotPort != tt.wantPort || cidrs != tt.wantCIDRs || (len(c.refused) > 0) != tt.wantRefused || (c.problem != "") != tt.problem {
				t.Errorf("port %q cidrs %s refused %v problem %q", gotPort, cidrs, c.refused, c.problem)
			}
		})
	}
	pairs := withPairs([]openstack.AddressPair{{IPAddress: "198.19.3.0/24"}, {IPAddress: "10.0.0.200"}},
		[]netip.Prefix{netip.MustParsePrefix("198.19.3.0/24"), netip.MustParsePrefix("198.19.4.0/24")})
	if len(pairs) != 3 || pairs[2].IPAddress != "198.19.4.0/24" {
		t.Errorf("withPairs = %v", pairs)
	}
}
