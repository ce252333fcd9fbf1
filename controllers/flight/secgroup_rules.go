package flight

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbCreateRule is the verb of a security group rule flight creates.
const VerbCreateRule = "CreateSecurityGroupRule"

// ReasonRulesManagedByClusterAPI: the cluster's group misses rules and is CAPO's, which would delete any rule
// flight added: SecurityGroupRulesHealthy says which are missing and where to add them.
const ReasonRulesManagedByClusterAPI = "ManagedByClusterAPI"

// RuleDescription starts the description of every rule flight creates, so that they can be told from
// the rules others made (flight never deletes a rule it did not make).
const RuleDescription = "vitals flight: "

// SecurityGroupRules keeps the rules the cluster needs in its security group:
//   - for each pod CIDR, ingress TCP, UDP and ICMP (ipv6-icmp for IPv6) from the pod CIDR, so that pod
//     traffic routed through the router (not the nodes' own addresses) is let in;
//   - ingress of any protocol from the group itself, for each ethertype of the pod CIDRs and IPv4 (the
//     nodes' network): node-to-node traffic (kubelet, the CNI's overlay, NodePorts between nodes);
//   - egress of any protocol to each pod CIDR and to the group itself (covered by Neutron's default egress
//     rule to anywhere; needed where a hardened project removed it).
//
// A rule counts as present when an existing rule allows at least as much (same direction and ethertype,
// any or the same protocol, all ports, a remote prefix containing ours or none, or the same remote
// group). Missing rules are created, each asked of the remediation policy; no rule is ever deleted.
type SecurityGroupRules struct{}

// Name implements Repair.
func (SecurityGroupRules) Name() string { return "securityGroupRules" }

// Condition implements Repair.
func (SecurityGroupRules) Conditions() []string {
	return []string{v1alpha1.ConditionSecurityGroupRules}
}

// Enabled implements Repair.
func (SecurityGroupRules) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.SecurityGroupRules.IsEnabled()
}

// Detect implements Repair.
func (SecurityGroupRules) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	snap := in.Read.Snapshot
	if snap.Group == nil {
		return &rulesFinding{problem: snap.GroupProblem}
	}
	want := RequiredRules(in.Read.Settings.PodCIDRs, snap.Group.ID)
	return &rulesFinding{group: snap.Group, want: len(want), missing: MissingRules(want, snap.Group.Rules)}
}

// RequiredRules are the rules a cluster with these pod CIDRs needs in group (see SecurityGroupRules).
func RequiredRules(pods []netip.Prefix, group string) []openstack.SecurityGroupRule {
	var out []openstack.SecurityGroupRule
	ethers := map[string]bool{"IPv4": true}
	for _, p := range pods {
		eth, icmp := "IPv4", "icmp"
		if p.Addr().Is6() {
			eth, icmp = "IPv6", "ipv6-icmp"
		}
		ethers[eth] = true
		for _, proto := range []string{"tcp", "udp", icmp} {
			out = append(out, openstack.SecurityGroupRule{Direction: "ingress", EtherType: eth, Protocol: proto, RemoteIPPrefix: p.String(),
				Description: RuleDescription + "pod CIDR " + p.String() + " " + proto})
		}
	}
	for _, eth := range []string{"IPv4", "IPv6"} {
		if ethers[eth] {
			out = append(out, openstack.SecurityGroupRule{Direction: "ingress", EtherType: eth, RemoteGroupID: group,
				Description: RuleDescription + "nodes to nodes " + eth})
		}
	}
	// Egress: what leaves a node for the pods of other nodes and for the other nodes. Neutron gives every new
	// group an egress rule to anywhere, which covers both; a hardened project that removed it still lets the
	// cluster's own traffic out.
	for _, p := range pods {
		eth := "IPv4"
		if p.Addr().Is6() {
			eth = "IPv6"
		}
		out = append(out, openstack.SecurityGroupRule{Direction: "egress", EtherType: eth, RemoteIPPrefix: p.String(),
			Description: RuleDescription + "to pod CIDR " + p.String()})
	}
	for _, eth := range []string{"IPv4", "IPv6"} {
		if ethers[eth] {
			out = append(out, openstack.SecurityGroupRule{Direction: "egress", EtherType: eth, RemoteGroupID: group,
				Description: RuleDescription + "nodes to nodes egress " + eth})
		}
	}
	return out
}

