package e2e

// The route collector against the real kube-apiserver and the real Neutron (and Nova on the full
// tier), one pass at a time with a fake clock: each test calls Reconcile as the manager would. Every
// removal goes through the remediation policy (package remediation), with the same clock.

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/health"
	oschecks "github.com/vitalsproject/vitals/health/checks/openstack"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/routes"
	"github.com/vitalsproject/vitals/tenancy"
)

// gcFixture is one Cluster over one throw-away router, and a Reconciler with a fake clock.
type gcFixture struct {
	t       *testing.T
	c       client.Client
	net     *opNet
	cloud   *openstack.Cloud
	key     types.NamespacedName
	clock   *clocktesting.FakeClock
	rec     *routegc.Reconciler
	deps    *pass.Deps
	gcm     *routegc.Metrics
	reg     *prometheus.Registry
	events  *events.FakeRecorder
	policy  *remediation.Engine
	pm      *remediation.Metrics
	servers bool
}

func newGCFixture(t *testing.T, mutate func(*v1alpha1.VitalsCluster)) *gcFixture {
	t.Helper()
	cfg := testenv.Kube(t)
	env := testenv.OpenStack(t)
	opInstallCRD(t, cfg)
	f := &gcFixture{t: t, c: opClient(t, cfg)}
	f.servers = env.Tier == testenv.TierFull
	auth := opAuth(t, env)
	f.cloud = opConnect(t, auth, nil)
	f.net = opNewNet(t, opConnect(t, auth, nil))
	ns := opNamespace(t, f.c)
	if f.servers {
		f.net.Server(f.cloud, 4) // a node that lives through the test
	}
	sources := []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	if f.servers {
		sources = append(sources, v1alpha1.AddressSourceServers)
	}
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c1"},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{RouterID: f.net.Router, ProjectID: f.cloud.ProjectID(), NetworkID: f.net.Network, SubnetID: f.net.Subnet},
			PodCIDRs:  []v1alpha1.CIDR{"198.19.0.0/16"},
			// The two-pass proof decides in these tests; TestOperatorRouteGCProofAge keeps the default.
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: time.Minute}},
			Controllers: v1alpha1.ControllersSpec{RouteGC: v1alpha1.RouteGCSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
				AddressSources: sources,
			}},
		},
	}
	if mutate != nil {
		mutate(cl)
	}
	if err := f.c.Create(context.Background(), cl); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	f.key = client.ObjectKeyFromObject(cl)
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	f.reg = prometheus.NewRegistry()
	f.events = events.NewFakeRecorder(1000)
	f.pm = remediation.NewMetrics(f.reg)
	f.setPolicy(remediation.Options{})
	f.deps = &pass.Deps{Client: f.c, Tenancy: staticTenancy{f.cloud, f.cloud.ProjectID()}, Clock: f.clock,
		Recorder: func(string) events.EventRecorder { return f.events }, Policy: f.policy, Checks: f.policy.Checks()}
	f.gcm = routegc.NewMetrics(f.reg)
	rec, err := routegc.New(f.deps, routegc.Options{Metrics: f.gcm, PassMetrics: pass.NewMetrics(routegc.Name, f.reg)})
	if err != nil {
		t.Fatal(err)
	}
	f.rec = rec
	return f
}

// setPolicy gives the fixture a new remediation policy (a restarted operator) with the fixture's
// clock, events and registry.
func (f *gcFixture) setPolicy(o remediation.Options) {
	f.t.Helper()
	o.Clock, o.Recorder, o.Metrics = f.clock, f.events, f.pm
	p, err := remediation.New(o)
	if err != nil {
		f.t.Fatal(err)
	}
	f.policy = p
	if f.deps != nil {
		f.deps.Policy, f.deps.Checks = p, p.Checks()
	}
}

// decisions is vitals_remediation_actions_total for routegc's removals with an outcome and reason.
func (f *gcFixture) decisions(outcome, reason string) float64 {
	return testutil.ToFloat64(f.pm.Actions.WithLabelValues(routegc.Name, routes.VerbRemoveRoute, outcome, reason))
}

// routeObject names a route as the status lines and the exclusion annotation do.
func routeObject(r openstack.Route) string { return "route " + r.Destination + "@" + r.NextHop }

