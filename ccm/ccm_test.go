package ccm

import (
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/openstack"
)

func TestOwnsLoadBalancerName(t *testing.T) {
	for _, tc := range []struct {
		cluster, name string
		want          bool
	}{
		{"c1", "kube_service_c1_default_web", true},
		{"c1", "kube_service_c1_default_web_x", false},
		{"c1", "kube_service_c1_b_default_web", false}, // cluster c1_b's
		{"c1_b", "kube_service_c1_b_default_web", true},
		{"c1", "kube_service_c10_default_web", false},
		{"c1", "kube_service_c1_Default_web", false},
		{"c1", "kube_service_c1__web", false},
		{"", "kube_service__default_web", false},
		{"c1", "kube_service_c1_default_", false},
	} {
		if got := OwnsLoadBalancerName(tc.cluster, tc.name); got != tc.want {
			t.Errorf("OwnsLoadBalancerName(%q, %q) = %v, want %v", tc.cluster, tc.name, got, tc.want)
		}
	}
}

func TestOwnsLoadBalancer(t *testing.T) {
	name := LoadBalancerName("c1", "default", "web")
	for _, tc := range []struct {
		name   string
		subnet string
		lb     openstack.LoadBalancer
		want   bool
	}{
		{"named, subnet unknown", "", openstack.LoadBalancer{Name: name, VIPSubnetID: "s2"}, true},
		{"named, on the cluster's subnet", "s1", openstack.LoadBalancer{Name: name, VIPSubnetID: "s1"}, true},
		{"named, on another subnet", "s1", openstack.LoadBalancer{Name: name, VIPSubnetID: "s2"}, false},
		{"named, no VIP subnet", "s1", openstack.LoadBalancer{Name: name}, false},
		{"tagged, on the cluster's subnet", "s1", openstack.LoadBalancer{Name: "renamed", VIPSubnetID: "s1", Tags: []string{"x", name}}, true},
		{"tagged, on another subnet", "s1", openstack.LoadBalancer{Name: "renamed", VIPSubnetID: "s2", Tags: []string{name}}, false},
		{"another cluster's name with this one's prefix", "s1", openstack.LoadBalancer{Name: LoadBalancerName("c1_b", "default", "web"), VIPSubnetID: "s1"}, false},
		{"the prefix without its separator", "s1", openstack.LoadBalancer{Name: "kube_service_c10_default_web", VIPSubnetID: "s1"}, false},
		{"unnamed on the cluster's subnet", "s1", openstack.LoadBalancer{Name: "api", VIPSubnetID: "s1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnsLoadBalancer("c1", tc.subnet, &tc.lb); got != tc.want {
				t.Errorf("OwnsLoadBalancer(c1, %q, %+v) = %v, want %v", tc.subnet, tc.lb, got, tc.want)
			}
		})
	}
}

func TestOwnsFloatingIPDescription(t *testing.T) {
	for _, tc := range []struct {
		cluster, desc string
		want          bool
	}{
		{"c1", FloatingIPDescription("c1", "app", "web"), true},
		{"c1", "Floating IP for Kubernetes external service app/web from cluster c1", true},
		{"c1", FloatingIPDescription("c10", "app", "web"), false},
		{"c1", FloatingIPDescription("c1", "app", "web") + " ", false},
		{"c1", FloatingIPDescription("x", "app", "web from cluster c1"), false},
		{"c1", "Floating IP for Kubernetes external service app/web/x from cluster c1", false},
		{"c1", "Floating IP for Kubernetes external service web from cluster c1", false},
		{"c1", "Floating IP for Kubernetes external service App/web from cluster c1", false},
		{"c1", "my own: Floating IP for Kubernetes external service app/web from cluster c1", false},
		{"", FloatingIPDescription("", "app", "web"), false},
		// A cluster named with the separator in it matches its own description only.
		{"a from cluster b", FloatingIPDescription("a from cluster b", "app", "web"), true},
		{"b", FloatingIPDescription("a from cluster b", "app", "web"), false},
	} {
		if got := OwnsFloatingIPDescription(tc.cluster, tc.desc); got != tc.want {
			t.Errorf("OwnsFloatingIPDescription(%q, %q) = %v, want %v", tc.cluster, tc.desc, got, tc.want)
		}
	}
}

func TestVIPPortOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		port openstack.Port
		want string
	}{
		{"Octavia's", openstack.Port{ID: "p", Name: VIPPortName("lb1"), DeviceID: "lb-lb1", DeviceOwner: OctaviaOwner, Status: "DOWN"}, "lb1"},
		{"not Octavia's", openstack.Port{Name: "octavia-lb-lb1", DeviceID: "lb-lb1", DeviceOwner: "compute:nova"}, ""},
		{"device of another", openstack.Port{Name: "octavia-lb-lb1", DeviceID: "lb-lb2", DeviceOwner: OctaviaOwner}, ""},
		{"an amphora's VRRP port", openstack.Port{Name: "octavia-lb-vrrp-a1", DeviceID: "a1", DeviceOwner: OctaviaOwner}, ""},
		{"no ID", openstack.Port{Name: "octavia-lb-", DeviceID: "lb-", DeviceOwner: OctaviaOwner}, ""},
	} {
		got, ok := VIPPortOf(&tc.port)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: VIPPortOf = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestLoadBalancerNameCut(t *testing.T) {
	long := strings.Repeat("a", 250)
	if got := LoadBalancerName("c1", "ns", long); len(got) != MaxNameLength {
		t.Fatalf("name has %d characters, want %d (the cloud controller manager's cut)", len(got), MaxNameLength)
	}
	if got := LoadBalancerName("c1", "ns", "web"); got != "kube_service_c1_ns_web" {
		t.Fatalf("name = %q", got)
	}
}

func TestServiceOf(t *testing.T) {
	for _, tc := range []struct {
		name, cluster, in string
		ns, svc           string
	}{
		{"a load balancer's name", "c1", LoadBalancerName("c1", "app", "web"), "app", "web"},
		{"a floating IP's description", "c1", FloatingIPDescription("c1", "app", "web"), "app", "web"},
		{"another cluster's name", "c1", LoadBalancerName("c1_b", "app", "web"), "", ""},
		{"another cluster's description", "c1", FloatingIPDescription("c10", "app", "web"), "", ""},
		// cut to kube_service_<cluster>_app_we: it would name Service app/we
		{"a cut name", strings.Repeat("c", 235), LoadBalancerName(strings.Repeat("c", 235), "app", "web"), "", ""},
		{"a user's description", "c1", "my floating IP", "", ""},
		{"a user's name", "c1", "web", "", ""},
		{"no cluster", "", LoadBalancerName("", "app", "web"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns, svc, ok := ServiceOf(tc.cluster, tc.in)
			if ns != tc.ns || svc != tc.svc || ok != (tc.ns != "") {
				t.Fatalf("ServiceOf(%q, %q) = %q, %q, %v; want %q, %q", tc.cluster, tc.in, ns, svc, ok, tc.ns, tc.svc)
			}
		})
	}
}
