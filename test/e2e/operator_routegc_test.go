package e2e

// The route collector against the real kube-apiserver and the real Neutron (and Nova on the full
// tier), one pass at a time with a fake clock: each test calls Reconcile as the manager would.

import (
	"context"
	"fmt"
	"net/url"
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
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/internal/faultproxy"
	"github.com/vitalsproject/vitals/internal/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/tenancy"
)

// staticTenancy gives every Cluster the same cloud and project, and reads the router it names.
type staticTenancy struct {
	cloud   tenancy.Cloud
	project string
}

func (staticTenancy) Forget(types.NamespacedName) {}

func (s staticTenancy) Resolve(ctx context.Context, c *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	router, err := s.cloud.GetRouter(ctx, c.Spec.OpenStack.RouterID)
	if err != nil {
		return nil, err
	}
	return &tenancy.Scope{Cloud: s.cloud, ProjectID: s.project, Source: "test", Router: router}, nil
}

// gcFixture is one Cluster over one throw-away router, and a Reconciler with a fake clock.
type gcFixture struct {
	t       *testing.T
	c       client.Client
	net     *opNet
	cloud   *openstack.Cloud
	key     types.NamespacedName
	clock   *clocktesting.FakeClock
	rec     *routegc.Reconciler
	reg     *prometheus.Registry
	events  *events.FakeRecorder
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
	f.rec = &routegc.Reconciler{Client: f.c, Tenancy: staticTenancy{f.cloud, f.cloud.ProjectID()}, Clock: f.clock,
		Metrics: routegc.NewMetrics(f.reg), Recorder: f.events}
	return f
}

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

