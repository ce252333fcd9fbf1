package cloudheal

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
)

func TestLBSecurityGroupsDetect(t *testing.T) {
	const subnet = "10.0.0.0/24"
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, HealthCheckNodePort: 30100, LoadBalancerSourceRanges: []string{"192.0.2.0/24"},
		Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, NodePort: 30080}, {Protocol: corev1.ProtocolUDP, NodePort: 30053}, {Protocol: corev1.ProtocolTCP}}}}
	rule := func(proto string, port int, from string) openstack.SecurityGroupRule {
		return openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: proto, PortRangeMin: port, PortRangeMax: port, RemoteIPPrefix: from}
	}
	desc := LBGroupDescription(&svc, "prod")
	full := []openstack.SecurityGroupRule{rule("tcp", 30100, subnet), rule("tcp", 30080, subnet), rule("udp", 30053, subnet)}
	tests := []struct {
		name         string
		mode         v1alpha1.LBSourceRanges
		groups       []openstack.SecurityGroup
		wantGroups   int
		wantMissing  []openstack.SecurityGroupRule
		wantExtra    int
		wantForeign  int
		wantUnmanage int
	}{
		{name: "no group: not managed", wantUnmanage: 1},
		{name: "every rule present", groups: []openstack.SecurityGroup{{ID: "g", Name: LBGroupName(&svc), Description: desc, Rules: full}}, wantGroups: 1},
		{name: "a rule wiped", groups: []openstack.SecurityGroup{{ID: "g", Name: LBGroupName(&svc), Description: desc, Rules: full[1:]}},
			wantGroups: 1, wantMissing: full[:1]},
		{name: "a rule beyond: drift", groups: []openstack.SecurityGroup{{ID: "g", Name: LBGroupName(&svc), Description: desc,
			Rules: append(append([]openstack.SecurityGroupRule(nil), full...), rule("tcp", 22, "0.0.0.0/0"))}}, wantGroups: 1, wantExtra: 1},
		{name: "the Service's source ranges (ovn)", mode: v1alpha1.LBSourceRangesService,
			groups:     []openstack.SecurityGroup{{ID: "g", Name: LBGroupName(&svc), Description: desc, Rules: full[:1]}},
			wantGroups: 1, wantMissing: []openstack.SecurityGroupRule{rule("tcp", 30080, "192.0.2.0/24"), rule("udp", 30053, "192.0.2.0/24")}},
		{name: "the name but another's description: never written", groups: []openstack.SecurityGroup{{ID: "g", Name: LBGroupName(&svc), Description: "mine"}},
			wantForeign: 1},
		{name: "two groups of the name and description: never written", groups: []openstack.SecurityGroup{
			{ID: "g1", Name: LBGroupName(&svc), Description: desc}, {ID: "g2", Name: LBGroupName(&svc), Description: desc}}, wantForeign: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Settings: Settings{ClusterName: "prod"}, LBServices: []corev1.Service{svc}, SubnetCIDR: subnet, Groups: map[string][]openstack.SecurityGroup{}}
			for _, g := range tc.groups {
				st.Groups[g.Name] = append(st.Groups[g.Name], g)
			}
			c := &v1alpha1.VitalsCluster{}
			c.Spec.Controllers.CloudHeal.Repairs.LoadBalancerSecurityGroups.SourceRanges = tc.mode
			f := LBSecurityGroups{}.Detect(&pass.Input[*State]{Cluster: c, Read: st}).(*lbFinding)
			if len(f.groups) != tc.wantGroups || len(f.foreign) != tc.wantForeign || f.unmanaged != tc.wantUnmanage {
				t.Fatalf("groups %d foreign %d unmanaged %d, want %d %d %d", len(f.groups), len(f.foreign), f.unmanaged, tc.wantGroups, tc.wantForeign, tc.wantUnmanage)
			}
			if tc.wantGroups == 0 {
				return
			}
			g := f.groups[0]
			if len(g.missing) != len(tc.wantMissing) || len(g.extra) != tc.wantExtra {
				t.Fatalf("missing %+v extra %+v, want %+v and %d extra", g.missing, g.extra, tc.wantMissing, tc.wantExtra)
			}
			for i := range g.missing {
				if !sameRule(g.missing[i], tc.wantMissing[i]) {
					t.Fatalf("missing[%d] = %+v, want %+v", i, g.missing[i], tc.wantMissing[i])
				}
			}
		})
	}
}

func TestLBGroupName(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	if got := LBGroupName(svc); got != "lb-sg-u1-ns-web" {
		t.Fatalf("name = %q", got)
	}
	long := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(make([]byte, 300)), UID: "u1"}}
	if got := LBGroupName(long); len(got) != 255 {
		t.Fatalf("long name has %d bytes, want 255", len(got))
	}
}