// pass runs Reconcile once and returns the Cluster after it.
func (f *gcFixture) pass() (*v1alpha1.VitalsCluster, ctrl.Result) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key})
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	return &cl, res
}

func (f *gcFixture) routesString() string {
	var s []string
	for r := range f.net.Routes() {
		s = append(s, r.Destination+" via "+r.NextHop)
	}
	return strings.Join(s, ", ")
}

func (f *gcFixture) mustHave(what string, rs ...openstack.Route) {
	f.t.Helper()
	have := f.net.Routes()
	for _, r := range rs {
		if !have[r] {
			f.t.Fatalf("%s: route %s via %s is gone (router has: %s)", what, r.Destination, r.NextHop, f.routesString())
		}
	}
}

func (f *gcFixture) mustNotHave(what string, rs ...openstack.Route) {
	f.t.Helper()
	have := f.net.Routes()
	for _, r := range rs {
		if have[r] {
			f.t.Fatalf("%s: route %s via %s is still there", what, r.Destination, r.NextHop)
		}
	}
}

func TestOperatorRouteGCRemovesOrphanAfterTwoPassesOnly(t *testing.T) {
	parallel(t)
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.RouteGC.ProtectedRoutes = []v1alpha1.ProtectedRoute{{Destination: "198.19.7.0/24"}}
	})
	f.net.Port(5)
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)}
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	foreign := openstack.Route{Destination: "192.168.77.0/24", NextHop: f.net.IP(98)}
	protected := openstack.Route{Destination: "198.19.7.0/24", NextHop: f.net.IP(97)}
	f.net.SetRoutes(live, orphan, foreign, protected)

	cl, res := f.pass()
	f.mustHave("after the first pass", live, orphan, foreign, protected)
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
		t.Errorf("requeue after %s, want the next deadline (at most 1m)", res.RequeueAfter)
	}
	st := cl.Status.RouteGC
	if st == nil || len(st.Suspects) != 1 || st.Suspects[0].Destination != orphan.Destination {
		t.Fatalf("after the first pass: suspects %+v, want only %s", st, orphan.Destination)
	}
	if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionFalse || c.Reason != "OrphanedRoutes" {
		t.Errorf("RoutesHealthy = %s/%s (%s), want False/OrphanedRoutes", c.Status, c.Reason, c.Message)
	}
	if !hasAction(cl, v1alpha1.ActionSkipped, "ProofPending", routeObject(orphan)) ||
		!hasAction(cl, v1alpha1.ActionSkipped, "Protected", routeObject(protected)) {
		t.Errorf("status lines %+v: want ProofPending for the orphan and Protected for the protected route", cl.Status.RouteGC.Actions)
	}

	// A spec change runs a pass at once, but half an interval after the first sighting is no proof.
	f.clock.Step(30 * time.Second)
	budget := int32(10)
	cl.Spec.Controllers.RouteGC.Budget = &budget
	if err := f.c.Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	f.pass()
	f.mustHave("half an interval later", live, orphan, foreign, protected)

	// Before the next deadline no pass runs at all.
	f.clock.Step(40 * time.Second)
	_, res = f.pass()
	f.mustHave("before the deadline", orphan)
	if res.RequeueAfter <= 0 || res.RequeueAfter > 20*time.Second {
		t.Errorf("requeue after %s, want the rest of the interval (20s)", res.RequeueAfter)
	}

	// At the deadline: two passes, more than one interval apart, saw it orphaned: removed.
	f.clock.Step(20 * time.Second)
	cl, _ = f.pass()
	f.mustNotHave("after the proving pass", orphan)
	f.mustHave("after the proving pass", live, foreign, protected)
	if cl.Status.RouteGC.RemovedTotal != 1 || len(cl.Status.RouteGC.Suspects) != 0 {
		t.Errorf("status %+v: want removedTotal 1 and no suspects", cl.Status.RouteGC)
	}
	if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionTrue {
		t.Errorf("RoutesHealthy = %s/%s (%s), want True", c.Status, c.Reason, c.Message)
	}
	if !hasAction(cl, v1alpha1.ActionRemoved, remediation.ReasonAllowed, routeObject(orphan)) {
		t.Errorf("status lines %+v: want Removed/Allowed", cl.Status.RouteGC.Actions)
	}
	if v := testutil.ToFloat64(f.gcm.Removed.WithLabelValues(f.key.String())); v != 1 {
		t.Errorf("vitals_routegc_routes_removed_total = %v, want 1", v)
	}
	if v := testutil.ToFloat64(f.gcm.Skipped.WithLabelValues(f.key.String(), "Protected")); v < 1 {
		t.Errorf("vitals_routegc_routes_skipped_total{reason=Protected} = %v, want >= 1", v)
	}
	if v := f.decisions("taken", remediation.ReasonAllowed); v != 1 {
		t.Errorf("vitals_remediation_actions_total{outcome=taken} = %v, want 1", v)
	}
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Status != metav1.ConditionTrue {
		t.Errorf("RemediationAllowed = %s/%s (%s), want True", c.Status, c.Reason, c.Message)
	}
	if st := cl.Status.Remediation; st == nil || len(st.ActionTimes) != 1 || st.BudgetRemaining != 9 {
		t.Errorf("status.remediation %+v, want one action time and 9 left", st)
	}
	if !drainEvents(f.events, "ActionTaken") {
		t.Errorf("no ActionTaken event")
	}
}

