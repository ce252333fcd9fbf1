package deorbit

import (
	"context"
	"fmt"
	"strings"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// trackVIPPort remembers the VIP port of a load balancer proven the cluster's, while the cloud shows the
// load balancer: once it is gone, what proved the port the cluster's is this record.
func (s *step) trackVIPPort(lb *openstack.LoadBalancer) {
	if lb.VIPPortID != "" {
		s.track(v1alpha1.DeorbitPort, lb.VIPPortID, ccm.VIPPortName(lb.ID), v1alpha1.DeorbitPending)
	}
}

// network finds what the cluster's load balancers and Services leave in Neutron, given the project's
// complete list of load balancers: the VIP ports remembered from its load balancers (still Octavia's VIP
// port of that load balancer), deleted once the load balancer is gone (Octavia deletes them with it
// otherwise), and the floating IPs the cloud controller manager made for its Services (the exact
// description), deleted when on none of the project's ports or on such a VIP port. It returns their
// deletions, or false when a list failed: then nothing of them is deleted.
func (s *step) network(ctx context.Context, cloud Cloud, lbs []openstack.LoadBalancer) ([]deletion, bool) {
	cluster := s.in.Target.ClusterName
	ports, err := cloud.ListPorts(ctx, openstack.ListOpts{DeviceOwner: ccm.OctaviaOwner})
	if err != nil {
		s.fail(fmt.Errorf("list ports: %w", err))
		return nil, false
	}
	fips, err := cloud.ListFloatingIPs(ctx, listAll)
	if err != nil {
		s.fail(fmt.Errorf("list floating IPs: %w", err))
		return nil, false
	}
	alive := map[string]bool{}
	for i := range lbs {
		if !lbGone(lbs[i].ProvisioningStatus) {
			alive[lbs[i].ID] = true
		}
	}
	listedPorts := map[string]*openstack.Port{}
	for i := range ports {
		listedPorts[ports[i].ID] = &ports[i]
	}
	var ds []deletion
	vip := map[string]string{} // VIP port ID -> its load balancer's ID
	for _, r := range s.unsettled(v1alpha1.DeorbitPort, func(id string) bool { return listedPorts[id] != nil }) {
		p := listedPorts[r.ID]
		r.Status = p.Status
		lbID := strings.TrimPrefix(r.Name, ccm.VIPPortPrefix)
		if id, ok := ccm.VIPPortOf(p); !ok || id != lbID {
			r.State = v1alpha1.DeorbitKept
			r.LastError = fmt.Sprintf("port is no longer Octavia's VIP port of load balancer %s (name %q, device %q, owner %q): never deleted",
				lbID, p.Name, p.DeviceID, p.DeviceOwner)
			continue
		}
		vip[r.ID] = lbID
		if alive[lbID] {
			s.withLoadBalancer(r, lbID)
			continue
		}
		id := p.ID
		ds = s.networkDeletion(ctx, ds, r, func(ctx context.Context) error { return cloud.DeletePort(ctx, id) })
	}
	listedFIPs := map[string]*openstack.FloatingIP{}
	for i := range fips {
		f := &fips[i]
		listedFIPs[f.ID] = f
		if ccm.OwnsFloatingIPDescription(cluster, f.Description) {
			s.track(v1alpha1.DeorbitFloatingIP, f.ID, f.Address, v1alpha1.DeorbitPending)
		}
	}
	for _, r := range s.unsettled(v1alpha1.DeorbitFloatingIP, func(id string) bool { return listedFIPs[id] != nil }) {
		f := listedFIPs[r.ID]
		r.Status = f.Status
		switch {
		case !ccm.OwnsFloatingIPDescription(cluster, f.Description):
			r.State = v1alpha1.DeorbitKept
			r.LastError = fmt.Sprintf("floating IP's description %q is no longer the cloud controller manager's for cluster %q: never deleted", f.Description, cluster)
			continue
		case f.PortID != "" && vip[f.PortID] == "":
			// Another cluster's Service may have been given it (spec.loadBalancerIP), or a server.
			r.State = v1alpha1.DeorbitKept
			r.LastError = fmt.Sprintf("floating IP is on port %s, which is not the VIP port of a load balancer of the cluster: never deleted", f.PortID)
			continue
		case f.PortID != "" && s.keptWith(r, vip[f.PortID]):
			continue
		case f.PortID != "" && alive[vip[f.PortID]]:
			// Deleted only once its load balancer is gone: one that an exclusion or a keep marker keeps (decided in
			// this step's deletes) keeps its address.
			r.State, r.LastError = v1alpha1.DeorbitPending, "on the VIP port of load balancer "+vip[f.PortID]+", which is still there: deleted once it is gone"
			continue
		}
		id, port := f.ID, f.PortID
		ds = s.networkDeletion(ctx, ds, r, func(ctx context.Context) error {
			// Read again right before: a cloud controller manager may have just put it on another
			// cluster's load balancer (a Service's spec.loadBalancerIP names a free address).
			cur, err := cloud.GetFloatingIP(ctx, id)
			if err != nil {
				return err
			}
			// one that left the VIP port (deleted beside it in this step: Neutron disassociates it) is still
			// the cluster's; one on another port is not
			if cur.PortID != port && cur.PortID != "" || !ccm.OwnsFloatingIPDescription(cluster, cur.Description) {
				return fmt.Errorf("floating IP %s changed since it was listed (port %q, description %q): not deleted", id, cur.PortID, cur.Description)
			}
			return cloud.DeleteFloatingIP(ctx, id)
		})
	}
	return ds, true
}

// unsettled returns the tracked resources of typ neither gone nor kept that the project's complete list
// still shows (listed); the others are gone.
func (s *step) unsettled(typ string, listed func(id string) bool) []*v1alpha1.DeorbitResource {
	var out []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type != typ || r.State == v1alpha1.DeorbitGone || r.State == v1alpha1.DeorbitKept {
			continue
		}
		if !listed(r.ID) {
			r.State, r.Status, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", "", nil
			continue
		}
		out = append(out, r)
	}
	return out
}