func condition(cl *v1alpha1.VitalsCluster, typ string) metav1.Condition {
	for _, c := range cl.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func hasAction(cl *v1alpha1.VitalsCluster, kind v1alpha1.ActionKind, reason, object string) bool {
	for _, a := range cl.Status.Actions {
		if a.Action == kind && a.Reason == reason && (object == "" || a.Object == object) {
			return true
		}
	}
	return false
}

func TestOperatorRouteGCRemovesOrphanAfterTwoPassesOnly(t *testing.T) {
	t.Parallel()
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
	if !hasAction(cl, v1alpha1.ActionSkipped, "ProofPending", orphan.Destination+" via "+orphan.NextHop) ||
		!hasAction(cl, v1alpha1.ActionSkipped, "Protected", protected.Destination+" via "+protected.NextHop) {
		t.Errorf("status lines %+v: want ProofPending for the orphan and Protected for the protected route", cl.Status.Actions)
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
	if !hasAction(cl, v1alpha1.ActionRemoved, "Orphaned", orphan.Destination+" via "+orphan.NextHop) {
		t.Errorf("status lines %+v: want Removed/Orphaned", cl.Status.Actions)
	}
	key := f.key.String()
	if v := testutil.ToFloat64(f.rec.Metrics.Removed.WithLabelValues(key)); v != 1 {
		t.Errorf("vitals_routegc_routes_removed_total = %v, want 1", v)
	}
	if v := testutil.ToFloat64(f.rec.Metrics.Skipped.WithLabelValues(key, "Protected")); v < 1 {
		t.Errorf("vitals_routegc_routes_skipped_total{reason=Protected} = %v, want >= 1", v)
	}
	if !drainEvents(f.events, "RouteRemoved") {
		t.Errorf("no RouteRemoved event")
	}
}

func drainEvents(r *events.FakeRecorder, reason string) bool {
	found := false
	for {
		select {
		case e := <-r.Events:
			if strings.Contains(e, " "+reason+" ") {
				found = true
			}
		default:
			return found
		}
	}
}

func TestOperatorRouteGCNodeBackKeepsRoute(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	f := newGCFixture(t, nil)
	// The pass reads the real cloud through internal/faultproxy: a proxy in front of Keystone that points
	// the token's catalog at one proxy per service.
	env := testenv.OpenStack(t)
	proxy, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	origin := func(s openstack.Service) *faultproxy.Proxy {
		c, err := f.cloud.Client(s)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		p, err := proxy.Service(u.Scheme + "://" + u.Host)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	neutron := origin(openstack.ServiceNetworking)
	var nova *faultproxy.Proxy
	if f.servers {
		nova = origin(openstack.ServiceCompute)
	}
	auth := opAuth(t, env)
	auth.Options.IdentityEndpoint = proxy.AuthURL()
	proxied := opConnect(t, auth, nil)
	f.rec.Tenancy = staticTenancy{proxied, f.cloud.ProjectID()}

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
	t.Parallel()
	// A project whose port list comes back empty (a wrong project, a policy that hides ports) must
	// not make every route orphaned: the pass refuses.
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.OpenStack.ProjectID = "00000000000000000000000000000000" // a project with nothing in it
		c.Spec.OpenStack.SubnetID = ""
		c.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	})
	f.rec.Tenancy = staticTenancy{f.cloud, "00000000000000000000000000000000"}
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

func TestOperatorRouteGCBudgetAndDryRun(t *testing.T) {
	t.Parallel()
	budget := int32(2)
	f := newGCFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.RouteGC.Budget = &budget
		c.Spec.Controllers.RouteGC.DryRun = true
	})
	f.net.Port(5)
	var orphans []openstack.Route
	for i := range 3 {
		orphans = append(orphans, openstack.Route{Destination: fmt.Sprintf("198.19.%d.0/24", 10+i), NextHop: f.net.IP(90 + i)})
	}
	f.net.SetRoutes(orphans...)
	f.pass()
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	f.mustHave("dry run", orphans...)
	if !hasAction(cl, v1alpha1.ActionWouldRemove, "DryRun", "") {
		t.Errorf("status lines %+v: want WouldRemove/DryRun", cl.Status.Actions)
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
	if left != 1 || cl.Status.RouteGC.Counts.Removed != 2 {
		t.Fatalf("budget 2: %d of 3 left, counts %+v; want 1 left, 2 removed", left, cl.Status.RouteGC.Counts)
	}
	if !hasAction(cl, v1alpha1.ActionSkipped, "Budget", "") {
		t.Errorf("status lines %+v: want Skipped/Budget", cl.Status.Actions)
	}
	f.clock.Step(time.Minute)
	f.pass()
	f.mustNotHave("the pass after", orphans...)
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
	t.Parallel()
	f := newGCFixture(t, nil)
	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	live := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(5)}
	extra := openstack.Route{Destination: "198.19.9.0/24", NextHop: f.net.IP(5)}
	f.net.SetRoutes(orphan, live)
	race := &racingRouters{Cloud: f.cloud, net: f.net, extra: extra}
	f.rec.Tenancy = staticTenancy{race, f.cloud.ProjectID()}
	f.pass()
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	if race.sets != 2 {
		t.Errorf("If-Match updates: %d, want 2 (one 412, one retry)", race.sets)
	}
	f.mustNotHave("after the conflict", orphan)
	f.mustHave("after the conflict: the concurrent writer's route and the live route stay", live, extra)
	if cl.Status.RouteGC.RemovedTotal != 1 {
		t.Errorf("removedTotal %d, want 1", cl.Status.RouteGC.RemovedTotal)
	}
}

func TestOperatorRouteGCSelfGated(t *testing.T) {
	t.Parallel()
	f := newGCFixture(t, nil)
	f.net.Port(5)
	orphan := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(99)}
	f.net.SetRoutes(orphan)
	f.pass()
	f.rec.Gate = routegc.GateFunc(func() (bool, string) { return false, "keystone: failed" })
	f.clock.Step(time.Minute)
	cl, _ := f.pass()
	f.mustHave("while gated", orphan)
	if c := condition(cl, v1alpha1.ConditionRoutesHealthy); c.Reason != "SelfGated" {
		t.Errorf("RoutesHealthy = %s/%s, want SelfGated", c.Status, c.Reason)
	}
	f.rec.Gate = nil
	f.clock.Step(time.Minute)
	f.pass()
	f.mustNotHave("after the gate opened", orphan)
}
