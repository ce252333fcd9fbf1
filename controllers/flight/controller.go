package flight

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
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
	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Name of the controller (events, metrics, status lines).
const Name = "flight"

// Defaults of the per-cluster settings.
const (
	DefaultInterval = time.Minute
	// DefaultBudget is the most changes in one pass, over every repair (a cap per pass; the remediation
	// policy's budget over its window applies on top).
	DefaultBudget = 10
	// DefaultMaxRoutes is Neutron's default max_routes.
	DefaultMaxRoutes = 30
)

// Reconciler is flight over VitalsCluster resources.
type Reconciler struct {
	Client client.Client
	// APIReader reads a cluster again after a status write conflicted (nil: Client, its cache).
	APIReader client.Reader
	// Tenancy gives each cluster its cloud, project and proven router, or refuses it.
	Tenancy tenancy.Resolver
	// Workload gives each cluster its workload cluster, where its Nodes are read.
	Workload workload.Access
	// Policy decides every change and records it (required: without one nothing is repaired).
	Policy   remediation.Policy
	Recorder events.EventRecorder // nil: no events
	Clock    clock.Clock          // nil: the real clock
	Metrics  *Metrics             // nil: unregistered metrics
	Progress *progress.Controller // nil: not observed
	// Repairs run in this order (nil: DefaultRepairs()).
	Repairs []Repair
	// DefaultInterval applies when the cluster sets none.
	DefaultInterval time.Duration
	// DefaultBudget is the cap on changes per pass when the cluster sets none (nil: DefaultBudget; 0:
	// no changes).
	DefaultBudget *int

	once sync.Once // defaults applied
}

// DefaultRepairs are every repair flight knows, in the order a pass runs them: the security group
// first (a server without its rules or the group is cut off), then servers, then routes.
func DefaultRepairs() []Repair {
	return []Repair{SecurityGroupRules{}, SecurityGroupAssociation{}, ErroredServers{}, SecurityGroupSync{}, NeverHealthy{}, Routes{}}
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
	if r.Repairs == nil {
		r.Repairs = DefaultRepairs()
	}
	if r.DefaultInterval <= 0 {
		r.DefaultInterval = DefaultInterval
	}
	if r.DefaultBudget == nil {
		b := DefaultBudget
		r.DefaultBudget = &b
	}
}

// Settings are a cluster's flight settings with defaults applied.
type Settings struct {
	Enabled  bool
	Interval time.Duration
	// Budget is the cap on changes in one pass, over every repair.
	Budget    int
	DryRun    bool
	PodCIDRs  []netip.Prefix
	MaxRoutes int
	Repairs   v1alpha1.FlightRepairs
	// RouteGC: the route collector runs for this cluster (it then removes stale routes, not flight).
	RouteGC bool
	Read    ReadOptions
}

// SettingsOf returns c's settings, or an error naming the field that cannot be used.
func (r *Reconciler) SettingsOf(c *v1alpha1.VitalsCluster) (Settings, error) {
	r.defaults()
	sp := c.Spec.Controllers.Flight
	ost := c.Spec.OpenStack
	s := Settings{Enabled: true, Interval: r.DefaultInterval, Budget: *r.DefaultBudget, DryRun: sp.DryRun,
		MaxRoutes: DefaultMaxRoutes, Repairs: sp.Repairs, RouteGC: true,
		Read: ReadOptions{RouterID: ost.RouterID, NetworkID: ost.NetworkID, Metadata: sp.Servers.Metadata,
			SecurityGroupID: ost.SecurityGroupID, SecurityGroupName: ost.SecurityGroupName}}
	if sp.Enabled != nil {
		s.Enabled = *sp.Enabled
	}
	if sp.Interval != nil && sp.Interval.Duration > 0 {
		s.Interval = sp.Interval.Duration
	}
	if sp.Budget != nil {
		s.Budget = int(*sp.Budget)
	}
	if sp.MaxRoutes != nil {
		s.MaxRoutes = int(*sp.MaxRoutes)
	}
	if e := c.Spec.Controllers.RouteGC.Enabled; e != nil {
		s.RouteGC = *e
	}
	cidrs := make([]string, len(c.Spec.PodCIDRs))
	for i, p := range c.Spec.PodCIDRs {
		cidrs[i] = string(p)
	}
	pods, err := routes.ParsePrefixes(cidrs)
	if err != nil {
		return s, fmt.Errorf("spec.podCIDRs: %w", err)
	}
	s.PodCIDRs = pods
	return s, nil
}

// enabled reports whether a repair's RepairSpec turns it on (default on).
func enabled(r v1alpha1.RepairSpec) bool { return r.Enabled == nil || *r.Enabled }

