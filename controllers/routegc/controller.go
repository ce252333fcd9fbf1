package routegc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/clusterstatus"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// Name of the controller (events, metrics, status lines).
const Name = "routegc"

// Defaults of the per-cluster settings.
const (
	DefaultInterval = time.Minute
	// DefaultBudget is the most removals in one pass (a cap per pass; the remediation policy's budget
	// over its window applies on top).
	DefaultBudget = 10
)

// Reconciler is the route collector over VitalsCluster resources.
type Reconciler struct {
	Client client.Client
	// APIReader reads a cluster again after a status write conflicted (nil: Client, its cache).
	APIReader client.Reader
	// Tenancy gives each cluster its cloud, project and proven router, or refuses it.
	Tenancy tenancy.Resolver
	// Policy decides every removal and records it (required: without one nothing is removed).
	Policy remediation.Policy
	// Checks receive the cluster's cloud check after each resolution of its tenancy, until the access
	// controller sets it in the operator (nil: not set here).
	Checks   remediation.Checks
	Recorder events.EventRecorder // nil: no events
	Clock    clock.Clock          // nil: the real clock
	Metrics  *Metrics             // nil: unregistered metrics
	Progress *progress.Controller // nil: not observed
	// DefaultInterval applies when the cluster sets no interval.
	DefaultInterval time.Duration
	// DefaultBudget is the cap on removals per pass when the cluster sets none (nil: DefaultBudget;
	// 0: no removals).
	DefaultBudget *int
	// Attempts of a conflicting route update (default 5).
	Attempts int

	once sync.Once // defaults applied
}

// SetupWithManager registers the reconciler. Status-only updates do not trigger passes: passes run
// when the spec changes and at each deadline.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.VitalsCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	return r.Progress.Complete(b, r)
}

func (r *Reconciler) defaults() { r.once.Do(r.setDefaults) }

// setDefaults fills the unset fields once: Reconcile runs on several workers at a time.
func (r *Reconciler) setDefaults() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Metrics == nil {
		r.Metrics = NewMetrics(nil)
	}
	if r.DefaultInterval <= 0 {
		r.DefaultInterval = DefaultInterval
	}
	if r.DefaultBudget == nil {
		b := DefaultBudget
		r.DefaultBudget = &b
	}
}

// settings are a Cluster's routegc settings with defaults applied.
type settings struct {
	enabled   bool
	interval  time.Duration
	budget    int
	dryRun    bool
	pods      []netip.Prefix
	protected []routes.ProtectedRoute
	subnetID  string
	ports     bool
	servers   bool
}

func (r *Reconciler) settingsOf(c *v1alpha1.VitalsCluster) (settings, error) {
	sp := c.Spec.Controllers.RouteGC
	s := settings{enabled: true, interval: r.DefaultInterval, budget: *r.DefaultBudget, dryRun: sp.DryRun, subnetID: c.Spec.OpenStack.SubnetID}
	if sp.Enabled != nil {
		s.enabled = *sp.Enabled
	}
	if sp.Interval != nil && sp.Interval.Duration > 0 {
		s.interval = sp.Interval.Duration
	}
	if sp.Budget != nil {
		s.budget = int(*sp.Budget)
	}
	cidrs := make([]string, len(c.Spec.PodCIDRs))
	for i, p := range c.Spec.PodCIDRs {
		cidrs[i] = string(p)
	}
	pods, err := routes.ParsePrefixes(cidrs)
	if err != nil {
		return s, fmt.Errorf("spec.podCIDRs: %w", err)
	}
	s.pods = pods
	if s.protected, err = routes.ProtectedRoutes(sp.ProtectedRoutes); err != nil {
		return s, err
	}
	if len(sp.AddressSources) == 0 {
		s.ports, s.servers = true, true
	}
	for _, src := range sp.AddressSources {
		switch src {
		case v1alpha1.AddressSourcePorts:
			s.ports = true
		case v1alpha1.AddressSourceServers:
			s.servers = true
		}
	}
	return s, nil
}

