package pass_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// The runner is tested with toy controllers of its own (they read and repair nothing real) against the real
// kube-apiserver of the harness: what is under test is the runner's seam (schedule, status, conditions,
// Events, refusals, deadlines), the write path, and the summary.

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}

// cluster creates a VitalsCluster in a namespace of the test's own and returns a client of the real API
// server whose status applies are counted.
func cluster(t *testing.T) (client.Client, *counter, types.NamespacedName) {
	t.Helper()
	real, cfg := testenv.Clusters(t)
	n := &counter{}
	cl := interceptor.NewClient(real, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			n.add()
			return cl.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	key := types.NamespacedName{Namespace: testenv.Namespace(t, cfg, "pass"), Name: "c1"}
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: "r1"}, PodCIDRs: []v1alpha1.CIDR{"10.100.0.0/16"}}}
	if err := real.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	return cl, n, key
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func get(t *testing.T, c client.Client, key types.NamespacedName) *v1alpha1.VitalsCluster {
	t.Helper()
	var vc v1alpha1.VitalsCluster
	if err := c.Get(context.Background(), key, &vc); err != nil {
		t.Fatal(err)
	}
	return &vc
}

func cond(vc *v1alpha1.VitalsCluster, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(vc.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: "absent"}
}

// TestWriter: a write that changes nothing sends nothing; a condition keeps its transition time while its
// status stays; a field the owner no longer sets is removed; the owners' writes never touch each other's.
func TestWriter(t *testing.T) {
	c, n, key := cluster(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	w := &pass.Writer{Client: c, Clock: clk, Metrics: pass.NewWriterMetrics(reg)}
	ctx := context.Background()
	routegc := func(status metav1.ConditionStatus, msg string, removed int64) pass.Owned {
		o := pass.Owned{Owner: "routegc", Fields: []string{"routegc"}, Types: []string{v1alpha1.ConditionRoutesHealthy},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionRoutesHealthy, Status: status, Reason: "R", Message: msg}}}
		if removed >= 0 {
			o.Status.RouteGC = &v1alpha1.RouteGCStatus{RemovedTotal: removed}
		}
		return o
	}
	access := pass.Owned{Owner: "access", Fields: []string{"access", "projectID"}, Types: []string{v1alpha1.ConditionCloudVerified},
		Conditions: []metav1.Condition{{Type: v1alpha1.ConditionCloudVerified, Status: metav1.ConditionTrue, Reason: "Verified", Message: "p"}},
		Status:     v1alpha1.ClusterStatus{ProjectID: "p", Access: &v1alpha1.AccessStatus{ControllerStatus: v1alpha1.ControllerStatus{ObservedGeneration: 1}}}}
	steps := []struct {
		name   string
		owned  pass.Owned
		writes int
		check  func(t *testing.T, vc *v1alpha1.VitalsCluster)
	}{
		{"a new part is written", routegc(metav1.ConditionTrue, "ok", 0), 1, nil},
		{"the same again is not", routegc(metav1.ConditionTrue, "ok", 0), 1, nil},
		{"another owner's part is written beside it", access, 2, func(t *testing.T, vc *v1alpha1.VitalsCluster) {
			if vc.Status.ProjectID != "p" || vc.Status.RouteGC == nil || cond(vc, v1alpha1.ConditionRoutesHealthy).Status != metav1.ConditionTrue {
				t.Errorf("both parts: %+v", vc.Status)
			}
		}},
		{"a changed message is written, its transition time kept", routegc(metav1.ConditionTrue, "still ok", 2), 3, func(t *testing.T, vc *v1alpha1.VitalsCluster) {
			if got := cond(vc, v1alpha1.ConditionRoutesHealthy).LastTransitionTime.Time; !got.Equal(clk.Now().Add(-3 * time.Minute).Truncate(time.Second)) {
				t.Errorf("transition time %s moved (the status stayed)", got)
			}
			if vc.Status.RouteGC.RemovedTotal != 2 {
				t.Errorf("removedTotal %d, want 2", vc.Status.RouteGC.RemovedTotal)
			}
		}},
		{"a field the owner no longer sets goes; the other owner's stays", routegc(metav1.ConditionFalse, "bad", -1), 4, func(t *testing.T, vc *v1alpha1.VitalsCluster) {
			if vc.Status.RouteGC != nil || vc.Status.ProjectID != "p" || vc.Status.Access == nil {
				t.Errorf("routegc's block should be gone and access's stay: %+v", vc.Status)
			}
			if got := cond(vc, v1alpha1.ConditionRoutesHealthy).LastTransitionTime.Time; !got.Equal(clk.Now().Truncate(time.Second)) {
				t.Errorf("transition time %s, want now (the status changed)", got)
			}
		}},
	}
	for i, s := range steps {
		if i > 0 {
			clk.Step(time.Minute)
		}
		vc := get(t, c, key)
		if _, err := w.Write(ctx, vc, s.owned); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := n.get(); got != s.writes {
			t.Fatalf("%s: %d applies sent, want %d", s.name, got, s.writes)
		}
		if s.check != nil {
			s.check(t, get(t, c, key))
		}
	}
	if got := testutil.ToFloat64(w.Metrics.Writes.WithLabelValues("routegc", "unchanged")); got != 1 {
		t.Errorf("vitals_status_writes_total{owner=routegc,result=unchanged} = %v, want 1", got)
	}
}