// Reconcile runs one pass for a cluster when its deadline has come (or its spec changed), and requeues
// at the next deadline.
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
	s, err := r.SettingsOf(&c)
	if err != nil {
		// The CRD's validation should have refused this spec; report it and wait for a new one.
		clusterstatus.Event(r.Recorder, &c, corev1.EventTypeWarning, "InvalidSpec", "Validate", err.Error())
		return ctrl.Result{}, r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) {
			for _, rp := range r.Repairs {
				for _, typ := range rp.Conditions() {
					clusterstatus.SetCondition(st, c.Generation, typ, metav1.ConditionUnknown, "InvalidSpec", err.Error())
				}
			}
		})
	}
	if !s.Enabled {
		return ctrl.Result{}, r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) {
			for _, rp := range r.Repairs {
				for _, typ := range rp.Conditions() {
					clusterstatus.SetCondition(st, c.Generation, typ, metav1.ConditionUnknown, "Disabled", "flight is disabled for this cluster")
				}
			}
		})
	}
	if st := c.Status.Flight; st != nil && st.NextPassTime != nil && c.Status.ObservedGeneration == c.Generation && now.Before(st.NextPassTime.Time) {
		return ctrl.Result{RequeueAfter: st.NextPassTime.Sub(now)}, nil
	}
	out := r.pass(ctx, &c, &s, now)
	end := r.Clock.Now()
	r.Metrics.Passes.WithLabelValues(key, out.result).Inc()
	r.Metrics.PassSeconds.WithLabelValues(out.result).Observe(end.Sub(now).Seconds())
	next := now.Add(s.Interval)
	if err := r.writeStatus(ctx, &c, func(st *v1alpha1.ClusterStatus) { out.apply(st, c.Generation, end, next) }); err != nil {
		log.Error(err, "cannot write cluster status", "cluster", key)
		return ctrl.Result{}, err
	}
	requeue := max(next.Sub(r.Clock.Now()), time.Millisecond)
	log.Info("flight pass done", "cluster", key, "result", out.result, "servers", len(out.servers), "unhealthy", len(out.unhealthy),
		"requeueAfter", requeue.Round(time.Millisecond).String())
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// outcome is what one pass found and did.
type outcome struct {
	result string // ok, aborted, error
	reason string // condition reason when not ok
	err    error
	// status is flight's status after the pass.
	status  *v1alpha1.FlightStatus
	servers []string
	// unhealthy servers, the union of every finding's.
	unhealthy []string
	// reports of the repairs that ran; disabled the conditions of those turned off.
	reports  []Report
	disabled []string
	conds    []string
	actions  []v1alpha1.Action
	policy   remediation.Pass
}

func (o *outcome) apply(st *v1alpha1.ClusterStatus, gen int64, end, next time.Time) {
	if o.status == nil {
		o.status = &v1alpha1.FlightStatus{}
		if st.Flight != nil {
			o.status = st.Flight.DeepCopy()
		}
	}
	f := o.status
	f.LastPassTime = ptrTime(end)
	f.NextPassTime = ptrTime(next)
	st.Flight = f
	st.ObservedGeneration = gen
	clusterstatus.AppendActions(st, o.actions...)
	if o.policy != nil {
		clusterstatus.AppendActions(st, o.policy.Lines()...)
		o.policy.Apply(st)
	}
	if o.result != "ok" {
		f.LastError = o.err.Error()
		for _, typ := range o.conds {
			clusterstatus.SetCondition(st, gen, typ, metav1.ConditionUnknown, o.reason, "no complete pass: "+o.err.Error())
		}
		return
	}
	f.LastError = ""
	f.LastSuccessfulPassTime = ptrTime(end)
	for _, typ := range o.disabled {
		clusterstatus.SetCondition(st, gen, typ, metav1.ConditionUnknown, "Disabled", "the repair is disabled for this cluster")
	}
	for _, rep := range o.reports {
		clusterstatus.SetCondition(st, gen, rep.Type, rep.Status, rep.Reason, rep.Message)
	}
}