func TestOperatorRouteGCNodeBackKeepsRoute(t *testing.T) {
	parallel(t)
	// A route whose node port disappears for one pass and comes back is never removed.
	f := newGCFixture(t, nil)
	port := f.net.Port(6)
	r := openstack.Route{Destination: "198.19.3.0/24", NextHop: f.net.IP(6)}
	f.net.Port(5)
	f.net.SetRoutes(r)
	f.pass()
	f.net.DeletePort(port)
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	if len(cl.Status.RouteGC.Suspects) != 1 {
		t.Fatalf("suspects %+v, want the route whose port went away", cl.Status.RouteGC.Suspects)
	}
	f.net.Port(6) // the node (or a new one with the same address) is back
	f.clock.Step(time.Minute)
	cl, _ = f.pass()
	f.mustHave("after the port came back", r)
	if len(cl.Status.RouteGC.Suspects) != 0 {
		t.Errorf("suspects %+v, want none", cl.Status.RouteGC.Suspects)
	}
}

func TestOperatorRouteGCReadFailureRemovesNothing(t *testing.T) {
	parallel(t)
	// The read failures are outages the collector saw: no outage freeze, so that the pass after the faults
	// cleared may remove (the freeze has tests of its own).
	f := newGCFixture(t, func(cl *v1alpha1.VitalsCluster) {
		cl.Spec.Remediation.OutageFreeze = &metav1.Duration{}
	})
	// The pass reads the real cloud through internal/test/faultproxy: a proxy in front of Keystone that points
	// the token's catalog at one proxy per service.
	env := testenv.OpenStack(t)
	services := []openstack.Service{openstack.ServiceNetworking}
	if f.servers {
		services = append(services, openstack.ServiceCompute)
	}
	auth, proxies := opFaultProxy(t, env, f.cloud, services...)
	neutron := proxies[0]
	var nova *faultproxy.Proxy
	if f.servers {
		nova = proxies[1]
	}
	proxied := opConnect(t, auth, nil)
	f.deps.Tenancy = staticTenancy{proxied, f.cloud.ProjectID()}

	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	f.net.SetRoutes(orphan, openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)})
	f.pass() // first sighting
	cases := []struct {
		name  string
		proxy *faultproxy.Proxy
		rule  faultproxy.Rule
	}{
		{"neutron ports 503", neutron, faultproxy.Rule{Name: "ports-503", Method: "GET", Path: "/v2.0/ports",
			Fault: faultproxy.Status(503, faultproxy.StyleNeutron, "injected")}},
		{"neutron ports connection reset", neutron, faultproxy.Rule{Name: "ports-reset", Method: "GET", Path: "/v2.0/ports",
			Fault: faultproxy.Reset()}},
		{"neutron ports body cut short", neutron, faultproxy.Rule{Name: "ports-truncated", Method: "GET", Path: "/v2.0/ports",
			Fault: faultproxy.Truncate(100)}},
		{"neutron router 500", neutron, faultproxy.Rule{Name: "router-500", Method: "GET", Path: "/v2.0/routers/*",
			Fault: faultproxy.Status(500, faultproxy.StyleNeutron, "injected")}},
		{"nova servers 503", nova, faultproxy.Rule{Name: "servers-503", Method: "GET", Path: "/**",
			Fault: faultproxy.Status(503, faultproxy.StyleNova, "injected")}},
	}
	for _, tc := range cases {
		if tc.proxy == nil {
			t.Logf("%s: skipped (needs Nova: full tier)", tc.name)
			continue
		}
		if err := tc.proxy.Add(tc.rule); err != nil {
			t.Fatal(err)
		}
		f.clock.Step(time.Minute)
		cl, _ := f.pass()
		tc.proxy.Clear()
		f.mustHave(tc.name, orphan)
		if tc.proxy.Count(tc.rule.Name) == 0 {
			t.Errorf("%s: the fault was never hit", tc.name)
		}
		if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionUnknown || c.Reason != "ReadFailed" {
			t.Errorf("%s: RoutesHealthy = %s/%s (%s), want Unknown/ReadFailed", tc.name, c.Status, c.Reason, c.Message)
		}
		if len(cl.Status.RouteGC.Suspects) != 1 {
			t.Errorf("%s: an aborted pass must keep the proof: suspects %+v", tc.name, cl.Status.RouteGC.Suspects)
		}
	}
	f.clock.Step(time.Minute)
	f.pass()
	f.mustNotHave("after the faults cleared", orphan)
}

