package deorbit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// Verbs of deorbit's deletes in the remediation policy.
const (
	VerbDeleteVolumeSnapshot = "DeleteVolumeSnapshot"
	VerbDeletePVC            = "DeletePVC"
	VerbDeleteService        = "DeleteService"
	VerbRemoveRoute          = routes.VerbRemoveRoute
	VerbDeleteVolume         = "DeleteVolume"
	VerbDeleteLoadBalancer   = "DeleteLoadBalancer"
	VerbDeletePort           = "DeletePort"
	VerbDeleteFloatingIP     = "DeleteFloatingIP"
)

// Defaults of the per-cluster settings and of the engine.
const (
	DefaultGiveUpAfter            = v1alpha1.DefaultGiveUpAfter
	DefaultUnreachableGracePeriod = v1alpha1.DefaultUnreachableGracePeriod
	DefaultCloudWaitTimeout       = v1alpha1.DefaultCloudWaitTimeout
	// DefaultBudget is the most deletes one step issues (the pass cap, spec.controllers.deorbit.budget).
	DefaultBudget = v1alpha1.DefaultDeorbitBudget
	// DefaultWorkers is how many deletes and reads run at once.
	DefaultWorkers = 8
	// DefaultBackoff and DefaultMaxBackoff bound the wait before a failed delete is tried again.
	DefaultBackoff    = 5 * time.Second
	DefaultMaxBackoff = 5 * time.Minute
	// DefaultPoll is the longest wait between two looks at the cloud while it deletes.
	DefaultPoll = 30 * time.Second
	// minPoll is the shortest (the first look at a cloud that deletes).
	minPoll = 250 * time.Millisecond
	// DefaultReplan is how often a dry run's plan is made again while the finalizer is held.
	DefaultReplan = 10 * time.Minute
)

// Target is the cluster deorbit cleans up after.
type Target struct {
	// Key names the cluster in logs and metrics ("namespace/name"; the CLI: the cluster name).
	Key string
	// ClusterName is the name the cloud provider tags the cluster's resources with.
	ClusterName string
	// SubnetID is the nodes' subnet: a load balancer is proven the cluster's by its name only with its VIP
	// there ("": on any subnet).
	SubnetID string
	// RouterID carries the cluster's pod routes ("": no routes phase).
	RouterID string
	// PodCIDRs: a route is the cluster's only if its destination lies inside one of them.
	PodCIDRs []netip.Prefix
	// Subnets of the nodes (spec.openstack.subnetID's CIDR): when set, a route is the cluster's only if its
	// nexthop lies inside one of them too, so that a router shared with another cluster of the same pod CIDRs
	// keeps that cluster's routes (nil: any nexthop; a nexthop of a family none of them is: any nexthop too).
	Subnets []netip.Prefix
	// Protected routes (spec.controllers.routes.protectedRoutes) are never removed, even inside the pod CIDRs.
	Protected []routes.ProtectedRoute
}

// Narrow fits t to what scope proved of the cluster's network (the operator's and `vitals deorbit`'s one rule):
// a router the project no longer shows has no routes left to remove (its owner deleted it, and them); with the
// nodes' subnet known (SubnetID), a route is the cluster's only through that subnet, and a subnet that is gone
// (or whose CIDR does not parse) took its routes with it.
func (t *Target) Narrow(scope *tenancy.Scope) {
	if scope.Router == nil {
		t.RouterID = ""
	}
	if t.SubnetID == "" {
		return
	}
	if pfx, err := subnetPrefix(scope.Subnet); err == nil {
		t.Subnets = []netip.Prefix{pfx}
	} else {
		t.RouterID = ""
	}
}

// subnetPrefix is s's CIDR (an error: s is nil, or its CIDR does not parse).
func subnetPrefix(s *openstack.Subnet) (netip.Prefix, error) {
	if s == nil {
		return netip.Prefix{}, errors.New("no subnet")
	}
	pfx, err := netip.ParsePrefix(s.CIDR)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("subnet %s: %w", s.ID, err)
	}
	return pfx.Masked(), nil
}

// Settings are one cluster's deorbit settings with defaults applied (spec.controllers.deorbit). DryRun is
// deorbit's own dry run (the policy's and the operator's apply on top); Budget the most deletes one step
// issues.
type Settings = v1alpha1.DeorbitSettings