func (r *Reconciler) pass(ctx context.Context, c *v1alpha1.VitalsCluster, s *Settings, now time.Time) *outcome {
	log := logf.FromContext(ctx)
	key := client.ObjectKeyFromObject(c)
	o := &outcome{}
	for _, rp := range r.Repairs {
		o.conds = append(o.conds, rp.Conditions()...)
	}
	abort := func(result, reason string, err error) *outcome {
		o.result, o.reason, o.err = result, reason, err
		clusterstatus.Event(r.Recorder, c, corev1.EventTypeWarning, "PassAborted", "Read", fmt.Sprintf("%s: %v", reason, err))
		log.Info("flight pass aborted", "cluster", key.String(), "reason", reason, "err", err.Error())
		o.actions = appendSkipLine(c, o.actions, now, reason, err)
		return o
	}
	if r.Policy == nil {
		return abort("error", "NoPolicy", errors.New("no remediation policy: nothing may be repaired"))
	}
	if r.Workload == nil {
		return abort("error", "NoWorkloadAccess", errors.New("no access to workload clusters: their Nodes cannot be read"))
	}
	scope, err := r.Tenancy.Resolve(ctx, c)
	if err != nil {
		var refusal *tenancy.Refusal
		if errors.As(err, &refusal) {
			return abort("error", refusal.Reason, errors.New(refusal.Message))
		}
		return abort("aborted", "ReadFailed", err)
	}
	wc, err := r.Workload.For(ctx, c)
	if err == nil {
		err = wc.Healthy()
	}
	if err != nil {
		return abort("aborted", "WorkloadUnreachable", err)
	}
	ro := s.Read
	ro.ProjectID, ro.RouterID = scope.ProjectID, scope.Router.ID
	snap, err := Read(ctx, scope.Cloud, wc.Reader(), ro)
	if err != nil {
		var unsafe *UnsafeError
		if errors.As(err, &unsafe) {
			return abort("aborted", "UnsafeRead", err)
		}
		return abort("aborted", "ReadFailed", err)
	}
	prev := &v1alpha1.FlightStatus{}
	if c.Status.Flight != nil {
		prev = c.Status.Flight.DeepCopy()
	}
	o.status = prev.DeepCopy()
	o.status.Counts = v1alpha1.FlightCounts{Servers: int32(len(snap.Servers)), Nodes: int32(len(snap.Nodes)), Routes: int32(len(snap.Router.Routes))}
	if snap.Group != nil {
		o.status.SecurityGroupID = snap.Group.ID
	}
	in := &Input{Cluster: c, Snapshot: snap, Settings: s, Prev: prev, Now: now}
	type found struct {
		repair  Repair
		finding Finding
	}
	var findings []found
	bad := map[string]bool{}
	for _, rp := range r.Repairs {
		if !rp.Enabled(&s.Repairs) {
			o.disabled = append(o.disabled, rp.Conditions()...)
			continue
		}
		f := rp.Detect(in)
		findings = append(findings, found{rp, f})
		for _, id := range f.Unhealthy() {
			bad[id] = true
		}
	}
	for _, sv := range snap.Servers {
		o.servers = append(o.servers, sv.ID)
	}
	for id := range bad {
		o.unhealthy = append(o.unhealthy, id)
	}
	sort.Strings(o.unhealthy)
	o.status.Counts.Unhealthy = int32(len(o.unhealthy))
	r.Metrics.Unhealthy.WithLabelValues(key.String()).Set(float64(len(o.unhealthy)))
	o.policy = r.Policy.Begin(ctx, c, Name, []string{remediation.CheckCloud, remediation.CheckWorkload},
		remediation.Scope{Unhealthy: len(o.unhealthy), Total: len(snap.Servers), DryRun: s.DryRun})
	budget := &passBudget{left: s.Budget}
	for _, f := range findings {
		env := &Env{Cluster: c, Cloud: scope.Cloud, Scope: scope, Snapshot: snap, Settings: s,
			Pass: &cappedPass{Pass: o.policy, budget: budget}, Status: o.status, Now: now, r: r, o: o, repair: f.repair.Name()}
		main := f.repair.Conditions()[0]
		for _, rep := range f.finding.Repair(ctx, env) {
			if rep.Type == "" {
				rep.Type = main
			}
			o.reports = append(o.reports, rep)
		}
	}
	o.result = "ok"
	return o
}

// passBudget is the cap on changes in one pass, shared by every repair.
type passBudget struct {
	mu   sync.Mutex
	left int
}

// cappedPass holds back every change once the pass's own cap is spent (dry-run answers count: they
// are the changes a pass would make).
type cappedPass struct {
	remediation.Pass
	budget *passBudget
}

// ReasonPassBudget: the cap on changes per pass (spec.controllers.flight.budget) is spent.
const ReasonPassBudget = "PassBudget"

func (p *cappedPass) Ask(ctx context.Context, a remediation.Action) remediation.Decision {
	p.budget.mu.Lock()
	spent := p.budget.left <= 0
	p.budget.mu.Unlock()
	if spent {
		return remediation.Decision{Outcome: remediation.Held, Reason: ReasonPassBudget, Message: "this pass's cap on changes (spec.controllers.flight.budget) is spent"}
	}
	d := p.Pass.Ask(ctx, a)
	if d.Outcome == remediation.Allowed || d.Outcome == remediation.DryRun {
		p.budget.mu.Lock()
		p.budget.left--
		p.budget.mu.Unlock()
	}
	return d
}

// line adds a status line of flight's own, unless the history or this pass has it already.
func (o *outcome) line(c *v1alpha1.VitalsCluster, l v1alpha1.Action) {
	for _, h := range append(slices.Clone(c.Status.Actions), o.actions...) {
		if h.Controller == l.Controller && h.Action == l.Action && h.Object == l.Object && h.Reason == l.Reason {
			return
		}
	}
	o.actions = append(o.actions, l)
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

func (r *Reconciler) writeStatus(ctx context.Context, c *v1alpha1.VitalsCluster, mutate func(*v1alpha1.ClusterStatus)) error {
	var f remediation.Fencer
	if r.Policy != nil {
		f = r.Policy
	}
	return clusterstatus.Write(clusterstatus.Fenced(ctx, f, c), r.Client, r.APIReader, c, mutate)
}

func ptrTime(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }
