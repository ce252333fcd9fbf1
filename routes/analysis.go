package routes

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vitalsproject/vitals/openstack"
)

// Verdict is what the analysis decided for one route.
type Verdict string

const (
	// Foreign: the destination is not inside any pod CIDR; never touched.
	Foreign Verdict = "foreign"
	// Invalid: the destination or nexthop does not parse; never touched.
	Invalid Verdict = "invalid"
	// Protected: on the protected list; never touched.
	Protected Verdict = "protected"
	// Live: the nexthop is an address of a port or server of the project.
	Live Verdict = "live"
	// Suspect: orphaned, but the ownership proof is not complete yet (first sighting, or the second
	// sighting came less than one interval after the first).
	Suspect Verdict = "suspect"
	// Proven: orphaned and proven by two passes; the controller asks the remediation policy, and the
	// verdict becomes one of the four below.
	Proven Verdict = "proven"
	// Remove: the policy allowed the removal; removed in this pass.
	Remove Verdict = "remove"
	// WouldRemove: the policy answered dry-run.
	WouldRemove Verdict = "would-remove"
	// Held: a rule of the remediation policy held the removal back (pause, budget, gate, storm, proof
	// age, exclusion).
	Held Verdict = "held"
	// OverBudget: this pass's own cap on removals (spec.controllers.routegc.budget) is spent.
	OverBudget Verdict = "over-budget"
)

// ProtectedRoute matches routes never to remove. A zero NextHop matches any nexthop.
type ProtectedRoute struct {
	Destination netip.Prefix
	NextHop     netip.Addr
}

func (p ProtectedRoute) matches(dst netip.Prefix, hop netip.Addr) bool {
	return p.Destination == dst && (!p.NextHop.IsValid() || p.NextHop == hop)
}

// SuspectRecord is a route seen orphaned by earlier passes.
type SuspectRecord struct {
	Route     openstack.Route
	FirstSeen time.Time
	// Passes in a row that saw the route orphaned.
	Passes int
}

// Addresses is what the project's ports and servers hold: exact addresses, and prefixes (allowed
// address pairs given as networks). Owner names who holds an address, for reports.
type Addresses struct {
	exact    map[netip.Addr]string
	prefixes []ownedPrefix
}

type ownedPrefix struct {
	p     netip.Prefix
	owner string
}

// NewAddresses returns an empty address set.
func NewAddresses() *Addresses { return &Addresses{exact: map[netip.Addr]string{}} }

// Add records an address or network ("10.0.0.5", "10.0.0.5/32", "10.0.8.0/24") held by owner.
// Values that parse as neither are ignored and reported false.
func (a *Addresses) Add(s, owner string) bool {
	if ip, err := netip.ParseAddr(s); err == nil {
		a.exact[ip.Unmap()] = owner
		return true
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return false
	}
	if p.IsSingleIP() {
		a.exact[p.Addr().Unmap()] = owner
		return true
	}
	a.prefixes = append(a.prefixes, ownedPrefix{p.Masked(), owner})
	return true
}

// Owner returns who holds ip, if anyone.
func (a *Addresses) Owner(ip netip.Addr) (string, bool) {
	if o, ok := a.exact[ip]; ok {
		return o, true
	}
	for _, p := range a.prefixes {
		if p.p.Contains(ip) {
			return p.owner, true
		}
	}
	return "", false
}

// Len is the number of exact addresses and prefixes held.
func (a *Addresses) Len() int { return len(a.exact) + len(a.prefixes) }

// anyIn reports whether an exact address lies inside p.
func (a *Addresses) anyIn(p netip.Prefix) bool {
	for ip := range a.exact {
		if p.Contains(ip) {
			return true
		}
	}
	for _, q := range a.prefixes {
		if q.p.Overlaps(p) {
			return true
		}
	}
	return false
}

// SourceRead reports one complete read of an address source (ports, servers).
type SourceRead struct {
	Name string
	// Items read (ports or servers).
	Items int
}

// Input is everything one pass decides from. It must come from complete, successful reads.
type Input struct {
	Routes    []openstack.Route
	PodCIDRs  []netip.Prefix
	Protected []ProtectedRoute
	Live      *Addresses
	// Sources that filled Live; a source that read nothing aborts a pass that has routes of ours.
	Sources []SourceRead
	// Subnet of the nodes (optional): routes of ours whose nexthop lies in it need at least one
	// live address in it, else the pass aborts.
	Subnet   netip.Prefix
	Suspects []SuspectRecord
	Now      time.Time
	// Interval is the least time between the first and the proving sighting.
	Interval time.Duration
}

// RouteResult is the analysis of one route.
type RouteResult struct {
	Route   openstack.Route
	Verdict Verdict
	// Detail explains the verdict, e.g. the owner of a live nexthop or when the proof completes.
	Detail string
	// FirstSeen orphaned (zero unless orphaned).
	FirstSeen time.Time
	// Passes that saw it orphaned, this one included (0 unless orphaned).
	Passes int
	// Orphaned is set for a protected route whose nexthop is held by nothing.
	Orphaned bool
}

// Counts summarise a pass.
type Counts struct {
	Routes, Ours, Live, Orphaned, Protected, Foreign, Invalid int
	// Suspect and Proven split Orphaned.
	Suspect, Proven int
}

// Candidate is a proven orphaned route: Results[Index], with its proof.
type Candidate struct {
	Index  int
	Record SuspectRecord
}

// Plan is the outcome of Analyze.
type Plan struct {
	// Results, one per route, in the router's order.
	Results []RouteResult
	// Proven are the routes proven orphaned, oldest proof first: the removals to ask the policy for.
	Proven []Candidate
	// Suspects to remember for the next pass: the orphaned routes not proven yet (the controller adds
	// the proven ones it does not remove).
	Suspects []SuspectRecord
	Counts   Counts
}