func TestOperatorRouteGCEmptyListIsNotEveryRouteOrphaned(t *testing.T) {
	parallel(t)
	// A project whose port list comes back empty (a wrong project, a policy that hides ports) must
	// not make every route orphaned: the pass refuses.
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.OpenStack.ProjectID = "00000000000000000000000000000000" // a project with nothing in it
		c.Spec.OpenStack.SubnetID = ""
		c.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	})
	f.deps.Tenancy = staticTenancy{f.cloud, "00000000000000000000000000000000"}
	orphanLooking := openstack.Route{Destination: "198.19.4.0/24", NextHop: f.net.IP(5)}
	f.net.Port(5)
	f.net.SetRoutes(orphanLooking)
	for range 3 {
		cl, _ := f.pass()
		if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Reason != "UnsafeRead" {
			t.Fatalf("RoutesHealthy = %s/%s (%s), want UnsafeRead", c.Status, c.Reason, c.Message)
		}
		f.clock.Step(time.Minute)
	}
	f.mustHave("after three passes over an empty project", orphanLooking)
}

func TestOperatorRouteGCPassCapAndDryRun(t *testing.T) {
	parallel(t)
	budget := int32(2)
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.RouteGC.Budget = &budget
		c.Spec.Controllers.RouteGC.DryRun = true
	})
	f.net.Port(5)
	var orphans, routes []openstack.Route
	for i := range 3 {
		orphans = append(orphans, openstack.Route{Destination: fmt.Sprintf("198.19.%d.0/24", 10+i), NextHop: f.net.IP(90 + i)})
	}
	for i := range 5 { // live routes, so that three orphans are no storm
		routes = append(routes, openstack.Route{Destination: fmt.Sprintf("198.19.%d.0/24", 20+i), NextHop: f.net.IP(5)})
	}
	f.net.SetRoutes(append(routes, orphans...)...)
	f.pass()
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	f.mustHave("dry run", orphans...)
	if !hasAction(cl, v1alpha1.ActionWouldRemove, remediation.ReasonDryRun, routeObject(orphans[0])) {
		t.Errorf("status lines %+v: want WouldRemove/DryRun", cl.Status.RouteGC.Actions)
	}
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Status != metav1.ConditionFalse || c.Reason != remediation.ReasonDryRun {
		t.Errorf("RemediationAllowed = %s/%s (%s), want False/DryRun", c.Status, c.Reason, c.Message)
	}
	if v := f.decisions("dryrun", remediation.ReasonDryRun); v != 2 {
		t.Errorf("dry-run decisions %v, want 2 (the pass's cap holds the third)", v)
	}
	// Leave dry run: at most 2 of the 3 go in one pass (the spec change runs a pass at once).
	cl.Spec.Controllers.RouteGC.DryRun = false
	if err := f.c.Update(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	cl, _ = f.pass()
	left := 0
	for _, r := range orphans {
		if f.net.Routes()[r] {
			left++
		}
	}
	if left != 1 || cl.Status.RouteGC.RemovedTotal != 2 {
		t.Fatalf("cap 2: %d of 3 left, %d removed in all; want 1 left, 2 removed", left, cl.Status.RouteGC.RemovedTotal)
	}
	if !hasAction(cl, v1alpha1.ActionSkipped, "PassBudget", "") {
		t.Errorf("status lines %+v: want Skipped/PassBudget", cl.Status.RouteGC.Actions)
	}
	f.clock.Step(time.Minute)
	f.pass()
	f.mustNotHave("the pass after", orphans...)
}