// Asker decides on each delete, fences it and records it: a remediation.Pass.
type Asker interface {
	Ask(ctx context.Context, a remediation.Action) remediation.Decision
	// Fence guards the write that carries out allowed actions (see remediation.Pass).
	Fence(actions ...remediation.Action) fencing.Fence
	Done(ctx context.Context, a remediation.Action, err error)
}

// Cloud is what deorbit reads and deletes in the cluster's project: a tenancy.Scope's Cloud, which
// proves every object the project's before it deletes it.
type Cloud interface {
	openstack.Routers
	openstack.Volumes
	openstack.LoadBalancers
	openstack.Ports
	openstack.FloatingIPs
}

var _ Cloud = tenancy.Cloud(nil)

// Input is what one step works with.
type Input struct {
	Target   Target
	Settings Settings
	// Workload is the workload cluster (nil: unreachable, WorkloadErr says why).
	Workload    client.Client
	WorkloadErr error
	// SkipWorkload, when set, says why the Kubernetes phases are skipped for good (e.g. the workload
	// cluster is the operator's own).
	SkipWorkload string
	// Cloud in the cluster's proven project (nil: not verified, CloudErr says why).
	Cloud    Cloud
	CloudErr error
	// SweepGuard (nil: none) is asked once per step, right before the cloud-side sweep's first delete: a
	// reason it returns (e.g. another cluster names the same cloud cluster) refuses every delete of the
	// sweep, and so does an error (fail closed): what the sweep finds is reported, not deleted.
	SweepGuard func(context.Context) (string, error)
	// SweepRefused, when set, refuses every delete of the sweep for good, before the guard is asked: a proof only
	// the sweep needs cannot be run where the engine runs (`vitals deorbit` without the management cluster to read
	// same-named neighbours from). What the sweep finds is reported not proven and never touched, and the sweep
	// does not wait for it.
	SweepRefused string
	// Policy is asked before every delete (required).
	Policy Asker
}

// Result of one step.
type Result struct {
	// Next is when the next step is due.
	Next time.Time
	// Release: the finalizer may go (Done or GaveUp).
	Release bool
	// Err is the step's error, if any (also in status.lastError).
	Err error
}

// Engine runs deorbit's phase machine, one step at a time. The state lives in a DeorbitStatus only,
// so that a restarted operator (or the CLI run again) resumes where the last step was. A step never
// leaves a goroutine behind: its parallel deletes and reads end before it returns.
type Engine struct {
	Clock clock.PassiveClock // nil: the real clock
	// Rand returns a number in [0, 1) for the jitter of the backoff (nil: math/rand/v2).
	Rand backoff.Rand
	// Workers bound the deletes and reads running at once (default DefaultWorkers).
	Workers int
	// Backoff and MaxBackoff of failed deletes (default DefaultBackoff, DefaultMaxBackoff).
	Backoff, MaxBackoff time.Duration
	// Poll is the longest wait between looks at a cloud that deletes (default DefaultPoll).
	Poll time.Duration
	// Metrics count the deletes (nil: not counted).
	Metrics *Metrics
}

func (e *Engine) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

func (e *Engine) workers() int {
	if e.Workers > 0 {
		return e.Workers
	}
	return DefaultWorkers
}

func (e *Engine) poll() time.Duration {
	if e.Poll > 0 {
		return e.Poll
	}
	return DefaultPoll
}

// backoff is the wait before attempt n+1 after n failed attempts: exponential from Backoff, capped at
// MaxBackoff, with up to half of it again as jitter so that many clusters do not retry in step. It is
// computed from the attempts kept in the status, so that it survives restarts.
func (e *Engine) backoff(attempts int32) time.Duration {
	base, ceil := e.Backoff, e.MaxBackoff
	if base <= 0 {
		base = DefaultBackoff
	}
	if ceil <= 0 {
		ceil = DefaultMaxBackoff
	}
	b := backoff.New(wait.Backoff{Duration: base, Factor: 2, Jitter: 0.5, Steps: math.MaxInt32, Cap: ceil}, e.Rand)
	var d time.Duration
	for i := int32(0); i < max(attempts, 1); i++ {
		d = b.Next()
	}
	return d
}