// Reconcile runs one pass for a Cluster when its deadline has come (or its spec changed), and
// requeues at the next deadline.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.defaults()
	log := logf.FromContext(ctx)
	key := req.String()
	cp, err := clusterstatus.Get(ctx, r.Client, req.NamespacedName, func() {
		r.Metrics.forget(req.NamespacedName)
		if r.Policy != nil {
			r.Policy.Forget(req.NamespacedName)
		}
	})
	if err != nil || cp == nil {
		return ctrl.Result{}, err
	}
	c := *cp
	if !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	s, err := r.settingsOf(&c)
	if err != nil {
		// The CRD's validation should have refused this spec; report it and wait for a new one.
		r.event(&c, corev1.EventTypeWarning, "InvalidSpec", "Validate", err.Error())
		err = r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) {
			clusterstatus.SetCondition(st, c.Generation, v1alpha1.ConditionRoutesHealthy, metav1.ConditionUnknown, "InvalidSpec", err.Error())
		})
		return ctrl.Result{}, err
	}
	if !s.enabled {
		err := r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) {
			clusterstatus.SetCondition(st, c.Generation, v1alpha1.ConditionRoutesHealthy, metav1.ConditionUnknown, "Disabled", "the route collector is disabled for this cluster")
		})
		return ctrl.Result{}, err
	}
	if st := c.Status.RouteGC; st != nil && st.NextPassTime != nil && c.Status.ObservedGeneration == c.Generation && now.Before(st.NextPassTime.Time) {
		return ctrl.Result{RequeueAfter: st.NextPassTime.Sub(now)}, nil
	}
	out := r.pass(ctx, &c, s, now)
	end := r.Clock.Now()
	r.Metrics.Passes.WithLabelValues(req.String(), out.result).Inc()
	r.Metrics.PassSeconds.WithLabelValues(out.result).Observe(end.Sub(now).Seconds())
	next := now.Add(s.interval)
	if err := r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) { out.apply(st, c.Generation, end, next) }); err != nil {
		log.Error(err, "cannot write cluster status", "cluster", key)
		return ctrl.Result{}, err
	}
	requeue := max(next.Sub(r.Clock.Now()), time.Millisecond)
	log.Info("route pass done", "cluster", key, "result", out.result, "routes", out.counts.Routes,
		"orphaned", out.counts.Orphaned, "removed", len(out.removed), "requeueAfter", requeue.Round(time.Millisecond).String())
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// outcome is what one pass found and did.
type outcome struct {
	result   string // ok, aborted, error
	reason   string // condition reason when not ok
	err      error
	counts   routes.Counts
	removed  []openstack.Route
	suspects []routes.SuspectRecord
	// held, wouldRemove, overBudget: proven orphans the policy held back, answered dry-run, or this
	// pass's cap kept.
	held, wouldRemove, overBudget int
	actions                       []v1alpha1.Action
	// policy is the remediation pass, when the pass got as far as asking.
	policy remediation.Pass
}

