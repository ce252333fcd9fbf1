package routes

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/openstack"
)

// Duplicate is one destination with several routes.
type Duplicate struct {
	Destination string
	NextHops    []string
	// Stale routes of it: nexthop of no live port or server, and not protected.
	Stale []openstack.Route
}

// NodePlan is what PlanNodes found.
type NodePlan struct {
	Routes     int
	Duplicates []Duplicate
	// Missing routes to re-add: a Node's pod CIDR to its InternalIP.
	Missing []openstack.Route
	// Conflicts and Unroutable explain Node pod CIDRs that are not re-added.
	Conflicts, Unroutable []string
	// Err is set when the analysis refused the read: nothing is changed.
	Err error
}

// PlanNodes analyses the router's routes against the Nodes (pure; table-tested): duplicates (one
// destination with several nexthops, the stale ones among them), and each Node's pod CIDR without its route
// to the Node's InternalIP (missing, held by another live nexthop, or unroutable).
func PlanNodes(routes []openstack.Route, pods []netip.Prefix, protected []ProtectedRoute, live *Addresses, nodes []corev1.Node) NodePlan {
	plan := NodePlan{Routes: len(routes)}
	an, err := Analyze(Input{Routes: routes, PodCIDRs: pods, Protected: protected, Live: live})
	if err != nil {
		plan.Err = err
		return plan
	}
	byDst := map[string][]RouteResult{}
	var dsts []string
	for _, res := range an.Results {
		if res.Verdict == Foreign || res.Verdict == Invalid {
			continue
		}
		dst := netip.MustParsePrefix(res.Route.Destination).Masked().String()
		if _, ok := byDst[dst]; !ok {
			dsts = append(dsts, dst)
		}
		byDst[dst] = append(byDst[dst], res)
	}
	slices.Sort(dsts)
	for _, dst := range dsts {
		rs := byDst[dst]
		if len(rs) < 2 {
			continue
		}
		d := Duplicate{Destination: dst}
		for _, res := range rs {
			d.NextHops = append(d.NextHops, res.Route.NextHop)
			if res.Verdict == Suspect || res.Verdict == Proven {
				d.Stale = append(d.Stale, res.Route)
			}
		}
		plan.Duplicates = append(plan.Duplicates, d)
	}
	for _, n := range nodes {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil || !slices.ContainsFunc(pods, func(pod netip.Prefix) bool {
				return pod.Addr().Is4() == p.Addr().Is4() && pod.Bits() <= p.Bits() && pod.Contains(p.Addr())
			}) {
				continue // not the cluster's to route
			}
			p = p.Masked()
			ip, ok := internalIP(&n, p.Addr().Is4())
			if !ok {
				plan.Unroutable = append(plan.Unroutable, fmt.Sprintf("node %s has no %s InternalIP for pod CIDR %s", n.Name, family(p), p))
				continue
			}
			want := openstack.Route{Destination: p.String(), NextHop: ip.String()}
			present, taken := false, ""
			for _, res := range byDst[p.String()] {
				hop, err := netip.ParseAddr(res.Route.NextHop)
				if err == nil && hop.Unmap() == ip {
					present = true
				} else if res.Verdict == Live || res.Verdict == Protected {
					taken = res.Route.NextHop
				}
			}
			switch {
			case present:
			case taken != "":
				plan.Conflicts = append(plan.Conflicts, fmt.Sprintf("node %s's pod CIDR %s is routed to %s, a live address, not to its InternalIP %s", n.Name, p, taken, ip))
			default:
				if _, ok := live.Owner(ip); !ok {
					plan.Unroutable = append(plan.Unroutable, fmt.Sprintf("node %s's InternalIP %s is no address of a port or server of the project", n.Name, ip))
					continue
				}
				plan.Missing = append(plan.Missing, want)
			}
		}
	}
	return plan
}

func internalIP(n *corev1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Unmap().Is4() == v4 {
			return ip.Unmap(), true
		}
	}
	return netip.Addr{}, false
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}