// budgetFixture is a cluster with one proven orphan and one live route: the next pass would remove it.
func provenOrphan(t *testing.T, mutate func(*v1alpha1.VitalsCluster)) (*gcFixture, openstack.Route) {
	t.Helper()
	f := newGCFixture(t, mutate)
	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	f.net.SetRoutes(orphan, openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)})
	f.pass()
	f.clock.Step(time.Minute)
	return f, orphan
}

// update changes the cluster's spec or metadata (which runs a pass at once).
func (f *gcFixture) update(mutate func(*v1alpha1.VitalsCluster)) {
	f.t.Helper()
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	mutate(&cl)
	if err := f.c.Update(context.Background(), &cl); err != nil {
		f.t.Fatal(err)
	}
}

// held runs passes and checks the orphan stays, held by the policy for reason.
func (f *gcFixture) held(orphan openstack.Route, reason string, passes int) *v1alpha1.VitalsCluster {
	f.t.Helper()
	var cl *v1alpha1.VitalsCluster
	for i := range passes {
		cl, _ = f.pass()
		f.mustHave(fmt.Sprintf("pass %d held by %s", i+1, reason), orphan)
		f.clock.Step(time.Minute)
	}
	if !hasAction(cl, v1alpha1.ActionSkipped, reason, routeObject(orphan)) {
		f.t.Errorf("status lines %+v: want Skipped/%s for %s", cl.Status.RouteGC.Actions, reason, routeObject(orphan))
	}
	if v := f.decisions("held", reason); v < float64(passes) {
		f.t.Errorf("vitals_remediation_actions_total{outcome=held,reason=%s} = %v, want >= %d", reason, v, passes)
	}
	if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionFalse || !heldByPolicy.MatchString(c.Message) {
		f.t.Errorf("RoutesHealthy = %s/%s (%s), want False with routes held by the remediation policy", c.Status, c.Reason, c.Message)
	}
	return cl
}

var heldByPolicy = regexp.MustCompile(`[1-9][0-9]* held by the remediation policy`)

func TestOperatorRouteGCBudgetZeroRemovesNothing(t *testing.T) {
	parallel(t)
	zero := int32(0)
	f, orphan := provenOrphan(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Remediation.Budget = &v1alpha1.BudgetSpec{Actions: &zero}
	})
	cl := f.held(orphan, remediation.ReasonBudget, 3)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Status != metav1.ConditionFalse || c.Reason != remediation.ReasonBudget {
		t.Errorf("RemediationAllowed = %s/%s (%s), want False/BudgetExhausted", c.Status, c.Reason, c.Message)
	}
	if st := cl.Status.Remediation; st == nil || st.BudgetRemaining != 0 || len(st.ActionTimes) != 0 {
		t.Errorf("status.remediation %+v, want nothing spent and nothing left", st)
	}
	// routegc's own cap per pass: 0 means none too, never the default.
	pass0 := int32(0)
	f.update(func(c *v1alpha1.VitalsCluster) {
		one := int32(1)
		c.Spec.Remediation.Budget.Actions = &one
		c.Spec.Controllers.RouteGC.Budget = &pass0
	})
	cl, _ = f.pass()
	f.mustHave("a pass cap of 0", orphan)
	if !hasAction(cl, v1alpha1.ActionSkipped, "PassBudget", routeObject(orphan)) {
		t.Errorf("status lines %+v: want Skipped/PassBudget", cl.Status.RouteGC.Actions)
	}
	f.update(func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.RouteGC.Budget = nil })
	f.clock.Step(time.Second)
	f.pass()
	f.mustNotHave("with a budget of 1", orphan)
}

