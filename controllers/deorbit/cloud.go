package deorbit

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// volumeDeleting and lbDeleting are the cloud's states of a delete in progress: never deleted again.
func volumeDeleting(status string) bool { return status == "deleting" }
func lbDeleting(status string) bool     { return status == "PENDING_DELETE" }

// sameFamily reports whether one of subnets is of hop's family: a nexthop of a family no known subnet covers
// (a dual-stack cluster's IPv6 routes, with spec.openstack.subnetID its IPv4 subnet) is judged by its
// destination alone, as without subnetID.
func sameFamily(hop netip.Addr, subnets []netip.Prefix) bool {
	for _, s := range subnets {
		if s.Addr().Is4() == hop.Is4() {
			return true
		}
	}
	return false
}

// lbGone: Octavia may still show a deleted load balancer, as DELETED: it is gone, never deleted again.
func lbGone(status string) bool { return status == "DELETED" }

// routes removes the routes of the cluster's router whose destination lies inside the pod CIDRs (and, with
// the nodes' subnets known, whose nexthop lies in one of them), in one update, each asked of the policy first.
func (s *step) routes(ctx context.Context, cloud Cloud) (bool, time.Time) {
	t := s.in.Target
	if t.RouterID == "" {
		return true, time.Time{}
	}
	router, err := cloud.GetRouter(ctx, t.RouterID)
	if err != nil {
		s.fail(fmt.Errorf("read router %s: %w", t.RouterID, err))
		return false, s.now.Add(s.e.backoff(1))
	}
	on := map[string]openstack.Route{}
	for _, rt := range router.Routes {
		dst, err := netip.ParsePrefix(rt.Destination)
		if err != nil || !routes.Inside(dst, t.PodCIDRs) {
			continue
		}
		hop, herr := netip.ParseAddr(rt.NextHop)
		hop = hop.Unmap()
		if t.Subnets != nil && (herr != nil || (sameFamily(hop, t.Subnets) && !routes.Inside(netip.PrefixFrom(hop, hop.BitLen()), t.Subnets))) {
			continue // another cluster's, on a router they share
		}
		if herr == nil && routes.IsProtected(dst.Masked(), hop, t.Protected) {
			continue
		}
		on[rt.Destination+"@"+rt.NextHop] = rt
		s.track(v1alpha1.DeorbitRoute, rt.Destination+"@"+rt.NextHop, rt.Destination, v1alpha1.DeorbitPending)
	}
	var ask []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type != v1alpha1.DeorbitRoute {
			continue
		}
		if _, ok := on[r.ID]; !ok {
			if r.State != v1alpha1.DeorbitKept {
				r.State = v1alpha1.DeorbitGone
			}
			continue
		}
		if (r.State == v1alpha1.DeorbitPending || r.State == v1alpha1.DeorbitDeleting) && s.due(r) {
			ask = append(ask, r)
		}
	}
	var allowed []*v1alpha1.DeorbitResource
	var remove []openstack.Route
	for _, r := range ask {
		if s.issued >= s.in.Settings.Budget {
			break
		}
		a := routeAction(r)
		d := s.in.Policy.Ask(ctx, a)
		switch d.Outcome {
		case remediation.Allowed:
			s.issued++
			allowed = append(allowed, r)
			remove = append(remove, on[r.ID])
		case remediation.DryRun:
			r.State = v1alpha1.DeorbitWouldDelete
			s.e.Metrics.delete(r.Type, OutcomeDryRun)
		default:
			s.e.Metrics.delete(r.Type, OutcomeHeld)
			r.LastError = d.Reason + ": " + d.Message
			if d.Reason == remediation.ReasonExcluded {
				r.State = v1alpha1.DeorbitKept
				continue
			}
			r.NextAttempt = timePtr(maxTime(d.RetryAt, s.now.Add(s.e.poll())))
		}
	}
	if len(remove) > 0 {
		atomic, aerr := cloud.AtomicRoutes(ctx)
		if aerr != nil {
			atomic = false
		}
		actions := make([]remediation.Action, len(allowed))
		for i, r := range allowed {
			actions[i] = routeAction(r)
		}
		res, err := routes.Remover{Routers: cloud}.Remove(fencing.With(ctx, s.in.Policy.Fence(actions...)), t.RouterID, remove, atomic)
		gone := map[openstack.Route]bool{}
		for _, rt := range append(res.Removed, res.Absent...) {
			gone[rt] = true
		}
		for i, r := range allowed {
			r.Attempts++
			a := routeAction(r)
			if err == nil && gone[remove[i]] {
				r.State, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", nil
				s.e.Metrics.delete(r.Type, OutcomeDeleted)
				s.in.Policy.Done(ctx, a, nil)
				continue
			}
			failure := err
			if failure == nil {
				failure = fmt.Errorf("route %s is still on router %s", r.ID, t.RouterID)
			}
			r.LastError = failure.Error()
			s.in.Policy.Done(ctx, a, failure)
			if isFenced(err) {
				// refused at the write (a hold): asked again at the next look
				r.Attempts--
				r.NextAttempt = timePtr(s.now.Add(s.e.poll()))
				s.e.Metrics.delete(r.Type, OutcomeHeld)
				continue
			}
			r.NextAttempt = timePtr(s.now.Add(s.e.backoff(r.Attempts)))
			s.e.Metrics.delete(r.Type, OutcomeFailed)
		}
		if err != nil && !isFenced(err) {
			s.fail(err)
		}
	}
	var left []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		if r := &s.st.Resources[i]; r.Type == v1alpha1.DeorbitRoute && r.State == v1alpha1.DeorbitPending {
			left = append(left, r)
		}
	}
	if len(left) == 0 {
		return true, time.Time{}
	}
	return false, minTime(nextAttempt(left), s.now.Add(s.e.poll()))
}

