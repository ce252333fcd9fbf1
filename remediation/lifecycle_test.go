package remediation

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// act runs one pass that asks for n proven removals, applies the pass to c's status as the controller
// does, and returns the decisions.
func act(v *env, c *v1alpha1.VitalsCluster, scope Scope, n int) []Decision {
	ctx := context.Background()
	p := v.e.Begin(ctx, c, "routegc", []string{CheckCloud}, scope)
	var ds []Decision
	for _, a := range seq(n) {
		d := p.Ask(ctx, a)
		if d.Outcome == Allowed {
			p.Done(ctx, a, nil)
		}
		ds = append(ds, d)
	}
	b := c.Status.Controller("routegc", true)
	b.Actions = append(b.Actions, p.Lines()...)
	p.Apply(&c.Status)
	return ds
}

func allowed(ds []Decision) int {
	n := 0
	for _, d := range ds {
		if d.Outcome == Allowed {
			n++
		}
	}
	return n
}

func TestBudgetSlidesAndSurvivesRestart(t *testing.T) {
	v := newEnv(t, nil)
	c := newCluster(budget(3, time.Hour))
	if n := allowed(act(v, c, Scope{}, 2)); n != 2 {
		t.Fatalf("first pass: %d allowed, want 2", n)
	}
	v.clock.Step(40 * time.Minute)
	ds := act(v, c, Scope{}, 2)
	if n := allowed(ds); n != 1 || ds[1].Reason != ReasonBudget {
		t.Fatalf("40m later: %d allowed (%s), want 1 then BudgetExhausted", n, outcomes(ds))
	}
	if want := t0.Add(time.Hour); !ds[1].RetryAt.Equal(want) {
		t.Errorf("RetryAt %s, want %s (the oldest action leaves the window)", ds[1].RetryAt, want)
	}
	if got := len(c.Status.Remediation.ActionTimes); got != 3 {
		t.Fatalf("status.remediation.actionTimes holds %d, want 3", got)
	}
	if c.Status.Remediation.BudgetRemaining != 0 {
		t.Errorf("budgetRemaining %d, want 0", c.Status.Remediation.BudgetRemaining)
	}
	if cond := conditionOf(c, v1alpha1.ConditionRemediationAllowed); cond.Status != metav1.ConditionFalse || cond.Reason != ReasonBudget {
		t.Errorf("RemediationAllowed %s/%s (%s), want False/BudgetExhausted", cond.Status, cond.Reason, cond.Message)
	}

	// A restart (or the other replica) knows only the status.
	w := newEnv(t, nil)
	w.clock.SetTime(v.clock.Now())
	if n := allowed(act(w, c, Scope{}, 1)); n != 0 {
		t.Fatalf("after a restart: %d allowed, want 0 (the window is in the status)", n)
	}
	w.clock.Step(21 * time.Minute) // the first two actions leave the window
	if n := allowed(act(w, c, Scope{}, 3)); n != 2 {
		t.Fatalf("after the window slid: %d allowed, want 2", n)
	}
	if got := testutil.ToFloat64(w.e.metrics.BudgetRemaining.WithLabelValues("ns/c1")); got != 0 {
		t.Errorf("vitals_remediation_budget_remaining = %v, want 0", got)
	}
}

func TestOperatorBudgetAcrossClusters(t *testing.T) {
	v := newEnv(t, &Limits{Actions: 3, Window: time.Hour})
	a := newCluster()
	b := newCluster(func(c *v1alpha1.VitalsCluster) { c.Name = "c2" })
	v.checks.Set(client.ObjectKeyFromObject(b), CheckCloud, nil)
	if n := allowed(act(v, a, Scope{}, 2)); n != 2 {
		t.Fatalf("cluster a: %d allowed, want 2", n)
	}
	ds := act(v, b, Scope{}, 2)
	if n := allowed(ds); n != 1 || ds[1].Reason != ReasonOperatorBudget {
		t.Fatalf("cluster b: %s, want Allowed,OperatorBudgetExhausted", outcomes(ds))
	}
	// Deleting a cluster and creating it again buys nothing.
	v.e.Forget(client.ObjectKeyFromObject(a))
	v.checks.Set(client.ObjectKeyFromObject(a), CheckCloud, nil)
	again := newCluster(budget(10, time.Hour))
	if ds := act(v, again, Scope{}, 1); allowed(ds) != 0 {
		t.Fatalf("a cluster created again under the same name: %s, want held", outcomes(ds))
	}
	// A restarted operator is seeded from every cluster's status before its first decision.
	w := newEnv(t, &Limits{Actions: 3, Window: time.Hour})
	w.e.seed = listOf{a, b}
	c3 := newCluster(func(c *v1alpha1.VitalsCluster) { c.Name = "c3" })
	w.checks.Set(client.ObjectKeyFromObject(c3), CheckCloud, nil)
	if ds := act(w, c3, Scope{}, 1); ds[0].Reason != ReasonOperatorBudget {
		t.Fatalf("a fresh cluster after a restart: %s, want OperatorBudgetExhausted (seeded from a and b)", outcomes(ds))
	}
}