func (o *outcome) apply(st *v1alpha1.ClusterStatus, gen int64, end, next time.Time) {
	if st.RouteGC == nil {
		st.RouteGC = &v1alpha1.RouteGCStatus{}
	}
	g := st.RouteGC
	g.LastPassTime = ptrTime(end)
	g.NextPassTime = ptrTime(next)
	st.ObservedGeneration = gen
	clusterstatus.AppendActions(st, o.actions...)
	if o.policy != nil {
		clusterstatus.AppendActions(st, o.policy.Lines()...)
		o.policy.Apply(st)
	}
	if o.result != "ok" {
		g.LastError = o.err.Error()
		clusterstatus.SetCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, o.reason, o.err.Error())
		clusterstatus.SetCondition(st, gen, v1alpha1.ConditionRoutesHealthy, metav1.ConditionUnknown, o.reason, "no complete pass: "+o.err.Error())
		return
	}
	g.LastError = ""
	g.LastSuccessfulPassTime = ptrTime(end)
	c := o.counts
	g.Counts = v1alpha1.PassCounts{
		Routes: int32(c.Routes), Ours: int32(c.Ours), Live: int32(c.Live), Orphaned: int32(c.Orphaned),
		Protected: int32(c.Protected), Removed: int32(len(o.removed)),
		Skipped: int32(c.Suspect + o.held + o.wouldRemove + o.overBudget),
	}
	g.RemovedTotal += int64(len(o.removed))
	g.Suspects = g.Suspects[:0]
	for _, s := range o.suspects {
		g.Suspects = append(g.Suspects, v1alpha1.SuspectRoute{
			Destination: s.Route.Destination, NextHop: s.Route.NextHop, FirstSeen: metav1.NewTime(s.FirstSeen), Passes: int32(s.Passes),
		})
	}
	clusterstatus.SetCondition(st, gen, v1alpha1.ConditionReady, metav1.ConditionTrue, "PassSucceeded", "the cluster's router, ports and servers were read")
	left := c.Orphaned - len(o.removed)
	if left == 0 {
		clusterstatus.SetCondition(st, gen, v1alpha1.ConditionRoutesHealthy, metav1.ConditionTrue, "NoOrphanedRoutes",
			fmt.Sprintf("%d routes, %d in the pod CIDRs, none orphaned left", c.Routes, c.Ours))
	} else {
		clusterstatus.SetCondition(st, gen, v1alpha1.ConditionRoutesHealthy, metav1.ConditionFalse, "OrphanedRoutes",
			fmt.Sprintf("%d routes, %d in the pod CIDRs, %d orphaned left (%d awaiting proof, %d held by the remediation policy, %d dry run, %d over the pass's budget)",
				c.Routes, c.Ours, left, c.Suspect, o.held, o.wouldRemove, o.overBudget))
	}
}

