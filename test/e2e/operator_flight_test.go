package e2e

// Flight against the real services: Nova (fake driver) and Neutron through the cluster's scoped cloud
// (the real tenancy verifier), and a private kube-apiserver holding both the VitalsCluster (with this
// tree's CRD, which no other test's install replaces meanwhile) and the workload cluster's Nodes
// (created by the test as a kubelet would, status patched), read through the real workload access.
// The fault proxy shows that a failed or partial read repairs nothing.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// flightWorkload is one private kube-apiserver standing for the management cluster and the workload
// clusters of a test's scenarios (each scenario deletes its Nodes).
type flightWorkload struct {
	kubeconfig []byte
	c          client.Client
}

func newFlightWorkload(t *testing.T) *flightWorkload {
	t.Helper()
	priv := testenv.PrivateKube(t)
	opInstallCRD(t, priv.Config())
	return &flightWorkload{kubeconfig: testenv.InlineKubeconfig(t, priv.KubeconfigPath()), c: opClient(t, priv.Config())}
}

// flFixture is one VitalsCluster with its own network, router and security group.
type flFixture struct {
	t      *testing.T
	c      client.Client // the management cluster
	work   client.Client // the workload cluster (the same private kube-apiserver)
	net    *opNet
	cloud  *openstack.Cloud
	nc, cc *gophercloud.ServiceClient
	ns     string
	key    types.NamespacedName
	group  string
	clock  *clocktesting.FakeClock
	reg    *prometheus.Registry
	events *events.FakeRecorder
	policy *remediation.Engine
	rec    *flight.Reconciler
	deps   *pass.Deps
	fm     *flight.Metrics
	pm2    *pass.Metrics
}

func newFlFixture(t *testing.T, wl *flightWorkload, mutate func(*v1alpha1.VitalsCluster)) *flFixture {
	t.Helper()
	env := testenv.RequireFull(t)
	f := &flFixture{t: t, c: wl.c, work: wl.c}
	auth := opAuth(t, env)
	f.cloud = opConnect(t, auth, nil)
	f.net = opNewNet(t, opConnect(t, auth, nil))
	var err error
	if f.nc, err = f.cloud.Client(openstack.ServiceNetworking); err != nil {
		t.Fatal(err)
	}
	if f.cc, err = f.cloud.Client(openstack.ServiceCompute); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := groups.Create(ctx, f.nc, groups.CreateOpts{Name: "vitals-e2e-flight-" + opRandHex(4)}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	f.group = g.ID
	// Registered before the servers' clean-ups, so it runs after them: a group in use cannot go.
	t.Cleanup(func() { _ = groups.Delete(context.Background(), f.nc, g.ID).ExtractErr() })
	t.Cleanup(func() {
		// The scenario's Nodes go with it: the next scenario's workload starts empty.
		_ = f.work.DeleteAllOf(context.Background(), &corev1.Node{})
	})
	f.ns = opNamespace(t, f.c)
	if err := f.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "workload"},
		Data: map[string][]byte{"kubeconfig": wl.kubeconfig}}); err != nil {
		t.Fatal(err)
	}
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1"},
		Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "workload"},
			OpenStack: v1alpha1.OpenStackSpec{RouterID: f.net.Router, ProjectID: f.cloud.ProjectID(), NetworkID: f.net.Network,
				SubnetID: f.net.Subnet, SecurityGroupID: f.group},
			PodCIDRs:    []v1alpha1.CIDR{"198.19.0.0/16"},
			Remediation: v1alpha1.RemediationSpec{MinProofAge: &metav1.Duration{Duration: time.Minute}},
			Controllers: v1alpha1.ControllersSpec{Flight: v1alpha1.FlightSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
			}},
		},
	}
	if mutate != nil {
		mutate(cl)
	}
	if err := f.c.Create(ctx, cl); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	f.key = client.ObjectKeyFromObject(cl)
	f.clock = clocktesting.NewFakeClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	f.reg = prometheus.NewRegistry()
	f.events = events.NewFakeRecorder(1000)
	f.policy, err = remediation.New(remediation.Options{Clock: f.clock, Recorder: f.events, Metrics: remediation.NewMetrics(f.reg)})
	if err != nil {
		t.Fatal(err)
	}
	// What the access controller does in the operator: the cluster's cloud proven.
	f.policy.Checks().Set(f.key, remediation.CheckCloud, nil)
	// The private kube-apiserver listens on 127.0.0.1: a loopback server the operator refuses by default.
	wm, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: f.policy.Checks(), Rules: workload.KubeconfigRules{AllowLoopback: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wm.Close)
	f.deps = &pass.Deps{Client: f.c, Tenancy: f.verifier(f.cloud), Workload: wm, Policy: f.policy,
		Recorder: func(string) events.EventRecorder { return f.events }, Clock: f.clock}
	f.fm = flight.NewMetrics(f.reg)
	f.pm2 = pass.NewMetrics(flight.Name, f.reg)
	if f.rec, err = flight.New(f.deps, flight.Options{Metrics: f.fm, PassMetrics: f.pm2}); err != nil {
		t.Fatal(err)
	}
	// The workload access reports its health after its first probe.
	opEventually(t, time.Minute, "workload cluster reachable", func() (bool, string) {
		w, err := wm.For(ctx, cl)
		if err == nil {
			err = w.Healthy()
		}
		return err == nil, fmt.Sprint(err)
	})
	return f
}