func TestOperatorRouteGCPausedRemovesNothing(t *testing.T) {
	parallel(t)
	f, orphan := provenOrphan(t, func(c *v1alpha1.VitalsCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationPaused: "true"}
	})
	cl := f.held(orphan, remediation.ReasonPaused, 2)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Status != metav1.ConditionFalse || c.Reason != remediation.ReasonPaused {
		t.Errorf("RemediationAllowed = %s/%s (%s), want False/Paused", c.Status, c.Reason, c.Message)
	}
	// The operator-wide pause holds it once the cluster's is lifted.
	f.setPolicy(remediation.Options{Limits: &remediation.Limits{Actions: 10, Window: time.Hour, Paused: true}})
	f.update(func(c *v1alpha1.VitalsCluster) { delete(c.Annotations, v1alpha1.AnnotationPaused) })
	f.held(orphan, remediation.ReasonOperatorPaused, 1)
	f.setPolicy(remediation.Options{})
	f.pass()
	f.mustNotHave("unpaused", orphan)
}

// keystoneHealth is the operator's keystone readiness check against a private Keystone, run by a real
// health manager.
func keystoneHealth(t *testing.T, k *testenv.Keystone) *health.Manager {
	t.Helper()
	auth := opAuth(t, k.OpenStack())
	cloud := opConnect(t, auth, nil)
	m := health.NewManager()
	keystone, err := oschecks.Keystone(oschecks.Options{Cloud: cloud})
	if err != nil {
		t.Fatal(err)
	}
	m.MustRegister(health.Check{Name: "keystone", Run: keystone, Interval: 2 * time.Second, Timeout: 2 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	m.Start(ctx)
	t.Cleanup(func() { cancel(); m.Stop() })
	return m
}

func waitCheck(t *testing.T, m *health.Manager, name string, want health.Status) {
	t.Helper()
	opEventually(t, 2*time.Minute, "check "+name+" "+string(want), func() (bool, string) {
		r, _ := m.Result(name)
		return r.Status == want, fmt.Sprintf("%s (%v)", r.Status, r.Err)
	})
}

func TestOperatorRouteGCGateClosedByKeystone(t *testing.T) {
	parallel(t)
	k := testenv.PrivateKeystone(t)
	hm := keystoneHealth(t, k)
	f, orphan := provenOrphan(t, nil)
	f.setPolicy(remediation.Options{Readiness: hm, ReadinessChecks: []string{"keystone"}})
	waitCheck(t, hm, "keystone", health.StatusOK)
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	waitCheck(t, hm, "keystone", health.StatusFailed)
	// The cluster's own cloud still answers (its token is good): only the gate holds the removal.
	cl := f.held(orphan, remediation.ReasonGateClosed, 2)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Reason != remediation.ReasonGateClosed || !strings.Contains(c.Message, "keystone") {
		t.Errorf("RemediationAllowed = %s/%s (%s), want GateClosed naming keystone", c.Status, c.Reason, c.Message)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	waitCheck(t, hm, "keystone", health.StatusOK)
	f.pass()
	f.mustNotHave("with Keystone back", orphan)
}

func TestOperatorRouteGCGateNeedsTheCloudCheck(t *testing.T) {
	parallel(t)
	// A cluster whose cloud check never reported is not acted on: without routegc setting it (as the
	// access controller will), the gate stays closed.
	f, orphan := provenOrphan(t, nil)
	f.setPolicy(remediation.Options{})
	f.deps.Checks = nil
	cl := f.held(orphan, remediation.ReasonGateClosed, 1)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); !strings.Contains(c.Message, "cloud has not reported") {
		t.Errorf("RemediationAllowed message %q, want the cloud check named", c.Message)
	}
	f.policy.Checks().Set(f.key, remediation.CheckCloud, nil)
	f.pass()
	f.mustNotHave("with the cloud check passing", orphan)
}

func TestOperatorRouteGCProofAge(t *testing.T) {
	parallel(t)
	// The default minimum proof age (5m) holds whatever the interval (1m): two passes prove the route
	// orphaned after one minute, the removal waits until it was first seen five minutes ago.
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.MinProofAge = nil })
	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	f.net.SetRoutes(orphan, openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)})
	f.pass() // first sighting at 12:00
	for i := 1; i < 5; i++ {
		f.clock.Step(time.Minute)
		cl, _ := f.pass()
		f.mustHave(fmt.Sprintf("%dm after the first sighting", i), orphan)
		if !hasAction(cl, v1alpha1.ActionSkipped, remediation.ReasonProofPending, routeObject(orphan)) {
			t.Fatalf("status lines %+v: want ProofPending", cl.Status.RouteGC.Actions)
		}
		if v := f.decisions("held", remediation.ReasonProofPending); v != float64(i) {
			t.Fatalf("%dm after the first sighting: the policy held the removal %v times for ProofPending, want %d", i, v, i)
		}
	}
	f.clock.Step(time.Minute)
	f.pass()
	f.mustNotHave("5m after the first sighting", orphan)
}

