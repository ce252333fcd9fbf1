package remediation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/health"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// readiness is the operator's health results, as a table.
type readiness map[string]health.Result

func (r readiness) Result(n string) (health.Result, bool) { x, ok := r[n]; return x, ok }

type pauseSwitch struct {
	paused bool
	why    string
}

func (s *pauseSwitch) Paused() (bool, string) { return s.paused, s.why }

// env is an Engine with a fake clock; the cluster "ns/c1" has a passing cloud check and the operator
// a passing keystone check.
type env struct {
	clock  *clocktesting.FakeClock
	e      *Engine
	checks *CheckSet
	ready  readiness
	sw     *pauseSwitch
	events *events.FakeRecorder
	reg    *prometheus.Registry
}

func newEnv(t *testing.T, limits *Limits) *env {
	t.Helper()
	v := &env{clock: clocktesting.NewFakeClock(t0), ready: readiness{"keystone": {Name: "keystone", Status: health.StatusOK}},
		sw: &pauseSwitch{}, events: events.NewFakeRecorder(1000), reg: prometheus.NewRegistry()}
	v.checks = NewChecks(v.clock)
	var err error
	v.e, err = New(Options{Limits: limits, Checks: v.checks, Readiness: v.ready, ReadinessChecks: []string{"keystone"},
		Switch: v.sw, Recorder: v.events, Metrics: NewMetrics(v.reg), Clock: v.clock})
	if err != nil {
		t.Fatal(err)
	}
	v.checks.Set(key1, CheckCloud, nil)
	return v
}

var key1 = types.NamespacedName{Namespace: "ns", Name: "c1"}

func newCluster(mutate ...func(*v1alpha1.VitalsCluster)) *v1alpha1.VitalsCluster {
	c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key1.Namespace, Name: key1.Name, Generation: 1}}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func annotate(k, v string) func(*v1alpha1.VitalsCluster) {
	return func(c *v1alpha1.VitalsCluster) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[k] = v
	}
}

func budget(n int32, w time.Duration) func(*v1alpha1.VitalsCluster) {
	return func(c *v1alpha1.VitalsCluster) {
		c.Spec.Remediation.Budget = &v1alpha1.BudgetSpec{Actions: &n, Window: &metav1.Duration{Duration: w}}
	}
}

// route is a removal of a route whose nexthop was first seen dead at evidence.
func route(dst, hop string, evidence time.Time) Action {
	return Action{Verb: "RemoveRoute", Kind: "route", ID: dst + "@" + hop, Name: dst, Evidence: evidence, Removal: true}
}

// proven is a route orphaned for an hour.
func proven(i int) Action {
	return route(fmt.Sprintf("198.19.%d.0/24", i), fmt.Sprintf("10.0.0.%d", i), t0.Add(-time.Hour))
}

func outcomes(ds []Decision) string {
	var s []string
	for _, d := range ds {
		if d.Outcome == Held {
			s = append(s, d.Reason)
		} else {
			s = append(s, string(d.Outcome))
		}
	}
	return strings.Join(s, ",")
}

