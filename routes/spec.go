package routes

import (
	"fmt"
	"net/netip"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// ProtectedRoutes parses spec.controllers.routegc.protectedRoutes, naming the bad entry. The list protects
// routes from every removal: the route collector's, flight's and deorbit's.
func ProtectedRoutes(list []v1alpha1.ProtectedRoute) ([]ProtectedRoute, error) {
	var out []ProtectedRoute
	for i, p := range list {
		dst, err := netip.ParsePrefix(string(p.Destination))
		if err != nil {
			return nil, fmt.Errorf("spec.controllers.routegc.protectedRoutes[%d].destination: %w", i, err)
		}
		pr := ProtectedRoute{Destination: dst.Masked()}
		if p.NextHop != "" {
			if pr.NextHop, err = netip.ParseAddr(p.NextHop); err != nil {
				return nil, fmt.Errorf("spec.controllers.routegc.protectedRoutes[%d].nexthop: %w", i, err)
			}
			pr.NextHop = pr.NextHop.Unmap()
		}
		out = append(out, pr)
	}
	return out, nil
}

// PodCIDRs parses spec.podCIDRs, naming the bad entry.
func PodCIDRs(spec *v1alpha1.ClusterSpec) ([]netip.Prefix, error) {
	cidrs := make([]string, len(spec.PodCIDRs))
	for i, p := range spec.PodCIDRs {
		cidrs[i] = string(p)
	}
	pods, err := ParsePrefixes(cidrs)
	if err != nil {
		return nil, fmt.Errorf("spec.podCIDRs: %w", err)
	}
	return pods, nil
}
