package flight

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

func TestCovers(t *testing.T) {
	want := openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", RemoteIPPrefix: "10.100.0.0/16"}
	self := openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", RemoteGroupID: "g1"}
	tests := []struct {
		name string
		have openstack.SecurityGroupRule
		want openstack.SecurityGroupRule
		ok   bool
	}{
		{"same", want, want, true},
		{"any protocol", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", RemoteIPPrefix: "10.100.0.0/16"}, want, true},
		{"protocol by number", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "6", RemoteIPPrefix: "10.100.0.0/16"}, want, true},
		{"wider prefix", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", RemoteIPPrefix: "10.0.0.0/8"}, want, true},
		{"from anywhere", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp"}, want, true},
		{"all ports spelled out", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 1, PortRangeMax: 65535, RemoteIPPrefix: "10.100.0.0/16"}, want, true},
		{"narrower prefix", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", RemoteIPPrefix: "10.100.1.0/24"}, want, false},
		{"other prefix", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", RemoteIPPrefix: "10.200.0.0/16"}, want, false},
		{"other protocol", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "udp", RemoteIPPrefix: "10.100.0.0/16"}, want, false},
		{"some ports", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "tcp", PortRangeMin: 80, PortRangeMax: 80, RemoteIPPrefix: "10.100.0.0/16"}, want, false},
		{"egress", openstack.SecurityGroupRule{Direction: "egress", EtherType: "IPv4", Protocol: "tcp", RemoteIPPrefix: "10.100.0.0/16"}, want, false},
		{"other ethertype", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv6", Protocol: "tcp"}, want, false},
		{"a remote group does not cover a prefix", self, want, false},
		{"the same remote group", self, self, true},
		{"a prefix does not cover a remote group", want, self, false},
		{"anywhere covers a remote group", openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4"}, self, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Covers(tc.have, tc.want); got != tc.ok {
				t.Errorf("Covers(%+v, %+v) = %v, want %v", tc.have, tc.want, got, tc.ok)
			}
		})
	}
}

func TestRequiredAndMissingRules(t *testing.T) {
	pods := []netip.Prefix{netip.MustParsePrefix("10.100.0.0/16"), netip.MustParsePrefix("fd00:10::/56")}
	want := RequiredRules(pods, "g1")
	var names []string
	for _, r := range want {
		names = append(names, ruleName(r))
		if !strings.HasPrefix(r.Description, RuleDescription) {
			t.Errorf("rule %s: description %q does not mark it as flight's", ruleName(r), r.Description)
		}
	}
	wantNames := []string{
		"ingress IPv4 tcp from 10.100.0.0/16", "ingress IPv4 udp from 10.100.0.0/16", "ingress IPv4 icmp from 10.100.0.0/16",
		"ingress IPv6 tcp from fd00:10::/56", "ingress IPv6 udp from fd00:10::/56", "ingress IPv6 ipv6-icmp from fd00:10::/56",
		"ingress IPv4 any from group g1", "ingress IPv6 any from group g1",
		"egress IPv4 any to 10.100.0.0/16", "egress IPv6 any to fd00:10::/56",
		"egress IPv4 any to group g1", "egress IPv6 any to group g1",
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("required rules\n%q\nwant\n%q", names, wantNames)
	}
	have := []openstack.SecurityGroupRule{
		{Direction: "ingress", EtherType: "IPv4", RemoteIPPrefix: "10.0.0.0/8"}, // covers the three IPv4 pod rules
		{Direction: "ingress", EtherType: "IPv6", RemoteGroupID: "g1"},
		{Direction: "egress", EtherType: "IPv4"},
	}
	var missing []string
	for _, r := range MissingRules(want, have) {
		missing = append(missing, ruleName(r))
	}
	// The IPv4 egress rule to anywhere covers both IPv4 egress rules; nothing covers the IPv6 ones.
	wantMissing := []string{"ingress IPv6 tcp from fd00:10::/56", "ingress IPv6 udp from fd00:10::/56", "ingress IPv6 ipv6-icmp from fd00:10::/56", "ingress IPv4 any from group g1",
		"egress IPv6 any to fd00:10::/56", "egress IPv6 any to group g1"}
	if !slices.Equal(missing, wantMissing) {
		t.Fatalf("missing\n%q\nwant\n%q", missing, wantMissing)
	}
}

func TestLacksGroup(t *testing.T) {
	ports := []openstack.Port{
		{ID: "p1", NetworkID: "nodes", SecurityGroups: []string{"g1", "default"}},
		{ID: "p2", NetworkID: "storage", SecurityGroups: []string{"default"}},
	}
	tests := []struct {
		network string
		ports   []openstack.Port
		want    bool
	}{
		{"nodes", ports, false},
		{"", ports, true}, // no network: every port must carry it
		{"storage", ports, true},
		{"nodes", nil, false},
	}
	for _, tc := range tests {
		if got := LacksGroup(tc.ports, tc.network, "g1"); got != tc.want {
			t.Errorf("LacksGroup(network %q) = %v, want %v", tc.network, got, tc.want)
		}
	}
}