// phases in order; each returns whether it is complete and, if not, when to look again.
var phases = []string{
	v1alpha1.DeorbitPhaseSnapshots, v1alpha1.DeorbitPhaseClaims, v1alpha1.DeorbitPhaseServices,
	v1alpha1.DeorbitPhaseRoutes, v1alpha1.DeorbitPhaseWaitForCloud, v1alpha1.DeorbitPhaseSweep,
}

// AllPhases are every phase a status may show, for the phase metric.
var AllPhases = append(append([]string(nil), phases...), v1alpha1.DeorbitPhaseDone, v1alpha1.DeorbitPhaseGaveUp, v1alpha1.DeorbitPhaseDryRunPlanned)

// step is one step's working state.
type step struct {
	e   *Engine
	in  Input
	st  *v1alpha1.DeorbitStatus
	now time.Time
	// issued counts the deletes this step issued, against the budget.
	issued int
	errs   []error
	// refused is the sweep guard's answer, once asked in this step (nil: not asked yet).
	refused *string
	// omittedRemaining counts the resources still to delete or confirm that capResources left out in this step.
	omittedRemaining int32
}

func (s *step) fail(err error) { s.errs = append(s.errs, err) }

// sweepRefused says why the sweep may not delete ("": it may), asking the guard at the first call of the
// step; a guard that fails refuses.
func (s *step) sweepRefused(ctx context.Context) string {
	if s.in.SweepRefused != "" {
		return s.in.SweepRefused
	}
	if s.in.SweepGuard == nil {
		return ""
	}
	if s.refused == nil {
		why, err := s.in.SweepGuard(ctx)
		if err != nil {
			s.fail(err)
			why = "the sweep's guard could not be checked, so the sweep deletes nothing: " + err.Error()
		}
		s.refused = &why
	}
	return *s.refused
}

// Step runs the current phase, and the next ones as long as each completes, then says when to come
// back. It changes st only.
func (e *Engine) Step(ctx context.Context, in Input, st *v1alpha1.DeorbitStatus) Result {
	now := e.now()
	s := &step{e: e, in: in, st: st, now: now}
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: now}
		s.setPhase(phases[0])
	}
	switch st.Phase {
	case v1alpha1.DeorbitPhaseDone, v1alpha1.DeorbitPhaseGaveUp:
		return Result{Release: true}
	case v1alpha1.DeorbitPhaseDryRunPlanned:
		// Plan again: the dry run may have been turned off, and the clusters' objects change.
		s.replan()
	case "":
		s.setPhase(phases[0])
	}
	s.takeLedger(ctx)
	s.applyLedger()
	giveUp := st.StartTime.Add(in.Settings.GiveUpAfter)
	if !now.Before(giveUp) {
		s.giveUp(ctx)
		return s.result(Result{Release: true})
	}
	for {
		done, next := s.run(ctx)
		if !done && s.issued >= in.Settings.Budget && in.Settings.Budget > 0 {
			// This step's cap was reached: the next deletes are due at once (the floor below).
			next = now
		}
		if !done {
			if next.IsZero() || next.After(giveUp) {
				next = giveUp
			}
			next = maxTime(next, now.Add(time.Millisecond))
			return s.result(Result{Next: next})
		}
		if i := phaseIndex(st.Phase); i+1 < len(phases) {
			s.setPhase(phases[i+1])
			continue
		}
		// The sweep is complete.
		if s.count(func(r *v1alpha1.DeorbitResource) bool { return r.State == v1alpha1.DeorbitWouldDelete }) > 0 {
			s.setPhase(v1alpha1.DeorbitPhaseDryRunPlanned)
			next := minTime(now.Add(DefaultReplan), giveUp)
			return s.result(Result{Next: next})
		}
		s.setPhase(v1alpha1.DeorbitPhaseDone)
		st.CompletionTime = &metav1.Time{Time: now}
		return s.result(Result{Release: true})
	}
}