// UnsafeError aborts a pass: the reads cannot tell live nexthops from dead ones.
type UnsafeError struct{ Reason string }

func (e *UnsafeError) Error() string { return "refusing to act: " + e.Reason }

// Analyze classifies every route and lists the proven orphans. It changes nothing and decides no
// removal: the remediation policy does. It returns an
// *UnsafeError when the reads look incomplete (a source read nothing, or no live address lies in
// the nodes' subnet while routes of ours point into it): then nothing may be removed.
func Analyze(in Input) (Plan, error) {
	var plan Plan
	prev := make(map[openstack.Route]SuspectRecord, len(in.Suspects))
	for _, s := range in.Suspects {
		prev[s.Route] = s
	}
	live := in.Live
	if live == nil {
		live = NewAddresses()
	}
	var oursHopsInSubnet bool
	for _, r := range in.Routes {
		res := RouteResult{Route: r}
		plan.Counts.Routes++
		dst, derr := netip.ParsePrefix(r.Destination)
		hop, herr := netip.ParseAddr(r.NextHop)
		switch {
		case derr != nil || herr != nil:
			res.Verdict, res.Detail = Invalid, "destination or nexthop does not parse"
			plan.Counts.Invalid++
		case !Inside(dst, in.PodCIDRs):
			res.Verdict, res.Detail = Foreign, "destination outside the pod CIDRs"
			plan.Counts.Foreign++
		case IsProtected(dst.Masked(), hop.Unmap(), in.Protected):
			plan.Counts.Ours++
			plan.Counts.Protected++
			res.Verdict, res.Detail = Protected, "on the protected list"
			if _, ok := live.Owner(hop.Unmap()); !ok {
				res.Orphaned = true
				res.Detail = "on the protected list (nexthop held by no port or server)"
			}
		default:
			plan.Counts.Ours++
			hop = hop.Unmap()
			if in.Subnet.IsValid() && in.Subnet.Contains(hop) {
				oursHopsInSubnet = true
			}
			if owner, ok := live.Owner(hop); ok {
				res.Verdict, res.Detail = Live, "nexthop held by "+owner
				plan.Counts.Live++
				break
			}
			plan.Counts.Orphaned++
			rec, seen := prev[r]
			if !seen {
				rec = SuspectRecord{Route: r, FirstSeen: in.Now}
			}
			rec.Passes++
			res.FirstSeen, res.Passes = rec.FirstSeen, rec.Passes
			due := rec.FirstSeen.Add(in.Interval)
			if rec.Passes >= 2 && !in.Now.Before(due) {
				res.Verdict = Proven
				res.Detail = fmt.Sprintf("orphaned since %s (%d passes)", rec.FirstSeen.UTC().Format(time.RFC3339), rec.Passes)
				plan.Counts.Proven++
				plan.Proven = append(plan.Proven, Candidate{Index: len(plan.Results), Record: rec})
			} else {
				res.Verdict = Suspect
				if rec.Passes < 2 {
					res.Detail = fmt.Sprintf("nexthop held by no port or server; first seen now, proof due from %s", due.UTC().Format(time.RFC3339))
				} else {
					res.Detail = fmt.Sprintf("nexthop held by no port or server; proof due from %s", due.UTC().Format(time.RFC3339))
				}
				plan.Counts.Suspect++
				plan.Suspects = append(plan.Suspects, rec)
			}
		}
		plan.Results = append(plan.Results, res)
	}
	if plan.Counts.Ours > 0 {
		for _, s := range in.Sources {
			if s.Items == 0 {
				return plan, &UnsafeError{Reason: fmt.Sprintf("%s listed nothing in the project while the router carries %d routes into the pod CIDRs", s.Name, plan.Counts.Ours)}
			}
		}
		if oursHopsInSubnet && !live.anyIn(in.Subnet) {
			return plan, &UnsafeError{Reason: fmt.Sprintf("no port or server address lies in subnet %s while routes point into it", in.Subnet)}
		}
	}
	// Oldest proof first, then by destination: a deterministic order for the budgets.
	slices.SortStableFunc(plan.Proven, func(a, b Candidate) int {
		if c := a.Record.FirstSeen.Compare(b.Record.FirstSeen); c != 0 {
			return c
		}
		return cmp.Compare(a.Record.Route.Destination, b.Record.Route.Destination)
	})
	slices.SortStableFunc(plan.Suspects, func(a, b SuspectRecord) int {
		return cmp.Or(cmp.Compare(a.Route.Destination, b.Route.Destination), cmp.Compare(a.Route.NextHop, b.Route.NextHop))
	})
	return plan, nil
}

// Inside reports whether dst lies entirely inside one of the pod CIDRs.
func Inside(dst netip.Prefix, pods []netip.Prefix) bool {
	dst = dst.Masked()
	for _, p := range pods {
		if p.Addr().Is4() == dst.Addr().Is4() && p.Bits() <= dst.Bits() && p.Contains(dst.Addr()) {
			return true
		}
	}
	return false
}

// IsProtected reports whether the route dst via hop is on the protected list: never removed, by routegc
// or by deorbit.
func IsProtected(dst netip.Prefix, hop netip.Addr, list []ProtectedRoute) bool {
	for _, p := range list {
		if p.matches(dst, hop) {
			return true
		}
	}
	return false
}

// ParsePrefixes parses CIDRs, naming the bad one.
func ParsePrefixes(ss []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("pod CIDR %q: expected a network such as 10.100.0.0/16: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
