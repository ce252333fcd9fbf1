package pass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// DefaultTimeout bounds one pass: well below the operator's hung-pass deadline.
const DefaultTimeout = 2 * time.Minute

// Results of a pass, the values of vitals_<controller>_passes_total's result label.
const (
	// ResultOK: the pass read everything and ran its repairs.
	ResultOK = "ok"
	// ResultAborted: a read failed or the deadline passed; nothing was decided from it.
	ResultAborted = "aborted"
	// ResultError: the cluster cannot be passed as it is (refused by tenancy, no policy or workload access).
	ResultError = "error"
)

// Reasons of a controller's conditions the runner sets.
const (
	ReasonInvalidSpec      = "InvalidSpec"
	ReasonDisabled         = "Disabled"
	ReasonReadFailed       = "ReadFailed"
	ReasonUnsafeRead       = "UnsafeRead"
	ReasonDeadline         = "DeadlineExceeded"
	ReasonWorkload         = "WorkloadUnreachable"
	ReasonNoWorkloadAccess = "NoWorkloadAccess"
)

// Settings are a controller's typed settings for one cluster, defaults applied.
type Settings interface {
	Common() v1alpha1.CommonSettings
}

// Controller is a periodic controller's own part of a pass: its settings, its read, its repairs and its
// block of the status. The runner does the rest: the get, the deletion guard, invalid and disabled specs,
// the schedule and the deadline, tenancy, the workload cluster, the remediation policy's pass and the pass's
// cap, the one status write, metrics, Events and the requeue.
type Controller[S Settings, T any] interface {
	// Name of the controller: Events, metrics (vitals_<name>_...), status lines, its block of the status
	// (status.<name>) and its field manager.
	Name() string
	// Settings are c's settings with defaults; an error names the field that cannot be used.
	Settings(c *v1alpha1.VitalsCluster) (S, error)
	// Needs are the per-cluster checks the policy's gate needs before any change (remediation.CheckCloud,
	// remediation.CheckWorkload); with CheckWorkload the runner connects the workload cluster for the read.
	Needs() []string
	// Read reads, completely or not at all, what the repairs detect from. An error aborts the pass: nothing
	// is decided from a failed or partial read (wrap it with Abort to name another reason than ReadFailed).
	Read(ctx context.Context, in *ReadInput[S]) (T, error)
	// Repairs run in this order.
	Repairs() []Repair[T]
	// Total is how many objects of the kind the repairs count unhealthy the cluster has (the storm rule).
	Total(t T) int
	// Status writes the controller's block of st after a complete pass (the runner then sets its
	// ObservedGeneration and Actions); unhealthy is the union of the repairs' findings.
	Status(c *v1alpha1.VitalsCluster, t T, unhealthy []string, st *v1alpha1.ClusterStatus)
}

// Scoper is a Controller that tells the remediation policy more about a pass than its storm counts: the
// objects with a disruptive step in flight by pool, an outage its read saw (remediation.Scope).
type Scoper[T any] interface {
	Scope(t T, s *remediation.Scope)
}

// ReadInput is what a controller's read works with.
type ReadInput[S Settings] struct {
	Cluster  *v1alpha1.VitalsCluster
	Settings S
	// Scope is the cluster's proven place in the cloud: its Cloud acts in the cluster's project only.
	Scope *tenancy.Scope
	// Workload is the cluster's workload cluster (nil unless the controller needs remediation.CheckWorkload).
	Workload workload.Cluster
	Now      time.Time
}

// Repair is one failure mode a controller looks after: it detects from one complete read, then repairs
// what it found. Each repair lives in a file of its own and sets its own conditions.
type Repair[T any] interface {
	// Name of the repair in camelCase: its label in vitals_<controller>_repairs_total.
	Name() string
	// Conditions are the condition types the repair sets on the cluster, its main one first.
	Conditions() []string
	// Enabled reports whether c turns the repair on.
	Enabled(c *v1alpha1.VitalsCluster) bool
	// Detect finds what is wrong in one complete read. It changes nothing and must be a pure function of
	// in (table-tested).
	Detect(in *Input[T]) Finding[T]
}