// TestWritersNeverConflict: owners writing one cluster's status at once, each from its own stale copy,
// never conflict and never lose each other's part.
func TestWritersNeverConflict(t *testing.T) {
	c, _, key := cluster(t)
	w := &pass.Writer{Client: c}
	stale := get(t, c, key)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, owner := range []string{"routegc", "flight", "access", "deorbit"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			typ := "Test" + owner
			for i := range 20 {
				o := pass.Owned{Owner: owner, Fields: []string{owner}, Types: []string{typ},
					Conditions: []metav1.Condition{{Type: typ, Status: metav1.ConditionTrue, Reason: "Pass", Message: fmt.Sprint(i)}}}
				o.Status.Controller(owner, true).ObservedGeneration = int64(i + 1)
				if _, err := w.Write(context.Background(), stale.DeepCopy(), o); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("write: %v", err)
	}
	vc := get(t, c, key)
	for _, owner := range []string{"routegc", "flight", "access", "deorbit"} {
		if b := vc.Status.Controller(owner, false); b == nil || b.ObservedGeneration != 20 {
			t.Errorf("%s's block: %+v, want its last write (20)", owner, b)
		}
		if got := cond(vc, "Test"+owner); got.Message != "19" {
			t.Errorf("%s's condition: %+v, want its last write", owner, got)
		}
	}
}

// toy is a controller of the test's: its read answers what the test says, its one repair reports a
// condition and asks the policy for nothing.
type toy struct {
	name      string
	condition string
	mu        sync.Mutex
	readErr   error
	block     chan struct{} // when set, the read waits for it or the deadline
	reads     int
	detail    string
}

type toySettings struct{ v1alpha1.CommonSettings }

func (s toySettings) Common() v1alpha1.CommonSettings { return s.CommonSettings }

func (c *toy) Name() string    { return c.name }
func (c *toy) Needs() []string { return []string{remediation.CheckCloud} }
func (c *toy) Settings(vc *v1alpha1.VitalsCluster) (toySettings, error) {
	spec := vc.Spec.Controllers.RouteGC.ControllerSpec
	if c.name == v1alpha1.ControllerFlight {
		spec = vc.Spec.Controllers.Flight.ControllerSpec
	}
	if len(vc.Spec.PodCIDRs) > 1 {
		return toySettings{}, errors.New("spec.podCIDRs[1]: the toy takes one")
	}
	return toySettings{spec.Settings(v1alpha1.ControllerDefaults{})}, nil
}
func (c *toy) Read(ctx context.Context, _ *pass.ReadInput[toySettings]) (string, error) {
	c.mu.Lock()
	c.reads++
	err, block, detail := c.readErr, c.block, c.detail
	c.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return detail, err
}
func (c *toy) Repairs() []pass.Repair[string] { return []pass.Repair[string]{toyRepair{c.condition}} }
func (c *toy) Total(string) int               { return 1 }
func (c *toy) Status(_ *v1alpha1.VitalsCluster, _ string, _ []string, st *v1alpha1.ClusterStatus) {
	st.Controller(c.name, true)
}

type toyRepair struct{ condition string }

func (r toyRepair) Name() string                         { return "toy" }
func (r toyRepair) Conditions() []string                 { return []string{r.condition} }
func (r toyRepair) Enabled(*v1alpha1.VitalsCluster) bool { return true }
func (r toyRepair) Detect(in *pass.Input[string]) pass.Finding[string] {
	return toyFinding{r.condition, in.Read}
}

type toyFinding struct{ condition, detail string }

func (f toyFinding) Unhealthy() []string { return nil }
func (f toyFinding) Repair(_ context.Context, env *pass.Env[string]) []pass.Report {
	env.Warn("ToyFinding", "Detect", "the toy found "+f.detail)
	return []pass.Report{{Status: metav1.ConditionTrue, Reason: "Toy", Message: "seen " + f.detail}}
}

type scopeResolver struct{ err error }

func (r *scopeResolver) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &tenancy.Scope{ProjectID: "p1", Router: &openstack.Router{ID: "r1", ProjectID: "p1"}}, nil
}
func (r *scopeResolver) Forget(types.NamespacedName) {}

