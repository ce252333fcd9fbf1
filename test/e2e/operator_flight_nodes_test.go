package e2e

// Flight's node repairs against real Nova (fake driver), real Neutron and a real kube-apiserver as
// the workload cluster (Nodes written by the test as a kubelet and the node agent would), one pass at
// a time with a fake clock: never-healthy nodes (soft reboot, hard reboot, delete, resumed by a
// restarted operator), the forced security group sync, and the storm.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
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
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/nodes"
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
	// nova is the fault proxy in front of Nova that flight's cloud goes through: its rules "soft" and
	// "hard" count the reboots by their type on the wire.
	nova *faultproxy.Proxy
	// kubeProxy is the fault proxy in front of the workload cluster's API server (flight's and the workload
	// access' only way to it; the test's own clients go direct).
	kubeProxy *faultproxy.Proxy
	checks    remediation.Checks
	pm        *remediation.Metrics
	wl        *workload.Manager
	nodes     []string
}

func newFNFixture(t *testing.T, mutate func(*v1alpha1.VitalsCluster)) *fnFixture {
	t.Helper()
	env := testenv.RequireFull(t) // Nova: skipped on the fast tier, a failure when services are required
	// A private apiserver, the management and the workload cluster at once: this test's CRD is the
	// one installed, and the Nodes are the test's only.
	k, c := opPrivateKube(t)
	cfg := k.Config()
	f := &fnFixture{t: t, c: c}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.kube = kc
	auth := opAuth(t, env)
	f.cloud = opConnect(t, auth, nil)
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
	// flight reaches the workload cluster only as deploy/manifests/workload-rbac.yaml's ServiceAccount: every
	// pass of these scenarios proves that its rules suffice (workload_rbac_test.go).
	rb := wlRBAC(t, testenv.InlineKubeconfig(t, k.KubeconfigPath()), "kube-system")
	kp, kcfg, err := faultproxy.NewKube(rb.Config)
	if err != nil {
		t.Fatal(err)
	}
	f.kubeProxy = kp
	t.Cleanup(func() { _ = kp.Close() })
	wl, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: f.checks, AllowLocal: true, Local: kcfg,
		HealthInterval: time.Second, HealthTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.wl = wl
	t.Cleanup(wl.Close)
	pauth, proxies := opFaultProxy(t, env, f.cloud, openstack.ServiceCompute)
	f.nova = proxies[0]
	if err := f.nova.Add(faultproxy.Rule{Name: "soft", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "hard", Method: "POST", Body: `"HARD"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "start", Method: "POST", Body: `"os-start"`, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	flightCloud := opConnect(t, pauth, nil)
	f.deps = &pass.Deps{Client: f.c, Tenancy: staticTenancy{flightCloud, f.cloud.ProjectID()}, Workload: wl,
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
	return f.serverOn(host, "")
}

// serverOn is server on the compute host named (compute-1, compute-2; "": the scheduler's choice).
func (f *fnFixture) serverOn(host int, compute string) openstack.Server {
	f.t.Helper()
	id := f.net.ServerOn(f.cloud, host, compute)
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
	// the kubelet's clock is the test's: the fixture's fake clock
	now := metav1.NewTime(f.clock.Now())
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

// synced waits until the workload cluster's access is healthy: its informers have synced (a scenario that writes
// no Node has no Node to wait for with seen, and a pass before then stops at NotSynced).
func (f *fnFixture) synced() {
	f.t.Helper()
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	opEventually(f.t, time.Minute, "the workload cluster's informers to sync", func() (bool, string) {
		wc, err := f.wl.For(context.Background(), &cl)
		if err != nil {
			return false, err.Error()
		}
		if err := wc.Healthy(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
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
	if c := condition(&cl, v1alpha1.ConditionNodesHealthy); c.Status == metav1.ConditionUnknown && c.Reason != pass.ReasonDisabled {
		f.t.Fatalf("flight pass did not complete: NodesHealthy %s/%s (%s)", c.Status, c.Reason, c.Message)
	}
	return &cl
}

// reboots counts the reboots flight sent through the proxy in front of Nova, soft and hard apart.
func (f *fnFixture) reboots() (soft, hard int) {
	return f.nova.Matched("soft"), f.nova.Matched("hard")
}

// novaReboots counts the reboot actions Nova recorded for a server (what the proxy counted arrived).
func (f *fnFixture) novaReboots(id string) int {
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

func (f *fnFixture) repairs(repair, outcome string) float64 {
	return testutil.ToFloat64(f.passm.Repairs.WithLabelValues(repair, outcome))
}

// metadata sets Nova metadata on a server.
func (f *fnFixture) metadata(id string, md map[string]string) {
	f.t.Helper()
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := servers.UpdateMetadata(context.Background(), cc, id, servers.MetadataOpts(md)).Extract(); err != nil {
		f.t.Fatalf("set metadata of server %s: %v", id, err)
	}
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
	condReady     = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	condNotReady  = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady"}
	condCutOff    = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkConnectivity, Status: corev1.ConditionFalse, Reason: "PodToPodFailing"}
	condReachable = corev1.NodeCondition{Type: flight.NodeConditionPodNetworkConnectivity, Status: corev1.ConditionTrue, Reason: "PodNetworkReachable"}
	nodesCfg      = v1alpha1.NodeRepair{NodeStartupTimeout: &metav1.Duration{Duration: 15 * time.Minute},
		SoftRebootTimeout: &metav1.Duration{Duration: 5 * time.Minute}, HardRebootTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
)

// TestFlightNodesNeverRegistered: a server no Node names is left alone for nodeStartupTimeout, then
// observed, soft-rebooted, hard-rebooted after the soft reboot's timeout (by a restarted operator, from the
// escalation in status), and, since no manager replaces it, left there with NodesHealthy NoReplacement and
// a Warning; once its metadata says a manager replaces it (repairs.nodes.replacement), deleted. Soft and
// hard reboots are told apart on the wire (the body Nova receives). A server with a Ready Node and a Cluster
// API Machine's node that is NotReady are never touched. The servers carry the cluster's servers.metadata:
// without it a server no Node names is only reported (TestFlightNodesNeverRegisteredUnproven).
func TestFlightNodesNeverRegistered(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Repairs.Nodes.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "e2e-pool"}
		c.Spec.Controllers.Flight.Servers.Metadata = map[string]string{"e2e-cluster": "never-registered"}
	})
	bad, good, capi := f.server(10), f.server(11), f.server(12)
	for _, sv := range []openstack.Server{bad, good, capi} {
		f.metadata(sv.ID, map[string]string{"e2e-cluster": "never-registered"})
	}
	// Nova's clock names the servers' creation: the fake clock starts no earlier (booting took a while).
	if now := time.Now(); now.After(f.clock.Now()) {
		f.clock.SetTime(now)
	}
	f.node(good, f.net.IP(11), "198.19.11.0/24", condReady)
	machine := f.node(capi, f.net.IP(12), "198.19.12.0/24", condNotReady)
	n := f.getNode(machine)
	n.Annotations = map[string]string{"cluster.x-k8s.io/machine": "md-0-x7k2p"}
	if _, err := f.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Within nodeStartupTimeout: nothing.
	cl := f.pass(10 * time.Minute)
	if e := escalation(cl, bad.ID); e.Server != "" {
		t.Fatalf("10m after its creation: escalation %+v", e)
	}
	cl = f.pass(6 * time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationObserved || e.Reason != flight.FaultNeverRegistered {
		t.Fatalf("16m after its creation: escalation %+v; conditions %+v", e, cl.Status.Conditions)
	}
	cl = f.pass(time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseTaken {
		t.Fatalf("second pass: escalation %+v, want a soft reboot", e)
	}
	if soft, hard := f.reboots(); soft != 1 || hard != 0 {
		t.Fatalf("on the wire: %d soft, %d hard reboots; want 1 soft", soft, hard)
	}
	f.waitStatus(bad.ID, "ACTIVE")
	cl = f.pass(2 * time.Minute) // within the soft reboot's timeout
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationSoftReboot {
		t.Fatalf("within the soft reboot's timeout: %+v", e)
	}
	f.restart()
	cl = f.pass(4 * time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationHardReboot {
		t.Fatalf("after the soft reboot's timeout: escalation %+v, want a hard reboot", e)
	}
	if soft, hard := f.reboots(); soft != 1 || hard != 1 {
		t.Fatalf("on the wire: %d soft, %d hard reboots; want 1 and 1", soft, hard)
	}
	if n := f.novaReboots(bad.ID); n != 2 {
		t.Errorf("Nova recorded %d reboots, want 2", n)
	}
	f.waitStatus(bad.ID, "ACTIVE")
	// No manager replaces it: the escalation stops at the hard reboot, and says so.
	cl = f.pass(11 * time.Minute)
	e := escalation(cl, bad.ID)
	if e.Phase != v1alpha1.PhaseStopped || e.Stopped != flight.StopNoReplacement {
		t.Fatalf("after the hard reboot's timeout without a manager: escalation %+v", e)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionFalse || c.Reason != flight.StopNoReplacement {
		t.Errorf("NodesHealthy = %+v, want False/NoReplacement", c)
	}
	if sv, err := f.cloud.GetServer(context.Background(), bad.ID); err != nil || sv.Status != "ACTIVE" {
		t.Fatalf("the server without a manager was touched: %+v, %v", sv, err)
	}
	// Its manager is named by metadata: deleted (the stop is lifted by a new escalation of the operator's
	// making: the test clears status as an operator would after fixing the cause).
	f.metadata(bad.ID, map[string]string{"e2e-pool": "a"})
	var cur v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), f.key, &cur); err != nil {
		t.Fatal(err)
	}
	for i := range cur.Status.Flight.Escalations {
		if cur.Status.Flight.Escalations[i].Server == bad.ID {
			cur.Status.Flight.Escalations[i].Phase, cur.Status.Flight.Escalations[i].Stopped = v1alpha1.PhaseTaken, ""
		}
	}
	if err := f.c.Status().Update(context.Background(), &cur); err != nil {
		t.Fatal(err)
	}
	f.restart()
	cl = f.pass(time.Minute)
	if e := escalation(cl, bad.ID); e.Step != v1alpha1.EscalationDelete {
		t.Fatalf("with a manager: escalation %+v, want a delete; NodesHealthy %+v", e, condition(cl, v1alpha1.ConditionNodesHealthy))
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
	for _, sv := range []openstack.Server{good, capi} {
		if got, err := f.cloud.GetServer(context.Background(), sv.ID); err != nil || got.Status != "ACTIVE" || f.novaReboots(sv.ID) != 0 {
			t.Errorf("server %s was touched: %+v, %v, %d reboots", sv.ID, got, err, f.novaReboots(sv.ID))
		}
	}
	if e := escalation(cl, capi.ID); e.Stopped != flight.StopClusterAPI {
		t.Errorf("the Machine's server: escalation %+v, want stopped %s", e, flight.StopClusterAPI)
	}
	if !drainEvents(f.events, "EscalationStopped", capi.ID, "md-0-x7k2p") {
		t.Errorf("no Warning EscalationStopped naming the Machine md-0-x7k2p of server %s", capi.ID)
	}
	if got := f.repairs("nodes", pass.OutcomeDone); got != 3 {
		t.Errorf("vitals_flight_repairs_total{repair=nodes,outcome=done} = %v, want 3", got)
	}
}

// TestFlightNodesNeverRegisteredUnproven: without servers.metadata a server is the cluster's by a port on
// networkID, which a bastion or a database VM on the nodes' network has too. Such a server that no Node names
// is reported (NodesHealthy names it as not repaired), never observed, rebooted or deleted, however long.
func TestFlightNodesNeverRegisteredUnproven(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Repairs.Nodes.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "e2e-pool"}
	})
	bastion := f.server(13)
	f.metadata(bastion.ID, map[string]string{"e2e-pool": "a"}) // even one a manager would replace
	f.synced()
	if now := time.Now(); now.After(f.clock.Now()) {
		f.clock.SetTime(now)
	}
	var cl *v1alpha1.VitalsCluster
	for _, step := range []time.Duration{16 * time.Minute, time.Minute, 6 * time.Minute, 11 * time.Minute} {
		cl = f.pass(step)
		if e := escalation(cl, bastion.ID); e.Server != "" {
			t.Fatalf("the server no Node names has an escalation without servers.metadata: %+v", e)
		}
	}
	c := condition(cl, v1alpha1.ConditionNodesHealthy)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, bastion.ID+" not repaired") || !strings.Contains(c.Message, "servers.metadata") {
		t.Errorf("NodesHealthy = %+v, want it to name server %s as not repaired for want of servers.metadata", c, bastion.ID)
	}
	if soft, hard := f.reboots(); soft+hard != 0 || f.novaReboots(bastion.ID) != 0 {
		t.Errorf("the server no Node names was rebooted: %d soft, %d hard on the wire", soft, hard)
	}
	if sv, err := f.cloud.GetServer(context.Background(), bastion.ID); err != nil || sv.Status != "ACTIVE" {
		t.Errorf("the server no Node names: %+v, %v; want it ACTIVE and untouched", sv, err)
	}
}

// TestFlightNodesForgedNode: whoever may create Nodes in the workload cluster chooses their providerIDs, so a
// Node can name any server. With spec.controllers.flight.servers.metadata set, a server without that metadata
// (another workload's VM in the same project) is not the cluster's: a NotReady Node naming it never gets it
// cordoned, drained or rebooted, however long it stays NotReady, while the cluster's own server named by
// another NotReady Node is repaired in the same passes.
func TestFlightNodesForgedNode(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Servers.Metadata = map[string]string{"e2e-cluster": "forged"}
		c.Spec.Remediation.MaxUnhealthy = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
	})
	mine, foreign := f.server(30), f.server(31)
	f.metadata(mine.ID, map[string]string{"e2e-cluster": "forged"})
	f.metadata(foreign.ID, map[string]string{"e2e-cluster": "another"})
	own := f.node(mine, f.net.IP(30), "198.19.30.0/24", condNotReady)
	forged := f.node(foreign, f.net.IP(31), "198.19.31.0/24", condNotReady)
	var cl *v1alpha1.VitalsCluster
	for _, step := range []time.Duration{6 * time.Minute, time.Minute, time.Minute, 6 * time.Minute, 10 * time.Minute} {
		cl = f.pass(step)
		if e := escalation(cl, foreign.ID); e.Server != "" {
			t.Fatalf("the forged Node's server %s has an escalation: %+v", foreign.ID, e)
		}
	}
	if n := f.novaReboots(foreign.ID); n != 0 {
		t.Errorf("Nova recorded %d reboots of the server the forged Node names, want none", n)
	}
	if f.getNode(forged).Spec.Unschedulable {
		t.Errorf("the forged Node %s was cordoned", forged)
	}
	if sv, err := f.cloud.GetServer(context.Background(), foreign.ID); err != nil || sv.Status != "ACTIVE" {
		t.Errorf("the server the forged Node names: %+v, %v; want it ACTIVE and untouched", sv, err)
	}
	if n := f.novaReboots(mine.ID); n == 0 {
		t.Errorf("the cluster's own NotReady server %s was not rebooted (escalation %+v): the test would prove nothing", mine.ID, escalation(cl, mine.ID))
	}
	if !f.getNode(own).Spec.Unschedulable {
		t.Errorf("the cluster's own NotReady Node %s was not cordoned before its reboot", own)
	}
}

// TestFlightNodesDwell: a Node NotReady for less than its timeout is never touched, however many passes
// see it; past the timeout it is observed, then cordoned, drained (it has no pods) and soft-rebooted; when
// it is Ready again it is uncordoned (flight cordoned it). The second time it fails, within the cooldown,
// nothing happens; with perServer.maxSteps 2 a third failure is a reboot loop: left alone, and said so.
func TestFlightNodesDwell(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Repairs.Nodes.PerServer = &v1alpha1.PerServerLimits{Cooldown: &metav1.Duration{Duration: 30 * time.Minute}, MaxSteps: new(int32(2))}
	})
	sv := f.server(20)
	name := f.node(sv, f.net.IP(20), "198.19.20.0/24", condReady)
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	for range 4 {
		cl := f.pass(time.Minute)
		if e := escalation(cl, sv.ID); e.Server != "" {
			t.Fatalf("NotReady for less than 5m: escalation %+v", e)
		}
		if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "Ready=False") {
			t.Errorf("NodesHealthy = %+v, want it to name the pending Ready=False", c)
		}
	}
	if soft, hard := f.reboots(); soft+hard != 0 || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("a node NotReady for 4m was touched: %d reboots, cordoned %v", soft+hard, f.getNode(name).Spec.Unschedulable)
	}
	cl := f.pass(2 * time.Minute)
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationObserved || e.Reason != "Ready=False" {
		t.Fatalf("NotReady for 6m: escalation %+v", e)
	}
	cl = f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || !e.Cordoned {
		t.Fatalf("then: escalation %+v, want a soft reboot of a node flight cordoned", e)
	}
	if !f.getNode(name).Spec.Unschedulable {
		t.Fatalf("the node was not cordoned before its reboot")
	}
	if soft, _ := f.reboots(); soft != 1 {
		t.Fatalf("%d soft reboots on the wire, want 1", soft)
	}
	f.waitStatus(sv.ID, "ACTIVE")
	f.setConditions(f.getNode(name), condReady)
	cl = f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Server != "" || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("healed: escalation %+v, cordoned %v", e, f.getNode(name).Spec.Unschedulable)
	}
	if h := cl.Status.Flight.History; len(h) != 1 || h[0].Server != sv.ID || len(h[0].Steps) != 1 {
		t.Errorf("history %+v, want the one soft reboot", h)
	}
	// It fails again within the cooldown: observed, not rebooted.
	f.setConditions(f.getNode(name), condNotReady)
	f.pass(6 * time.Minute)
	cl = f.pass(time.Minute)
	if soft, _ := f.reboots(); soft != 1 {
		t.Fatalf("rebooted within the cooldown: %d soft reboots", soft)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); !strings.Contains(c.Message, "cooling down") {
		t.Errorf("NodesHealthy = %+v, want it to say cooling down", c)
	}
	// After the cooldown, the second step; healed; fails again: a loop, stopped at maxSteps 2.
	cl = f.pass(30 * time.Minute)
	if soft, _ := f.reboots(); soft != 2 {
		t.Fatalf("after the cooldown: %d soft reboots, want 2; NodesHealthy %+v", soft, condition(cl, v1alpha1.ConditionNodesHealthy))
	}
	f.waitStatus(sv.ID, "ACTIVE")
	f.setConditions(f.getNode(name), condReady)
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	f.pass(6 * time.Minute)
	f.pass(31 * time.Minute)
	cl = f.pass(time.Minute)
	if soft, hard := f.reboots(); soft != 2 || hard != 0 {
		t.Fatalf("a reboot loop went on: %d soft, %d hard reboots", soft, hard)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Reason != flight.StopRebootLoop {
		t.Errorf("NodesHealthy = %+v, want RebootLoop", c)
	}
	if e := escalation(cl, sv.ID); e.Stopped != flight.StopRebootLoop {
		t.Errorf("escalation %+v, want stopped RebootLoop", e)
	}
}

// TestFlightStorm: 3 of 10 nodes are NotReady at once, more than the cluster's maxUnhealthy (20 %): the
// storm rule holds every reboot, NodesHealthy says TooManyUnhealthy, and nothing is rebooted, however long
// it lasts; meanwhile the safe repairs run: a rule missing from the security group is put back.
func TestFlightStorm(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Repairs.SecurityGroupRules.Enabled = new(true)
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
		cond := condReady
		if i < 3 {
			cond = condNotReady
		}
		f.node(sv, f.net.IP(30+i), fmt.Sprintf("198.19.%d.0/24", 30+i), cond)
	}
	var cl *v1alpha1.VitalsCluster
	for _, step := range []time.Duration{6 * time.Minute, time.Minute, 10 * time.Minute, 20 * time.Minute} {
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
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Errorf("%d soft and %d hard reboots in the storm", soft, hard)
	}
	if n := testutil.ToFloat64(f.pm.Actions.WithLabelValues(flight.Name, flight.VerbDrainNode, "held", remediation.ReasonStorm)); n == 0 {
		t.Errorf("the policy recorded no drain held by the storm rule")
	}
	// The safe repairs went on: the security group has the rules the cluster needs.
	if c := condition(cl, v1alpha1.ConditionSecurityGroupRules); c.Status != metav1.ConditionTrue {
		t.Errorf("SecurityGroupRulesHealthy = %+v during the storm, want True (repaired)", c)
	}
	if n := testutil.ToFloat64(f.pm.Actions.WithLabelValues(flight.Name, flight.VerbCreateRule, "taken", remediation.ReasonAllowed)); n == 0 {
		t.Errorf("no security group rule was created during the storm")
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
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes.Enabled = new(false)
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

// TestFlightNodesDrainPDB: before a reboot the Node is cordoned and drained through the Eviction API; a pod
// whose PodDisruptionBudget allows no disruption is refused (the API server's 429) and the step waits; at the
// drain timeout, the node being reachable (Ready=False: its kubelet reports), the drain ends without the step,
// naming the pod and its budget, uncordons the node, frees the pool and waits perServer.cooldown; the next
// drain, the budget allowing it, evicts the pod, and when it is gone the soft reboot follows. The test writes what a kubelet and the
// disruption controller would: the pod Running and Ready on the node, the budget's status.
func TestFlightNodesDrainPDB(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
	})
	ctx := context.Background()
	sv := f.server(60)
	name := f.node(sv, f.net.IP(60), "198.19.60.0/24", condReady)
	ns := f.key.Namespace
	pod := f.runningPod(name, map[string]string{"app": "db"},
		corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}})
	one := intstr.FromInt32(1)
	pdb, err := f.kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	budget := func(allowed int32) {
		t.Helper()
		cur, err := f.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdb.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: cur.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1, DesiredHealthy: 1 - allowed, ExpectedPods: 1}
		if _, err := f.kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	budget(0)
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	if e := escalation(f.pass(6*time.Minute), sv.ID); e.Step != v1alpha1.EscalationObserved {
		t.Fatalf("NotReady for 6m: escalation %+v", e)
	}
	cl := f.pass(time.Minute)
	e := escalation(cl, sv.ID)
	if e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseDraining || !e.Cordoned {
		t.Fatalf("then: escalation %+v, want draining before a soft reboot", e)
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); !strings.Contains(c.Message, "PodDisruptionBudget") {
		t.Errorf("NodesHealthy = %+v, want it to name the PodDisruptionBudget", c)
	}
	if !f.getNode(name).Spec.Unschedulable {
		t.Errorf("node not cordoned while draining")
	}
	wantNodeConditions(t, f.getNode(name), map[corev1.NodeConditionType]string{nodes.ConditionDrainInProgress: "True/Draining", nodes.ConditionDrained: "False/Draining"})
	// Past the drain timeout (10m): the node is reachable, the budget is never overridden, and the drain ends:
	// the pod and its budget named, the node uncordoned, the pool free (back to Observed), no new drain before
	// perServer.cooldown.
	cl = f.pass(11 * time.Minute)
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Reason != "DrainBlocked" || !strings.Contains(c.Message, "PodDisruptionBudget "+ns+"/db") || !strings.Contains(c.Message, ns+"/"+pod.Name) {
		t.Errorf("after the drain timeout: NodesHealthy = %+v, want DrainBlocked naming the pod and its budget", c)
	}
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationObserved || e.Cordoned || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("after the drain timeout: escalation %+v, cordoned %v; want Observed and the node uncordoned", e, f.getNode(name).Spec.Unschedulable)
	}
	if h := cl.Status.Flight.History; len(h) != 1 || len(h[0].Steps) != 1 || h[0].Steps[0].Step != v1alpha1.EscalationDrainTimedOut {
		t.Errorf("history %+v, want the drain that timed out", h)
	}
	wantNodeConditions(t, f.getNode(name), map[corev1.NodeConditionType]string{nodes.ConditionDrainInProgress: "False/" + v1alpha1.EscalationDrainTimedOut, nodes.ConditionDrained: "False/" + v1alpha1.EscalationDrainTimedOut})
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("rebooted with a pod its budget protects: %d soft, %d hard", soft, hard)
	}
	if _, err := f.kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the protected pod: %v", err)
	}
	// Within the cooldown: no new drain, even once the budget allows it.
	budget(1)
	cl = f.pass(time.Minute)
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); !strings.Contains(c.Message, "cooling down") || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("within the cooldown: NodesHealthy %+v, cordoned %v; want it cooling down, not cordoned", c, f.getNode(name).Spec.Unschedulable)
	}
	// After it (perServer.cooldown, 1h): drained again.
	if e := escalation(f.pass(time.Hour), sv.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseDraining {
		t.Fatalf("after the cooldown: escalation %+v, want draining again", e)
	}
	// The budget allows one disruption: evicted; the kubelet confirms the pod gone; then the reboot.
	got, err := f.kube.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp == nil {
		t.Fatalf("the pod was not evicted once its budget allowed it")
	}
	if soft, _ := f.reboots(); soft != 0 {
		t.Fatalf("rebooted before the evicted pod was gone")
	}
	if err == nil {
		if err := f.kube.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	cl = f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseTaken {
		t.Fatalf("drained: escalation %+v, want the soft reboot taken", e)
	}
	wantNodeConditions(t, f.getNode(name), map[corev1.NodeConditionType]string{nodes.ConditionDrainInProgress: "False/Drained", nodes.ConditionDrained: "True/Drained"})
	if soft, hard := f.reboots(); soft != 1 || hard != 0 {
		t.Fatalf("on the wire: %d soft, %d hard reboots; want 1 soft", soft, hard)
	}
}

// TestFlightNodesEvictionRefused: the cordon holds but the eviction of the node's pod fails (the API server's
// 500, as for a pod two PodDisruptionBudgets select): the escalation is draining from the cordon on (the node
// cordoned by flight, the drain's timer started), the refused pod is reported and asked again, the next pass
// goes on with the same drain (its start unchanged), nothing is rebooted; when the node heals flight
// uncordons it.
func TestFlightNodesEvictionRefused(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
	})
	sv := f.server(62)
	name := f.node(sv, f.net.IP(62), "198.19.62.0/24", condReady)
	ns := f.key.Namespace
	f.runningPod(name, nil, corev1.PodStatus{Phase: corev1.PodRunning})
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	if e := escalation(f.pass(6*time.Minute), sv.ID); e.Step != v1alpha1.EscalationObserved {
		t.Fatalf("NotReady for 6m: escalation %+v", e)
	}
	if err := f.kubeProxy.Add(faultproxy.Rule{Name: "evict-500", Method: "POST", Path: "/api/v1/namespaces/" + ns + "/pods/db-0/eviction",
		Fault: faultproxy.Status(500, faultproxy.StyleKube, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")}); err != nil {
		t.Fatal(err)
	}
	cl := f.pass(time.Minute)
	if f.kubeProxy.Matched("evict-500") == 0 {
		t.Fatalf("no eviction was asked: NodesHealthy %+v", condition(cl, v1alpha1.ConditionNodesHealthy))
	}
	e := escalation(cl, sv.ID)
	if e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseDraining || !e.Cordoned {
		t.Fatalf("the cordon held, the eviction failed: escalation %+v, want draining before a soft reboot of a node flight cordoned; NodesHealthy %+v",
			e, condition(cl, v1alpha1.ConditionNodesHealthy))
	}
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); !strings.Contains(c.Message, ns+"/db-0") || !strings.Contains(c.Message, "refused by the API server") {
		t.Errorf("NodesHealthy = %+v, want it to name the refused pod", c)
	}
	if !f.getNode(name).Spec.Unschedulable {
		t.Fatalf("node %s not cordoned", name)
	}
	cl = f.pass(time.Minute)
	if again := escalation(cl, sv.ID); again.Phase != v1alpha1.PhaseDraining || !again.Since.Equal(&e.Since) {
		t.Errorf("the next pass: escalation %+v, want the same drain (since %s)", again, e.Since)
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("rebooted with a pod not evicted: %d soft, %d hard", soft, hard)
	}
	f.kubeProxy.Remove("evict-500")
	f.heals(sv, name)
}

// TestFlightNodesEvictionUnreachable: the cordon holds, then the workload API server stops answering the
// eviction (the fault proxy resets it): the round ends there and the outage is the pass's own, but the cordon
// is recorded (draining, cordoned by flight), so when the node heals flight uncordons it.
func TestFlightNodesEvictionUnreachable(t *testing.T) {
	parallel(t)
	f, sv, name := observedNotReady(t, 82)
	ns := f.key.Namespace
	f.runningPod(name, nil, corev1.PodStatus{Phase: corev1.PodRunning})
	if err := f.kubeProxy.Add(faultproxy.Rule{Name: "evict-reset", Method: "POST", Path: "/api/v1/namespaces/" + ns + "/pods/db-0/eviction", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	cl := f.pass(time.Minute)
	f.kubeProxy.Remove("evict-reset")
	if f.kubeProxy.Matched("evict-reset") == 0 {
		t.Fatalf("no eviction was asked: NodesHealthy %+v", condition(cl, v1alpha1.ConditionNodesHealthy))
	}
	if e := escalation(cl, sv.ID); e.Phase != v1alpha1.PhaseDraining || !e.Cordoned {
		t.Fatalf("the cordon held, the eviction found no API server: escalation %+v, want draining, cordoned by flight", e)
	}
	if !f.getNode(name).Spec.Unschedulable {
		t.Fatalf("node %s not cordoned", name)
	}
	if st := cl.Status.Remediation; st == nil || st.LastOutage == nil || !strings.Contains(st.LastOutageReason, "DrainNode") {
		t.Errorf("status.remediation %+v, want the outage the eviction found", st)
	}
	f.heals(sv, name)
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Errorf("%d soft and %d hard reboots", soft, hard)
	}
}

// TestFlightNodesOutOfService: a server stopped in Nova (SHUTOFF) under a Node that is not Ready gets the
// out-of-service taint (non-graceful node shutdown: its pods' volumes detach); its user stopped it (Nova's
// instance actions say so), so that it is left off past its Node's dwell (repairs.nodes.powerOn starts only a
// server no user stopped: TestFlightNodesPowerOnSim); started again and Ready, the taint comes off and the
// escalation ends. Nothing is rebooted or started by flight.
func TestFlightNodesOutOfService(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
	})
	ctx := context.Background()
	sv := f.server(70)
	name := f.node(sv, f.net.IP(70), "198.19.70.0/24", condReady)
	f.pass(time.Minute)
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		t.Fatal(err)
	}
	if err := servers.Stop(ctx, cc, sv.ID).ExtractErr(); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	f.waitStatus(sv.ID, "SHUTOFF")
	f.setConditions(f.getNode(name), corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"})
	tainted := func() bool {
		return slices.ContainsFunc(f.getNode(name).Spec.Taints, func(x corev1.Taint) bool { return x.Key == corev1.TaintNodeOutOfService })
	}
	cl := f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Reason != flight.FaultShutOff || !e.Tainted || !tainted() {
		t.Fatalf("a SHUTOFF server under a NotReady node: escalation %+v, taint on %v; NodesHealthy %+v", e, tainted(), condition(cl, v1alpha1.ConditionNodesHealthy))
	}
	if n := testutil.ToFloat64(f.pm.Actions.WithLabelValues(flight.Name, flight.VerbTaintNode, "taken", remediation.ReasonAllowed)); n != 1 {
		t.Errorf("the policy recorded %v taints, want 1", n)
	}
	// Past the Node's dwell: a server its user stopped (Nova's instance actions name the user) is left off.
	cl = f.pass(5 * time.Minute)
	if !tainted() {
		t.Fatalf("the taint came off while the server is off")
	}
	if n := f.nova.Matched("start"); n != 0 {
		t.Fatalf("flight started a server its user stopped (%d os-start on the wire)", n)
	}
	if msg := condition(cl, v1alpha1.ConditionNodesHealthy).Message; !strings.Contains(msg, "stopped by user") {
		t.Errorf("NodesHealthy %q does not say the server's user stopped it", msg)
	}
	if err := servers.Start(ctx, cc, sv.ID).ExtractErr(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	f.waitStatus(sv.ID, "ACTIVE")
	f.setConditions(f.getNode(name), condReady)
	cl = f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Server != "" || tainted() {
		t.Fatalf("back: escalation %+v, taint on %v", e, tainted())
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Errorf("%d soft and %d hard reboots of a server that was off", soft, hard)
	}
}

// TestFlightNodesWorkloadOutage: the workload cluster's API server stops answering (the fault proxy in front
// of it resets every connection) while a node is unhealthy and observed: the pass aborts and nothing is
// touched; once it answers again disruptive steps are frozen for outageFreeze, and the node's timer restarts
// from the outage, so the soft reboot comes only unhealthyTimeout after it, not at once.
func TestFlightNodesWorkloadOutage(t *testing.T) {
	parallel(t)
	f, sv, name := observedNotReady(t, 80)
	workloadCheck := func(failing bool) {
		t.Helper()
		opEventually(t, time.Minute, fmt.Sprintf("the workload check failing=%v", failing), func() (bool, string) {
			r, ok := f.checks.Get(f.key, remediation.CheckWorkload)
			return ok && (r.Err != nil) == failing, fmt.Sprint(r.Err)
		})
	}
	if err := f.kubeProxy.Add(faultproxy.Rule{Name: "down", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	workloadCheck(true)
	f.clock.Step(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, _ = f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key})
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		t.Fatal(err)
	}
	if c := condition(&cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionUnknown {
		t.Errorf("the workload API down: NodesHealthy = %+v, want Unknown", c)
	}
	f.kubeProxy.Remove("down")
	workloadCheck(false)
	f.seen(name, condNotReady)

	got := f.healsAfterOutage(sv)
	if got.Status.Remediation == nil || got.Status.Remediation.LastOutage == nil {
		t.Errorf("status.remediation.lastOutage not set: %+v", got.Status.Remediation)
	}
}

// TestFlightNodesWorkloadStopsMidPass: the workload cluster's API server stops between a pass's read and its
// first write (the fault proxy resets the cordon of the Node the pass chose, before it reaches the API
// server): the pass takes no further step (no drain, no reboot), and records the outage itself, with the
// write that found it, though no check saw it; the passes after it are frozen, and restart the node's timer
// from it, as for an outage seen between passes.
func TestFlightNodesWorkloadStopsMidPass(t *testing.T) {
	parallel(t)
	f, sv, name := observedNotReady(t, 81)
	if err := f.kubeProxy.Add(faultproxy.Rule{Name: "stop", Path: "/api/v1/nodes/" + name, Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	got := f.pass(time.Minute) // the pass that would cordon, drain and soft-reboot
	outageAt := f.clock.Now()
	f.kubeProxy.Remove("stop")
	if n := f.kubeProxy.Matched("stop"); n == 0 {
		t.Fatalf("the pass sent no write to node %s", name)
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("rebooted after the cordon failed: %d soft, %d hard", soft, hard)
	}
	if f.getNode(name).Spec.Unschedulable {
		t.Fatalf("node %s cordoned: the API server received the write", name)
	}
	st := got.Status.Remediation
	// the outage's time is kept to the second, rounded up
	if st == nil || st.LastOutage == nil || st.LastOutage.Time.Before(outageAt) || st.LastOutage.Time.After(outageAt.Add(time.Second)) ||
		!strings.Contains(st.LastOutageReason, "DrainNode") || !strings.Contains(st.LastOutageReason, "unreachable") {
		t.Fatalf("status.remediation after the write failed: %+v, want the outage at %s by the drain's write", st, outageAt.UTC().Format(time.RFC3339))
	}
	if r, _ := f.checks.Get(f.key, remediation.CheckWorkload); r.Err != nil {
		t.Fatalf("the workload check failed too (%v): the outage must be the pass's own finding here", r.Err)
	}
	if c := condition(got, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionFalse {
		t.Errorf("the pass whose write failed: NodesHealthy = %+v", c)
	}

	f.healsAfterOutage(sv)
}

// observedNotReady is a fixture whose cluster is frozen for 3 minutes after an outage, with server i whose Node
// has been NotReady long enough to be observed: the next pass would cordon, drain and soft-reboot it.
func observedNotReady(t *testing.T, i int) (*fnFixture, openstack.Server, string) {
	t.Helper()
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Remediation.OutageFreeze = &metav1.Duration{Duration: 3 * time.Minute}
	})
	sv := f.server(i)
	name := f.node(sv, f.net.IP(i), fmt.Sprintf("198.19.%d.0/24", i), condReady)
	f.pass(time.Minute)
	f.setConditions(f.getNode(name), condNotReady)
	if e := escalation(f.pass(6*time.Minute), sv.ID); e.Step != v1alpha1.EscalationObserved {
		t.Fatalf("NotReady for 6m: escalation %+v", e)
	}
	return f, sv, name
}

// healsAfterOutage runs the passes after an outage seen in the last one: frozen within outageFreeze (3m); then
// no longer frozen, with the node's timer restarted from the outage and nothing rebooted; and the soft reboot
// only unhealthyTimeout (5m) after the outage. It returns the cluster after the last pass.
func (f *fnFixture) healsAfterOutage(sv openstack.Server) *v1alpha1.VitalsCluster {
	t := f.t
	t.Helper()
	got := f.pass(time.Minute) // within outageFreeze of the outage
	if c := condition(got, v1alpha1.ConditionNodesHealthy); c.Reason != remediation.ReasonFrozen {
		t.Errorf("after the outage: NodesHealthy = %+v, want Frozen", c)
	}
	// the freeze is over (it counts from the outage's second, rounded up); the timer restarted from the outage
	got = f.pass(2*time.Minute + 2*time.Second)
	if c := condition(got, v1alpha1.ConditionNodesHealthy); c.Reason == remediation.ReasonFrozen || !strings.Contains(c.Message, "timer restarted") {
		t.Errorf("after the freeze: NodesHealthy = %+v, want the timer restarted", c)
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("rebooted within unhealthyTimeout of the outage: %d soft, %d hard", soft, hard)
	}
	got = f.pass(3 * time.Minute) // unhealthyTimeout after the outage
	if e := escalation(got, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || !e.Cordoned {
		t.Fatalf("unhealthyTimeout after the outage: escalation %+v, want a soft reboot of a node flight cordoned; NodesHealthy %+v", e, condition(got, v1alpha1.ConditionNodesHealthy))
	}
	if soft, _ := f.reboots(); soft != 1 {
		t.Errorf("%d soft reboots, want 1", soft)
	}
	return got
}

// waitStatus waits for the server's Nova status.
func (f *fnFixture) waitStatus(id, status string) {
	f.t.Helper()
	opEventually(f.t, 3*time.Minute, "server "+id+" "+status, func() (bool, string) {
		sv, err := f.cloud.GetServer(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return sv.Status == status, sv.Status
	})
}

// runningPod creates the pod db-0 (labels) on the Node name and writes st as its status, as its kubelet would.
func (f *fnFixture) runningPod(name string, labels map[string]string, st corev1.PodStatus) *corev1.Pod {
	f.t.Helper()
	ctx := context.Background()
	pods := f.kube.CoreV1().Pods(f.key.Namespace)
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Labels: labels},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	pod.Status = st
	if pod, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return pod
}