func TestDecisions(t *testing.T) {
	old := t0.Add(-time.Hour)
	fail := errors.New("connection refused")
	tests := []struct {
		name    string
		limits  *Limits
		cluster []func(*v1alpha1.VitalsCluster)
		setup   func(*env)
		needs   []string
		scope   Scope
		actions []Action
		want    string // outcomes, comma-separated: Allowed, DryRun, or the reason of a hold
	}{
		{name: "defaults allow", actions: []Action{proven(1)}, want: "Allowed"},
		{name: "default budget is 10 per window", actions: seq(11), want: repeat("Allowed", 10) + ",BudgetExhausted"},
		{name: "budget 0 means none", cluster: fns(budget(0, time.Hour)), actions: seq(2), want: "BudgetExhausted,BudgetExhausted"},
		{name: "budget 2", cluster: fns(budget(2, time.Hour)), actions: seq(3), want: "Allowed,Allowed,BudgetExhausted"},
		{name: "operator budget 0 means none", limits: &Limits{Actions: 0, Window: time.Hour}, actions: seq(1), want: "OperatorBudgetExhausted"},
		{name: "operator budget 1", limits: &Limits{Actions: 1, Window: time.Hour}, actions: seq(2), want: "Allowed,OperatorBudgetExhausted"},
		{name: "paused", cluster: fns(annotate(v1alpha1.AnnotationPaused, "true")), actions: seq(1), want: "Paused"},
		{name: "pause misspelt still pauses", cluster: fns(annotate(v1alpha1.AnnotationPaused, "yes")), actions: seq(1), want: "Paused"},
		{name: "pause false", cluster: fns(annotate(v1alpha1.AnnotationPaused, "false")), actions: seq(1), want: "Allowed"},
		{name: "operator paused by flag", limits: &Limits{Actions: 5, Window: time.Hour, Paused: true}, actions: seq(1), want: "OperatorPaused"},
		{name: "operator paused by switch", setup: func(v *env) { v.sw.paused, v.sw.why = true, "ConfigMap says so" }, actions: seq(1), want: "OperatorPaused"},
		{name: "exclusion by destination", cluster: fns(annotate(v1alpha1.AnnotationExclude, " 198.19.1.0/24 , abc")),
			actions: seq(2), want: "Excluded,Allowed"},
		{name: "exclusion by destination@nexthop", cluster: fns(annotate(v1alpha1.AnnotationExclude, "198.19.1.0/24@10.0.0.1,198.19.2.0/24@10.0.0.9")),
			actions: seq(2), want: "Excluded,Allowed"},
		{name: "exclusion holds even when paused", cluster: fns(annotate(v1alpha1.AnnotationExclude, "198.19.1.0/24"), annotate(v1alpha1.AnnotationPaused, "true")),
			actions: seq(2), want: "Excluded,Paused"},
		{name: "cluster dry run", cluster: fns(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.DryRun = true }), actions: seq(1), want: "DryRun"},
		{name: "controller dry run", scope: Scope{DryRun: true}, actions: seq(1), want: "DryRun"},
		{name: "operator dry run", limits: &Limits{Actions: 5, Window: time.Hour, DryRun: true}, actions: seq(1), want: "DryRun"},
		{name: "dry run respects the budget", cluster: fns(budget(2, time.Hour)), scope: Scope{DryRun: true}, actions: seq(3), want: "DryRun,DryRun,BudgetExhausted"},
		{name: "operator check failing", setup: func(v *env) { v.ready["keystone"] = health.Result{Status: health.StatusFailed, Err: fail} }, actions: seq(1), want: "GateClosed"},
		{name: "operator check without a result", setup: func(v *env) { v.ready["keystone"] = health.Result{Status: health.StatusUnknown} }, actions: seq(1), want: "GateClosed"},
		{name: "operator check not registered", setup: func(v *env) { delete(v.ready, "keystone") }, actions: seq(1), want: "GateClosed"},
		{name: "cluster check never reported", needs: []string{CheckCloud, CheckWorkload}, actions: seq(1), want: "GateClosed"},
		{name: "cluster check failing", setup: func(v *env) { v.checks.Set(key1, CheckCloud, fail) }, needs: []string{CheckCloud}, actions: seq(1), want: "GateClosed"},
		{name: "cluster checks passing", setup: func(v *env) { v.checks.Set(key1, CheckWorkload, nil) }, needs: []string{CheckCloud, CheckWorkload}, actions: seq(1), want: "Allowed"},
		{name: "storm: 3 of 5 > 40% (2)", scope: Scope{Unhealthy: 3, Total: 5}, actions: seq(1), want: "Storm"},
		{name: "no storm: 2 of 5", scope: Scope{Unhealthy: 2, Total: 5}, actions: seq(1), want: "Allowed"},
		{name: "no storm: one of two (rounded up)", scope: Scope{Unhealthy: 1, Total: 2}, actions: seq(1), want: "Allowed"},
		{name: "storm as a number", cluster: fns(func(c *v1alpha1.VitalsCluster) { m := intstr.FromInt32(1); c.Spec.Remediation.MaxUnhealthy = &m }),
			scope: Scope{Unhealthy: 2, Total: 10}, actions: seq(1), want: "Storm"},
		{name: "storm rule off at 100%", cluster: fns(func(c *v1alpha1.VitalsCluster) { m := intstr.FromString("100%"); c.Spec.Remediation.MaxUnhealthy = &m }),
			scope: Scope{Unhealthy: 10, Total: 10}, actions: seq(1), want: "Allowed"},
		{name: "invalid maxUnhealthy holds", cluster: fns(func(c *v1alpha1.VitalsCluster) { m := intstr.FromString("many"); c.Spec.Remediation.MaxUnhealthy = &m }),
			actions: seq(1), want: "InvalidPolicy"},
		{name: "young evidence waits for the proof age", actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0.Add(-4*time.Minute)), route("198.19.2.0/24", "10.0.0.2", t0.Add(-5*time.Minute))},
			want: "ProofPending,Allowed"},
		// minProofAge 0s once removed a route 2 s old (issue 27): below the floor, the floor applies.
		{name: "proof age set to 0: the floor applies", cluster: fns(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MinProofAge = &metav1.Duration{} }),
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0.Add(-2*time.Second)), route("198.19.2.0/24", "10.0.0.2", t0.Add(-MinProofAgeFloor))}, want: "ProofPending,Allowed"},
		{name: "proof age 30s: the floor applies", cluster: fns(func(c *v1alpha1.VitalsCluster) {
			c.Spec.Remediation.MinProofAge = &metav1.Duration{Duration: 30 * time.Second}
		}),
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0.Add(-45*time.Second))}, want: "ProofPending"},
		{name: "proof age 0 with the unsafe annotation", cluster: fns(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MinProofAge = &metav1.Duration{} }, annotate(AnnotationUnsafeShortProofAge, "true")),
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0)}, want: "Allowed"},
		{name: "the unsafe annotation other than true does not lower the floor", cluster: fns(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MinProofAge = &metav1.Duration{} }, annotate(AnnotationUnsafeShortProofAge, "yes")),
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0)}, want: "ProofPending"},
		{name: "the unsafe annotation does not shorten a longer proof age", cluster: fns(annotate(AnnotationUnsafeShortProofAge, "true")),
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", t0.Add(-4*time.Minute))}, want: "ProofPending"},
		{name: "no proof age without evidence", actions: []Action{{Verb: "DeleteVolume", Kind: "volume", ID: "v1", Removal: true}}, want: "Allowed"},
		{name: "gate before proof age and budget", cluster: fns(budget(0, time.Hour)), setup: func(v *env) { v.checks.Set(key1, CheckCloud, fail) }, needs: []string{CheckCloud},
			actions: []Action{route("198.19.1.0/24", "10.0.0.1", old)}, want: "GateClosed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, tc.limits)
			if tc.setup != nil {
				tc.setup(v)
			}
			p := v.e.Begin(context.Background(), newCluster(tc.cluster...), "routegc", tc.needs, tc.scope)
			var ds []Decision
			for _, a := range tc.actions {
				d := p.Ask(context.Background(), a)
				if d.Outcome == Allowed {
					p.Done(context.Background(), a, nil)
				}
				ds = append(ds, d)
			}
			if got := outcomes(ds); got != tc.want {
				t.Errorf("decisions %s, want %s", got, tc.want)
				for _, d := range ds {
					t.Logf("  %s %s: %s", d.Outcome, d.Reason, d.Message)
				}
			}
			// One audit record per decision: a metric, an Event.
			if n := counterSum(t, v.reg, "vitals_remediation_actions_total"); n != len(ds) {
				t.Errorf("vitals_remediation_actions_total sums to %d for %d decisions", n, len(ds))
			}
			if n := len(v.events.Events); n != len(ds) {
				t.Errorf("%d Events for %d decisions", n, len(ds))
			}
		})
	}
}

