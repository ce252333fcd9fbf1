package tenancy

import (
	"cmp"
	"fmt"
	"net/netip"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// Default limits of a pod CIDR's width.
const (
	DefaultMaxPodPrefix4 = 12
	DefaultMaxPodPrefix6 = 44
)

// NoPodPrefixLimit as a Limits field lets a cluster claim a pod CIDR of any width (a /0 too).
const NoPodPrefixLimit = -1

// Limits bound the pod CIDRs a cluster may claim.
type Limits struct {
	// MaxPodPrefix4 is the shortest prefix length of an IPv4 pod CIDR (default 12: a /8 is refused;
	// NoPodPrefixLimit: none).
	MaxPodPrefix4 int
	// MaxPodPrefix6 is the shortest prefix length of an IPv6 pod CIDR (default 44; NoPodPrefixLimit: none).
	MaxPodPrefix6 int
}

func (l Limits) withDefaults() Limits {
	if l.MaxPodPrefix4 == 0 {
		l.MaxPodPrefix4 = DefaultMaxPodPrefix4
	}
	if l.MaxPodPrefix6 == 0 {
		l.MaxPodPrefix6 = DefaultMaxPodPrefix6
	}
	return l
}

// podCIDRs parses a cluster's pod CIDRs.
func podCIDRs(c *v1alpha1.VitalsCluster) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(c.Spec.PodCIDRs))
	for i, s := range c.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(string(s))
		if err != nil {
			return nil, fmt.Errorf("spec.podCIDRs[%d]: not a CIDR (expected e.g. 10.100.0.0/16)", i)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// CheckWidth refuses pod CIDRs wider than the limits (PodCIDRTooWide).
func CheckWidth(c *v1alpha1.VitalsCluster, l Limits) error {
	l = l.withDefaults()
	pods, err := podCIDRs(c)
	if err != nil {
		return &Refusal{Reason: ReasonPodCIDRTooWide, Message: err.Error()}
	}
	for i, p := range pods {
		limit := l.MaxPodPrefix4
		if p.Addr().Is6() && !p.Addr().Is4In6() {
			limit = l.MaxPodPrefix6
		}
		if p.Bits() < limit {
			return &Refusal{Reason: ReasonPodCIDRTooWide, Message: fmt.Sprintf(
				"spec.podCIDRs[%d] %s is wider than the operator allows (/%d at most)", i, p, limit)}
		}
	}
	return nil
}

// IndexRouter is the field index of the VitalsClusters by spec.openstack.routerID (RouterIndex) that
// Options.Clusters may hold (Options.ClustersByRouter): the overlap rule compares a cluster with the
// clusters of its router only.
const IndexRouter = "spec.openstack.routerID"

// RouterIndex is the index function of IndexRouter.
func RouterIndex(o client.Object) []string {
	if c, ok := o.(*v1alpha1.VitalsCluster); ok {
		return []string{c.Spec.OpenStack.RouterID}
	}
	return nil
}

// CheckOverlap refuses c when one of its pod CIDRs overlaps a pod CIDR of an older cluster of the same
// project on the same router (PodCIDROverlap): the older cluster keeps its routes. Only clusters whose
// project was proven (status.projectID) to be project count, so that a cluster nobody proved can
// never push out one that works.
func CheckOverlap(c *v1alpha1.VitalsCluster, project string, others []v1alpha1.VitalsCluster) error {
	pods, err := podCIDRs(c)
	if err != nil {
		return &Refusal{Reason: ReasonPodCIDROverlap, Message: err.Error()}
	}
	for i := range others {
		o := &others[i]
		if o.UID == c.UID || o.Namespace == c.Namespace && o.Name == c.Name {
			continue
		}
		if o.Spec.OpenStack.RouterID != c.Spec.OpenStack.RouterID || o.Status.ProjectID != project || !older(o, c) {
			continue
		}
		theirs, err := podCIDRs(o)
		if err != nil {
			continue
		}
		for _, p := range pods {
			for _, q := range theirs {
				if p.Overlaps(q) {
					return &Refusal{Reason: ReasonPodCIDROverlap, Message: fmt.Sprintf(
						"pod CIDR %s overlaps %s of the older cluster %s/%s on router %s",
						p, q, o.Namespace, o.Name, c.Spec.OpenStack.RouterID)}
				}
			}
		}
	}
	return nil
}

// older orders clusters by creation, then namespace/name.
func older(a, b *v1alpha1.VitalsCluster) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) < 0
}