func (r *Reconciler) pass(ctx context.Context, c *v1alpha1.VitalsCluster, s settings, now time.Time) *outcome {
	log := logf.FromContext(ctx)
	key := client.ObjectKeyFromObject(c)
	o := &outcome{}
	abort := func(result, reason string, err error) *outcome {
		o.result, o.reason, o.err = result, reason, err
		r.event(c, corev1.EventTypeWarning, "PassAborted", "Collect", fmt.Sprintf("%s: %v", reason, err))
		log.Info("route pass aborted", "cluster", key.String(), "reason", reason, "err", err.Error())
		// Keep the previous proof (suspects): an aborted pass neither confirms nor clears it.
		o.actions = appendSkipLine(c, o.actions, now, reason, err)
		return o
	}
	if r.Policy == nil {
		return abort("error", "NoPolicy", errors.New("no remediation policy: nothing may be removed"))
	}
	scope, err := r.Tenancy.Resolve(ctx, c)
	if r.Checks != nil {
		r.Checks.Set(key, remediation.CheckCloud, err)
	}
	if err != nil {
		var refusal *tenancy.Refusal
		if errors.As(err, &refusal) {
			return abort("error", refusal.Reason, errors.New(refusal.Message))
		}
		return abort("aborted", "ReadFailed", err)
	}
	cloud, project, routerID := scope.Cloud, scope.ProjectID, scope.Router.ID
	snap, err := routes.Read(ctx, cloud, routes.ReadOptions{RouterID: routerID, ProjectID: project, Ports: s.ports, Servers: s.servers, SubnetID: s.subnetID})
	if err != nil {
		return abort("aborted", "ReadFailed", err)
	}
	in := routes.Input{
		Routes: snap.Router.Routes, PodCIDRs: s.pods, Protected: s.protected, Live: snap.Live, Sources: snap.Sources,
		Now: now, Interval: s.interval,
	}
	if st := c.Status.RouteGC; st != nil {
		for _, sr := range st.Suspects {
			in.Suspects = append(in.Suspects, routes.SuspectRecord{
				Route: openstack.Route{Destination: sr.Destination, NextHop: sr.NextHop}, FirstSeen: sr.FirstSeen.Time, Passes: int(sr.Passes),
			})
		}
	}
	plan, err := routes.Analyze(in)
	if err != nil {
		return abort("aborted", "UnsafeRead", err)
	}
	o.counts, o.suspects = plan.Counts, plan.Suspects
	// The routes' own rules first: a first sighting, a protected route whose nexthop is gone.
	for _, res := range plan.Results {
		switch {
		case res.Verdict == routes.Suspect && res.Passes == 1:
			o.keep(r, c, now, res.Route, res.FirstSeen, "ProofPending", res.Detail)
		case res.Verdict == routes.Protected && res.Orphaned:
			o.keep(r, c, now, res.Route, time.Time{}, "Protected", res.Detail)
		}
	}
	// Every proven orphan is asked for, oldest proof first, until this pass's own cap is reached (dry-run
	// answers count: they are the removals a pass would make).
	o.policy = r.Policy.Begin(ctx, c, Name, []string{remediation.CheckCloud},
		remediation.Scope{Unhealthy: plan.Counts.Orphaned, Total: plan.Counts.Ours, DryRun: s.dryRun})
	var allowed []routes.Candidate
	for _, cand := range plan.Proven {
		res := &plan.Results[cand.Index]
		if len(allowed)+o.wouldRemove >= s.budget {
			res.Verdict, res.Detail = routes.OverBudget, fmt.Sprintf("%s; this pass's cap of %d removals is reached", res.Detail, s.budget)
			o.overBudget++
			o.suspects = append(o.suspects, cand.Record)
			o.keep(r, c, now, cand.Record.Route, cand.Record.FirstSeen, "PassBudget", res.Detail)
			continue
		}
		d := o.policy.Ask(ctx, routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen))
		switch d.Outcome {
		case remediation.Allowed:
			res.Verdict = routes.Remove
			allowed = append(allowed, cand)
			continue
		case remediation.DryRun:
			res.Verdict = routes.WouldRemove
			o.wouldRemove++
		default:
			res.Verdict = routes.Held
			o.held++
		}
		res.Detail = fmt.Sprintf("%s; %s: %s", res.Detail, d.Reason, d.Message)
		// Not removed: the proof stands for the next pass.
		o.suspects = append(o.suspects, cand.Record)
	}
	for _, v := range allVerdicts {
		r.Metrics.Routes.WithLabelValues(client.ObjectKeyFromObject(c).String(), string(v)).Set(0)
	}
	for _, res := range plan.Results {
		r.Metrics.Routes.WithLabelValues(client.ObjectKeyFromObject(c).String(), string(res.Verdict)).Inc()
	}
	o.result = "ok"
	if len(allowed) == 0 {
		return o
	}
	r.remove(ctx, c, cloud, routerID, o, allowed)
	return o
}