// withLoadBalancer: the VIP port r of load balancer lbID, which the cloud still shows, goes with it
// (Octavia deletes it); it shares the load balancer's fate where deorbit will not delete that one.
func (s *step) withLoadBalancer(r *v1alpha1.DeorbitResource, lbID string) {
	r.State, r.LastError = v1alpha1.DeorbitPending, "its load balancer "+lbID+" is still there (Octavia deletes the port with it)"
	lb := s.find(v1alpha1.DeorbitLoadBalancer, lbID)
	if lb == nil {
		return
	}
	switch lb.State {
	case v1alpha1.DeorbitKept, v1alpha1.DeorbitUnproven, v1alpha1.DeorbitWouldDelete:
		r.State, r.LastError = lb.State, "goes with its load balancer "+lbID+", which is "+lb.State
	}
}

// keptWith: the floating IP r on the VIP port of load balancer lbID shares that load balancer's fate where deorbit
// will not delete it (kept: excluded, or on a keep marker; not proven the cluster's; a dry run's): a kept load
// balancer keeps its address, in the operator's teardown and in the command's alike. It reports whether r's state
// is settled so.
func (s *step) keptWith(r *v1alpha1.DeorbitResource, lbID string) bool {
	lb := s.find(v1alpha1.DeorbitLoadBalancer, lbID)
	if lb == nil {
		return false
	}
	switch lb.State {
	case v1alpha1.DeorbitKept, v1alpha1.DeorbitUnproven:
		r.State, r.LastError = lb.State, "on the VIP port of load balancer "+lbID+", which is "+lb.State+": goes with it, never deleted apart"
		return true
	case v1alpha1.DeorbitWouldDelete:
		r.State, r.LastError = lb.State, "goes with its load balancer "+lbID+", which is "+lb.State
		return true
	}
	return false
}

// networkDeletion appends r's delete to ds unless it is a dry run's already or the sweep may not
// delete; it returns ds.
func (s *step) networkDeletion(ctx context.Context, ds []deletion, r *v1alpha1.DeorbitResource, del func(context.Context) error) []deletion {
	if r.State == v1alpha1.DeorbitWouldDelete {
		return ds
	}
	if why := s.sweepRefused(ctx); why != "" {
		r.State, r.LastError = v1alpha1.DeorbitUnproven, why
		return ds
	}
	// Neutron deletes at once: one still listed after an accepted delete is deleted again when due.
	r.State = v1alpha1.DeorbitPending
	verb, kind := VerbDeletePort, "port"
	if r.Type == v1alpha1.DeorbitFloatingIP {
		verb, kind = VerbDeleteFloatingIP, "floatingip"
	}
	return append(ds, deletion{r: r, action: remediation.Action{Verb: verb, Kind: kind, ID: r.ID, Name: r.Name, Removal: true},
		del: del, gone: openstack.IsNotFound})
}