func TestOperatorRouteGCExclusions(t *testing.T) {
	parallel(t)
	f := newGCFixture(t, nil)
	f.net.Port(5)
	byDst := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(97)}
	byHop := openstack.Route{Destination: "198.19.3.0/24", NextHop: f.net.IP(98)}
	free := openstack.Route{Destination: "198.19.4.0/24", NextHop: f.net.IP(99)}
	var live []openstack.Route
	for i := range 4 {
		live = append(live, openstack.Route{Destination: fmt.Sprintf("198.19.%d.0/24", 20+i), NextHop: f.net.IP(5)})
	}
	f.net.SetRoutes(append(live, byDst, byHop, free)...)
	f.update(func(c *v1alpha1.VitalsCluster) {
		c.Annotations = map[string]string{v1alpha1.AnnotationExclude: byDst.Destination + ", " + byHop.Destination + "@" + byHop.NextHop + ",198.19.4.0/24@10.9.9.9"}
	})
	f.pass()
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	f.mustNotHave("the route no exclusion names", free)
	for range 2 {
		f.clock.Step(time.Minute)
		cl, _ = f.pass()
	}
	f.mustHave("excluded", byDst, byHop)
	for _, r := range []openstack.Route{byDst, byHop} {
		if !hasAction(cl, v1alpha1.ActionSkipped, remediation.ReasonExcluded, routeObject(r)) {
			t.Errorf("status lines %+v: want Skipped/Excluded for %s", cl.Status.RouteGC.Actions, routeObject(r))
		}
	}
}

func TestOperatorRouteGCDryRunReports(t *testing.T) {
	parallel(t)
	f, orphan := provenOrphan(t, func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.DryRun = true })
	cl, _ := f.pass()
	f.mustHave("cluster dry run", orphan)
	if !hasAction(cl, v1alpha1.ActionWouldRemove, remediation.ReasonDryRun, routeObject(orphan)) {
		t.Errorf("status lines %+v: want WouldRemove/DryRun", cl.Status.RouteGC.Actions)
	}
	if c := condition(cl, v1alpha1.ConditionRoutesHealthy); !strings.Contains(c.Message, "1 dry run") {
		t.Errorf("RoutesHealthy %s/%s (%s), want 1 dry run", c.Status, c.Reason, c.Message)
	}
	if !drainEvents(f.events, remediation.ReasonDryRun) {
		t.Errorf("no DryRun event")
	}
	// The operator-wide --dry-run, once the cluster's is off.
	f.setPolicy(remediation.Options{Limits: &remediation.Limits{Actions: 10, Window: time.Hour, DryRun: true}})
	f.update(func(c *v1alpha1.VitalsCluster) { c.Spec.Remediation.DryRun = false })
	f.clock.Step(time.Second)
	cl, _ = f.pass()
	f.mustHave("operator dry run", orphan)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Reason != remediation.ReasonDryRun || !strings.Contains(c.Message, "--dry-run") {
		t.Errorf("RemediationAllowed = %s/%s (%s), want DryRun naming --dry-run", c.Status, c.Reason, c.Message)
	}
}