func (s *step) result(r Result) Result {
	s.st.LastError = ""
	if err := errors.Join(s.errs...); err != nil {
		r.Err = err
		msg := err.Error()
		if len(msg) > 4000 {
			msg = msg[:4000]
		}
		s.st.LastError = msg
	}
	if !r.Next.IsZero() {
		s.st.NextAttemptTime = &metav1.Time{Time: r.Next}
	} else {
		s.st.NextAttemptTime = nil
	}
	s.capResources()
	s.countAll()
	return r
}

func (s *step) run(ctx context.Context) (bool, time.Time) {
	switch s.st.Phase {
	case v1alpha1.DeorbitPhaseSnapshots:
		return s.workloadPhase(ctx, s.withServices(s.snapshots))
	case v1alpha1.DeorbitPhaseClaims:
		return s.workloadPhase(ctx, s.withServices(s.claims))
	case v1alpha1.DeorbitPhaseServices:
		return s.workloadPhase(ctx, s.services)
	case v1alpha1.DeorbitPhaseRoutes:
		return s.cloudPhase(ctx, s.routes)
	case v1alpha1.DeorbitPhaseWaitForCloud:
		return s.cloudPhase(ctx, s.waitForCloud)
	case v1alpha1.DeorbitPhaseSweep:
		return s.cloudPhase(ctx, s.sweep)
	}
	s.fail(fmt.Errorf("unknown phase %q", s.st.Phase))
	s.setPhase(phases[0])
	return false, s.now.Add(minPoll)
}

func (s *step) setPhase(p string) {
	s.st.Phase = p
	s.st.PhaseStartTime = &metav1.Time{Time: s.now}
}

func phaseIndex(p string) int {
	for i, q := range phases {
		if q == p {
			return i
		}
	}
	return -1
}

// replan starts a dry run's plan again: what would have been deleted is pending again.
func (s *step) replan() {
	for i := range s.st.Resources {
		if s.st.Resources[i].State == v1alpha1.DeorbitWouldDelete {
			s.st.Resources[i].State = v1alpha1.DeorbitPending
		}
	}
	s.setPhase(phases[0])
}

// workloadPhase runs a Kubernetes phase, or, when the workload cluster has been unreachable for the
// grace period (or is skipped for good), skips every Kubernetes phase.
func (s *step) workloadPhase(ctx context.Context, phase func(context.Context, client.Client) (bool, time.Time, error)) (bool, time.Time) {
	st := s.st
	if why := s.in.SkipWorkload; why != "" {
		st.WorkloadSkipped = why
		s.setPhase(v1alpha1.DeorbitPhaseServices) // the caller moves on to the first cloud phase
		return true, time.Time{}
	}
	if st.WorkloadSkipped != "" {
		s.setPhase(v1alpha1.DeorbitPhaseServices)
		return true, time.Time{}
	}
	var err error
	if s.in.Workload == nil {
		err = s.in.WorkloadErr
		if err == nil {
			err = errors.New("no access to the workload cluster")
		}
	} else {
		var done bool
		var next time.Time
		done, next, err = phase(ctx, s.in.Workload)
		if err == nil {
			st.UnreachableSince = nil
			return done, next
		}
	}
	// Unreachable (or its API failed): wait out the grace period, then go on with the cloud.
	s.fail(fmt.Errorf("%s: workload cluster: %w", st.Phase, err))
	if st.UnreachableSince == nil {
		st.UnreachableSince = &metav1.Time{Time: s.now}
	}
	until := st.UnreachableSince.Add(s.in.Settings.UnreachableGracePeriod)
	if !s.now.Before(until) {
		st.WorkloadSkipped = fmt.Sprintf("the workload cluster was unreachable for %s (since %s): %v; %s",
			s.in.Settings.UnreachableGracePeriod, st.UnreachableSince.UTC().Format(time.RFC3339), err, ledgerNote(st.Seen))
		s.setPhase(v1alpha1.DeorbitPhaseServices)
		return true, time.Time{}
	}
	return false, minTime(until, s.now.Add(s.e.poll()))
}