func fns(f ...func(*v1alpha1.VitalsCluster)) []func(*v1alpha1.VitalsCluster) { return f }

func seq(n int) []Action {
	out := make([]Action, n)
	for i := range out {
		out[i] = proven(i + 1)
	}
	return out
}

func repeat(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+",", n), ",") }

// counterSum adds up every series of a counter.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return int(sum)
}

// A teardown (deorbit's deletes) is outside both budgets: a cluster's deletion with more volumes than
// the budget is not held for hours, and spends nothing other clusters need; exclusions, the pause and
// dry-run still apply, and each is recorded.
func TestTeardownOutsideTheBudgets(t *testing.T) {
	zero := int32(0)
	for _, tc := range []struct {
		name        string
		limits      *Limits
		cluster     *v1alpha1.VitalsCluster
		id          string
		wantOutcome Outcome
		wantReason  string
	}{
		{"budget 0: allowed", nil, newCluster(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.Budget = &v1alpha1.BudgetSpec{Actions: &zero} }), "v1", Allowed, ReasonAllowed},
		{"operator budget 0: allowed", &Limits{Actions: 0, Window: time.Hour}, newCluster(), "v1", Allowed, ReasonAllowed},
		{"excluded: held", nil, newCluster(annotate(v1alpha1.AnnotationExclude, "v1")), "v1", Held, ReasonExcluded},
		{"paused: held", nil, newCluster(annotate(v1alpha1.AnnotationPaused, "true")), "v1", Held, ReasonPaused},
		{"dry run: reported", &Limits{Actions: 0, Window: time.Hour, DryRun: true}, newCluster(), "v1", DryRun, ReasonDryRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, tc.limits)
			p := v.e.Begin(context.Background(), tc.cluster, "deorbit", nil, Scope{})
			for i := 0; i < 25; i++ {
				a := Action{Verb: "DeleteVolume", Kind: "volume", ID: tc.id, Removal: true, Teardown: true}
				d := p.Ask(context.Background(), a)
				if d.Outcome != tc.wantOutcome || d.Reason != tc.wantReason {
					t.Fatalf("ask %d: %+v, want %s/%s", i, d, tc.wantOutcome, tc.wantReason)
				}
				if d.Outcome == Allowed {
					p.Done(context.Background(), a, nil)
				}
			}
			var st v1alpha1.ClusterStatus
			p.Apply(&st)
			if n := len(st.Remediation.ActionTimes); n != 0 {
				t.Errorf("%d action times counted against the budget, want none", n)
			}
			if tc.wantOutcome == Allowed && len(p.Lines()) != 25 {
				t.Errorf("%d status lines, want one per delete", len(p.Lines()))
			}
		})
	}
}