func TestOperatorRouteGCStorm(t *testing.T) {
	parallel(t)
	// Three of four routes in the pod CIDRs orphaned at once (more than 40%, rounded up: 2): a storm,
	// nothing is removed; after the orphans are fewer, the cool-down still holds, then they go.
	f := newGCFixture(t, nil)
	f.net.Port(5)
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)}
	var orphans []openstack.Route
	for i := range 3 {
		orphans = append(orphans, openstack.Route{Destination: fmt.Sprintf("198.19.%d.0/24", 10+i), NextHop: f.net.IP(90 + i)})
	}
	f.net.SetRoutes(append(orphans, live)...)
	f.pass()
	f.clock.Step(time.Minute)
	cl := f.held(orphans[0], remediation.ReasonStorm, 2)
	f.mustHave("storm", orphans...)
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Reason != remediation.ReasonStorm || !strings.Contains(c.Message, "3 of 4") {
		t.Errorf("RemediationAllowed = %s/%s (%s), want Storm, 3 of 4", c.Status, c.Reason, c.Message)
	}
	if st := cl.Status.Remediation; st == nil || st.StormSince == nil {
		t.Fatalf("status.remediation %+v: want stormSince", st)
	}
	// Two more nodes come up: one orphan of six is no storm, but the cool-down (10m) holds.
	more := []openstack.Route{{Destination: "198.19.20.0/24", NextHop: f.net.IP(6)}, {Destination: "198.19.21.0/24", NextHop: f.net.IP(7)}}
	f.net.Port(6)
	f.net.Port(7)
	f.net.Port(90)
	f.net.Port(91)
	f.net.SetRoutes(append(append(orphans, live), more...)...)
	cl, _ = f.pass()
	f.mustHave("cooling down", orphans[2])
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Reason != remediation.ReasonStorm || !strings.Contains(c.Message, "cooling down") {
		t.Errorf("RemediationAllowed = %s/%s (%s), want Storm, cooling down", c.Status, c.Reason, c.Message)
	}
	f.clock.Step(10 * time.Minute)
	f.pass()
	f.mustNotHave("after the cool-down", orphans[2])
	f.mustHave("live again", orphans[0], orphans[1], live)
}

// racingRouters changes the router between our read and our If-Match update, once, as another
// writer (the cloud provider's route controller) would.
type racingRouters struct {
	tenancy.Cloud
	net   *opNet
	extra openstack.Route
	raced int
	sets  int
}

func (r *racingRouters) AtomicRoutes(context.Context) (bool, error) { return false, nil }

func (r *racingRouters) SetRoutes(ctx context.Context, id string, routes []openstack.Route, rev int) (*openstack.Router, error) {
	r.sets++
	if r.raced == 0 {
		r.raced++
		if _, err := r.Cloud.AddRoutes(ctx, id, []openstack.Route{r.extra}); err != nil {
			return nil, fmt.Errorf("race: %w", err)
		}
	}
	return r.Cloud.SetRoutes(ctx, id, routes, rev)
}

func TestOperatorRouteGCConflictIsRetried(t *testing.T) {
	parallel(t)
	f := newGCFixture(t, nil)
	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)}
	extra := openstack.Route{Destination: "198.19.9.0/24", NextHop: f.net.IP(5)}
	f.net.SetRoutes(orphan, live)
	race := &racingRouters{Cloud: f.cloud, net: f.net, extra: extra}
	f.deps.Tenancy = staticTenancy{race, f.cloud.ProjectID()}
	f.pass()
	f.clock.Step(time.Minute)
	// The retry after the 412 waits its backoff on the reconciler's clock: move the fake clock whenever
	// the pass waits on it.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if f.clock.HasWaiters() {
				f.clock.Step(time.Second)
			}
		}
	}()
	cl, _ := f.pass()
	close(stop)
	<-done
	if race.sets != 2 {
		t.Errorf("If-Match updates: %d, want 2 (one 412, one retry)", race.sets)
	}
	f.mustNotHave("after the conflict", orphan)
	f.mustHave("after the conflict: the concurrent writer's route and the live route stay", live, extra)
	if cl.Status.RouteGC.RemovedTotal != 1 {
		t.Errorf("removedTotal %d, want 1", cl.Status.RouteGC.RemovedTotal)
	}
}
