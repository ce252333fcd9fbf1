package e2e

// Flight's node repairs against real Nova (fake driver), real Neutron and a real kube-apiserver as
// the workload cluster (Nodes written by the test as a kubelet and the node agent would), one pass at
// a time with a fake clock: never-healthy nodes (soft reboot, hard reboot, delete, resumed by a
// restarted operator), the forced security group sync, and the storm.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

// fnFixture is one cluster over a throw-away network, router and security group, with a private
// kube-apiserver as its management and workload cluster, and a flight Reconciler with a fake clock that runs only
// the repairs under test.
type fnFixture struct {
	t      *testing.T
	c      client.Client
	kube   kubernetes.Interface
	cloud  *openstack.Cloud
	net    *opNet
	group  string
	key    types.NamespacedName
	clock  *clocktesting.FakeClock
	rec    *flight.Reconciler
	deps   *pass.Deps
	fm     *flight.Metrics
	passm  *pass.Metrics
	reg    *prometheus.Registry
	events *events.FakeRecorder
	checks remediation.Checks
	pm     *remediation.Metrics
	wl     *workload.Manager
	wire   *novaWire
	nodes  []string
}

func newFNFixture(t *testing.T, mutate func(*v1alpha1.VitalsCluster)) *fnFixture {
	t.Helper()
	env := testenv.RequireFull(t) // Nova: skipped on the fast tier, a failure when services are required
	// A private apiserver, the management and the workload cluster at once: this test's CRD is the
	// one installed, and the Nodes are the test's only.
	cfg := testenv.PrivateKube(t).Config()
	opInstallCRD(t, cfg)
	f := &fnFixture{t: t, c: opClient(t, cfg)}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.kube = kc
	auth := opAuth(t, env)
	f.wire = &novaWire{base: http.DefaultTransport, types: map[string][]string{}}
	f.cloud = opConnect(t, auth, f.wire)
	f.net = opNewNet(t, opConnect(t, auth, nil))
	nc, err := f.cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	g, err := groups.Create(context.Background(), nc, groups.CreateOpts{Name: "vitals-e2e-fn-" + opRandHex(4)}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	f.group = g.ID
	t.Cleanup(func() { _ = groups.Delete(context.Background(), nc, g.ID).ExtractErr() })
	off := v1alpha1.RepairSpec{Enabled: new(false)}
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: opNamespace(t, f.c), Name: "c1"},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{RouterID: f.net.Router, ProjectID: f.cloud.ProjectID(), NetworkID: f.net.Network,
				SubnetID: f.net.Subnet, SecurityGroupID: g.ID},
			PodCIDRs:    []v1alpha1.CIDR{"198.19.0.0/16"},
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: time.Minute}},
			Controllers: v1alpha1.ControllersSpec{Flight: v1alpha1.FlightSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
				// Only the repairs under test: the others are flight's own tests'.
				Repairs: v1alpha1.FlightRepairs{SecurityGroupRules: off, SecurityGroupAssociation: off, ErroredServers: off, Routes: off},
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
	f.clock = clocktesting.NewFakeClock(time.Now())
	f.reg = prometheus.NewRegistry()
	f.events = events.NewFakeRecorder(1000)
	f.pm = remediation.NewMetrics(f.reg)
	f.checks = remediation.NewChecks(f.clock)
	// The access controller proves the cloud in the operator; here the static tenancy does.
	f.checks.Set(f.key, remediation.CheckCloud, nil)
	wl, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: f.checks, AllowLocal: true, Local: cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.wl = wl
	t.Cleanup(wl.Close)
	f.deps = &pass.Deps{Client: f.c, Tenancy: staticTenancy{f.cloud, f.cloud.ProjectID()}, Workload: wl,
		Clock: f.clock, Recorder: func(string) events.EventRecorder { return f.events }}
	f.restart()
	t.Cleanup(func() {
		for _, n := range f.nodes {
			_ = f.kube.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	})
	return f
}

// restart gives the Reconciler a new remediation policy, as a restarted operator has (the cluster
// checks are the operator's, kept).
func (f *fnFixture) restart() {
	f.t.Helper()
	p, err := remediation.New(remediation.Options{Clock: f.clock, Recorder: f.events, Metrics: f.pm, Checks: f.checks})
	if err != nil {
		f.t.Fatal(err)
	}
	f.deps.Policy = p
	if f.passm == nil {
		f.fm, f.passm = flight.NewMetrics(f.reg), pass.NewMetrics(flight.Name, f.reg)
	}
	// a new runner too: a restarted operator knows no schedule
	if f.rec, err = flight.New(f.deps, flight.Options{Metrics: f.fm, PassMetrics: f.passm}); err != nil {
		f.t.Fatal(err)
	}
}

// server boots a server on the cluster's network and waits for it to be ACTIVE.
func (f *fnFixture) server(host int) openstack.Server {
	f.t.Helper()
	id := f.net.Server(f.cloud, host)
	var sv *openstack.Server
	opEventually(f.t, 3*time.Minute, "server "+id+" ACTIVE", func() (bool, string) {
		var err error
		sv, err = f.cloud.GetServer(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return sv.Status == "ACTIVE", sv.Status
	})
	return *sv
}

// node writes a Node for a server as its kubelet (providerID, address, Ready) and node agent
// (PodNetworkHealthy, PodNetworkConnectivity) would.
func (f *fnFixture) node(sv openstack.Server, ip, podCIDR string, conds ...corev1.NodeCondition) string {
	f.t.Helper()
	ctx := context.Background()
	name := "fn-" + opRandHex(4)
	n, err := f.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{ProviderID: "openstack:///" + sv.ID, PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create node: %v", err)
	}
	f.nodes = append(f.nodes, name)
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
	f.setConditions(n, conds...)
	return name
}

func (f *fnFixture) setConditions(n *corev1.Node, conds ...corev1.NodeCondition) {
	f.t.Helper()
	now := metav1.NewTime(time.Now())
	for _, c := range conds {
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		if c.Reason == "" {
			c.Reason = "Test"
		}
		i := slices.IndexFunc(n.Status.Conditions, func(x corev1.NodeCondition) bool { return x.Type == c.Type })
		if i < 0 {
			n.Status.Conditions = append(n.Status.Conditions, c)
		} else {
			n.Status.Conditions[i] = c
		}
	}
	if _, err := f.kube.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		f.t.Fatalf("update node status: %v", err)
	}
	f.seen(n.Name, conds...)
}

// seen waits until the workload cluster's cache (what flight reads) shows the Node's conditions.
func (f *fnFixture) seen(name string, conds ...corev1.NodeCondition) {
	f.t.Helper()
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	opEventually(f.t, time.Minute, "the workload cache to show node "+name, func() (bool, string) {
		wc, err := f.wl.For(context.Background(), &cl)
		if err != nil {
			return false, err.Error()
		}
		var n corev1.Node
		if err := wc.Reader().Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
			return false, err.Error()
		}
		for _, c := range conds {
			i := slices.IndexFunc(n.Status.Conditions, func(x corev1.NodeCondition) bool { return x.Type == c.Type && x.Status == c.Status })
			if i < 0 {
				return false, fmt.Sprintf("no %s=%s yet", c.Type, c.Status)
			}
		}
		if err := wc.Healthy(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

func (f *fnFixture) getNode(name string) *corev1.Node {
	f.t.Helper()
	n, err := f.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// pass moves the clock on by step and runs one Reconcile; it returns the cluster after it.
func (f *fnFixture) pass(step time.Duration) *v1alpha1.VitalsCluster {
	f.t.Helper()
	f.clock.Step(step)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	if cl.Status.Flight == nil || cl.Status.Flight.ObservedGeneration != cl.Generation {
		f.t.Fatalf("flight pass did not complete: %+v, conditions %+v", cl.Status.Flight, cl.Status.Conditions)
	}
	if c := condition(&cl, v1alpha1.ConditionNodesHealthy); c.Status == metav1.ConditionUnknown {
		f.t.Fatalf("flight pass did not complete: NodesHealthy %s/%s (%s)", c.Status, c.Reason, c.Message)
	}
	return &cl
}

// novaWire records, from the requests flight sends, the type of each reboot (Nova's body is
// {"reboot": {"type": "SOFT"|"HARD"}}; Nova's own action records say "reboot" for both).
type novaWire struct {
	base  http.RoundTripper
	mu    sync.Mutex
	types map[string][]string // server ID: reboot types in order
}

var serverActionPath = regexp.MustCompile(`/servers/([0-9a-f-]{36})/action$`)

func (w *novaWire) RoundTrip(r *http.Request) (*http.Response, error) {
	if m := serverActionPath.FindStringSubmatch(r.URL.Path); m != nil && r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var act struct {
			Reboot *struct {
				Type string `json:"type"`
			} `json:"reboot"`
		}
		if json.Unmarshal(body, &act) == nil && act.Reboot != nil {
			w.mu.Lock()
			w.types[m[1]] = append(w.types[m[1]], act.Reboot.Type)
			w.mu.Unlock()
		}
	}
	return w.base.RoundTrip(r)
}

// rebootTypes are the types of the reboots sent for a server, in order ("SOFT,HARD").
func (f *fnFixture) rebootTypes(id string) string {
	f.wire.mu.Lock()
	defer f.wire.mu.Unlock()
	return strings.Join(f.wire.types[id], ",")
}

// reboots counts the reboot actions Nova recorded for a server.
func (f *fnFixture) reboots(id string) int {
	f.t.Helper()
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		f.t.Fatal(err)
	}
	pages, err := instanceactions.List(cc, id, nil).AllPages(context.Background())
	if err != nil {
		f.t.Fatalf("list instance actions of %s: %v", id, err)
	}
	acts, err := instanceactions.ExtractInstanceActions(pages)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, a := range acts {
		if a.Action == "reboot" {
			n++
		}
	}
	return n
}

func (f *fnFixture) waitActive(id string) {
	f.t.Helper()
	opEventually(f.t, 2*time.Minute, "server "+id+" ACTIVE again", func() (bool, string) {
		sv, err := f.cloud.GetServer(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return sv.Status == "ACTIVE", sv.Status
	})
}

func (f *fnFixture) repairs(repair, outcome string) float64 {
	return testutil.ToFloat64(f.passm.Repairs.WithLabelValues(repair, outcome))
}

func escalation(cl *v1alpha1.VitalsCluster, server string) v1alpha1.NodeEscalation {
	for _, e := range cl.Status.Flight.Escalations {
		if e.Server == server {
			return e
		}
	}
	return v1alpha1.NodeEscalation{}
}

var (
	condReady       = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	condNetBroken   = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkHealthy, Status: corev1.ConditionFalse, Reason: "CNIAddFailuresExceeded"}
	condNetOK       = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkHealthy, Status: corev1.ConditionTrue, Reason: "CNIAddFailuresWithinBudget"}
	condCutOff      = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkConnectivity, Status: corev1.ConditionFalse, Reason: "PodToPodFailing"}
	condReachable   = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkConnectivity, Status: corev1.ConditionTrue, Reason: "PodNetworkReachable"}
	neverHealthyCfg = v1alpha1.NodeRepair{NodeStartupTimeout: &metav1.Duration{Duration: 15 * time.Minute},
		SoftRebootTimeout: &metav1.Duration{Duration: 5 * time.Minute}, HardRebootTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
)

// TestFlightNeverHealthyEscalation: a node whose agent says the pod network is broken is observed,
// soft-rebooted, hard-rebooted after the soft reboot's timeout (by a restarted operator, from the
// escalation in status), then deleted after the hard reboot's timeout; each step asked of the policy,
// each reboot recorded by Nova. A second server whose Node is healthy is never touched.
func TestFlightNeverHealthyEscalation(t *testing.T) {
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = neverHealthyCfg
	})
	bad, good := f.server(10), f.server(11)
	badNode := f.node(bad, f.net.IP(10), "198.19.10.0/24", condReady, condNetBroken)
	f.node(good, f.net.IP(11), "198.19.11.0/24", condReady, condNetOK)

	cl := f.pass(time.Minute)
	e := escalation(cl, bad.ID)
	if e.Step != v1alpha1.EscalationObserved || e.Reason != flight.FaultPodNetworkBroken || e.Node != badNode || e.FirstSeen == nil {
		t.Fatalf("after the first pass: escalation %+v; flight %+v; conditions %+v", e, cl.Status.Flight, cl.Status.Conditions)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionFalse || c.Reason != "NodesUnhealthy" || !strings.Contains(c.Message, "first seen") {
		t.Errorf("NodesHealthy = %+v", c)
	}
	if n := f.reboots(bad.ID); n != 0 {
		t.Fatalf("rebooted %d times on the first sighting", n)
	}

	cl = f.pass(time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationSoftReboot {
		t.Fatalf("second pass: escalation %+v, want a soft reboot", e)
	}
	if n, types := f.reboots(bad.ID), f.rebootTypes(bad.ID); n != 1 || types != "SOFT" {
		t.Fatalf("Nova recorded %d reboots after the soft reboot, of types sent %q; want one, SOFT", n, types)
	}
	f.waitActive(bad.ID)

	// Within the soft reboot's timeout nothing more happens.
	cl = f.pass(2 * time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationSoftReboot {
		t.Fatalf("within the soft reboot's timeout: escalation %+v; flight %+v; conditions %+v", e, cl.Status.Flight, cl.Status.Conditions)
	}

	// A restarted operator (a new policy, the escalation only in status) takes the next step.
	f.restart()
	cl = f.pass(4 * time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationHardReboot {
		t.Fatalf("after the soft reboot's timeout: escalation %+v, want a hard reboot", e)
	}
	if n, types := f.reboots(bad.ID), f.rebootTypes(bad.ID); n != 2 || types != "SOFT,HARD" {
		t.Fatalf("Nova recorded %d reboots after the hard reboot, of types sent %q; want two, SOFT then HARD", n, types)
	}
	f.waitActive(bad.ID)

	cl = f.pass(11 * time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationDelete {
		t.Fatalf("after the hard reboot's timeout: escalation %+v, want a delete", e)
	}
	opEventually(t, 2*time.Minute, "server "+bad.ID+" deleted", func() (bool, string) {
		sv, err := f.cloud.GetServer(context.Background(), bad.ID)
		if openstack.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return sv.Status == "DELETED", sv.Status
	})
	if sv, err := f.cloud.GetServer(context.Background(), good.ID); err != nil || sv.Status != "ACTIVE" || f.reboots(good.ID) != 0 {
		t.Errorf("the healthy server was touched: %+v, %v, %d reboots", sv, err, f.reboots(good.ID))
	}
	if got := f.repairs("neverHealthy", pass.OutcomeDone); got != 3 {
		t.Errorf("vitals_flight_repairs_total{repair=neverHealthy,outcome=done} = %v, want 3", got)
	}
	for _, verb := range []string{flight.VerbRebootServer, flight.VerbDeleteServer} {
		if n := testutil.ToFloat64(f.pm.Actions.WithLabelValues(flight.Name, verb, "taken", remediation.ReasonAllowed)); n == 0 {
			t.Errorf("the policy recorded no %s", verb)
		}
	}
	// The server is gone: the escalation ends with it.
	cl = f.pass(time.Minute)
	if e := escalation(cl, bad.ID); e.Server != "" {
		t.Errorf("escalation of a deleted server kept: %+v", e)
	}
}

// TestFlightNeverHealthyForgedNode: who may write Nodes may name any server; a Node naming a server
// the cluster's project does not list, or a second Node claiming the cluster's server, makes flight
// touch nothing but the server the cloud lists, and a Node whose condition turns healthy again ends
// the escalation.
func TestFlightNeverHealthyForgedNode(t *testing.T) {
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = neverHealthyCfg
	})
	sv := f.server(20)
	real := f.node(sv, f.net.IP(20), "198.19.20.0/24", condReady, condNetOK)
	// A forged Node names a server of no project the cluster can see.
	forged := f.node(openstack.Server{ID: "00000000-0000-4000-8000-000000000001"}, f.net.IP(21), "198.19.21.0/24", condNetBroken)
	for range 3 {
		cl := f.pass(20 * time.Minute)
		if len(cl.Status.Flight.Escalations) != 0 {
			t.Fatalf("escalations from a forged Node: %+v", cl.Status.Flight.Escalations)
		}
		if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionTrue {
			t.Errorf("NodesHealthy = %+v", c)
		}
	}
	_ = forged
	// The real Node breaks, is observed, then heals before any step: the escalation ends.
	f.setConditions(f.getNode(real), condNetBroken)
	if cl := f.pass(time.Minute); escalation(cl, sv.ID).Step != v1alpha1.EscalationObserved {
		t.Fatalf("escalation %+v", escalation(cl, sv.ID))
	}
	f.setConditions(f.getNode(real), condNetOK)
	cl := f.pass(time.Minute)
	if len(cl.Status.Flight.Escalations) != 0 || f.reboots(sv.ID) != 0 {
		t.Fatalf("healed node still escalated: %+v, %d reboots", cl.Status.Flight.Escalations, f.reboots(sv.ID))
	}
}

// TestFlightStorm: 3 of 10 nodes (30 %) report a broken pod network at once, more than the cluster's
// maxUnhealthy (20 %): the storm rule holds every step, NodesHealthy says TooManyUnhealthy, and nothing
// is rebooted or deleted, however long it lasts.
func TestFlightStorm(t *testing.T) {
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = neverHealthyCfg
		c.Spec.Remediation.MaxUnhealthy = new(intstr.FromString("20%"))
	})
	f.ensureInstanceQuota(20)
	servers := make([]openstack.Server, 10)
	var wg sync.WaitGroup
	for i := range servers {
		wg.Go(func() { servers[i] = f.server(30 + i) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, sv := range servers {
		cond := condNetOK
		if i < 3 {
			cond = condNetBroken
		}
		f.node(sv, f.net.IP(30+i), fmt.Sprintf("198.19.%d.0/24", 30+i), condReady, cond)
	}
	var cl *v1alpha1.VitalsCluster
	for _, step := range []time.Duration{time.Minute, time.Minute, 10 * time.Minute, 20 * time.Minute} {
		cl = f.pass(step)
	}
	c := condition(cl, v1alpha1.ConditionNodesHealthy)
	if c.Status != metav1.ConditionFalse || c.Reason != flight.ReasonTooManyUnhealthy || !strings.Contains(c.Message, "3 of 10") {
		t.Errorf("NodesHealthy = %+v, want False, TooManyUnhealthy, naming 3 of 10", c)
	}
	if c := condition(cl, v1alpha1.ConditionRemediationAllowed); c.Status != metav1.ConditionFalse || c.Reason != remediation.ReasonStorm {
		t.Errorf("RemediationAllowed = %+v, want False, Storm", c)
	}
	for _, e := range cl.Status.Flight.Escalations {
		if e.Step != v1alpha1.EscalationObserved {
			t.Errorf("a step was taken in the storm: %+v", e)
		}
	}
	for _, sv := range servers {
		if n := f.reboots(sv.ID); n != 0 {
			t.Errorf("server %s rebooted %d times in the storm", sv.ID, n)
		}
		if got, err := f.cloud.GetServer(context.Background(), sv.ID); err != nil || got.Status != "ACTIVE" {
			t.Errorf("server %s after the storm: %+v, %v", sv.ID, got, err)
		}
	}
	if n := f.repairs("neverHealthy", pass.OutcomeDone); n != 0 {
		t.Errorf("%v repairs done in the storm", n)
	}
	if n := testutil.ToFloat64(f.pm.Actions.WithLabelValues(flight.Name, flight.VerbRebootServer, "held", remediation.ReasonStorm)); n == 0 {
		t.Errorf("the policy recorded no reboot held by the storm rule")
	}
	if cl.Status.Remediation == nil || cl.Status.Remediation.StormSince == nil {
		t.Errorf("status.remediation.stormSince not set: %+v", cl.Status.Remediation)
	}
}

// ensureInstanceQuota raises the project's instance quota to at least n (the storm needs ten servers
// at once; Nova's default is ten for the whole project, which other tests share).
func (f *fnFixture) ensureInstanceQuota(n int) {
	f.t.Helper()
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		f.t.Fatal(err)
	}
	q, err := quotasets.Get(context.Background(), cc, f.cloud.ProjectID()).Extract()
	if err != nil {
		f.t.Fatalf("read compute quota: %v", err)
	}
	if q.Instances >= n && q.Cores >= n {
		return
	}
	if _, err := quotasets.Update(context.Background(), cc, f.cloud.ProjectID(), quotasets.UpdateOpts{
		Instances: gophercloud.IntToPointer(max(q.Instances, n)), Cores: gophercloud.IntToPointer(max(q.Cores, 2*n))}).Extract(); err != nil {
		f.t.Fatalf("raise compute quota: %v", err)
	}
}

// TestFlightSecurityGroupSync: a node whose agent reports lost pod network connectivity makes flight
// add a marker rule to the cluster's group and remove it, and re-assert the node's port's allowed
// address pair for its PodCIDR; a forged PodCIDR outside the cluster's is never written; a second
// sync waits for minInterval; the condition turns True when the agent reports connectivity again.
func TestFlightSecurityGroupSync(t *testing.T) {
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		off := false
		c.Spec.Controllers.Flight.Repairs.Nodes.Enabled = &off
		c.Spec.Controllers.Flight.Repairs.SecurityGroupSync.MinInterval = &metav1.Duration{Duration: 10 * time.Minute}
		// two of two nodes cut off below: not a storm for this test
		c.Spec.Remediation.MaxUnhealthy = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	})
	nc, err := f.cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	sv := f.server(40)
	name := f.node(sv, f.net.IP(40), "198.19.40.0/24", condReady, condReachable)
	cl := f.pass(time.Minute)
	if c := condition(cl, v1alpha1.ConditionPodNetworkSynced); c.Status != metav1.ConditionTrue {
		t.Fatalf("PodNetworkSynced = %+v", c)
	}
	// The agent reports lost connectivity. A second node, of a second server, was created naming a PodCIDR
	// outside the cluster's (forged: whoever may create Nodes may write any; the API server refuses to
	// change a Node's podCIDRs once set, so the forgery is made at creation), and reports the same.
	forgedSV := f.server(41)
	forgedName := f.node(forgedSV, f.net.IP(41), "10.96.0.0/12", condReady, condReachable)
	if got := f.getNode(forgedName).Spec.PodCIDRs; !slices.Equal(got, []string{"10.96.0.0/12"}) {
		t.Fatalf("the forged Node's PodCIDRs are %v: the API server did not keep the forgery, the test would prove nothing", got)
	}
	f.setConditions(f.getNode(name), condCutOff)
	f.setConditions(f.getNode(forgedName), condCutOff)
	revision := groupRevision(t, nc, f.group)

	cl = f.pass(time.Minute)
	c := condition(cl, v1alpha1.ConditionPodNetworkSynced)
	if c.Status != metav1.ConditionFalse || c.Reason != "SyncForced" {
		t.Fatalf("PodNetworkSynced = %+v, want False, SyncForced", c)
	}
	if got := groupRevision(t, nc, f.group); got < revision+2 {
		t.Errorf("security group revision %d -> %d: a marker rule added and removed moves it twice", revision, got)
	}
	g, err := groups.Get(context.Background(), nc, f.group).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Rules {
		if strings.Contains(r.Description, "marker") {
			t.Errorf("marker rule left in the group: %+v", r)
		}
	}
	pairs := portPairs(t, nc, sv.ID)
	if !slices.Contains(pairs, "198.19.40.0/24") {
		t.Errorf("allowed address pairs = %v, want the node's PodCIDR", pairs)
	}
	if forged := portPairs(t, nc, forgedSV.ID); slices.Contains(forged, "10.96.0.0/12") {
		t.Errorf("allowed address pairs of the forged node's port = %v: the forged PodCIDR was written", forged)
	}
	if cl.Status.Flight.LastSecurityGroupSync == nil {
		t.Errorf("lastSecurityGroupSync not set")
	}

	// Within minInterval: no second sync.
	revision = groupRevision(t, nc, f.group)
	cl = f.pass(2 * time.Minute)
	if c := condition(cl, v1alpha1.ConditionPodNetworkSynced); c.Reason != "SyncRateLimited" {
		t.Errorf("PodNetworkSynced = %+v, want SyncRateLimited", c)
	}
	if got := groupRevision(t, nc, f.group); got != revision {
		t.Errorf("security group changed within minInterval: revision %d -> %d", revision, got)
	}
	if got := f.repairs("securityGroupSync", pass.OutcomeDone); got != 2 {
		t.Errorf("vitals_flight_repairs_total{repair=securityGroupSync,outcome=done} = %v, want 2 (the group and the port)", got)
	}

	// The agents report connectivity again.
	f.setConditions(f.getNode(name), condReachable)
	f.setConditions(f.getNode(forgedName), condReachable)
	cl = f.pass(time.Minute)
	if c := condition(cl, v1alpha1.ConditionPodNetworkSynced); c.Status != metav1.ConditionTrue {
		t.Errorf("PodNetworkSynced = %+v after the agent reports connectivity", c)
	}
}

func groupRevision(t *testing.T, nc *gophercloud.ServiceClient, id string) int {
	t.Helper()
	var body struct {
		SecurityGroup struct {
			RevisionNumber int `json:"revision_number"`
		} `json:"security_group"`
	}
	if err := groups.Get(context.Background(), nc, id).ExtractInto(&body); err != nil {
		t.Fatalf("read security group %s: %v", id, err)
	}
	return body.SecurityGroup.RevisionNumber
}

func portPairs(t *testing.T, nc *gophercloud.ServiceClient, server string) []string {
	t.Helper()
	pages, err := ports.List(nc, ports.ListOpts{DeviceID: server}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil || len(ps) != 1 {
		t.Fatalf("ports of server %s: %d, %v", server, len(ps), err)
	}
	var out []string
	for _, p := range ps[0].AllowedAddressPairs {
		out = append(out, p.IPAddress)
	}
	return out
}