// Finding is what one repair detected in one pass.
type Finding[T any] interface {
	// Unhealthy names the objects the finding holds broken. The storm rule counts the union of every
	// repair's, of Controller.Total.
	Unhealthy() []string
	// Repair acts on the finding through env, asking the remediation policy before every change, and
	// reports the repair's conditions (one Report per type of Conditions). It writes the repair's own part
	// of the status into env.Read.
	Repair(ctx context.Context, env *Env[T]) []Report
}

// Input is what every repair detects from.
type Input[T any] struct {
	Cluster *v1alpha1.VitalsCluster
	// Read is the controller's complete read (with its settings and its block before the pass).
	Read T
	Now  time.Time
}

// Report is one of a repair's conditions after its pass.
type Report struct {
	// Type of the condition; empty: the repair's main condition.
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

// AbortError aborts a pass with a reason of its own (e.g. UnsafeRead).
type AbortError struct {
	Reason string
	Err    error
}

func (e *AbortError) Error() string { return e.Err.Error() }
func (e *AbortError) Unwrap() error { return e.Err }

// Abort wraps err to abort a pass with reason.
func Abort(reason string, err error) error { return &AbortError{Reason: reason, Err: err} }

// Options tune a Runner.
type Options struct {
	// Timeout bounds one pass (default DefaultTimeout).
	Timeout time.Duration
	// Metrics of the controller's passes (nil: unregistered ones).
	Metrics *Metrics
}

// Runner runs the passes of one periodic controller over VitalsClusters. It is a reconcile.Reconciler.
type Runner[S Settings, T any] struct {
	d       *Deps
	ctl     Controller[S, T]
	timeout time.Duration
	metrics *Metrics
	rec     events.EventRecorder
	// types are the conditions the controller owns (every repair's), in the repairs' order.
	types []string
	due   schedule
	// wrote is the resourceVersion of each cluster's last status write of this runner.
	wrote versions
	// failures is the aborted pass last logged of each cluster (an unchanged one is not logged again each interval).
	failures repeats
}

// New validates d and returns the runner of ctl.
func New[S Settings, T any](d *Deps, ctl Controller[S, T], o Options) (*Runner[S, T], error) {
	if d == nil || ctl == nil {
		return nil, errors.New("pass: no dependencies or no controller")
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", ctl.Name(), err)
	}
	if err := d.RequirePolicy(); err != nil {
		return nil, fmt.Errorf("%s: %w", ctl.Name(), err)
	}
	r := &Runner[S, T]{d: d, ctl: ctl, timeout: o.Timeout, metrics: o.Metrics, rec: d.recorder(ctl.Name()), due: schedule{at: map[types.NamespacedName]due{}},
		wrote: versions{rv: map[types.NamespacedName]string{}}}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.metrics == nil {
		r.metrics = NewMetrics(ctl.Name(), nil)
	}
	for _, rp := range ctl.Repairs() {
		r.types = append(r.types, rp.Conditions()...)
	}
	if len(r.types) == 0 {
		return nil, fmt.Errorf("%s: no repair sets a condition", ctl.Name())
	}
	return r, nil
}

// Conditions are the condition types the controller owns.
func (r *Runner[S, T]) Conditions() []string { return slices.Clone(r.types) }

// SetupWithManager registers the runner with opts. Status-only updates do not trigger passes: passes run
// when the spec changes and at each deadline.
func (r *Runner[S, T]) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return r.d.Setup(ctx, mgr, r.ctl.Name(), opts, r, []predicate.Predicate{predicate.GenerationChangedPredicate{}}, nil)
}

