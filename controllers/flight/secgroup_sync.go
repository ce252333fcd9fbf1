package flight

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// Verbs of the forced security group sync.
const (
	VerbSyncSecurityGroup   = "SyncSecurityGroup"
	VerbSetAddressPairs     = "SetAllowedAddressPairs"
	DefaultSyncMinInterval  = 10 * time.Minute
	securityGroupSyncMarker = "vitals flight: forced security group sync marker (removed at once)"
)

// NodeConditionPodNetworkConnectivity is the node agent's pod network connectivity condition
// (agent/conditions.go): False when pods on the node reach no pod on other nodes, no Service or no
// cluster DNS.
const NodeConditionPodNetworkConnectivity corev1.NodeConditionType = "PodNetworkConnectivity"

// SecurityGroupSync answers the seed's "security group update event missed": a node whose agent says
// pods cannot reach other nodes, Services or DNS (PodNetworkConnectivity=False) while its server is
// ACTIVE. Flight forces the sync the seed describes, at most once per MinInterval per cluster: a marker
// rule is added to the cluster's security group and removed at once (every agent applying the group
// then reconciles it), and the port of each such node re-asserts its allowed address pair for the
// node's PodCIDR. A PodCIDR is only written when it lies in the cluster's spec.podCIDRs: a Node's
// spec is no authority for what a port may send. Each change asks the remediation policy.
type SecurityGroupSync struct{}

// Name implements Repair.
func (SecurityGroupSync) Name() string { return "securityGroupSync" }

// Conditions implements Repair.
func (SecurityGroupSync) Conditions() []string { return []string{v1alpha1.ConditionPodNetworkSynced} }

// Enabled implements Repair.
func (SecurityGroupSync) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.SecurityGroupSync.IsEnabled()
}

// cutOff is a node whose agent reports no pod network connectivity, with its server and port.
type cutOff struct {
	server openstack.Server
	node   *corev1.Node
	// port of the server to re-assert (nil with problem set).
	port *openstack.Port
	// cidrs: the node's PodCIDRs inside the cluster's pod CIDRs; refused: those outside.
	cidrs, refused []netip.Prefix
	problem        string
}

// Detect implements Repair.
func (SecurityGroupSync) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	snap := in.Read.Snapshot
	f := &syncFinding{group: snap.Group, problem: snap.GroupProblem, now: in.Now, minInterval: DefaultSyncMinInterval}
	if d := in.Read.Settings.Repairs.SecurityGroupSync.MinInterval; d != nil && d.Duration > 0 {
		f.minInterval = d.Duration
	}
	if t := in.Read.Prev.LastSecurityGroupSync; t != nil {
		f.last = t.Time
	}
	for _, sv := range snap.Servers {
		node := snap.ServerNode[sv.ID]
		if sv.Status != "ACTIVE" || node == nil {
			continue
		}
		c, ok := nodes.Condition(node, NodeConditionPodNetworkConnectivity)
		if !ok || c.Status != corev1.ConditionFalse {
			continue
		}
		f.cut = append(f.cut, cutOffNode(sv, node, snap.PortsByServer[sv.ID], in.Read.Settings))
	}
	return f
}

// cutOffNode finds the port to re-assert: the server's port on the nodes' network (any of its ports
// without spec.openstack.networkID) that holds one of the Node's InternalIPs, else its only such port.
func cutOffNode(sv openstack.Server, node *corev1.Node, ports []openstack.Port, s *Settings) cutOff {
	c := cutOff{server: sv, node: node}
	for _, p := range node.Spec.PodCIDRs {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			continue
		}
		pfx = pfx.Masked()
		if slices.ContainsFunc(s.PodCIDRs, func(cluster netip.Prefix) bool { return cluster.Bits() <= pfx.Bits() && cluster.Contains(pfx.Addr()) }) {
			c.cidrs = append(c.cidrs, pfx)
		} else {
			c.refused = append(c.refused, pfx)
		}
	}
	var onNet []openstack.Port
	for _, p := range ports {
		if s.Read.NetworkID == "" || p.NetworkID == s.Read.NetworkID {
			onNet = append(onNet, p)
		}
	}
	internal := map[string]bool{}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal[a.Address] = true
		}
	}
	for i := range onNet {
		if slices.ContainsFunc(onNet[i].FixedIPs, func(ip openstack.FixedIP) bool { return internal[ip.IPAddress] }) {
			c.port = &onNet[i]
			break
		}
	}
	if c.port == nil && len(onNet) == 1 {
		c.port = &onNet[0]
	}
	switch {
	case c.port == nil:
		c.problem = fmt.Sprintf("no single port of server %s on the nodes' network holds the Node's address", sv.ID)
	case len(c.cidrs) == 0:
		c.problem = fmt.Sprintf("Node %s has no PodCIDR inside the cluster's spec.podCIDRs", node.Name)
	}
	return c
}

// syncFinding is what SecurityGroupSync found.
type syncFinding struct {
	group       *openstack.SecurityGroup
	problem     *Problem
	cut         []cutOff
	now, last   time.Time
	minInterval time.Duration
}

func (f *syncFinding) Unhealthy() []string {
	ids := make([]string, len(f.cut))
	for i, c := range f.cut {
		ids[i] = c.server.ID
	}
	return ids
}

func (f *syncFinding) names() string {
	out := make([]string, len(f.cut))
	for i, c := range f.cut {
		out[i] = c.node.Name
	}
	return strings.Join(out, ", ")
}