// verifier is the real tenancy verifier trusting the scenario's namespace with the test's credentials
// (connected through conn).
func (f *flFixture) verifier(conn *openstack.Cloud) tenancy.Resolver {
	return tenancy.NewVerifier(tenancy.Options{Secrets: f.c, Clusters: f.c, TrustedNamespaces: []string{f.ns},
		Operator: func(context.Context) (tenancy.Connection, error) { return conn, nil }})
}

// pass runs one pass at the next deadline and returns the cluster after it.
func (f *flFixture) pass() *v1alpha1.VitalsCluster {
	f.t.Helper()
	f.clock.Step(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		f.t.Fatal(err)
	}
	return &cl
}

// update changes the cluster's spec.
func (f *flFixture) update(mutate func(*v1alpha1.VitalsCluster)) {
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

// node registers a Node as a kubelet (and the cloud provider) would: the object with its providerID
// and pod CIDR, then its status with the InternalIP and Ready.
// nodeCondition reads a Node's condition of type t from the workload cluster.
func (f *flFixture) nodeCondition(name string, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	f.t.Helper()
	var n corev1.Node
	if err := f.work.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		f.t.Fatalf("read node %s: %v", name, err)
	}
	return nodes.Condition(&n, t)
}

func (f *flFixture) node(name, server, podCIDR, ip string) {
	f.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}}}
	if server != "" {
		n.Spec.ProviderID = "openstack:///" + server
	}
	if err := f.work.Create(ctx, n); err != nil {
		f.t.Fatalf("create node %s: %v", name, err)
	}
	now := metav1.Now()
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if err := f.work.Status().Update(ctx, n); err != nil {
		f.t.Fatalf("node %s status: %v", name, err)
	}
}

// metadata sets Nova metadata on a server.
func (f *flFixture) metadata(id string, md map[string]string) {
	f.t.Helper()
	if _, err := servers.UpdateMetadata(context.Background(), f.cc, id, servers.MetadataOpts(md)).Extract(); err != nil {
		f.t.Fatalf("set metadata of server %s: %v", id, err)
	}
}

