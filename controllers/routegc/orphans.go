package routegc

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
)

// Orphans removes the routes of the cluster's router whose destination lies in a pod CIDR and whose
// nexthop no port or server of the project holds, once two passes at least one interval apart saw them so
// (package routes proves it), each removal asked of the remediation policy. A first sighting and an
// orphaned protected route are kept with a status line of their own.
type Orphans struct {
	m        *Metrics
	attempts int
}

// Name implements pass.Repair.
func (Orphans) Name() string { return "orphanedRoutes" }

// Conditions implements pass.Repair.
func (Orphans) Conditions() []string { return []string{v1alpha1.ConditionRoutesHealthy} }

// Enabled implements pass.Repair: the repair is the controller.
func (Orphans) Enabled(*v1alpha1.VitalsCluster) bool { return true }

// Detect implements pass.Repair: the read's analysis.
func (o Orphans) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	plan := in.Read.Plan
	plan.Results = append([]routes.RouteResult(nil), plan.Results...)
	return &orphans{Orphans: o, plan: plan}
}

type orphans struct {
	Orphans
	plan routes.Plan
}

// Unhealthy implements pass.Finding: every orphaned route, proven or not.
func (f *orphans) Unhealthy() []string {
	var out []string
	for _, res := range f.plan.Results {
		if res.Verdict == routes.Suspect || res.Verdict == routes.Proven {
			out = append(out, routes.ActionID(res.Route))
		}
	}
	return out
}

// Repair implements pass.Finding.
func (f *orphans) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	st, plan := env.Read, f.plan
	key := client.ObjectKeyFromObject(env.Cluster).String()
	for _, res := range plan.Results {
		switch {
		case res.Verdict == routes.Suspect && res.Passes == 1:
			f.keep(env, res.Route, res.FirstSeen, remediation.ReasonProofPending, res.Detail)
		case res.Verdict == routes.Protected && res.Orphaned:
			f.keep(env, res.Route, time.Time{}, "Protected", res.Detail)
		}
	}
	// Every proven orphan is asked for, oldest proof first; the pass's cap holds the rest.
	keepRecs := append([]routes.SuspectRecord(nil), plan.Suspects...)
	var allowed []routes.Candidate
	var held, dry, over int
	for _, cand := range plan.Proven {
		res := &plan.Results[cand.Index]
		d := env.Ask(ctx, routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen))
		switch {
		case d.Outcome == remediation.Allowed:
			res.Verdict = routes.Remove
			allowed = append(allowed, cand)
			continue
		case d.Outcome == remediation.DryRun:
			res.Verdict = routes.WouldRemove
			dry++
		case d.Reason == pass.ReasonPassBudget:
			res.Verdict = routes.OverBudget
			over++
			f.m.Skipped.WithLabelValues(key, pass.ReasonPassBudget).Inc()
		default:
			res.Verdict = routes.Held
			held++
		}
		res.Detail = fmt.Sprintf("%s; %s: %s", res.Detail, d.Reason, d.Message)
		// Not removed: the proof stands for the next pass.
		keepRecs = append(keepRecs, cand.Record)
	}
	for _, v := range allVerdicts {
		f.m.Routes.WithLabelValues(key, string(v)).Set(0)
	}
	for _, res := range plan.Results {
		f.m.Routes.WithLabelValues(key, string(res.Verdict)).Inc()
	}
	removed, failed, err := f.remove(ctx, env, allowed)
	keepRecs = append(keepRecs, failed...)
	st.Status.Counts = counts(plan.Counts)
	st.Status.RemovedTotal += int64(len(removed))
	st.Status.Suspects = suspects(keepRecs)
	c := plan.Counts
	if err != nil {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: "RemovalFailed", Message: err.Error()}}
	}
	if left := c.Orphaned - len(removed); left > 0 {
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: "OrphanedRoutes", Message: orphanedLeft(c, left, held, dry, over)}}
	}
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: "NoOrphanedRoutes", Message: fmt.Sprintf("%d routes, %d in the pod CIDRs, none orphaned left", c.Routes, c.Ours)}}
}

// remove removes the allowed routes in one update and reports each to the policy; it returns the routes
// removed and the records of those still there (their proof stands).
func (f *orphans) remove(ctx context.Context, env *pass.Env[*State], allowed []routes.Candidate) ([]openstack.Route, []routes.SuspectRecord, error) {
	if len(allowed) == 0 {
		return nil, nil, nil
	}
	log := logf.FromContext(ctx)
	key := client.ObjectKeyFromObject(env.Cluster).String()
	routerID := env.Scope.Router.ID
	rts := make([]openstack.Route, len(allowed))
	for i, cand := range allowed {
		rts[i] = cand.Record.Route
	}
	atomic, err := env.Cloud.AtomicRoutes(ctx)
	if err != nil {
		// Without knowing, take the If-Match path: it is safe on every Neutron with extraroute.
		log.V(1).Info("cannot tell whether extraroute-atomic is offered; using an If-Match update", "err", err.Error())
		atomic = false
	}
	actions := make([]remediation.Action, len(allowed))
	for i, cand := range allowed {
		actions[i] = routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen)
	}
	// the update is sent only through the fence: the range still held, no pause, exclusion or dry-run since
	res, err := routes.Remover{Routers: env.Cloud, Attempts: f.attempts}.Remove(env.Fenced(ctx, actions...), routerID, rts, atomic)
	_, fenced := fencing.ReasonOf(err)
	gone := map[openstack.Route]bool{}
	for _, rt := range res.Removed {
		gone[rt] = true
		log.Info("route removed", "router", routerID, "destination", rt.Destination, "nexthop", rt.NextHop,
			"method", string(res.Method), "conflicts", res.Conflicts)
	}
	for _, rt := range res.Absent {
		gone[rt] = true
	}
	f.m.Removed.WithLabelValues(key).Add(float64(len(res.Removed)))
	var failed []routes.SuspectRecord
	for _, cand := range allowed {
		a := routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen)
		if gone[cand.Record.Route] && err == nil {
			env.Done(ctx, a, nil)
			continue
		}
		failure := err
		if failure == nil {
			failure = fmt.Errorf("route %s via %s is still on router %s", cand.Record.Route.Destination, cand.Record.Route.NextHop, routerID)
		}
		env.Done(ctx, a, failure)
		// the proof still holds: kept for the next pass
		failed = append(failed, cand.Record)
		if !fenced {
			f.m.Failed.WithLabelValues(key).Inc()
		}
	}
	if fenced {
		// refused at the write (recorded by the policy as a hold): not a failure of the removal
		return res.Removed, failed, nil
	}
	return res.Removed, failed, err
}

// keep records a route kept by one of routegc's own rules: a metric, a status line (once while it
// stays) and an Event (sent when the condition changes).
func (f *orphans) keep(env *pass.Env[*State], rt openstack.Route, firstSeen time.Time, reason, msg string) {
	obj := routes.RemoveAction(rt, firstSeen).Object()
	f.m.Skipped.WithLabelValues(client.ObjectKeyFromObject(env.Cluster).String(), reason).Inc()
	env.Event(corev1.EventTypeNormal, "RouteKept", routes.VerbRemoveRoute, fmt.Sprintf("%s: %s: %s", obj, reason, msg))
	env.Line(v1alpha1.Action{Time: metav1.NewTime(env.Now), Action: v1alpha1.ActionSkipped, Object: obj, Reason: reason, Message: msg})
}