// cloudPhase runs a cloud phase; without a verified cloud nothing can be done or checked, and the
// phase waits (until the give-up).
func (s *step) cloudPhase(ctx context.Context, phase func(context.Context, Cloud) (bool, time.Time)) (bool, time.Time) {
	if s.in.Cloud == nil {
		err := s.in.CloudErr
		if err == nil {
			err = errors.New("no verified cloud")
		}
		s.fail(fmt.Errorf("%s: the cloud could not be verified: %w", s.st.Phase, err))
		return false, s.now.Add(s.e.poll())
	}
	return phase(ctx, s.in.Cloud)
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// applyLedger marks every volume of the keep ledger (status.deorbit.seen.keep, recorded while the workload
// cluster was reachable) Kept: no phase deletes it, whether or not the workload cluster answers now.
func (s *step) applyLedger() {
	if s.st.Seen == nil {
		return
	}
	for _, k := range s.st.Seen.Keep {
		if k.Type != v1alpha1.DeorbitVolume || k.ID == "" {
			continue
		}
		r := s.track(v1alpha1.DeorbitVolume, k.ID, k.Name, v1alpha1.DeorbitKept)
		if r.State != v1alpha1.DeorbitKept && r.State != v1alpha1.DeorbitGone {
			r.State, r.LastError = v1alpha1.DeorbitKept, "the keep ledger (status.deorbit.seen.keep) keeps it: "+k.Why
		} else if r.LastError == "" {
			r.LastError = "the keep ledger (status.deorbit.seen.keep) keeps it: " + k.Why
		}
	}
}

// takeLedger reads the keep ledger from the workload cluster (KeepLedger, the operator's record's rule) when no
// ledger was recorded since the teardown started: once per teardown, before its workload phases delete anything, so
// that what the workload cluster says to keep now is kept by every phase, whether the teardown runs in the operator
// (whose record, taken while the cluster lived, may be older than the last keep marker) or in `vitals deorbit` (which
// has no record). A read that fails leaves the earlier ledger as it is: a partial read is never a ledger.
func (s *step) takeLedger(ctx context.Context) {
	if s.in.Workload == nil || s.in.SkipWorkload != "" || s.st.WorkloadSkipped != "" || phaseIndex(s.st.Phase) >= phaseIndex(v1alpha1.DeorbitPhaseRoutes) {
		return
	}
	if seen := s.st.Seen; seen != nil && seen.KeepTime != nil && !seen.KeepTime.Before(s.st.StartTime) {
		return
	}
	keep, err := KeepLedger(ctx, s.in.Workload)
	if err != nil {
		return // the workload phases report the workload cluster's failure
	}
	if s.st.Seen == nil {
		s.st.Seen = &v1alpha1.DeorbitSeen{}
	}
	s.st.Seen.Keep, s.st.Seen.KeepTime = mergeLedger(s.st.Seen.Keep, keep), &metav1.Time{Time: s.now}
}

// mergeLedger is the ledger fresh read now, with what an earlier ledger kept that the workload cluster no longer
// shows (a Retain PersistentVolume deleted by hand leaves its volume in Cinder): within a teardown, what was said to
// be kept stays kept. Sorted by type and ID, at most maxKeep.
func mergeLedger(earlier, fresh []v1alpha1.DeorbitKeepEntry) []v1alpha1.DeorbitKeepEntry {
	out := append([]v1alpha1.DeorbitKeepEntry(nil), fresh...)
	for _, k := range earlier {
		if !slices.ContainsFunc(fresh, func(f v1alpha1.DeorbitKeepEntry) bool { return f.Type == k.Type && f.ID == k.ID }) {
			out = append(out, k)
		}
	}
	return sortedLedger(out)
}

// ledgerNote says what keeps volumes from the sweep when the workload cluster's phases are skipped.
func ledgerNote(seen *v1alpha1.DeorbitSeen) string {
	if seen == nil || seen.KeepTime == nil {
		return "the workload cluster was never seen reachable, so no keep ledger was recorded: only a volume's own Cinder metadata " +
			v1alpha1.AnnotationKeep + "=true keeps it from the sweep"
	}
	n := 0
	for _, k := range seen.Keep {
		if k.Type == v1alpha1.DeorbitVolume {
			n++
		}
	}
	return fmt.Sprintf("the keep ledger recorded at %s keeps %d volumes (status.deorbit.seen.keep), and a volume's Cinder metadata %s=true keeps it too",
		seen.KeepTime.UTC().Format(time.RFC3339), n, v1alpha1.AnnotationKeep)
}