// listOf lists fixed VitalsClusters (the seed of a restarted operator).
type listOf []*v1alpha1.VitalsCluster

func (l listOf) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	panic("not used")
}

func (l listOf) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	out := list.(*v1alpha1.VitalsClusterList)
	for _, c := range l {
		out.Items = append(out.Items, *c.DeepCopy())
	}
	return nil
}

func TestStormCoolsDown(t *testing.T) {
	v := newEnv(t, &Limits{Actions: 100, Window: time.Hour, StormCooldown: 10 * time.Minute})
	c := newCluster(func(c *v1alpha1.VitalsCluster) { m := intstr.FromString("40%"); c.Spec.Remediation.MaxUnhealthy = &m })
	if ds := act(v, c, Scope{Unhealthy: 6, Total: 10}, 1); ds[0].Reason != ReasonStorm {
		t.Fatalf("6 of 10: %s, want Storm", outcomes(ds))
	}
	if c.Status.Remediation.StormSince == nil || !c.Status.Remediation.StormSince.Time.Equal(t0) {
		t.Errorf("stormSince %v, want %s", c.Status.Remediation.StormSince, t0)
	}
	if cond := conditionOf(c, v1alpha1.ConditionRemediationAllowed); cond.Reason != ReasonStorm {
		t.Errorf("RemediationAllowed reason %s, want Storm", cond.Reason)
	}
	v.clock.Step(5 * time.Minute)
	ds := act(v, c, Scope{Unhealthy: 1, Total: 10}, 1)
	if ds[0].Reason != ReasonStorm || !ds[0].RetryAt.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("5m after the storm: %s (retry %s), want Storm until %s", outcomes(ds), ds[0].RetryAt, t0.Add(10*time.Minute))
	}
	// Another controller with nothing to say about storms is held too, and so is a restarted operator.
	w := newEnv(t, nil)
	w.clock.SetTime(v.clock.Now())
	if ds := act(w, c, Scope{}, 1); ds[0].Reason != ReasonStorm {
		t.Fatalf("after a restart, in the cool-down: %s, want Storm", outcomes(ds))
	}
	v.clock.Step(5 * time.Minute)
	if ds := act(v, c, Scope{Unhealthy: 1, Total: 10}, 1); allowed(ds) != 1 {
		t.Fatalf("after the cool-down: %s, want Allowed", outcomes(ds))
	}
}