// TestShortProofAgeIsLoud: below the floor the RemediationAllowed condition says which proof age applies,
// and with the unsafe annotation that it is in force, and so does the Event of each removal it lets
// through early.
func TestShortProofAgeIsLoud(t *testing.T) {
	zero := func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MinProofAge = &metav1.Duration{} }
	for _, tc := range []struct {
		name      string
		cluster   []func(*v1alpha1.VitalsCluster)
		condition string // in the RemediationAllowed message
		event     string // in the removal's Event ("" when none is expected)
	}{
		{"floor applies", fns(zero), "minProofAge 0s is below the 1m0s floor: 1m0s applies", ""},
		{"unsafe annotation", fns(zero, annotate(AnnotationUnsafeShortProofAge, "true")),
			"UNSAFE: minProofAge 0s is below the 1m0s floor, allowed by annotation " + AnnotationUnsafeShortProofAge,
			"(2s ago, UNSAFE: below the 1m0s floor, by annotation " + AnnotationUnsafeShortProofAge + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, nil)
			c := newCluster(tc.cluster...)
			p := v.e.Begin(context.Background(), c, "routegc", nil, Scope{})
			a := route("198.19.1.0/24", "10.0.0.1", t0.Add(-2*time.Second))
			if d := p.Ask(context.Background(), a); d.Outcome == Allowed {
				p.Done(context.Background(), a, nil)
			}
			var st v1alpha1.ClusterStatus
			p.Apply(&st)
			cd := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRemediationAllowed)
			if cd == nil || !strings.Contains(cd.Message, tc.condition) {
				t.Fatalf("RemediationAllowed %+v; want its message to say %q", cd, tc.condition)
			}
			ev := <-v.events.Events
			if tc.event != "" && (!strings.Contains(ev, "ActionTaken") || !strings.Contains(ev, tc.event)) {
				t.Fatalf("Event %q; want ActionTaken saying %q", ev, tc.event)
			}
			if tc.event == "" && !strings.Contains(ev, ReasonProofPending) {
				t.Fatalf("Event %q; want ProofPending", ev)
			}
		})
	}
}