func TestErrored(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	servers := []openstack.Server{
		{ID: "s1", Name: "a", Status: "ERROR", VMState: "error"},
		{ID: "s2", Name: "b", Status: "ACTIVE", VMState: "active"},
		{ID: "s3", Name: "c", Status: "ERROR", VMState: "error"},
	}
	seen := []v1alpha1.ServerSighting{{Server: "s1", FirstSeen: metav1.NewTime(t0)}, {Server: "gone", FirstSeen: metav1.NewTime(t0)}}
	got := Errored(servers, seen, now)
	if len(got) != 2 || got[0].Server != "s1" || !got[0].FirstSeen.Time.Equal(t0) || got[1].Server != "s3" || !got[1].FirstSeen.Time.Equal(now) {
		t.Fatalf("errored %+v: want s1 first seen %s (kept), s3 first seen now; gone dropped", got, t0)
	}
}

func TestHeadroom(t *testing.T) {
	tests := []struct {
		routes, limit int
		want          metav1.ConditionStatus
	}{
		{0, 30, metav1.ConditionTrue},
		{23, 30, metav1.ConditionTrue},
		{24, 30, metav1.ConditionFalse}, // 80 %
		{30, 30, metav1.ConditionFalse},
		{5, 0, metav1.ConditionUnknown},
	}
	for _, tc := range tests {
		if got := RouteHeadroom(tc.routes, tc.limit); got.Status != tc.want || got.Type != v1alpha1.ConditionRouteHeadroom {
			t.Errorf("RouteHeadroom(%d of %d) = %+v, want %s", tc.routes, tc.limit, got, tc.want)
		}
	}
}

func TestConsistent(t *testing.T) {
	active := openstack.Server{ID: "s1", Status: "ACTIVE", Addresses: []openstack.ServerAddress{{Addr: "10.0.0.3"}}}
	tests := []struct {
		name           string
		snap           Snapshot
		projectServers int
		named          []openstack.Server // servers Nodes name that are not the cluster's
		unsafe         bool
	}{
		{"empty cluster", Snapshot{}, 0, nil, false},
		{"nodes name servers, the project lists none", Snapshot{NodeServer: map[string]string{"n1": "s1"}}, 0, nil, true},
		{"active server with addresses and no port", Snapshot{Servers: []openstack.Server{active}}, 1, nil, true},
		{"active server with its port", Snapshot{Servers: []openstack.Server{active}, PortsByServer: map[string][]openstack.Port{"s1": {{ID: "p1"}}}}, 1, nil, false},
		{"errored server without port", Snapshot{Servers: []openstack.Server{{ID: "s2", Status: "ERROR"}}}, 1, nil, false},
		// A truncated port list drops a named server from the cluster's (no port on the network): still unsafe.
		{"named active server with no port", Snapshot{NodeServer: map[string]string{"n1": "s1"}}, 1, []openstack.Server{active}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.snap.consistent(tc.projectServers, append(slices.Clone(tc.snap.Servers), tc.named...))
			if (err != nil) != tc.unsafe {
				t.Fatalf("consistent: %v, want unsafe %v", err, tc.unsafe)
			}
		})
	}
}

func TestReadOptionsMatches(t *testing.T) {
	sv := openstack.Server{ID: "s1", Metadata: map[string]string{"cluster": "c1", "role": "worker"}}
	onNodes := []openstack.Port{{ID: "p1", NetworkID: "nodes"}}
	tests := []struct {
		name  string
		o     ReadOptions
		ports []openstack.Port
		named bool // a Node's providerID names the server
		want  bool
	}{
		{"metadata matches", ReadOptions{Metadata: map[string]string{"cluster": "c1"}}, nil, false, true},
		{"metadata differs", ReadOptions{Metadata: map[string]string{"cluster": "c2"}}, onNodes, false, false},
		{"metadata wins over the network", ReadOptions{Metadata: map[string]string{"cluster": "c2"}, NetworkID: "nodes"}, onNodes, false, false},
		{"port on the network", ReadOptions{NetworkID: "nodes"}, onNodes, false, true},
		{"port on another network", ReadOptions{NetworkID: "other"}, onNodes, false, false},
		{"nothing to match by", ReadOptions{}, onNodes, false, false},
		// A providerID is written by whoever may write Nodes in the workload cluster: with a rule set, it
		// never pulls in a server the rule does not match (another cluster's server of the same project).
		{"named, metadata matches", ReadOptions{Metadata: map[string]string{"cluster": "c1"}}, nil, true, true},
		{"named, metadata differs", ReadOptions{Metadata: map[string]string{"cluster": "c2"}}, onNodes, true, false},
		{"named, port on the network", ReadOptions{NetworkID: "nodes"}, onNodes, true, true},
		{"named, port on another network", ReadOptions{NetworkID: "other"}, onNodes, true, false},
		{"named, no port", ReadOptions{NetworkID: "nodes"}, nil, true, false},
		{"named, no rule: the Node's word is taken", ReadOptions{}, nil, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.matches(sv, tc.ports, tc.named); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}
