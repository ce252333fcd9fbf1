package cloudheal

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
)

const debrisCluster, debrisSubnet = "prod", "s1"

func debrisLB(id, svc string) openstack.LoadBalancer {
	return openstack.LoadBalancer{ID: id, Name: ccm.LoadBalancerName(debrisCluster, "ns", svc), ProvisioningStatus: "ACTIVE",
		VIPSubnetID: debrisSubnet, VIPPortID: "vip-" + id, VIPAddress: "10.0.0." + id[len(id)-1:]}
}

func debrisVIP(lbID string) openstack.Port {
	return openstack.Port{ID: "vip-" + lbID, Name: ccm.VIPPortName(lbID), DeviceID: "lb-" + lbID, DeviceOwner: ccm.OctaviaOwner, RevisionNumber: 3}
}

func liveService(name string, typ corev1.ServiceType) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.ServiceSpec{Type: typ}}
}

func TestDebrisDetect(t *testing.T) {
	// a cluster's name so long that its load balancers' names are cut inside the Service's name
	longCluster := strings.Repeat("c", 235)
	cut := openstack.LoadBalancer{ID: "lb9", Name: ccm.LoadBalancerName(longCluster, "ns", "web"), ProvisioningStatus: "ACTIVE", VIPSubnetID: debrisSubnet}
	tests := []struct {
		name     string
		cluster  string
		lbs      []openstack.LoadBalancer
		services []corev1.Service
		fips     []openstack.FloatingIP
		ports    []openstack.Port
		servers  []string
		noSubnet bool
		want     []string // kind/id
		report   []string // report-only kind/id
	}{
		{name: "a load balancer whose Service is gone, with its VIP port and floating IP",
			lbs: []openstack.LoadBalancer{debrisLB("lb1", "gone")}, ports: []openstack.Port{debrisVIP("lb1")},
			fips: []openstack.FloatingIP{{ID: "f1", PortID: "vip-lb1", Description: ccm.FloatingIPDescription(debrisCluster, "ns", "gone")}},
			want: []string{"FloatingIP/f1", "LoadBalancer/lb1", "Port/vip-lb1"}},
		{name: "a Service no longer of type LoadBalancer", lbs: []openstack.LoadBalancer{debrisLB("lb1", "web")},
			services: []corev1.Service{liveService("web", corev1.ServiceTypeClusterIP)}, want: []string{"LoadBalancer/lb1"}},
		{name: "never: the live Service's load balancer", lbs: []openstack.LoadBalancer{debrisLB("lb1", "web")},
			services: []corev1.Service{liveService("web", corev1.ServiceTypeLoadBalancer)}},
		{name: "never: one a live Service names by annotation", lbs: []openstack.LoadBalancer{debrisLB("lb1", "gone")},
			services: []corev1.Service{func() corev1.Service {
				s := liveService("other", corev1.ServiceTypeLoadBalancer)
				s.Annotations = map[string]string{ccm.AnnotationLoadBalancerID: "lb1"}
				return s
			}()}},
		{name: "never: one whose VIP a live Service's ingress holds", lbs: []openstack.LoadBalancer{debrisLB("lb1", "gone")},
			services: []corev1.Service{func() corev1.Service {
				s := liveService("other", corev1.ServiceTypeLoadBalancer)
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
				return s
			}()}},
		{name: "never: PENDING_UPDATE", lbs: []openstack.LoadBalancer{func() openstack.LoadBalancer {
			lb := debrisLB("lb1", "gone")
			lb.ProvisioningStatus = "PENDING_UPDATE"
			return lb
		}()}},
		{name: "never: a cut name without a tag", cluster: longCluster, lbs: []openstack.LoadBalancer{cut}},
		{name: "a cut name with a tag", cluster: longCluster, lbs: []openstack.LoadBalancer{func() openstack.LoadBalancer {
			lb := cut
			lb.Tags = []string{"kube_service_" + longCluster + "_ns_w"}
			return lb
		}()}, want: []string{"LoadBalancer/lb9"}},
		{name: "never: another subnet's", lbs: []openstack.LoadBalancer{func() openstack.LoadBalancer {
			lb := debrisLB("lb1", "gone")
			lb.VIPSubnetID = "s2"
			return lb
		}()}},
		{name: "never: another cluster's name", lbs: []openstack.LoadBalancer{func() openstack.LoadBalancer {
			lb := debrisLB("lb1", "gone")
			lb.Name = ccm.LoadBalancerName(debrisCluster+"_b", "ns", "gone")
			return lb
		}()}},
		{name: "a renamed load balancer judged by its tag", lbs: []openstack.LoadBalancer{func() openstack.LoadBalancer {
			lb := debrisLB("lb1", "gone")
			lb.Name, lb.Tags = "renamed", []string{ccm.LoadBalancerName(debrisCluster, "ns", "gone")}
			return lb
		}()}, want: []string{"LoadBalancer/lb1"}},
		{name: "never deleted: the cloud controller manager's unattached floating IP (reported)",
			fips:   []openstack.FloatingIP{{ID: "f1", Description: ccm.FloatingIPDescription(debrisCluster, "ns", "gone")}},
			report: []string{"FloatingIP/f1"}},
		{name: "never: a user's floating IP on a debris load balancer's VIP port",
			lbs:  []openstack.LoadBalancer{debrisLB("lb1", "gone")},
			fips: []openstack.FloatingIP{{ID: "f1", PortID: "vip-lb1", Description: "mine"}}, want: []string{"LoadBalancer/lb1"}},
		{name: "never: a user's unattached floating IP", fips: []openstack.FloatingIP{{ID: "f1", Description: "mine"}}},
		{name: "never: the floating IP of a live Service",
			services: []corev1.Service{liveService("web", corev1.ServiceTypeLoadBalancer)},
			fips:     []openstack.FloatingIP{{ID: "f1", Description: ccm.FloatingIPDescription(debrisCluster, "ns", "web")}}},
		{name: "never: the floating IP of a gone Service given to a server's port",
			fips: []openstack.FloatingIP{{ID: "f1", PortID: "p-server", Description: ccm.FloatingIPDescription(debrisCluster, "ns", "gone")}}},
		{name: "a VIP port whose load balancer is gone", ports: []openstack.Port{debrisVIP("lb7")}, want: []string{"Port/vip-lb7"}},
		{name: "never: the VIP port of a live load balancer", lbs: []openstack.LoadBalancer{debrisLB("lb1", "web")},
			services: []corev1.Service{liveService("web", corev1.ServiceTypeLoadBalancer)}, ports: []openstack.Port{debrisVIP("lb1")}},
		{name: "a port of a server that is gone", ports: []openstack.Port{{ID: "p1", DeviceOwner: "compute:nova", DeviceID: "srv-gone"}},
			servers: []string{"srv-live"}, want: []string{"Port/p1"}},
		{name: "never: a port of a live server", ports: []openstack.Port{{ID: "p1", DeviceOwner: "compute:az1", DeviceID: "srv-live"}}, servers: []string{"srv-live"}},
		{name: "never: a port with no device (made for a server not yet booted)", ports: []openstack.Port{{ID: "p1", DeviceOwner: "compute:nova"}}},
		{name: "never: a router interface, DHCP, or Octavia's other ports", ports: []openstack.Port{
			{ID: "p1", DeviceOwner: "network:router_interface", DeviceID: "r-gone"},
			{ID: "p2", DeviceOwner: "network:dhcp", DeviceID: "dhcp-gone"},
			{ID: "p3", DeviceOwner: ccm.OctaviaOwner, Name: "octavia-lb-vrrp-a1", DeviceID: "a1"},
			{ID: "p4", DeviceOwner: "", DeviceID: "srv-gone"}}},
		{name: "never: ports without a subnet in the spec", noSubnet: true,
			ports: []openstack.Port{{ID: "p1", DeviceOwner: "compute:nova", DeviceID: "srv-gone"}, debrisVIP("lb7")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &DebrisRead{Services: tc.services, FloatingIPs: tc.fips, Ports: tc.ports, PortsJudged: !tc.noSubnet, Servers: map[string]bool{}}
			for _, s := range tc.servers {
				d.Servers[s] = true
			}
			cluster := debrisCluster
			if tc.cluster != "" {
				cluster = tc.cluster
			}
			st := &State{Settings: Settings{ClusterName: cluster, DebrisProofAge: time.Hour}, SubnetID: debrisSubnet,
				LoadBalancers: tc.lbs, Debris: d, Prev: &v1alpha1.CloudHealStatus{}}
			f := LiveDebris{}.Detect(&pass.Input[*State]{Cluster: &v1alpha1.VitalsCluster{}, Read: st, Now: time.Now()}).(*debrisFinding)
			var got, report []string
			for _, it := range f.items {
				k := debrisKey(it.rec.Kind, it.rec.ID)
				if it.reportOnly {
					report = append(report, k)
				} else {
					got = append(got, k)
				}
				if it.proven {
					t.Errorf("%s proven at its first sighting", k)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") || strings.Join(report, ",") != strings.Join(tc.report, ",") {
				t.Fatalf("debris %v, reported %v; want %v, %v", got, report, tc.want, tc.report)
			}
		})
	}
}

// TestDebrisProof: an object is proven only by two sightings at least one interval apart, the first
// proofAge old; a port changed since restarts its proof; the status keeps at most MaxDebris.
func TestDebrisProof(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	port := openstack.Port{ID: "p1", DeviceOwner: "compute:nova", DeviceID: "srv-gone", RevisionNumber: 5}
	rec := func(first, last time.Time, passes int32, rev int64) v1alpha1.Debris {
		return v1alpha1.Debris{Kind: v1alpha1.DebrisPort, ID: "p1", FirstSeen: metav1.NewTime(first), LastSeen: metav1.NewTime(last), Passes: passes, Revision: rev}
	}
	tests := []struct {
		name       string
		prev       []v1alpha1.Debris
		now        time.Time
		wantProven bool
		wantPasses int32
	}{
		{name: "first sighting", now: t0, wantPasses: 1},
		{name: "second sighting inside the proof age", prev: []v1alpha1.Debris{rec(t0, t0, 1, 5)}, now: t0.Add(time.Minute), wantPasses: 2},
		{name: "second sighting less than an interval later", prev: []v1alpha1.Debris{rec(t0.Add(-2*time.Hour), t0.Add(-30*time.Second), 1, 5)}, now: t0, wantPasses: 1},
		{name: "proven", prev: []v1alpha1.Debris{rec(t0.Add(-time.Hour), t0.Add(-time.Minute), 1, 5)}, now: t0, wantPasses: 2, wantProven: true},
		{name: "the port changed since: the proof starts again", prev: []v1alpha1.Debris{rec(t0.Add(-2*time.Hour), t0.Add(-time.Minute), 2, 4)}, now: t0, wantPasses: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Settings: Settings{CommonSettings: v1alpha1.CommonSettings{Interval: time.Minute}, ClusterName: debrisCluster, DebrisProofAge: time.Hour},
				Debris: &DebrisRead{Ports: []openstack.Port{port}, PortsJudged: true, Servers: map[string]bool{}}, Prev: &v1alpha1.CloudHealStatus{Debris: tc.prev}}
			f := LiveDebris{}.Detect(&pass.Input[*State]{Cluster: &v1alpha1.VitalsCluster{}, Read: st, Now: tc.now}).(*debrisFinding)
			if len(f.items) != 1 {
				t.Fatalf("items %+v", f.items)
			}
			if it := f.items[0]; it.proven != tc.wantProven || it.rec.Passes != tc.wantPasses {
				t.Fatalf("proven %v passes %d, want %v %d", it.proven, it.rec.Passes, tc.wantProven, tc.wantPasses)
			}
		})
	}
	t.Run("capped", func(t *testing.T) {
		var ports []openstack.Port
		for i := range v1alpha1.MaxDebris + 7 {
			ports = append(ports, openstack.Port{ID: "p" + strings.Repeat("x", i), DeviceOwner: "compute:nova", DeviceID: "gone"})
		}
		st := &State{Settings: Settings{ClusterName: debrisCluster, DebrisProofAge: time.Hour},
			Debris: &DebrisRead{Ports: ports, PortsJudged: true, Servers: map[string]bool{}}, Prev: &v1alpha1.CloudHealStatus{}}
		f := LiveDebris{}.Detect(&pass.Input[*State]{Cluster: &v1alpha1.VitalsCluster{}, Read: st, Now: t0}).(*debrisFinding)
		if len(f.items) != v1alpha1.MaxDebris || f.count != v1alpha1.MaxDebris+7 {
			t.Fatalf("items %d count %d, want %d and %d", len(f.items), f.count, v1alpha1.MaxDebris, v1alpha1.MaxDebris+7)
		}
	})
}