type runnerEnv struct {
	c        client.Client
	key      types.NamespacedName
	clk      *clocktesting.FakeClock
	res      *scopeResolver
	rec      *events.FakeRecorder
	deps     *pass.Deps
	gc, fl   *toy
	gcr, flr *pass.Runner[toySettings, string]
	applies  *counter
}

func newRunnerEnv(t *testing.T, timeout time.Duration) *runnerEnv {
	t.Helper()
	c, n, key := cluster(t)
	e := &runnerEnv{c: c, key: key, clk: clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)),
		res: &scopeResolver{}, rec: events.NewFakeRecorder(100), applies: n,
		gc: &toy{name: v1alpha1.ControllerRouteGC, condition: v1alpha1.ConditionRoutesHealthy, detail: "x"},
		fl: &toy{name: v1alpha1.ControllerFlight, condition: v1alpha1.ConditionNodesHealthy, detail: "x"}}
	pol, err := remediation.New(remediation.Options{Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	e.deps = &pass.Deps{Client: c, Tenancy: e.res, Policy: pol, Checks: pol.Checks(), Clock: e.clk,
		Recorder: func(string) events.EventRecorder { return e.rec }}
	if e.gcr, err = pass.New[toySettings, string](e.deps, e.gc, pass.Options{Timeout: timeout}); err != nil {
		t.Fatal(err)
	}
	if e.flr, err = pass.New[toySettings, string](e.deps, e.fl, pass.Options{Timeout: timeout}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *runnerEnv) reconcile(t *testing.T, r *pass.Runner[toySettings, string]) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: e.key})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (e *runnerEnv) update(t *testing.T, mutate func(*v1alpha1.VitalsCluster)) {
	t.Helper()
	vc := get(t, e.c, e.key)
	mutate(vc)
	if err := e.c.Update(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerSchedule: a pass runs at once, the next not before the interval unless the spec changes, and
// a spec change is seen by every controller within its pass (each keeps its own observedGeneration).
func TestRunnerSchedule(t *testing.T) {
	e := newRunnerEnv(t, 0)
	for _, r := range []*pass.Runner[toySettings, string]{e.gcr, e.flr} {
		if res := e.reconcile(t, r); res.RequeueAfter != v1alpha1.DefaultInterval {
			t.Fatalf("requeue after %s, want the interval", res.RequeueAfter)
		}
	}
	e.clk.Step(10 * time.Second)
	if res := e.reconcile(t, e.gcr); res.RequeueAfter != 50*time.Second || e.gc.reads != 1 {
		t.Fatalf("before the deadline: requeue after %s and %d reads, want 50s and no new pass", res.RequeueAfter, e.gc.reads)
	}
	e.update(t, func(vc *v1alpha1.VitalsCluster) { vc.Spec.OpenStack.SubnetID = "s1" })
	e.reconcile(t, e.gcr)
	e.reconcile(t, e.flr)
	vc := get(t, e.c, e.key)
	if e.gc.reads != 2 || e.fl.reads != 2 {
		t.Fatalf("reads %d and %d after the spec change, want a pass of each", e.gc.reads, e.fl.reads)
	}
	for _, name := range []string{v1alpha1.ControllerRouteGC, v1alpha1.ControllerFlight} {
		if b := vc.Status.Controller(name, false); b == nil || b.ObservedGeneration != vc.Generation {
			t.Errorf("%s observed %+v, want generation %d", name, b, vc.Generation)
		}
	}
}

// TestRunnerSteadyStateWritesNothing: a pass that changes nothing sends no status write and no Event; a
// finding that changes is written and announced once.
func TestRunnerSteadyStateWritesNothing(t *testing.T) {
	e := newRunnerEnv(t, 0)
	e.reconcile(t, e.gcr)
	applies, evs := e.applies.get(), len(e.rec.Events)
	if applies == 0 || evs != 1 {
		t.Fatalf("first pass: %d applies and %d Events, want some and the finding's", applies, evs)
	}
	for range 3 {
		e.clk.Step(v1alpha1.DefaultInterval)
		e.reconcile(t, e.gcr)
	}
	if got := e.applies.get(); got != applies || len(e.rec.Events) != evs {
		t.Fatalf("steady state: %d applies and %d Events, want %d and %d", got, len(e.rec.Events), applies, evs)
	}
	e.gc.mu.Lock()
	e.gc.detail = "y"
	e.gc.mu.Unlock()
	e.clk.Step(v1alpha1.DefaultInterval)
	e.reconcile(t, e.gcr)
	if got := e.applies.get(); got != applies+1 || len(e.rec.Events) != evs+1 {
		t.Fatalf("a changed finding: %d applies and %d Events, want %d and %d", got, len(e.rec.Events), applies+1, evs+1)
	}
}

// TestRunnerRefusals: an invalid spec, a disabled controller, a tenancy refusal and a failed read each
// leave the controller's conditions Unknown with their reason; an invalid spec and a disabled controller
// are not requeued.
func TestRunnerRefusals(t *testing.T) {
	e := newRunnerEnv(t, 0)
	steps := []struct {
		name    string
		setup   func()
		reason  string
		requeue bool
	}{
		{"invalid spec", func() {
			e.update(t, func(vc *v1alpha1.VitalsCluster) { vc.Spec.PodCIDRs = append(vc.Spec.PodCIDRs, "10.200.0.0/16") })
		}, pass.ReasonInvalidSpec, false},
		{"disabled", func() {
			e.update(t, func(vc *v1alpha1.VitalsCluster) {
				vc.Spec.PodCIDRs = vc.Spec.PodCIDRs[:1]
				vc.Spec.Controllers.RouteGC.Enabled = new(bool)
			})
		}, pass.ReasonDisabled, false},
		{"refused", func() {
			e.update(t, func(vc *v1alpha1.VitalsCluster) { vc.Spec.Controllers.RouteGC.Enabled = nil })
			e.res.err = &tenancy.Refusal{Reason: tenancy.ReasonForeignResource, Message: "router r1 is not in project p1"}
		}, tenancy.ReasonForeignResource, true},
		{"read failed", func() {
			e.res.err = nil
			e.gc.readErr = errors.New("list ports: 503")
			e.clk.Step(v1alpha1.DefaultInterval)
		}, pass.ReasonReadFailed, true},
		{"unsafe read", func() {
			e.gc.readErr = pass.Abort(pass.ReasonUnsafeRead, errors.New("no port in the subnet"))
			e.clk.Step(v1alpha1.DefaultInterval)
		}, pass.ReasonUnsafeRead, true},
	}
	for _, s := range steps {
		s.setup()
		res := e.reconcile(t, e.gcr)
		if (res.RequeueAfter > 0) != s.requeue {
			t.Errorf("%s: requeue after %s, want requeued %v", s.name, res.RequeueAfter, s.requeue)
		}
		vc := get(t, e.c, e.key)
		if c := cond(vc, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionUnknown || c.Reason != s.reason {
			t.Errorf("%s: RoutesHealthy %s/%s (%s), want Unknown/%s", s.name, c.Status, c.Reason, c.Message, s.reason)
		}
		if s.reason == pass.ReasonDisabled && vc.Status.RouteGC != nil {
			t.Errorf("disabled: the block stays: %+v", vc.Status.RouteGC)
		}
	}
}

// TestRunnerDeadline: a pass that outlives its deadline is aborted (DeadlineExceeded) and requeued at the
// interval; the next pass runs again.
func TestRunnerDeadline(t *testing.T) {
	e := newRunnerEnv(t, 200*time.Millisecond)
	e.gc.block = make(chan struct{})
	res := e.reconcile(t, e.gcr)
	if res.RequeueAfter != v1alpha1.DefaultInterval {
		t.Fatalf("requeue after %s, want the interval", res.RequeueAfter)
	}
	vc := get(t, e.c, e.key)
	if c := cond(vc, v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionUnknown || c.Reason != pass.ReasonDeadline {
		t.Fatalf("RoutesHealthy %s/%s (%s), want Unknown/%s", c.Status, c.Reason, c.Message, pass.ReasonDeadline)
	}
	close(e.gc.block)
	e.clk.Step(v1alpha1.DefaultInterval)
	e.reconcile(t, e.gcr)
	if c := cond(get(t, e.c, e.key), v1alpha1.ConditionRoutesHealthy); c.Status != metav1.ConditionTrue {
		t.Fatalf("after the deadline: RoutesHealthy %s/%s, want a complete pass", c.Status, c.Reason)
	}
}

// TestSummary: Ready is True only when the cloud is verified, the workload reachable and every enabled
// controller has passed the current generation and can read; a disabled controller does not count.
func TestSummary(t *testing.T) {
	parts := []pass.Part{
		{Name: v1alpha1.ControllerRouteGC, Conditions: []string{v1alpha1.ConditionRoutesHealthy},
			Enabled: func(c *v1alpha1.VitalsCluster) bool {
				return c.Spec.Controllers.RouteGC.Enabled == nil || *c.Spec.Controllers.RouteGC.Enabled
			}},
		{Name: v1alpha1.ControllerFlight, Conditions: []string{v1alpha1.ConditionNodesHealthy},
			Enabled: func(c *v1alpha1.VitalsCluster) bool {
				return c.Spec.Controllers.Flight.Enabled == nil || *c.Spec.Controllers.Flight.Enabled
			}},
	}
	base := func() *v1alpha1.VitalsCluster {
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		vc.Status.Conditions = []metav1.Condition{
			{Type: v1alpha1.ConditionCloudVerified, Status: metav1.ConditionTrue, Reason: "Verified"},
			{Type: v1alpha1.ConditionWorkloadReachable, Status: metav1.ConditionTrue, Reason: "Reachable"},
			{Type: v1alpha1.ConditionRoutesHealthy, Status: metav1.ConditionFalse, Reason: "OrphanedRoutes"},
			{Type: v1alpha1.ConditionNodesHealthy, Status: metav1.ConditionTrue, Reason: "NodesHealthy"},
		}
		vc.Status.RouteGC = &v1alpha1.RouteGCStatus{ControllerStatus: v1alpha1.ControllerStatus{ObservedGeneration: 3}}
		vc.Status.Flight = &v1alpha1.FlightStatus{ControllerStatus: v1alpha1.ControllerStatus{ObservedGeneration: 3}}
		return vc
	}
	set := func(vc *v1alpha1.VitalsCluster, typ string, s metav1.ConditionStatus, reason string) {
		meta.SetStatusCondition(&vc.Status.Conditions, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: reason})
	}
	for _, tc := range []struct {
		name   string
		mutate func(*v1alpha1.VitalsCluster)
		status metav1.ConditionStatus
		reason string
		gen    int64
	}{
		{"ready, with a finding being worked on", func(*v1alpha1.VitalsCluster) {}, metav1.ConditionTrue, pass.ReasonReady, 3},
		{"cloud refused", func(vc *v1alpha1.VitalsCluster) {
			set(vc, v1alpha1.ConditionCloudVerified, metav1.ConditionFalse, "InvalidCredentials")
		}, metav1.ConditionFalse, "InvalidCredentials", 3},
		{"workload unreachable", func(vc *v1alpha1.VitalsCluster) {
			set(vc, v1alpha1.ConditionWorkloadReachable, metav1.ConditionFalse, "Unreachable")
		}, metav1.ConditionFalse, "Unreachable", 3},
		{"flight cannot read", func(vc *v1alpha1.VitalsCluster) {
			set(vc, v1alpha1.ConditionNodesHealthy, metav1.ConditionUnknown, pass.ReasonReadFailed)
		}, metav1.ConditionFalse, pass.ReasonReadFailed, 3},
		{"flight has not passed the new spec", func(vc *v1alpha1.VitalsCluster) { vc.Generation = 4; vc.Status.RouteGC.ObservedGeneration = 4 },
			metav1.ConditionFalse, pass.ReasonProgressing, 0},
		{"flight disabled: not waited on", func(vc *v1alpha1.VitalsCluster) {
			vc.Spec.Controllers.Flight.Enabled = new(bool)
			vc.Status.Flight = nil
			set(vc, v1alpha1.ConditionNodesHealthy, metav1.ConditionUnknown, pass.ReasonDisabled)
		}, metav1.ConditionTrue, pass.ReasonReady, 3},
		{"no proof yet", func(vc *v1alpha1.VitalsCluster) {
			meta.RemoveStatusCondition(&vc.Status.Conditions, v1alpha1.ConditionCloudVerified)
		}, metav1.ConditionFalse, pass.ReasonProgressing, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := base()
			tc.mutate(vc)
			got, gen := pass.Summarize(vc, parts)
			if got.Status != tc.status || got.Reason != tc.reason || gen != tc.gen {
				t.Errorf("Ready %s/%s (%s), generation %d; want %s/%s, %d", got.Status, got.Reason, got.Message, gen, tc.status, tc.reason, tc.gen)
			}
		})
	}
}

// TestRunnerReadsItsOwnWrite: a pass never builds on a cache that has not seen the runner's last status write:
// while the cache still shows the cluster as before that write, the pass reads it from the API server (and,
// built on its own last write, has nothing to write again); a cache that caught up is read as before.
func TestRunnerReadsItsOwnWrite(t *testing.T) {
	e := newRunnerEnv(t, 0)
	var mu sync.Mutex
	var stale *v1alpha1.VitalsCluster
	apiGets := 0
	cache := interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		mu.Lock()
		s := stale
		mu.Unlock()
		if vc, ok := obj.(*v1alpha1.VitalsCluster); ok && s != nil {
			s.DeepCopyInto(vc)
			return nil
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	api := interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		mu.Lock()
		apiGets++
		mu.Unlock()
		return c.Get(ctx, key, obj, opts...)
	}})
	e.deps.Client, e.deps.APIReader = cache, api
	r, err := pass.New[toySettings, string](e.deps, e.gc, pass.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := get(t, e.c, e.key)
	e.reconcile(t, r)
	applies := e.applies.get()
	if applies == 0 || apiGets != 0 {
		t.Fatalf("first pass: %d applies, %d reads of the API server; want a write and none", applies, apiGets)
	}
	for _, tc := range []struct {
		name    string
		stale   *v1alpha1.VitalsCluster
		apiGets int
	}{
		{name: "the cache has not seen the write", stale: before, apiGets: 1},
		{name: "the cache caught up", apiGets: 1},
	} {
		mu.Lock()
		stale = tc.stale
		mu.Unlock()
		e.clk.Step(v1alpha1.DefaultInterval)
		e.reconcile(t, r)
		mu.Lock()
		got := apiGets
		mu.Unlock()
		if got != tc.apiGets || e.applies.get() != applies {
			t.Fatalf("%s: %d reads of the API server, %d applies; want %d and %d (the pass built on its own last write)", tc.name, got, e.applies.get(), tc.apiGets, applies)
		}
	}
}