func routeAction(r *v1alpha1.DeorbitResource) remediation.Action {
	return remediation.Action{Verb: VerbRemoveRoute, Kind: "route", ID: r.ID, Name: r.Name, Removal: true, Teardown: true}
}

// waitForCloud waits until the cloud no longer shows the volumes and load balancers whose claim or
// Service went (one list of the project per kind and look; a GET each when a list fails),
// for at most CloudWaitTimeout; what is left then is the sweep's. The looks' schedule is lookAfter's.
func (s *step) waitForCloud(ctx context.Context, cloud Cloud) (bool, time.Time) {
	if err := s.resolveLoadBalancers(ctx, cloud); err != nil {
		s.fail(err)
	}
	var waiting []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if (r.Type == v1alpha1.DeorbitVolume || r.Type == v1alpha1.DeorbitLoadBalancer) && r.State == v1alpha1.DeorbitDeleting {
			waiting = append(waiting, r)
		}
	}
	s.refresh(ctx, cloud, s.listedAway(ctx, cloud, waiting))
	left := 0
	for _, r := range waiting {
		if r.State == v1alpha1.DeorbitDeleting {
			left++
		}
	}
	elapsed := s.now.Sub(s.st.PhaseStartTime.Time)
	if left == 0 || elapsed >= s.in.Settings.CloudWaitTimeout {
		return true, time.Time{}
	}
	return false, minTime(s.now.Add(s.lookAfter(elapsed, len(waiting), left)), s.st.PhaseStartTime.Add(s.in.Settings.CloudWaitTimeout))
}

// listedAway confirms rs with one list of the project per kind instead of one GET per resource: a list
// of the project (the scoped cloud limits it to the project and reads every page) is complete or an
// error, so a resource it does not show (or shows DELETED) is gone from the project, which is what a
// GET's 404 proves too (a member's credentials get 404 for another project's resource). Listed ones get
// their status. It returns the resources still to ask for one by one: none, or all of them when a list
// fails.
func (s *step) listedAway(ctx context.Context, cloud Cloud, rs []*v1alpha1.DeorbitResource) []*v1alpha1.DeorbitResource {
	if len(rs) == 0 {
		return nil
	}
	status := map[string]string{}
	vols, err := cloud.ListVolumes(ctx, listAll)
	if err != nil {
		return rs
	}
	for _, v := range vols {
		status[v1alpha1.DeorbitVolume+"/"+v.ID] = v.Status
	}
	lbs, err := cloud.ListLoadBalancers(ctx, listAll)
	if err != nil {
		return rs
	}
	for i, l := range lbs {
		if !lbGone(l.ProvisioningStatus) {
			status[v1alpha1.DeorbitLoadBalancer+"/"+l.ID] = l.ProvisioningStatus
		}
		if ccm.OwnsLoadBalancer(s.in.Target.ClusterName, s.in.Target.SubnetID, &lbs[i]) {
			s.trackVIPPort(&lbs[i])
		}
	}
	for _, r := range rs {
		if r.ID == "" {
			continue // known by its name only: resolveLoadBalancers finds it
		}
		if st, ok := status[r.Type+"/"+r.ID]; ok {
			r.Status = st
			continue
		}
		s.goneOrForeign(r)
	}
	return nil
}

// goneOrForeign records r, which the project no longer shows (a list without it, or 404): Gone when deorbit saw
// it in the project or deleted it itself; else Kept, since to a project's own credentials another project's
// resource looks the same (the workload cluster may name a neighbour's volume or load balancer), and deorbit
// never touched it.
func (s *step) goneOrForeign(r *v1alpha1.DeorbitResource) {
	if r.Status == "" && r.Attempts == 0 {
		r.State, r.NextAttempt = v1alpha1.DeorbitKept, nil
		r.LastError = "never seen in the cluster's project: another project's, or gone before deorbit looked; never touched, not reported gone"
		return
	}
	r.State, r.Status, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", "", nil
}

// pollAfter grows the wait between looks with the time already waited: a quarter of it, from minPoll
// (250 ms) up to Poll.
func (s *step) pollAfter(elapsed time.Duration) time.Duration {
	return min(max(elapsed/4, minPoll), s.e.poll())
}

// resolveLoadBalancers finds by name the load balancers known only by their cloud controller manager
// name (a Service without the ID annotation): not found is gone.
func (s *step) resolveLoadBalancers(ctx context.Context, cloud Cloud) error {
	var byName []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type == v1alpha1.DeorbitLoadBalancer && r.ID == "" && r.State != v1alpha1.DeorbitGone && r.State != v1alpha1.DeorbitKept {
			byName = append(byName, r)
		}
	}
	if len(byName) == 0 {
		return nil
	}
	lbs, err := cloud.ListLoadBalancers(ctx, listAll)
	if err != nil {
		return fmt.Errorf("list load balancers: %w", err)
	}
	for _, r := range byName {
		r.State = v1alpha1.DeorbitGone
		for i := range lbs {
			if lbs[i].Name == r.Name {
				if s.find(v1alpha1.DeorbitLoadBalancer, lbs[i].ID) != nil {
					break // already tracked by its ID
				}
				r.ID, r.Status, r.State = lbs[i].ID, lbs[i].ProvisioningStatus, v1alpha1.DeorbitDeleting
				break
			}
		}
	}
	return nil
}

// errLoadBalancerDeleted is a GET's answer of a load balancer Octavia shows DELETED.
var errLoadBalancerDeleted = errors.New("load balancer is DELETED")

// refresh asks the cloud for each resource (in parallel, bounded): 404 is gone; another project's is
// kept (never deorbit's to delete or wait on); else its status is recorded.
func (s *step) refresh(ctx context.Context, cloud Cloud, rs []*v1alpha1.DeorbitResource) {
	type answer struct {
		status string
		err    error
	}
	answers := make([]answer, len(rs))
	idx := make([]int, len(rs))
	for i := range rs {
		idx[i] = i
	}
	parallel(ctx, s.e.workers(), idx, func(ctx context.Context, i int) {
		r := rs[i]
		switch r.Type {
		case v1alpha1.DeorbitVolume:
			v, err := cloud.GetVolume(ctx, r.ID)
			if err == nil {
				answers[i].status = v.Status
			}
			answers[i].err = err
		case v1alpha1.DeorbitLoadBalancer:
			if r.ID == "" {
				return
			}
			lb, err := cloud.GetLoadBalancer(ctx, r.ID)
			if err == nil {
				answers[i].status = lb.ProvisioningStatus
			}
			answers[i].err = err
			if err == nil && lbGone(lb.ProvisioningStatus) {
				answers[i].err = errLoadBalancerDeleted
			}
		}
	})
	for i, r := range rs {
		a := answers[i]
		var refusal *tenancy.Refusal
		switch {
		case a.err == nil:
			r.Status = a.status
		case errors.Is(a.err, errLoadBalancerDeleted):
			r.State, r.Status, r.LastError, r.NextAttempt = v1alpha1.DeorbitGone, "", "", nil
		case openstack.IsNotFound(a.err):
			s.goneOrForeign(r)
		case errors.As(a.err, &refusal):
			r.State, r.LastError = v1alpha1.DeorbitKept, refusal.Message
		default:
			r.LastError = a.err.Error()
			s.fail(a.err)
		}
	}
}

// sweep lists the project's volumes and load balancers, finds what is the cluster's by Cinder CSI's
// metadata and the cloud controller manager's names, and deletes what is not being deleted already;
// it is complete once the cloud shows nothing of the cluster's.
func (s *step) sweep(ctx context.Context, cloud Cloud) (bool, time.Time) {
	cluster := s.in.Target.ClusterName
	vols, err := cloud.ListVolumes(ctx, listAll)
	if err != nil {
		s.fail(fmt.Errorf("list volumes: %w", err))
		return false, s.now.Add(s.e.backoff(1))
	}
	lbs, err := cloud.ListLoadBalancers(ctx, listAll)
	if err != nil {
		s.fail(fmt.Errorf("list load balancers: %w", err))
		return false, s.now.Add(s.e.backoff(1))
	}
	if err := s.resolveLoadBalancers(ctx, cloud); err != nil {
		s.fail(err)
	}
	type seen struct {
		status string
		proven bool
	}
	listed := map[string]seen{}
	for i := range vols {
		v := &vols[i]
		own := ccm.OwnsVolume(cluster, v)
		listed[v1alpha1.DeorbitVolume+"/"+v.ID] = seen{v.Status, own}
		if own {
			r := s.track(v1alpha1.DeorbitVolume, v.ID, v.Name, v1alpha1.DeorbitPending)
			if Keep(v.Metadata) && r.State != v1alpha1.DeorbitGone && r.State != v1alpha1.DeorbitKept {
				r.State, r.LastError = v1alpha1.DeorbitKept, "volume's metadata carries "+v1alpha1.AnnotationKeep+": never deleted"
			}
		}
	}
	for i := range lbs {
		lb := &lbs[i]
		if lbGone(lb.ProvisioningStatus) {
			continue // as not listed: a GET confirms it gone
		}
		own := ccm.OwnsLoadBalancer(cluster, s.in.Target.SubnetID, lb)
		listed[v1alpha1.DeorbitLoadBalancer+"/"+lb.ID] = seen{lb.ProvisioningStatus, own}
		if own {
			s.track(v1alpha1.DeorbitLoadBalancer, lb.ID, lb.Name, v1alpha1.DeorbitPending)
			s.trackVIPPort(lb)
		}
	}
	// What the load balancers and Services leave in Neutron; nothing of it without complete lists.
	netDeletes, netListed := s.network(ctx, cloud, lbs)
	var ds []deletion
	var unlisted []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if r.Type != v1alpha1.DeorbitVolume && r.Type != v1alpha1.DeorbitLoadBalancer {
			continue
		}
		switch r.State {
		case v1alpha1.DeorbitGone, v1alpha1.DeorbitKept:
			continue
		}
		if r.ID == "" {
			continue
		}
		l, ok := listed[r.Type+"/"+r.ID]
		if !ok {
			unlisted = append(unlisted, r)
			continue
		}
		r.Status = l.status
		if !l.proven {
			r.State = v1alpha1.DeorbitUnproven
			r.LastError = s.unprovenWhy(r)
			continue
		}
		if volumeDeleting(l.status) || lbDeleting(l.status) {
			r.State = v1alpha1.DeorbitDeleting
			continue
		}
		// Deleting with a state that is not a delete in progress: deorbit's own accepted delete
		// failed in the cloud (error_deleting, ERROR), or the provisioner never deleted it.
		if r.State == v1alpha1.DeorbitDeleting && r.Attempts > 0 && !cloudFailed(l.status) {
			continue
		}
		if r.State == v1alpha1.DeorbitWouldDelete {
			continue
		}
		if why := s.sweepRefused(ctx); why != "" {
			r.State, r.LastError = v1alpha1.DeorbitUnproven, why
			continue
		}
		r.State = v1alpha1.DeorbitPending
		ds = append(ds, s.cloudDeletion(cloud, r))
	}
	// Resources the lists no longer show (or another project's): ask for each.
	s.refresh(ctx, cloud, unlisted)
	s.deleteAll(ctx, append(ds, netDeletes...))

	var left []*v1alpha1.DeorbitResource
	for i := range s.st.Resources {
		r := &s.st.Resources[i]
		if !cloudType(r.Type) {
			continue
		}
		switch r.State {
		case v1alpha1.DeorbitPending, v1alpha1.DeorbitDeleting:
			left = append(left, r)
		case v1alpha1.DeorbitUnproven:
			// Not proven the cluster's: never touched, and it does not hold the finalizer (the report names it
			// in status.deorbit.notProven); but while the sweep's guard refuses (another VitalsCluster names the
			// same cloud cluster), the teardown waits for it to let go, until the give-up.
			if s.refused != nil && *s.refused != "" {
				left = append(left, r)
			}
		}
	}
	if len(left) == 0 && netListed {
		s.st.NotProven = notProven(s.st.Resources)
		return true, time.Time{}
	}
	return false, minTime(nextAttempt(left), s.now.Add(s.pollAfter(s.now.Sub(s.st.PhaseStartTime.Time))))
}

// cloudType reports whether typ is a cloud resource of the debris report.
func cloudType(typ string) bool {
	switch typ {
	case v1alpha1.DeorbitVolume, v1alpha1.DeorbitLoadBalancer, v1alpha1.DeorbitRoute, v1alpha1.DeorbitPort, v1alpha1.DeorbitFloatingIP:
		return true
	}
	return false
}

func cloudFailed(status string) bool {
	switch strings.ToLower(status) {
	case "error", "error_deleting":
		return true
	}
	return false
}

func (s *step) unprovenWhy(r *v1alpha1.DeorbitResource) string {
	if r.Type == v1alpha1.DeorbitVolume {
		return fmt.Sprintf("volume is in the project but its metadata %s is not %q: never deleted directly", ccm.MetadataCluster, s.in.Target.ClusterName)
	}
	if sn := s.in.Target.SubnetID; sn != "" {
		return fmt.Sprintf("load balancer is in the project but not both named or tagged %s<namespace>_<service> and with its VIP on the cluster's subnet %s: never deleted directly",
			ccm.LoadBalancerPrefix+s.in.Target.ClusterName+"_", sn)
	}
	return fmt.Sprintf("load balancer is in the project but neither its name nor its tags are %s<namespace>_<service>: never deleted directly",
		ccm.LoadBalancerPrefix+s.in.Target.ClusterName+"_")
}

// cloudDeletion is the direct delete of a volume (never with its snapshots: one taken by hand, or kept by a
// VolumeSnapshotContent with deletionPolicy Retain, is not the sweep's to delete) or a load balancer (with its
// listeners and pools); the scoped cloud proves it the project's once more right before.
func (s *step) cloudDeletion(cloud Cloud, r *v1alpha1.DeorbitResource) deletion {
	id := r.ID
	if r.Type == v1alpha1.DeorbitVolume {
		return deletion{r: r, action: remediation.Action{Verb: VerbDeleteVolume, Kind: "volume", ID: id, Name: r.Name, Removal: true},
			del:  func(ctx context.Context) error { return cloud.DeleteVolume(ctx, id, false) },
			gone: openstack.IsNotFound, left: volumeRefused}
	}
	return deletion{r: r, action: remediation.Action{Verb: VerbDeleteLoadBalancer, Kind: "loadbalancer", ID: id, Name: r.Name, Removal: true},
		del:  func(ctx context.Context) error { return cloud.DeleteLoadBalancer(ctx, id, true) },
		gone: openstack.IsNotFound}
}

// volumeRefused names why Cinder refused a volume's delete with 400 (""; another error): most often the
// volume's snapshots, which deorbit never deletes.
func volumeRefused(err error) string {
	if !openstack.IsBadRequest(err) {
		return ""
	}
	return "Cinder refused the delete: the volume still has snapshots (deorbit deletes none; delete them, or the " +
		"VolumeSnapshotContent that retains them, and the volume goes at the next attempt), or it is attached, in a " +
		"group or awaiting a transfer: " + err.Error()
}

// listAll lists the whole project (the scoped cloud limits every list to it).
var listAll = openstack.ListOpts{}