// Reconcile runs one pass for a cluster when its deadline has come (or its spec changed), writes what
// changed, and requeues at the next deadline.
func (r *Runner[S, T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	var c v1alpha1.VitalsCluster
	if err := r.d.Client.Get(ctx, key, &c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", key, err)
	}
	if rv, ok := r.wrote.get(key); ok && rv != c.ResourceVersion {
		// Read your own write: the cache may not have seen this runner's last status write yet (a pass that
		// outlasts its interval is followed at once by the next), and a pass built on it would write an older
		// block back (an escalation that ended would come back at its old step). A cache that shows another
		// version is not trusted: the pass is built on the API server's object.
		c = v1alpha1.VitalsCluster{}
		if err := r.d.APIReader.Get(ctx, key, &c); err != nil {
			if apierrors.IsNotFound(err) {
				r.forget(key)
				return ctrl.Result{}, nil
			}
			return ctrl.Result{}, fmt.Errorf("get cluster %s from the API server (the cache has not seen the last status write): %w", key, err)
		}
	}
	read := c.ResourceVersion
	defer func() {
		if c.ResourceVersion != read {
			r.wrote.set(key, c.ResourceVersion)
		}
	}()
	if !c.DeletionTimestamp.IsZero() {
		// deorbit's now; the cluster's block stays as it was
		r.due.drop(key)
		return ctrl.Result{}, nil
	}
	s, err := r.ctl.Settings(&c)
	if err != nil {
		// The CRD's validation should have refused this spec; report it and wait for a new one.
		r.due.drop(key)
		return ctrl.Result{}, r.settle(ctx, &c, ReasonInvalidSpec, err.Error(), true)
	}
	common := s.Common()
	if !common.Enabled {
		r.due.drop(key)
		return ctrl.Result{}, r.settle(ctx, &c, ReasonDisabled, "the "+r.ctl.Name()+" controller is disabled for this cluster", false)
	}
	now := r.d.Clock.Now()
	if at, ok := r.due.get(key, c.Generation); ok && now.Before(at) {
		return ctrl.Result{RequeueAfter: at.Sub(now)}, nil
	}
	pctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	o := r.pass(pctx, &c, s, now)
	end := r.d.Clock.Now()
	r.metrics.Observe(key, o.result, end.Sub(now), end)
	if err := r.write(ctx, &c, o); err != nil {
		return ctrl.Result{}, err
	}
	next := now.Add(common.Interval)
	r.due.set(key, c.Generation, next)
	after := max(next.Sub(r.d.Clock.Now()), time.Millisecond)
	log := logf.FromContext(ctx)
	if o.result != ResultOK {
		msg := o.result + " " + o.reason + ": " + o.err.Error()
		l := log.V(1)
		if r.failures.fresh(key, msg, end) {
			l = log
		}
		l.Info("pass aborted", "controller", r.ctl.Name(), "result", o.result, "reason", o.reason, "err", o.err.Error(),
			"requeueAfter", after.Round(time.Millisecond).String())
	} else {
		r.failures.drop(key)
		log.V(1).Info("pass done", "controller", r.ctl.Name(), "unhealthy", len(o.unhealthy), "lines", len(o.lines),
			"requeueAfter", after.Round(time.Millisecond).String())
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// outcome is what one pass found and did.
type outcome struct {
	result, reason string
	err            error
	// status holds the controller's block after a complete pass.
	status    v1alpha1.ClusterStatus
	reports   []Report
	unhealthy []string
	// lines are the runner's and the repairs' own status lines; policy the remediation pass, once begun.
	lines  []v1alpha1.Action
	policy remediation.Pass
	// events of each repair, sent only when the repair's conditions change.
	events map[string][]notice
}

type notice struct{ typ, reason, action, note string }

func (r *Runner[S, T]) pass(ctx context.Context, c *v1alpha1.VitalsCluster, s S, now time.Time) *outcome {
	name := r.ctl.Name()
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	o := &outcome{events: map[string][]notice{}}
	abort := func(result, reason string, err error) *outcome {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			result, reason = ResultAborted, ReasonDeadline
		}
		o.result, o.reason, o.err = result, reason, err
		o.lines = append(o.lines, v1alpha1.Action{Time: metav1.NewTime(now), Controller: name, Action: v1alpha1.ActionSkipped,
			Object: "pass", Reason: reason, Message: err.Error()})
		return o
	}
	needs := r.ctl.Needs()
	scope, err := r.d.Tenancy.Resolve(ctx, c)
	if r.d.Checks != nil && slices.Contains(needs, remediation.CheckCloud) {
		r.d.Checks.Set(key, remediation.CheckCloud, err)
	}
	if err != nil {
		var refusal *tenancy.Refusal
		if errors.As(err, &refusal) {
			return abort(ResultError, refusal.Reason, errors.New(refusal.Message))
		}
		return abort(ResultAborted, ReasonReadFailed, err)
	}
	in := &ReadInput[S]{Cluster: c, Settings: s, Scope: scope, Now: now}
	if slices.Contains(needs, remediation.CheckWorkload) {
		if r.d.Workload == nil {
			return abort(ResultError, ReasonNoWorkloadAccess, errors.New("no access to workload clusters"))
		}
		wc, err := r.d.Workload.For(ctx, c)
		if err == nil {
			err = wc.Healthy()
		}
		if err != nil {
			return abort(ResultAborted, ReasonWorkload, err)
		}
		in.Workload = wc
	}
	t, err := r.ctl.Read(ctx, in)
	if err != nil {
		var ae *AbortError
		if errors.As(err, &ae) {
			return abort(ResultAborted, ae.Reason, err)
		}
		return abort(ResultAborted, ReasonReadFailed, err)
	}
	type found struct {
		repair  Repair[T]
		finding Finding[T]
	}
	var findings []found
	bad := map[string]bool{}
	input := &Input[T]{Cluster: c, Read: t, Now: now}
	for _, rp := range r.ctl.Repairs() {
		if !rp.Enabled(c) {
			for _, typ := range rp.Conditions() {
				o.reports = append(o.reports, Report{Type: typ, Status: metav1.ConditionUnknown, Reason: ReasonDisabled, Message: "the repair is disabled for this cluster"})
			}
			continue
		}
		f := rp.Detect(input)
		findings = append(findings, found{rp, f})
		for _, id := range f.Unhealthy() {
			bad[id] = true
		}
	}
	for id := range bad {
		o.unhealthy = append(o.unhealthy, id)
	}
	slices.Sort(o.unhealthy)
	common := s.Common()
	ps := remediation.Scope{Unhealthy: len(o.unhealthy), Total: r.ctl.Total(t), DryRun: common.DryRun}
	if sc, ok := r.ctl.(Scoper[T]); ok {
		sc.Scope(t, &ps)
	}
	o.policy = r.d.Policy.Begin(ctx, c, name, needs, ps)
	capped := &cappedPass{Pass: o.policy, left: common.Budget, controller: name}
	for _, f := range findings {
		env := &Env[T]{Cluster: c, Cloud: scope.Cloud, Scope: scope, Workload: in.Workload, Read: t, Pass: capped, Unhealthy: o.unhealthy, Now: now,
			r: r.metrics, o: o, repair: f.repair.Name(), controller: name, types: r.types, writer: r.d.Writer, clock: r.d.Clock}
		main := f.repair.Conditions()[0]
		for _, rep := range f.finding.Repair(ctx, env) {
			if rep.Type == "" {
				rep.Type = main
			}
			o.reports = append(o.reports, rep)
		}
	}
	r.ctl.Status(c, t, o.unhealthy, &o.status)
	if err := ctx.Err(); err != nil {
		// the repairs ran out of time: what they did is recorded, their conditions are not to be trusted
		o.result, o.reason, o.err = ResultAborted, ReasonDeadline, fmt.Errorf("the pass ran out of its %s: %w", r.timeout, err)
		return o
	}
	o.result = ResultOK
	return o
}

// write sends the controller's part of the status and the policy's, each only when it changed, and the
// Events of the repairs whose conditions changed.
func (r *Runner[S, T]) write(ctx context.Context, c *v1alpha1.VitalsCluster, o *outcome) error {
	name := r.ctl.Name()
	own := Owned{Owner: name, Fields: []string{name}, Types: r.types}
	if o.policy != nil {
		// the block as the pass left it (a deadline hit during the repairs still records what they did)
		own.Status.CopyBlock(name, &o.status)
	} else {
		own.Status.CopyBlock(name, &c.Status)
	}
	block := own.Status.Controller(name, true)
	if o.result == ResultOK {
		block.ObservedGeneration = c.Generation
		own.Conditions = reportsToConditions(o.reports)
	} else {
		for _, typ := range r.types {
			own.Conditions = append(own.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: o.reason,
				Message: "no complete pass: " + o.err.Error()})
		}
	}
	prev := c.Status.Controller(name, false)
	var history []v1alpha1.Action
	if prev != nil {
		history = prev.Actions
	}
	lines := newLines(history, o.lines)
	if o.policy != nil {
		lines = append(lines, o.policy.Lines()...)
	}
	block.Actions = AppendActions(history, lines...)
	changed := changedTypes(c, own.Conditions)
	if _, err := r.d.Writer.Write(ctx, c, own); err != nil {
		return err
	}
	r.sendEvents(c, o, changed)
	if o.policy == nil {
		return nil
	}
	return WriteRemediation(ctx, r.d.Writer, c, o.policy)
}

// WriteRemediation writes the remediation policy's part of c's status after policy's pass, when it changed.
func WriteRemediation(ctx context.Context, w *Writer, c *v1alpha1.VitalsCluster, policy remediation.Pass) error {
	var rs v1alpha1.ClusterStatus
	rs.Conditions = slices.Clone(c.Status.Conditions)
	rs.Remediation = c.Status.Remediation.DeepCopy()
	policy.Apply(&rs)
	rem := Owned{Owner: OwnerRemediation, Fields: []string{"remediation"}, Types: []string{v1alpha1.ConditionRemediationAllowed}}
	rem.Status.Remediation = rs.Remediation
	if cd := meta.FindStatusCondition(rs.Conditions, v1alpha1.ConditionRemediationAllowed); cd != nil {
		rem.Conditions = []metav1.Condition{*cd}
	}
	_, err := w.Write(ctx, c, rem)
	return err
}

// OwnerRemediation owns the remediation policy's part of the status (status.remediation and the
// RemediationAllowed condition), written after each controller's pass when it changed.
const OwnerRemediation = "remediation"

// sendEvents sends the PassAborted Event when the pass's conditions changed, and each repair's Events
// when its conditions changed: a state that stays is not announced again pass after pass.
func (r *Runner[S, T]) sendEvents(c *v1alpha1.VitalsCluster, o *outcome, changed map[string]bool) {
	if r.rec == nil {
		return
	}
	if o.result != ResultOK {
		if changed[r.types[0]] {
			r.event(c, notice{corev1.EventTypeWarning, "PassAborted", "Pass", o.reason + ": " + o.err.Error()})
		}
		return
	}
	for _, rp := range r.ctl.Repairs() {
		evs := o.events[rp.Name()]
		if len(evs) == 0 || !slices.ContainsFunc(rp.Conditions(), func(t string) bool { return changed[t] }) {
			continue
		}
		for _, e := range evs {
			r.event(c, e)
		}
	}
}

func (r *Runner[S, T]) event(c *v1alpha1.VitalsCluster, e notice) {
	note := e.note
	if len(note) > MaxEventNote {
		note = note[:MaxEventNote]
	}
	r.rec.Eventf(c, nil, e.typ, e.reason, e.action, "%s", note)
}

// settle writes the controller's conditions as Unknown for a reason that holds every pass back (an
// invalid spec, the controller disabled); a disabled controller's block is dropped. The Event of an
// invalid spec is sent once, when the condition changes.
func (r *Runner[S, T]) settle(ctx context.Context, c *v1alpha1.VitalsCluster, reason, msg string, keepBlock bool) error {
	name := r.ctl.Name()
	own := Owned{Owner: name, Fields: []string{name}, Types: r.types}
	if keepBlock {
		own.Status.CopyBlock(name, &c.Status)
	}
	for _, typ := range r.types {
		own.Conditions = append(own.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: reason, Message: msg})
	}
	changed := changedTypes(c, own.Conditions)
	if _, err := r.d.Writer.Write(ctx, c, own); err != nil {
		return err
	}
	if reason == ReasonInvalidSpec && changed[r.types[0]] && r.rec != nil {
		r.event(c, notice{corev1.EventTypeWarning, ReasonInvalidSpec, "Validate", msg})
	}
	return nil
}

