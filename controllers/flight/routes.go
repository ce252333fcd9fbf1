package flight

import (
	"context"
	"fmt"
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
	"github.com/vitalsproject/vitals/routes"
)

// HeadroomPercent is the share of the route limit at which RouteHeadroom turns False.
const HeadroomPercent = 80

// Routes looks after the pod routes of the cluster's router, with the routes domain's analysis
// (package routes: which routes are the cluster's, which nexthops are alive, which are protected):
//   - duplicates, one destination with several nexthops, are reported (condition and Event): the
//     device side of the router (e.g. an ASR) may keep the first and need a resync. Of a duplicate, the
//     routes whose nexthop is no live port or server are stale: when the route collector runs for the
//     cluster it removes them (one concept, one place: an orphaned route is routegc's); when it is
//     disabled, flight removes them itself, with the same action and proof age;
//   - a Node's pod CIDR without a route to the Node's InternalIP is re-added (add_extraroutes, or an
//     If-Match update), unless another live nexthop holds the destination (a conflict is reported,
//     never overwritten) or the InternalIP is no address of the project (the route collector would
//     remove the route again); never beyond the route limit;
//   - RouteHeadroom turns False when the router holds HeadroomPercent of its route limit.
type Routes struct{}

// Name implements Repair.
func (Routes) Name() string { return "routes" }

// Conditions implements Repair.
func (Routes) Conditions() []string {
	return []string{v1alpha1.ConditionPodRoutes, v1alpha1.ConditionRouteHeadroom}
}

// Enabled implements Repair.
func (Routes) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.Routes.IsEnabled()
}

// Detect implements Repair.
func (Routes) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	protected, err := routes.ProtectedRoutes(in.Cluster.Spec.Controllers.RouteGC.ProtectedRoutes)
	if err != nil {
		return &routesFinding{plan: routes.NodePlan{Err: err}}
	}
	snap := in.Read.Snapshot
	f := &routesFinding{plan: routes.PlanNodes(snap.Router.Routes, in.Read.Settings.PodCIDRs, protected, snap.Live, snap.Nodes)}
	if !in.Read.Settings.RouteGC {
		// Flight removes stale routes itself: keep when each was first seen.
		first := map[openstack.Route]time.Time{}
		for _, s := range in.Read.Prev.StaleRoutes {
			first[openstack.Route{Destination: s.Destination, NextHop: s.NextHop}] = s.FirstSeen.Time
		}
		for _, d := range f.plan.Duplicates {
			for _, rt := range d.Stale {
				t, ok := first[rt]
				if !ok {
					t = in.Now
				}
				f.stale = append(f.stale, routes.SuspectRecord{Route: rt, FirstSeen: t})
			}
		}
	}
	return f
}

// routesFinding is what Routes found.
type routesFinding struct {
	plan  routes.NodePlan
	stale []routes.SuspectRecord // to remove, when flight removes stale routes
}

func (f *routesFinding) Unhealthy() []string { return nil }

func (f *routesFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	plan := f.plan
	if plan.Err != nil {
		msg := "routes not analysed: " + plan.Err.Error()
		return []pass.Report{{Status: metav1.ConditionUnknown, Reason: "AnalysisRefused", Message: msg},
			{Type: v1alpha1.ConditionRouteHeadroom, Status: metav1.ConditionUnknown, Reason: "AnalysisRefused", Message: msg}}
	}
	routerID := env.Read.Snapshot.Router.ID
	atomic, err := env.Cloud.AtomicRoutes(ctx)
	if err != nil {
		atomic = false // the If-Match path is safe on every Neutron with extraroute
	}
	rm := routes.Remover{Routers: env.Cloud}
	var problems, done []string
	count := plan.Routes
	// Stale duplicates: removed here when the route collector is off for the cluster, else left to it.
	env.Read.Status.StaleRoutes = nil
	gone := map[openstack.Route]bool{}
	if len(f.stale) > 0 {
		removed, left := f.removeStale(ctx, env, rm, routerID, atomic)
		for _, rt := range removed {
			gone[rt] = true
		}
		count -= len(removed)
		if len(removed) > 0 {
			done = append(done, fmt.Sprintf("removed %d stale routes (the router's device side may need a resync to drop them too)", len(removed)))
		}
		for _, s := range left {
			env.Read.Status.StaleRoutes = append(env.Read.Status.StaleRoutes, v1alpha1.RouteSighting{Destination: s.Route.Destination, NextHop: s.Route.NextHop, FirstSeen: metav1.NewTime(s.FirstSeen)})
		}
	} else if env.Read.Settings.RouteGC && slices.ContainsFunc(plan.Duplicates, func(d routes.Duplicate) bool { return len(d.Stale) > 0 }) {
		done = append(done, "stale routes are left to the route collector (routegc), which removes them once proven")
	}
	// Duplicates: reported while more than one route to the destination is left.
	var ds []string
	dup := map[string][]string{} // destination -> nexthops left
	for _, d := range plan.Duplicates {
		var left []string
		for _, hop := range d.NextHops {
			if !gone[openstack.Route{Destination: d.Destination, NextHop: hop}] {
				left = append(left, hop)
			}
		}
		if len(left) > 1 {
			ds = append(ds, d.Destination+" via "+strings.Join(left, ", "))
			dup[canonicalPrefix(d.Destination)] = left
		}
	}
	if failed := markDuplicateNodes(ctx, env, dup); len(failed) > 0 {
		problems = append(problems, "Node conditions not written: "+strings.Join(failed, "; "))
	}
	if len(ds) > 0 {
		note := fmt.Sprintf("%d destinations with several nexthops: %s; the router's device side may keep a stale one and need a resync", len(ds), strings.Join(ds, "; "))
		env.Warn("DuplicateRoutes", "DetectRoutes", note)
		problems = append(problems, note)
	}
	// Missing routes, within the route limit.
	if len(plan.Missing) > 0 {
		added, skipped := f.addMissing(ctx, env, rm, routerID, atomic, env.Read.Settings.MaxRoutes-count)
		count += added
		if added > 0 {
			done = append(done, fmt.Sprintf("re-added %d missing routes", added))
		}
		if len(skipped) > 0 {
			problems = append(problems, fmt.Sprintf("%d missing routes not added: %s", len(skipped), strings.Join(skipped, "; ")))
		}
	}
	problems = append(problems, plan.Conflicts...)
	problems = append(problems, plan.Unroutable...)
	reports := []pass.Report{RouteHeadroom(count, env.Read.Settings.MaxRoutes)}
	if len(problems) == 0 {
		msg := fmt.Sprintf("%d routes; every Node's pod CIDR has one route, to the Node", count)
		if len(done) > 0 {
			msg += "; " + strings.Join(done, "; ")
		}
		return append([]pass.Report{{Status: metav1.ConditionTrue, Reason: "RoutesHealthy", Message: msg}}, reports...)
	}
	reason := "RoutesUnhealthy"
	switch {
	case len(ds) > 0:
		reason = "DuplicateRoutes"
	case len(plan.Missing) > 0:
		reason = "MissingRoutes"
	case len(plan.Conflicts) > 0:
		reason = "RouteConflict"
	}
	msg := strings.Join(problems, "; ")
	if len(done) > 0 {
		msg += "; " + strings.Join(done, "; ")
	}
	return append([]pass.Report{{Status: metav1.ConditionFalse, Reason: reason, Message: msg}}, reports...)
}

// removeStale asks for each stale route and removes the allowed ones in one change; it returns the
// routes gone and the records to keep for the next pass.
func (f *routesFinding) removeStale(ctx context.Context, env *pass.Env[*State], rm routes.Remover, routerID string, atomic bool) ([]openstack.Route, []routes.SuspectRecord) {
	var allowed []openstack.Route
	var actions []remediation.Action
	var left []routes.SuspectRecord
	for _, rec := range f.stale {
		if d := env.Ask(ctx, routes.RemoveAction(rec.Route, rec.FirstSeen)); d.Outcome != remediation.Allowed {
			left = append(left, rec)
			continue
		}
		allowed = append(allowed, rec.Route)
		actions = append(actions, routes.RemoveAction(rec.Route, rec.FirstSeen))
	}
	if len(allowed) == 0 {
		return nil, left
	}
	res, err := rm.Remove(env.Fenced(ctx, actions...), routerID, allowed, atomic)
	var out []openstack.Route
	gone := map[openstack.Route]bool{}
	for _, rt := range append(res.Removed, res.Absent...) {
		gone[rt] = true
	}
	for _, rec := range f.stale {
		if !slices.Contains(allowed, rec.Route) {
			continue
		}
		var failure error
		if err != nil || !gone[rec.Route] {
			failure = err
			if failure == nil {
				failure = fmt.Errorf("route %s via %s is still on router %s", rec.Route.Destination, rec.Route.NextHop, routerID)
			}
			left = append(left, rec)
		}
		env.Done(ctx, routes.RemoveAction(rec.Route, rec.FirstSeen), failure)
		if failure == nil {
			out = append(out, rec.Route)
		}
	}
	return out, left
}

// addMissing asks for each missing route (at most room of them) and adds the allowed ones in one change.
func (f *routesFinding) addMissing(ctx context.Context, env *pass.Env[*State], rm routes.Remover, routerID string, atomic bool, room int) (int, []string) {
	var allowed []openstack.Route
	var actions []remediation.Action
	var skipped []string
	for _, rt := range f.plan.Missing {
		if len(allowed) >= room {
			skipped = append(skipped, fmt.Sprintf("%s via %s (the router is at its limit of %d routes)", rt.Destination, rt.NextHop, env.Read.Settings.MaxRoutes))
			continue
		}
		d := env.Ask(ctx, routes.AddAction(rt))
		if d.Outcome != remediation.Allowed {
			skipped = append(skipped, fmt.Sprintf("%s via %s (%s)", rt.Destination, rt.NextHop, d.Reason))
			continue
		}
		allowed = append(allowed, rt)
		actions = append(actions, routes.AddAction(rt))
	}
	if len(allowed) == 0 {
		return 0, skipped
	}
	added, err := rm.Add(env.Fenced(ctx, actions...), routerID, allowed, atomic)
	for _, rt := range allowed {
		env.Done(ctx, routes.AddAction(rt), err)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s via %s: %v", rt.Destination, rt.NextHop, err))
		}
	}
	return len(added), skipped
}

// RouteHeadroom reports a router's use of its route limit: the RouteHeadroom condition, False from
// HeadroomPercent of it (vitals doctor reports the same).
func RouteHeadroom(routes, limit int) pass.Report {
	if limit <= 0 {
		return pass.Report{Type: v1alpha1.ConditionRouteHeadroom, Status: metav1.ConditionUnknown, Reason: "NoLimit", Message: "no route limit set"}
	}
	msg := fmt.Sprintf("%d of %d routes (%d%%)", routes, limit, routes*100/limit)
	if routes*100 >= limit*HeadroomPercent {
		return pass.Report{Type: v1alpha1.ConditionRouteHeadroom, Status: metav1.ConditionFalse, Reason: "NearRouteLimit",
			Message: msg + fmt.Sprintf("; at %d%% of the limit new nodes may get no route (raise max_routes or spec.controllers.flight.maxRoutes)", HeadroomPercent)}
	}
	return pass.Report{Type: v1alpha1.ConditionRouteHeadroom, Status: metav1.ConditionTrue, Reason: "Headroom", Message: msg}
}

// VerbSetNodeCondition is the verb of a Node condition write.
const VerbSetNodeCondition = nodes.VerbSetNodeCondition

// markDuplicateNodes puts the PodRouteDuplicate condition on each Node whose pod CIDR has several routes
// left (dup: destination -> nexthops), and turns it False on a Node that had it True and has one route
// again. A Node already as wanted is not written (steady state writes nothing). Each write is a safe action
// asked of the policy. It returns the writes that failed.
func markDuplicateNodes(ctx context.Context, env *pass.Env[*State], dup map[string][]string) []string {
	if env.Workload == nil {
		return nil
	}
	var failed []string
	for i := range env.Read.Snapshot.Nodes {
		n := &env.Read.Snapshot.Nodes[i]
		cond := corev1.NodeCondition{Type: nodes.ConditionPodRouteDuplicate, Status: corev1.ConditionFalse, Reason: "OneRoute",
			Message: "the cluster's router holds one route to this Node's pod CIDR"}
		for _, cidr := range podCIDRsOf(n) {
			if hops, ok := dup[canonicalPrefix(cidr)]; ok {
				cond.Status, cond.Reason = corev1.ConditionTrue, "DuplicateRoutes"
				cond.Message = fmt.Sprintf("the cluster's router holds %d routes to this Node's pod CIDR %s (via %s): the router's device side may keep a stale one and need a resync",
					len(hops), cidr, strings.Join(hops, ", "))
				break
			}
		}
		if !nodes.NeedsCondition(n, cond) {
			continue
		}
		a := remediation.Action{Verb: VerbSetNodeCondition, Kind: "node", ID: n.Name, Name: string(cond.Type) + "=" + string(cond.Status), Class: remediation.Safe}
		outcome, _, err := env.Act(ctx, a, func(ctx context.Context) error {
			_, err := nodes.SetCondition(ctx, env.Workload.Client(), n, cond, env.Now)
			return err
		})
		if outcome == pass.OutcomeFailed {
			failed = append(failed, err.Error())
		}
	}
	return failed
}

// podCIDRsOf are the Node's pod CIDRs (spec.podCIDRs, else spec.podCIDR).
func podCIDRsOf(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

// canonicalPrefix is p masked, as a string (p itself when it does not parse).
func canonicalPrefix(p string) string {
	if pfx, err := netip.ParsePrefix(p); err == nil {
		return pfx.Masked().String()
	}
	return p
}