func TestLinesAndCondition(t *testing.T) {
	v := newEnv(t, nil)
	c := newCluster(annotate(v1alpha1.AnnotationPaused, "true"))
	act(v, c, Scope{}, 2)
	act(v, c, Scope{}, 2)
	if n := len(c.Status.RouteGC.Actions); n != 2 {
		t.Errorf("%d status lines after two paused passes over two routes, want 2 (a repeated hold is written once): %+v", n, c.Status.RouteGC.Actions)
	}
	if l := c.Status.RouteGC.Actions[0]; l.Action != v1alpha1.ActionSkipped || l.Reason != ReasonPaused || l.Object != "route 198.19.1.0/24@10.0.0.1" || l.Controller != "routegc" {
		t.Errorf("status line %+v", l)
	}
	if cond := conditionOf(c, v1alpha1.ConditionRemediationAllowed); cond.Status != metav1.ConditionFalse || cond.Reason != ReasonPaused {
		t.Errorf("RemediationAllowed %s/%s, want False/Paused", cond.Status, cond.Reason)
	}
	delete(c.Annotations, v1alpha1.AnnotationPaused)
	act(v, c, Scope{}, 1)
	last := c.Status.RouteGC.Actions[len(c.Status.RouteGC.Actions)-1]
	if last.Action != v1alpha1.ActionRemoved || last.Reason != ReasonAllowed {
		t.Errorf("last status line %+v, want Removed/Allowed", last)
	}
	if cond := conditionOf(c, v1alpha1.ConditionRemediationAllowed); cond.Status != metav1.ConditionTrue {
		t.Errorf("RemediationAllowed %s/%s (%s), want True", cond.Status, cond.Reason, cond.Message)
	}
	if got := testutil.ToFloat64(v.e.metrics.Actions.WithLabelValues("routegc", "RemoveRoute", outcomeHeld, ReasonPaused)); got != 4 {
		t.Errorf("held/Paused counted %v times, want 4 (one per decision)", got)
	}
	// A failed action is recorded as such, and still counts against the budget.
	p := v.e.Begin(context.Background(), c, "routegc", nil, Scope{})
	a := proven(7)
	if d := p.Ask(context.Background(), a); d.Outcome != Allowed {
		t.Fatalf("%+v", d)
	}
	p.Done(context.Background(), a, context.DeadlineExceeded)
	if l := p.Lines(); len(l) != 1 || l[0].Action != v1alpha1.ActionFailed {
		t.Errorf("lines %+v, want one Failed", l)
	}
	p.Apply(&c.Status)
	if c.Status.Remediation.BudgetRemaining != 8 {
		t.Errorf("budgetRemaining %d, want 8 (the failed try counts)", c.Status.Remediation.BudgetRemaining)
	}
}

func conditionOf(c *v1alpha1.VitalsCluster, typ string) metav1.Condition {
	for _, x := range c.Status.Conditions {
		if x.Type == typ {
			return x
		}
	}
	return metav1.Condition{}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{{Actions: -1, Window: time.Hour}, {Actions: 1}, {Actions: 1, Window: time.Hour, StormCooldown: -time.Second}} {
		if _, err := New(Options{Limits: &l}); err == nil {
			t.Errorf("New(%+v): no error", l)
		}
	}
	if _, err := New(Options{Limits: &Limits{Window: time.Hour}}); err != nil {
		t.Errorf("budget 0 is valid (no actions): %v", err)
	}
}

func TestStatusIsNotTakenOnTrust(t *testing.T) {
	v := newEnv(t, &Limits{Actions: 5, Window: time.Hour})
	c := newCluster(budget(3, time.Hour))
	if n := allowed(act(v, c, Scope{}, 2)); n != 2 {
		t.Fatalf("%d allowed, want 2", n)
	}
	// Clearing the status (whoever may write it) buys nothing while the operator runs.
	c.Status.Remediation = nil
	if n := allowed(act(v, c, Scope{}, 3)); n != 1 {
		t.Fatalf("after the status was cleared: %d allowed, want 1", n)
	}
	// A forged status with many actions, some in the future, cannot spend the operator-wide budget of
	// the other clusters: a status adds at most the cluster's own budget, and nothing from the future.
	w := newEnv(t, &Limits{Actions: 5, Window: time.Hour})
	forged := newCluster(budget(3, time.Hour), func(c *v1alpha1.VitalsCluster) { c.Name = "forged" })
	rs := &v1alpha1.RemediationStatus{StormSince: &metav1.Time{Time: t0.Add(24 * time.Hour)}}
	for i := range 50 {
		rs.ActionTimes = append(rs.ActionTimes, metav1.NewTime(t0.Add(time.Duration(i-25)*time.Minute)))
	}
	forged.Status.Remediation = rs
	w.e.seed = listOf{forged}
	other := newCluster(func(c *v1alpha1.VitalsCluster) { c.Name = "other" })
	w.checks.Set(client.ObjectKeyFromObject(other), CheckCloud, nil)
	if n := allowed(act(w, other, Scope{}, 3)); n != 2 {
		t.Fatalf("another cluster after a forged status: %d allowed, want 2 (5 operator-wide, 3 of them the forged cluster's budget)", n)
	}
	w.checks.Set(client.ObjectKeyFromObject(forged), CheckCloud, nil)
	if ds := act(w, forged, Scope{}, 1); ds[0].Reason != ReasonBudget {
		t.Fatalf("the forged cluster: %s, want BudgetExhausted (not a storm from the future)", outcomes(ds))
	}
}