// rules reads the group's rules.
func (f *flFixture) rules() []rules.SecGroupRule {
	f.t.Helper()
	pages, err := rules.List(f.nc, rules.ListOpts{SecGroupID: f.group}).AllPages(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	rs, err := rules.ExtractRules(pages)
	if err != nil {
		f.t.Fatal(err)
	}
	return rs
}

// rule finds an ingress rule of the group by protocol and remote prefix or group ("" if none).
func (f *flFixture) rule(proto, remote string) string {
	for _, r := range f.rules() {
		if r.Direction == "ingress" && r.Protocol == proto && (r.RemoteIPPrefix == remote || r.RemoteGroupID == remote) {
			return r.ID
		}
	}
	return ""
}

// waitServer waits until the server shows status (or is gone, for "DELETED").
func (f *flFixture) waitServer(id, status string) {
	f.t.Helper()
	opEventually(f.t, 2*time.Minute, "server "+id+" "+status, func() (bool, string) {
		s, err := servers.Get(context.Background(), f.cc, id).Extract()
		if gophercloud.ResponseCodeIs(err, 404) {
			return status == "DELETED", "gone"
		}
		if err != nil {
			return false, err.Error()
		}
		return s.Status == status, s.Status
	})
}

func (f *flFixture) portGroups(server string) []string {
	f.t.Helper()
	pages, err := ports.List(f.nc, ports.ListOpts{DeviceID: server}).AllPages(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	ps, err := ports.ExtractPorts(pages)
	if err != nil || len(ps) != 1 {
		f.t.Fatalf("ports of server %s: %v (%d)", server, err, len(ps))
	}
	return ps[0].SecurityGroups
}

// repairs reads vitals_flight_repairs_total{repair,outcome}.
func (f *flFixture) repairs(repair, outcome string) float64 {
	return testutil.ToFloat64(f.pm2.Repairs.WithLabelValues(repair, outcome))
}

func TestOperatorFlight(t *testing.T) {
	parallel(t)
	testenv.RequireFull(t)
	wl := newFlightWorkload(t)

	t.Run("security group rules", func(t *testing.T) {
		f := newFlFixture(t, wl, nil)
		foreign, err := rules.Create(context.Background(), f.nc, rules.CreateOpts{SecGroupID: f.group, Direction: rules.DirIngress,
			EtherType: rules.EtherType4, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22, RemoteIPPrefix: "0.0.0.0/0"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		cl := f.pass()
		if c := condition(cl, v1alpha1.ConditionSecurityGroupRules); c.Status != metav1.ConditionTrue || c.Reason != "RulesRepaired" {
			t.Fatalf("SecurityGroupRulesHealthy = %s/%s (%s), want True/RulesRepaired", c.Status, c.Reason, c.Message)
		}
		for _, want := range [][2]string{{"tcp", "198.19.0.0/16"}, {"udp", "198.19.0.0/16"}, {"icmp", "198.19.0.0/16"}, {"", f.group}} {
			if f.rule(want[0], want[1]) == "" {
				t.Errorf("no ingress %q rule from %s after the pass", want[0], want[1])
			}
		}
		if got := f.repairs("securityGroupRules", pass.OutcomeDone); got != 4 {
			t.Errorf("vitals_flight_repairs_total{securityGroupRules,done} = %v, want 4", got)
		}
		if !hasAction(cl, v1alpha1.ActionDone, remediation.ReasonAllowed, "securitygroup "+f.group+" (ingress IPv4 tcp from 198.19.0.0/16)") {
			t.Errorf("no status line for the tcp rule: %+v", cl.Status.Flight.Actions)
		}
		// Drift: a rule of ours goes; it comes back, and the rule someone else made stays.
		if err := rules.Delete(context.Background(), f.nc, f.rule("udp", "198.19.0.0/16")).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		n := len(f.rules())
		cl = f.pass()
		if f.rule("udp", "198.19.0.0/16") == "" || len(f.rules()) != n+1 {
			t.Fatalf("the deleted udp rule was not re-created exactly once (%d rules, had %d)", len(f.rules()), n)
		}
		if c := condition(cl, v1alpha1.ConditionSecurityGroupRules); c.Reason != "RulesRepaired" || !strings.Contains(c.Message, "udp") {
			t.Errorf("after the drift: %s/%s (%s), want RulesRepaired naming the udp rule", c.Status, c.Reason, c.Message)
		}
		if !slices.ContainsFunc(f.rules(), func(r rules.SecGroupRule) bool { return r.ID == foreign.ID }) {
			t.Errorf("the rule flight did not make was deleted")
		}
		// Nothing missing: nothing asked.
		before := f.repairs("securityGroupRules", pass.OutcomeDone)
		cl = f.pass()
		if c := condition(cl, v1alpha1.ConditionSecurityGroupRules); c.Reason != "RulesPresent" || f.repairs("securityGroupRules", pass.OutcomeDone) != before {
			t.Errorf("a healthy group: %s/%s, repairs %v (had %v)", c.Status, c.Reason, f.repairs("securityGroupRules", pass.OutcomeDone), before)
		}
		// Dry run: detected and reported, not created.
		f.update(func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Flight.DryRun = true })
		if err := rules.Delete(context.Background(), f.nc, f.rule("tcp", "198.19.0.0/16")).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		cl = f.pass()
		if f.rule("tcp", "198.19.0.0/16") != "" {
			t.Errorf("a dry run created a rule")
		}
		if c := condition(cl, v1alpha1.ConditionSecurityGroupRules); c.Status != metav1.ConditionFalse || c.Reason != "RulesMissing" {
			t.Errorf("dry run: %s/%s (%s), want False/RulesMissing", c.Status, c.Reason, c.Message)
		}
		if !hasAction(cl, v1alpha1.ActionWouldDo, remediation.ReasonDryRun, "") {
			t.Errorf("no WouldDo line: %+v", cl.Status.Flight.Actions)
		}
	})

	t.Run("security group by name: ambiguous is never guessed", func(t *testing.T) {
		var name string
		f := newFlFixture(t, wl, func(c *v1alpha1.VitalsCluster) {
			name = "vitals-e2e-flight-twin-" + opRandHex(3)
			c.Spec.OpenStack.SecurityGroupID, c.Spec.OpenStack.SecurityGroupName = "", name
		})
		for range 2 {
			g, err := groups.Create(context.Background(), f.nc, groups.CreateOpts{Name: name}).Extract()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = groups.Delete(context.Background(), f.nc, g.ID).ExtractErr() })
		}
		// The tenancy proof refuses the cluster before flight reads anything (flight's own read would
		// say SecurityGroupAmbiguous): nothing is created in either group.
		cl := f.pass()
		for _, typ := range []string{v1alpha1.ConditionSecurityGroupRules, v1alpha1.ConditionSecurityGroupAssociated} {
			if c := condition(cl, typ); c.Status == metav1.ConditionTrue || !strings.Contains(c.Message, "expected exactly one") {
				t.Errorf("%s = %s/%s (%s), want a refusal naming the two groups", typ, c.Status, c.Reason, c.Message)
			}
		}
		if got := f.repairs("securityGroupRules", pass.OutcomeDone); got != 0 {
			t.Errorf("%v rules created in an ambiguous group", got)
		}
	})

	t.Run("a group CAPO manages gets no rules", func(t *testing.T) {
		var name string
		f := newFlFixture(t, wl, func(c *v1alpha1.VitalsCluster) {
			name = "k8s-cluster-e2e-" + opRandHex(3) + "-secgroup-worker"
			c.Spec.OpenStack.SecurityGroupID, c.Spec.OpenStack.SecurityGroupName = "", name
		})
		g, err := groups.Create(context.Background(), f.nc, groups.CreateOpts{Name: name, Description: clusterapi.ManagedSecurityGroupDescription}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = groups.Delete(context.Background(), f.nc, g.ID).ExtractErr() })
		before := len(g.Rules)
		cl := f.pass()
		c := condition(cl, v1alpha1.ConditionSecurityGroupRules)
		if c.Status != metav1.ConditionFalse || c.Reason != flight.ReasonRulesManagedByClusterAPI || !strings.Contains(c.Message, "allNodesSecurityGroupRules") {
			t.Errorf("%s = %s/%s (%s), want False/%s naming where to add the rules", v1alpha1.ConditionSecurityGroupRules, c.Status, c.Reason, c.Message, flight.ReasonRulesManagedByClusterAPI)
		}
		after, err := groups.Get(context.Background(), f.nc, g.ID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Rules) != before || f.repairs("securityGroupRules", pass.OutcomeDone) != 0 {
			t.Errorf("rules were added to CAPO's group: %d before, %d after", before, len(after.Rules))
		}
		if !drainEvents(f.events, flight.ReasonRulesManagedByClusterAPI) {
			t.Errorf("no %s Warning", flight.ReasonRulesManagedByClusterAPI)
		}
	})

	t.Run("missing association", func(t *testing.T) {
		f := newFlFixture(t, wl, nil)
		with := f.net.Server(f.cloud, 4, f.group)
		without := f.net.Server(f.cloud, 5) // the project's default group only
		f.waitServer(with, "ACTIVE")
		f.waitServer(without, "ACTIVE")
		f.node("n1", with, "198.19.1.0/24", f.net.IP(4))
		cl := f.pass()
		if !slices.Contains(f.portGroups(without), f.group) {
			t.Fatalf("server %s did not get security group %s back: %v", without, f.group, f.portGroups(without))
		}
		if c := condition(cl, v1alpha1.ConditionSecurityGroupAssociated); c.Status != metav1.ConditionTrue || c.Reason != "Repaired" {
			t.Errorf("SecurityGroupAssociated = %s/%s (%s), want True/Repaired", c.Status, c.Reason, c.Message)
		}
		if got := f.repairs("securityGroupAssociation", pass.OutcomeDone); got != 1 {
			t.Errorf("vitals_flight_repairs_total{securityGroupAssociation,done} = %v, want 1", got)
		}
		if cl.Status.Flight == nil || cl.Status.Flight.Counts.Servers != 2 || cl.Status.Flight.Counts.Nodes != 1 {
			t.Errorf("status.flight %+v: want 2 servers, 1 node", cl.Status.Flight)
		}
		cl = f.pass()
		if c := condition(cl, v1alpha1.ConditionSecurityGroupAssociated); c.Reason != "Associated" {
			t.Errorf("after the repair: %s/%s (%s)", c.Status, c.Reason, c.Message)
		}
	})

	// A server in ERROR is deleted only where the node repair would delete it: first no manager replaces it
	// (repairs.nodes.replacement names none), and it is left alone; once the replacement's metadata key is
	// named (the server carries it), its delete waits for the proof age, then goes.
	t.Run("errored server", func(t *testing.T) {
		f := newFlFixture(t, wl, func(c *v1alpha1.VitalsCluster) {
			c.Spec.Remediation.MaxUnhealthy = &intstr.IntOrString{Type: intstr.String, StrVal: "50%"}
			c.Spec.Remediation.MinProofAge = &metav1.Duration{Duration: 2 * time.Minute}
		})
		healthy := f.net.Server(f.cloud, 4, f.group)
		broken := f.net.Server(f.cloud, 5, f.group)
		f.waitServer(healthy, "ACTIVE")
		f.waitServer(broken, "ACTIVE")
		f.metadata(broken, map[string]string{"e2e-pool": "a"}) // Nova changes no metadata of a server in ERROR
		if err := servers.ResetState(context.Background(), f.cc, broken, servers.StateError).ExtractErr(); err != nil {
			t.Fatalf("reset the server to error: %v", err)
		}
		f.waitServer(broken, "ERROR")
		cl := f.pass()
		if st := cl.Status.Flight; st == nil || len(st.Errored) != 1 || st.Errored[0].Server != broken {
			t.Fatalf("status.flight.errored %+v, want server %s", cl.Status.Flight, broken)
		}
		first := cl.Status.Flight.Errored[0].FirstSeen
		if c := condition(cl, v1alpha1.ConditionServersHealthy); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "left alone 1") || !strings.Contains(c.Message, flight.StopNoReplacement) {
			t.Errorf("no manager replaces it: ServersHealthy %s/%s (%s), want it left alone, NoReplacement", c.Status, c.Reason, c.Message)
		}
		f.update(func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.Flight.Repairs.Nodes.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "e2e-pool"}
		})
		cl = f.pass()
		if !hasAction(cl, v1alpha1.ActionSkipped, remediation.ReasonProofPending, "") {
			t.Errorf("the sighting was not held for its proof age: %+v", cl.Status.Flight.Actions)
		}
		f.waitServer(broken, "ERROR") // still there
		cl = f.pass()                 // two minutes after the first sighting: the proof age has passed
		if !hasAction(cl, v1alpha1.ActionRemoved, remediation.ReasonAllowed, "") {
			t.Fatalf("no Removed line: %+v", cl.Status.Flight.Actions)
		}
		f.waitServer(broken, "DELETED")
		f.waitServer(healthy, "ACTIVE")
		if got := f.repairs("erroredServers", pass.OutcomeDone); got != 1 {
			t.Errorf("vitals_flight_repairs_total{erroredServers,done} = %v, want 1", got)
		}
		if st := cl.Status.Flight; len(st.Errored) != 1 || !st.Errored[0].FirstSeen.Equal(&first) {
			t.Errorf("the sighting must keep its first-seen time until the server is gone: %+v", st.Errored)
		}
		cl = f.pass()
		if c := condition(cl, v1alpha1.ConditionServersHealthy); c.Status != metav1.ConditionTrue || len(cl.Status.Flight.Errored) != 0 {
			t.Errorf("after the delete: ServersHealthy %s/%s, errored %+v", c.Status, c.Reason, cl.Status.Flight.Errored)
		}
	})

	t.Run("routes", func(t *testing.T) {
		f := newFlFixture(t, wl, func(c *v1alpha1.VitalsCluster) {
			off := false
			c.Spec.Controllers.RouteGC.Enabled = &off // flight removes stale routes itself
			limit := int32(3)
			c.Spec.Controllers.Flight.MaxRoutes = &limit
		})
		f.net.Port(4, f.group)
		f.net.Port(5, f.group)
		f.node("n1", "", "198.19.1.0/24", f.net.IP(4))
		f.node("n2", "", "198.19.2.0/24", f.net.IP(5))
		good := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(4)}
		stale := openstack.Route{Destination: "198.19.1.0/24", NextHop: f.net.IP(99)} // a deleted node's
		missing := openstack.Route{Destination: "198.19.2.0/24", NextHop: f.net.IP(5)}
		f.net.SetRoutes(stale, good)
		cl := f.pass()
		rs := f.net.Routes()
		if !rs[missing] || !rs[good] || !rs[stale] || len(rs) != 3 {
			t.Fatalf("after the first pass: %v; want the missing route added, the stale one kept for its proof", rs)
		}
		if c := condition(cl, v1alpha1.ConditionPodRoutes); c.Status != metav1.ConditionFalse || c.Reason != "DuplicateRoutes" || !strings.Contains(c.Message, "resync") {
			t.Errorf("PodRoutesHealthy = %s/%s (%s), want False/DuplicateRoutes with a note on the device's resync", c.Status, c.Reason, c.Message)
		}
		if c := condition(cl, v1alpha1.ConditionRouteHeadroom); c.Status != metav1.ConditionFalse || c.Reason != "NearRouteLimit" {
			t.Errorf("RouteHeadroom = %s/%s (%s), want False/NearRouteLimit at 3 of 3", c.Status, c.Reason, c.Message)
		}
		if !drainEvents(f.events, "DuplicateRoutes") {
			t.Errorf("no DuplicateRoutes event")
		}
		if st := cl.Status.Flight; st == nil || len(st.StaleRoutes) != 1 {
			t.Errorf("status.flight.staleRoutes %+v, want the stale route's first sighting", cl.Status.Flight)
		}
		// The duplicate is also on the Node it concerns (n1), not on the others.
		if c, ok := f.nodeCondition("n1", nodes.ConditionPodRouteDuplicate); !ok || c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, f.net.IP(99)) {
			t.Errorf("node n1: %s = %+v (present %v), want True naming the stale nexthop", nodes.ConditionPodRouteDuplicate, c, ok)
		}
		if c, ok := f.nodeCondition("n2", nodes.ConditionPodRouteDuplicate); ok {
			t.Errorf("node n2 has %s %+v, want none (its pod CIDR has one route)", nodes.ConditionPodRouteDuplicate, c)
		}
		if c, ok := f.nodeCondition("n1", corev1.NodeReady); !ok || c.Status != corev1.ConditionTrue {
			t.Errorf("node n1: Ready = %+v after flight's condition write, want the kubelet's True kept", c)
		}
		cl = f.pass()
		rs = f.net.Routes()
		if rs[stale] || !rs[good] || !rs[missing] || len(rs) != 2 {
			t.Fatalf("after the proof age: %v; want the stale route gone, the others kept", rs)
		}
		if c := condition(cl, v1alpha1.ConditionPodRoutes); c.Status != metav1.ConditionTrue {
			t.Errorf("PodRoutesHealthy = %s/%s (%s), want True", c.Status, c.Reason, c.Message)
		}
		if c, ok := f.nodeCondition("n1", nodes.ConditionPodRouteDuplicate); !ok || c.Status != corev1.ConditionFalse {
			t.Errorf("node n1: %s = %+v once one route is left, want False", nodes.ConditionPodRouteDuplicate, c)
		}
		cl = f.pass()
		if c := condition(cl, v1alpha1.ConditionRouteHeadroom); c.Status != metav1.ConditionTrue {
			t.Errorf("RouteHeadroom = %s/%s (%s), want True at 2 of 3", c.Status, c.Reason, c.Message)
		}
		// With the route collector on, a stale duplicate is left to it.
		f.update(func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.RouteGC.Enabled = nil })
		f.net.SetRoutes(good, missing, stale)
		cl = f.pass()
		f.pass()
		if !f.net.Routes()[stale] {
			t.Errorf("flight removed a stale route while the route collector runs for the cluster")
		}
		if c := condition(cl, v1alpha1.ConditionPodRoutes); !strings.Contains(c.Message, "routegc") {
			t.Errorf("PodRoutesHealthy message %q does not say routegc removes it", c.Message)
		}
	})

	t.Run("failed or partial reads repair nothing", func(t *testing.T) {
		f := newFlFixture(t, wl, func(c *v1alpha1.VitalsCluster) {
			c.Spec.Remediation.MinProofAge = &metav1.Duration{}
			c.Annotations = map[string]string{remediation.AnnotationUnsafeShortProofAge: "true"} // below the floor
			c.Spec.Remediation.MaxUnhealthy = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"}
			c.Spec.Controllers.Flight.Repairs.Nodes.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "e2e-pool"}
		})
		auth, proxies := opFaultProxy(t, testenv.RequireFull(t), f.cloud, openstack.ServiceNetworking, openstack.ServiceCompute)
		neutron, nova := proxies[0], proxies[1]
		f.deps.Tenancy = f.verifier(opConnect(t, auth, nil))

		// Something for every repair to do: no rules, a server without the group, an errored server, a
		// missing route.
		lost := f.net.Server(f.cloud, 4)
		broken := f.net.Server(f.cloud, 5, f.group)
		f.waitServer(lost, "ACTIVE")
		f.waitServer(broken, "ACTIVE")
		f.metadata(broken, map[string]string{"e2e-pool": "a"}) // a manager replaces it: the errored repair may delete it
		if err := servers.ResetState(context.Background(), f.cc, broken, servers.StateError).ExtractErr(); err != nil {
			t.Fatal(err)
		}
		f.waitServer(broken, "ERROR")
		f.node("n1", lost, "198.19.1.0/24", f.net.IP(4))
		rulesBefore := len(f.rules())
		cases := []struct {
			name   string
			proxy  *faultproxy.Proxy
			rule   faultproxy.Rule
			reason string
		}{
			{"nova servers 503", nova, faultproxy.Rule{Name: "servers-503", Method: "GET", Path: "/**",
				Fault: faultproxy.Status(503, faultproxy.StyleNova, "injected")}, "ReadFailed"},
			{"neutron ports 500", neutron, faultproxy.Rule{Name: "ports-500", Method: "GET", Path: "/v2.0/ports",
				Fault: faultproxy.Status(500, faultproxy.StyleNeutron, "injected")}, "ReadFailed"},
			{"neutron ports body cut short", neutron, faultproxy.Rule{Name: "ports-truncated", Method: "GET", Path: "/v2.0/ports",
				Fault: faultproxy.Truncate(100)}, "ReadFailed"},
			{"neutron ports answered empty (a partial read)", neutron, faultproxy.Rule{Name: "ports-empty", Method: "GET", Path: "/v2.0/ports",
				Fault: faultproxy.Fault{Kind: faultproxy.KindStatus, Status: 200, Body: []byte(`{"ports": []}`),
					Header: map[string][]string{"Content-Type": {"application/json"}}}}, "UnsafeRead"},
			{"neutron security groups 503", neutron, faultproxy.Rule{Name: "groups-503", Method: "GET", Path: "/v2.0/security-groups",
				Fault: faultproxy.Status(503, faultproxy.StyleNeutron, "injected")}, ""}, // the tenancy proof or flight's read fails
		}
		for _, tc := range cases {
			if err := tc.proxy.Add(tc.rule); err != nil {
				t.Fatal(err)
			}
			cl := f.pass()
			tc.proxy.Clear()
			if tc.proxy.Count(tc.rule.Name) == 0 {
				t.Errorf("%s: the fault was never hit", tc.name)
			}
			if n := len(f.rules()); n != rulesBefore {
				t.Errorf("%s: %d rules, had %d: a rule was created", tc.name, n, rulesBefore)
			}
			if slices.Contains(f.portGroups(lost), f.group) {
				t.Fatalf("%s: the group was added", tc.name)
			}
			f.waitServer(broken, "ERROR")
			if rs := f.net.Routes(); len(rs) != 0 {
				t.Errorf("%s: routes %v were added", tc.name, rs)
			}
			for _, typ := range []string{v1alpha1.ConditionSecurityGroupRules, v1alpha1.ConditionServersHealthy, v1alpha1.ConditionPodRoutes} {
				if c := condition(cl, typ); c.Status != metav1.ConditionUnknown || tc.reason != "" && c.Reason != tc.reason {
					t.Errorf("%s: %s = %s/%s (%s), want Unknown/%s", tc.name, typ, c.Status, c.Reason, c.Message, tc.reason)
				}
			}
		}
		// The faults cleared: every repair acts.
		cl := f.pass()
		if !slices.Contains(f.portGroups(lost), f.group) || len(f.rules()) <= rulesBefore || len(f.net.Routes()) != 1 {
			t.Errorf("after the faults: group %v, %d rules, routes %v", f.portGroups(lost), len(f.rules()), f.net.Routes())
		}
		f.waitServer(broken, "DELETED")
		for _, cd := range cl.Status.Conditions {
			if cd.Status == metav1.ConditionUnknown && cd.Reason != "Disabled" {
				t.Errorf("%s = Unknown/%s (%s) after a complete pass", cd.Type, cd.Reason, cd.Message)
			}
		}
	})
}