func (r *Runner[S, T]) forget(key types.NamespacedName) {
	r.due.drop(key)
	r.wrote.drop(key)
	r.failures.drop(key)
	r.metrics.Forget(key)
	r.d.Policy.Forget(key)
	if f, ok := r.ctl.(interface{ Forget(types.NamespacedName) }); ok {
		f.Forget(key)
	}
}

// changedTypes are the condition types whose status, reason or message conds change on c.
func changedTypes(c *v1alpha1.VitalsCluster, conds []metav1.Condition) map[string]bool {
	out := map[string]bool{}
	for _, cd := range conds {
		cur := meta.FindStatusCondition(c.Status.Conditions, cd.Type)
		if cur == nil || cur.Status != cd.Status || cur.Reason != cd.Reason || cur.Message != cd.Message {
			out[cd.Type] = true
		}
	}
	return out
}

func reportsToConditions(reps []Report) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(reps))
	for _, rep := range reps {
		out = append(out, metav1.Condition{Type: rep.Type, Status: rep.Status, Reason: rep.Reason, Message: rep.Message})
	}
	return out
}

// newLines are the lines not yet in history (same controller, action, object and reason): a state that
// stays gets one line, so that the history keeps room.
func newLines(history, lines []v1alpha1.Action) []v1alpha1.Action {
	var out []v1alpha1.Action
	for _, l := range lines {
		dup := func(h v1alpha1.Action) bool {
			return h.Controller == l.Controller && h.Action == l.Action && h.Object == l.Object && h.Reason == l.Reason
		}
		if slices.ContainsFunc(history, dup) || slices.ContainsFunc(out, dup) {
			continue
		}
		out = append(out, l)
	}
	return out
}

