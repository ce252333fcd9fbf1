package remediation

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

func reboot(id, pool string) Action {
	return Action{Verb: "RebootServer", Kind: "server", ID: id, Class: Disruptive, Pool: pool}
}

// notConfigured is a check error of a cluster not configured yet: not an outage.
type notConfigured struct{}

func (notConfigured) Error() string     { return "MissingKubeconfig: no Secret" }
func (notConfigured) NotAnOutage() bool { return true }

func teardown(id string) Action {
	return Action{Verb: "RemoveRoute", Kind: "route", ID: id, Removal: true, Teardown: true}
}

func safeRule(i int) Action {
	return Action{Verb: "CreateSecurityGroupRule", Kind: "securitygroup", ID: "g", Name: string(rune('a' + i)), Class: Safe}
}

// TestClasses: the storm rule, the outage freeze, the pool rule and the quorum hold disruptive and
// destructive actions and never safe ones; safe ones spend no budget.
func TestClasses(t *testing.T) {
	storm := Scope{Unhealthy: 6, Total: 10}
	tests := []struct {
		name    string
		cluster []func(*v1alpha1.VitalsCluster)
		setup   func(*env)
		needs   []string
		scope   Scope
		actions []Action
		want    string
	}{
		{name: "storm holds a reboot and a delete, not the security group repairs", scope: storm,
			actions: []Action{reboot("s1", ""), proven(1), safeRule(0), safeRule(1)}, want: "Storm,Storm,Allowed,Allowed"},
		{name: "safe actions spend no budget", cluster: []func(*v1alpha1.VitalsCluster){budget(1, time.Hour)},
			actions: []Action{safeRule(0), safeRule(1), safeRule(2), reboot("s1", ""), reboot("s2", "b")}, want: "Allowed,Allowed,Allowed,Allowed,BudgetExhausted"},
		{name: "budget 0 still lets safe repairs through", cluster: []func(*v1alpha1.VitalsCluster){budget(0, time.Hour)},
			actions: []Action{safeRule(0), reboot("s1", "")}, want: "Allowed,BudgetExhausted"},
		{name: "one disruptive step per pool in a pass", actions: []Action{reboot("s1", "a"), reboot("s2", "a"), reboot("s3", "b"), reboot("s1", "a")},
			want: "Allowed,PoolBusy,Allowed,Allowed"},
		{name: "a pool with a step in flight waits, the server in flight goes on", scope: Scope{InFlight: map[string][]string{"a": {"s1"}}},
			actions: []Action{reboot("s2", "a"), reboot("s1", "a"), reboot("s3", "b")}, want: "PoolBusy,Allowed,Allowed"},
		{name: "no pool, no pool rule", actions: []Action{reboot("s1", ""), reboot("s2", "")}, want: "Allowed,Allowed"},
		{name: "quorum: 3 members, 2 healthy, the target healthy", actions: []Action{{Verb: "RebootServer", Kind: "server", ID: "cp1", Class: Disruptive, Pool: "control-plane",
			Quorum: &Quorum{Members: 3, Healthy: 2, TargetHealthy: true}}}, want: "QuorumAtRisk"},
		{name: "quorum: 3 members, 2 healthy, the target already down", actions: []Action{{Verb: "RebootServer", Kind: "server", ID: "cp1", Class: Disruptive, Pool: "control-plane",
			Quorum: &Quorum{Members: 3, Healthy: 2}}}, want: "Allowed"},
		{name: "an outage seen by the controller freezes disruptive and destructive actions", scope: Scope{Outage: "40 of 50 node Leases stale"},
			actions: []Action{reboot("s1", ""), proven(1), safeRule(0)}, want: "Frozen,Frozen,Allowed"},
		{name: "a workload check that failed 5m ago freezes", needs: []string{CheckCloud, CheckWorkload}, setup: func(v *env) {
			v.checks.Set(key1, CheckWorkload, errors.New("connection refused"))
			v.clock.Step(5 * time.Minute)
			v.checks.Set(key1, CheckWorkload, nil)
		}, actions: []Action{reboot("s1", ""), safeRule(0)}, want: "Frozen,Allowed"},
		{name: "a workload check that failed 5m ago for want of a kubeconfig does not freeze", needs: []string{CheckCloud, CheckWorkload}, setup: func(v *env) {
			v.checks.Set(key1, CheckWorkload, notConfigured{})
			v.clock.Step(5 * time.Minute)
			v.checks.Set(key1, CheckWorkload, nil)
		}, actions: []Action{reboot("s1", "")}, want: "Allowed"},
		{name: "and while it fails the gate is closed", needs: []string{CheckCloud, CheckWorkload}, setup: func(v *env) {
			v.checks.Set(key1, CheckWorkload, notConfigured{})
		}, actions: []Action{reboot("s1", "")}, want: "GateClosed"},
		{name: "and 11m ago no longer", needs: []string{CheckCloud, CheckWorkload}, setup: func(v *env) {
			v.checks.Set(key1, CheckWorkload, errors.New("connection refused"))
			v.clock.Step(11 * time.Minute)
			v.checks.Set(key1, CheckWorkload, nil)
		}, actions: []Action{reboot("s1", "")}, want: "Allowed"},
		{name: "outageFreeze 0s: no freeze", cluster: []func(*v1alpha1.VitalsCluster){func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.OutageFreeze = &metav1.Duration{} }},
			scope: Scope{Outage: "Leases stale"}, actions: []Action{reboot("s1", "")}, want: "Allowed"},
		{name: "a teardown is held neither by the outage freeze nor by the storm", scope: Scope{Outage: "the workload API server is unreachable", Unhealthy: 6, Total: 10},
			actions: []Action{teardown("r1"), teardown("v1"), reboot("s1", "")}, want: "Allowed,Allowed,Storm"},
		{name: "a teardown after a failed workload check", needs: []string{CheckCloud, CheckWorkload}, setup: func(v *env) {
			v.checks.Set(key1, CheckWorkload, errors.New("connection refused"))
			v.clock.Step(time.Minute)
			v.checks.Set(key1, CheckWorkload, nil)
		}, actions: []Action{teardown("r1"), proven(1)}, want: "Allowed,Frozen"},
		{name: "pause holds a teardown", cluster: []func(*v1alpha1.VitalsCluster){annotate(v1alpha1.AnnotationPaused, "true")},
			actions: []Action{teardown("r1")}, want: "Paused"},
		{name: "pause holds safe actions too", cluster: []func(*v1alpha1.VitalsCluster){annotate(v1alpha1.AnnotationPaused, "true")},
			actions: []Action{safeRule(0)}, want: "Paused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, nil)
			v.checks.Set(key1, CheckWorkload, nil)
			if tt.setup != nil {
				tt.setup(v)
			}
			needs := tt.needs
			if needs == nil {
				needs = []string{CheckCloud}
			}
			p := v.e.Begin(context.Background(), newCluster(tt.cluster...), "flight", needs, tt.scope)
			var ds []Decision
			for _, a := range tt.actions {
				d := p.Ask(context.Background(), a)
				if d.Outcome == Allowed {
					p.Done(context.Background(), a, nil)
				}
				ds = append(ds, d)
			}
			if got := outcomes(ds); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestOutageRemembered: the outage a pass saw is written to the status, read back by a restarted operator
// (it freezes, and its Outage says when the timers restart), and RemediationAllowed says Frozen.
func TestOutageRemembered(t *testing.T) {
	v := newEnv(t, nil)
	c := newCluster(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MaxUnhealthy = new(intstr.FromString("100%")) })
	p := v.e.Begin(context.Background(), c, "flight", []string{CheckCloud}, Scope{Outage: "45 of 50 node Leases stale"})
	p.Apply(&c.Status)
	if c.Status.Remediation.LastOutage == nil || !c.Status.Remediation.LastOutage.Time.Equal(t0) || c.Status.Remediation.LastOutageReason != "45 of 50 node Leases stale" {
		t.Fatalf("status.remediation = %+v", c.Status.Remediation)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionRemediationAllowed)
	if cond == nil || cond.Reason != ReasonFrozen {
		t.Fatalf("RemediationAllowed = %+v, want Frozen", cond)
	}
	w := newEnv(t, nil)
	w.clock.Step(3 * time.Minute)
	q := w.e.Begin(context.Background(), c, "flight", []string{CheckCloud}, Scope{})
	if o := q.Outage(); !o.Last.Equal(t0) || !o.Until.Equal(t0.Add(v1alpha1.DefaultOutageFreeze)) {
		t.Errorf("restarted: Outage %+v", o)
	}
	if d := q.Ask(context.Background(), reboot("s1", "")); d.Reason != ReasonFrozen {
		t.Errorf("restarted, 3m after the outage: %s, want Frozen", d.Reason)
	}
}