func (f *syncFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	if len(f.cut) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "PodNetworkReachable",
			Message: "no node's agent reports lost pod network connectivity"}}
	}
	lost := fmt.Sprintf("%d nodes report lost pod network connectivity (%s)", len(f.cut), f.names())
	if f.problem != nil {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: f.problem.Reason, Message: lost + "; no sync: " + f.problem.Message}}
	}
	if !f.last.IsZero() && f.now.Before(f.last.Add(f.minInterval)) {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: "SyncRateLimited",
			Message: fmt.Sprintf("%s; the last forced sync was at %s, the next may be at %s (repairs.securityGroupSync.minInterval %s)",
				lost, f.last.UTC().Format(time.RFC3339), f.last.Add(f.minInterval).UTC().Format(time.RFC3339), f.minInterval)}}
	}
	var done, failed, held, skipped []string
	a := remediation.Action{Verb: VerbSyncSecurityGroup, Kind: "securitygroup", ID: f.group.ID, Name: f.group.Name, Class: remediation.Safe}
	outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error { return forceSync(ctx, env.Cloud, f.group) })
	switch outcome {
	case pass.OutcomeDone:
		done = append(done, "security group "+f.group.ID)
	case pass.OutcomeFailed:
		failed = append(failed, "security group "+f.group.ID+": "+err.Error())
	default:
		held = append(held, "security group "+f.group.ID+" ("+d.Reason+")")
	}
	if outcome == pass.OutcomeDone || outcome == pass.OutcomeFailed {
		// The rate limit counts attempts: a failing cloud is not asked every pass.
		env.Read.Status.LastSecurityGroupSync = ptrTime(env.Now)
	}
	for _, c := range f.cut {
		if len(c.refused) > 0 {
			env.Warn("PodCIDROutsideCluster", VerbSetAddressPairs, fmt.Sprintf("Node %s names PodCIDRs %v outside the cluster's spec.podCIDRs: not written to any port", c.node.Name, c.refused))
		}
		if c.problem != "" {
			skipped = append(skipped, c.node.Name+": "+c.problem)
			continue
		}
		if outcome != pass.OutcomeDone {
			continue
		}
		a := remediation.Action{Verb: VerbSetAddressPairs, Kind: "port", ID: c.port.ID, Name: c.port.Name, Class: remediation.Safe}
		outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error {
			// At the revision read: a pair added since (the cloud controller manager's) is never lost; the
			// next pass reads the port again.
			_, err := env.Cloud.SetAllowedAddressPairs(ctx, c.port.ID, c.port.RevisionNumber, withPairs(c.port.AllowedAddressPairs, c.cidrs))
			if openstack.IsConflict(err) {
				return fmt.Errorf("port %s changed since it was read (If-Match revision %d): written again after the next read: %w", c.port.ID, c.port.RevisionNumber, err)
			}
			return err
		})
		switch outcome {
		case pass.OutcomeDone:
			done = append(done, "port "+c.port.ID+" of "+c.node.Name)
		case pass.OutcomeFailed:
			failed = append(failed, "port "+c.port.ID+": "+err.Error())
		default:
			held = append(held, "port "+c.port.ID+" ("+d.Reason+")")
		}
	}
	reason := "SyncForced"
	switch {
	case len(failed) > 0:
		reason = "RepairFailed"
	case len(done) == 0:
		reason = "SyncHeld"
	}
	// The nodes' agents say whether it helped: the condition stays False until they report again.
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("%s; forced sync: done %d [%s], failed %d [%s], held back %d [%s], skipped %d [%s]", lost,
			len(done), strings.Join(done, ", "), len(failed), strings.Join(failed, "; "), len(held), strings.Join(held, "; "),
			len(skipped), strings.Join(skipped, "; "))}}
}

// forceSync adds a marker rule to the group and removes it, and removes markers an earlier sync
// left behind. The marker allows nothing that matters: UDP port 9 (discard) from one address of
// TEST-NET-1 (RFC 5737), which is never routed.
func forceSync(ctx context.Context, cloud openstack.SecurityGroups, g *openstack.SecurityGroup) error {
	var errs []error
	for _, r := range g.Rules {
		if r.Description == securityGroupSyncMarker {
			if err := cloud.DeleteSecurityGroupRule(ctx, r.ID); err != nil && !openstack.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove an earlier marker rule %s: %w", r.ID, err))
			}
		}
	}
	rule := openstack.SecurityGroupRule{Direction: "ingress", EtherType: "IPv4", Protocol: "udp", PortRangeMin: 9, PortRangeMax: 9,
		RemoteIPPrefix: fmt.Sprintf("192.0.2.%d/32", 1+rand.IntN(254)), Description: securityGroupSyncMarker}
	created, err := cloud.CreateSecurityGroupRule(ctx, g.ID, rule)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("add a marker rule to security group %s: %w", g.ID, err))...)
	}
	if err := cloud.DeleteSecurityGroupRule(ctx, created.ID); err != nil {
		errs = append(errs, fmt.Errorf("remove marker rule %s from security group %s (the next sync removes it): %w", created.ID, g.ID, err))
	}
	return errors.Join(errs...)
}

// withPairs returns pairs with an address pair for each of cidrs added where missing (the port's own
// MAC: an empty MAC address).
func withPairs(pairs []openstack.AddressPair, cidrs []netip.Prefix) []openstack.AddressPair {
	out := slices.Clone(pairs)
	for _, c := range cidrs {
		if !slices.ContainsFunc(out, func(p openstack.AddressPair) bool { return p.IPAddress == c.String() }) {
			out = append(out, openstack.AddressPair{IPAddress: c.String()})
		}
	}
	return out
}