// AppendActions appends lines to history, newest last, and keeps the last v1alpha1.MaxActions.
func AppendActions(history []v1alpha1.Action, lines ...v1alpha1.Action) []v1alpha1.Action {
	out := append(slices.Clone(history), lines...)
	if n := len(out) - v1alpha1.MaxActions; n > 0 {
		out = slices.Clone(out[n:])
	}
	return out
}

// schedule is when each cluster's next pass is due, for the generation it was computed at: a passing
// event (a resync, a restart of the informer) does not bring a pass forward, a spec change does.
type schedule struct {
	mu sync.Mutex
	at map[types.NamespacedName]due
}

type due struct {
	generation int64
	at         time.Time
}

func (s *schedule) get(key types.NamespacedName, generation int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.at[key]
	return d.at, ok && d.generation == generation
}

func (s *schedule) set(key types.NamespacedName, generation int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[key] = due{generation, at}
}

func (s *schedule) drop(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, key)
}

// versions are the resourceVersions of the runner's last status write of each cluster.
type versions struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

func (v *versions) get(key types.NamespacedName) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	rv, ok := v.rv[key]
	return rv, ok
}

func (v *versions) set(key types.NamespacedName, rv string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.rv[key] = rv
}

func (v *versions) drop(key types.NamespacedName) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.rv, key)
}