// MissingRules returns the rules of want that no rule of have allows.
func MissingRules(want, have []openstack.SecurityGroupRule) []openstack.SecurityGroupRule {
	var out []openstack.SecurityGroupRule
	for _, w := range want {
		found := false
		for _, h := range have {
			if Covers(h, w) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

// Covers reports whether rule h allows everything rule w allows.
func Covers(h, w openstack.SecurityGroupRule) bool {
	if !strings.EqualFold(orDefault(h.Direction, "ingress"), orDefault(w.Direction, "ingress")) ||
		!strings.EqualFold(orDefault(h.EtherType, "IPv4"), orDefault(w.EtherType, "IPv4")) {
		return false
	}
	if hp := normProto(h.Protocol); hp != "" && hp != normProto(w.Protocol) {
		return false
	}
	if h.PortRangeMin != 0 || h.PortRangeMax != 0 {
		// w allows every port: h must too.
		if !(h.PortRangeMin <= 1 && (h.PortRangeMax == 0 || h.PortRangeMax >= 65535)) {
			return false
		}
	}
	switch {
	case h.RemoteGroupID != "":
		return h.RemoteGroupID == w.RemoteGroupID
	case h.RemoteIPPrefix == "":
		return true // from anywhere
	case w.RemoteGroupID != "":
		return false
	}
	hp, err1 := netip.ParsePrefix(h.RemoteIPPrefix)
	wp, err2 := netip.ParsePrefix(w.RemoteIPPrefix)
	if err1 != nil || err2 != nil {
		return false
	}
	return hp.Bits() <= wp.Bits() && hp.Masked().Contains(wp.Addr())
}

// normProto folds the names and numbers Neutron accepts for one protocol.
func normProto(p string) string {
	switch strings.ToLower(p) {
	case "", "any", "0":
		return ""
	case "6":
		return "tcp"
	case "17":
		return "udp"
	case "1":
		return "icmp"
	case "58", "icmpv6":
		return "ipv6-icmp"
	}
	return strings.ToLower(p)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// rulesFinding is what SecurityGroupRules found.
type rulesFinding struct {
	problem *Problem
	group   *openstack.SecurityGroup
	want    int
	missing []openstack.SecurityGroupRule
}

func (f *rulesFinding) Unhealthy() []string { return nil }

// ruleName names a rule in Events and status lines: "ingress IPv4 tcp from 10.0.0.0/16", "egress IPv4 any to group g".
func ruleName(r openstack.SecurityGroupRule) string {
	from := r.RemoteIPPrefix
	if r.RemoteGroupID != "" {
		from = "group " + r.RemoteGroupID
	}
	dir := "from"
	if strings.EqualFold(r.Direction, "egress") {
		dir = "to"
	}
	return fmt.Sprintf("%s %s %s %s %s", r.Direction, r.EtherType, orDefault(r.Protocol, "any"), dir, from)
}

func (f *rulesFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	if f.problem != nil {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: f.problem.Reason, Message: f.problem.Message}}
	}
	if len(f.missing) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "RulesPresent",
			Message: fmt.Sprintf("security group %s allows every one of the %d rules the cluster needs", f.group.ID, f.want)}}
	}
	if f.group.Description == clusterapi.ManagedSecurityGroupDescription {
		// CAPO deletes every rule of its groups that its spec does not name: a rule added here would be taken
		// away at its next reconcile and added again at the next pass, for ever. Its owner must name them.
		var names []string
		for _, r := range f.missing {
			names = append(names, ruleName(r))
		}
		note := fmt.Sprintf("security group %s is managed by Cluster API's OpenStack provider (CAPO), which deletes the rules its spec does not name: "+
			"the %d rules the cluster misses (%s) are not added here; add them to the OpenStackCluster's spec.managedSecurityGroups.allNodesSecurityGroupRules",
			f.group.ID, len(f.missing), strings.Join(names, "; "))
		env.Warn(ReasonRulesManagedByClusterAPI, VerbCreateRule, note)
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonRulesManagedByClusterAPI, Message: note}}
	}
	var created, failed, held []string
	for _, rule := range f.missing {
		a := remediation.Action{Verb: VerbCreateRule, Kind: "securitygroup", ID: f.group.ID, Name: ruleName(rule), Class: remediation.Safe}
		outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error {
			_, err := env.Cloud.CreateSecurityGroupRule(ctx, f.group.ID, rule)
			return err
		})
		switch outcome {
		case pass.OutcomeDone:
			created = append(created, ruleName(rule))
		case pass.OutcomeFailed:
			failed = append(failed, ruleName(rule)+": "+err.Error())
		default:
			held = append(held, ruleName(rule)+" ("+d.Reason+")")
		}
	}
	if len(failed)+len(held) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "RulesRepaired",
			Message: fmt.Sprintf("security group %s: created %d missing rules: %s", f.group.ID, len(created), strings.Join(created, "; "))}}
	}
	reason := "RulesMissing"
	if len(failed) > 0 {
		reason = "RepairFailed"
	}
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("security group %s misses %d of %d rules the cluster needs; created %d, failed %d [%s], held back %d [%s]",
			f.group.ID, len(f.missing), f.want, len(created), len(failed), strings.Join(failed, "; "), len(held), strings.Join(held, "; "))}}
}