// remove removes the allowed routes in one update and reports each to the policy.
func (r *Reconciler) remove(ctx context.Context, c *v1alpha1.VitalsCluster, cloud routes.Cloud, routerID string, o *outcome, allowed []routes.Candidate) {
	log := logf.FromContext(ctx)
	rts := make([]openstack.Route, len(allowed))
	for i, cand := range allowed {
		rts[i] = cand.Record.Route
	}
	atomic, err := cloud.AtomicRoutes(ctx)
	if err != nil {
		// Without knowing, take the If-Match path: it is safe on every Neutron with extraroute.
		log.Info("cannot tell whether extraroute-atomic is offered; using an If-Match update", "cluster", client.ObjectKeyFromObject(c).String(), "err", err.Error())
		atomic = false
	}
	actions := make([]remediation.Action, len(allowed))
	for i, cand := range allowed {
		actions[i] = routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen)
	}
	// the update is sent only through the fence: the range still held, no pause, exclusion or dry-run since
	fctx := fencing.With(ctx, o.policy.Fence(actions...))
	res, err := routes.Remover{Routers: cloud, Attempts: r.Attempts, Clock: r.Clock}.Remove(fctx, routerID, rts, atomic)
	_, fenced := fencing.ReasonOf(err)
	gone := map[openstack.Route]bool{}
	for _, rt := range res.Removed {
		gone[rt] = true
		log.Info("route removed", "cluster", client.ObjectKeyFromObject(c).String(), "router", routerID, "destination", rt.Destination,
			"nexthop", rt.NextHop, "method", string(res.Method), "conflicts", res.Conflicts)
	}
	for _, rt := range res.Absent {
		gone[rt] = true
	}
	r.Metrics.Removed.WithLabelValues(client.ObjectKeyFromObject(c).String()).Add(float64(len(res.Removed)))
	o.removed = res.Removed
	for _, cand := range allowed {
		a := routes.RemoveAction(cand.Record.Route, cand.Record.FirstSeen)
		if gone[cand.Record.Route] && err == nil {
			o.policy.Done(ctx, a, nil)
			continue
		}
		failure := err
		if failure == nil {
			failure = fmt.Errorf("route %s via %s is still on router %s", cand.Record.Route.Destination, cand.Record.Route.NextHop, routerID)
		}
		o.policy.Done(ctx, a, failure)
		// The proof still holds: keep it for the next pass.
		o.suspects = append(o.suspects, cand.Record)
		if fenced {
			o.held++ // refused at the write: recorded by the policy as a hold
			continue
		}
		r.Metrics.Failed.WithLabelValues(client.ObjectKeyFromObject(c).String()).Inc()
	}
	if err != nil && !fenced {
		o.result, o.reason, o.err = "error", "RemovalFailed", err
	}
}

// keep records a route kept by one of routegc's own rules: an Event, a metric and a status line (a
// route kept for the same reason pass after pass gets one line: the history must keep room).
func (o *outcome) keep(r *Reconciler, c *v1alpha1.VitalsCluster, now time.Time, rt openstack.Route, firstSeen time.Time, reason, msg string) {
	obj := routes.RemoveAction(rt, firstSeen).Object()
	r.Metrics.Skipped.WithLabelValues(client.ObjectKeyFromObject(c).String(), reason).Inc()
	r.event(c, corev1.EventTypeNormal, "RouteKept", routes.VerbRemoveRoute, fmt.Sprintf("%s: %s: %s", obj, reason, msg))
	if hasLine(c.Status.Actions, obj, reason) || hasLine(o.actions, obj, reason) {
		return
	}
	o.actions = append(o.actions, v1alpha1.Action{Time: metav1.NewTime(now), Controller: Name, Action: v1alpha1.ActionSkipped, Object: obj, Reason: reason, Message: msg})
}

func hasLine(acts []v1alpha1.Action, object, reason string) bool {
	for _, a := range acts {
		if a.Controller == Name && a.Object == object && a.Reason == reason {
			return true
		}
	}
	return false
}

// appendSkipLine adds a status line for an aborted pass, unless the last line says the same.
func appendSkipLine(c *v1alpha1.VitalsCluster, acts []v1alpha1.Action, now time.Time, reason string, err error) []v1alpha1.Action {
	if n := len(c.Status.Actions); n > 0 {
		last := c.Status.Actions[n-1]
		if last.Controller == Name && last.Action == v1alpha1.ActionSkipped && last.Reason == reason && last.Message == err.Error() {
			return acts
		}
	}
	return append(acts, v1alpha1.Action{Time: metav1.NewTime(now), Controller: Name, Action: v1alpha1.ActionSkipped, Object: "pass", Reason: reason, Message: err.Error()})
}

func (r *Reconciler) event(c *v1alpha1.VitalsCluster, typ, reason, action, note string) {
	clusterstatus.Event(r.Recorder, c, typ, reason, action, note)
}

func (r *Reconciler) writeStatus(ctx context.Context, c *v1alpha1.VitalsCluster, mutate func(*v1alpha1.ClusterStatus)) error {
	var f remediation.Fencer
	if r.Policy != nil {
		f = r.Policy
	}
	return clusterstatus.Write(clusterstatus.Fenced(ctx, f, c), r.Client, r.APIReader, c, mutate)
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
