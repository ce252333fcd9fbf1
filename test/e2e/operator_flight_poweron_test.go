package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

// newFNSimFixture is newFNFixture over the OpenStack simulator instead of the real Nova: the simulator shows what
// the real cloud cannot on demand, a server a compute host's crash left SHUTOFF (cloudsim.CrashServer: its
// instance-action log's stop is the cloud's own, of no user); the contract suite keeps its servers' actions
// honest against the real Nova. The kube-apiserver is real and private to the test.
func newFNSimFixture(t *testing.T, nodes int, mutate func(*v1alpha1.VitalsCluster)) (*fnFixture, *cloudsim.Sim, *cloudsim.SeededCluster, *openstack.Cloud) {
	t.Helper()
	return newFNSimFixtureOn(t, cloudsim.ClusterSeed{Project: "poweron", Name: "poweron", Nodes: nodes}, mutate)
}

// newFNSimFixtureOn is newFNSimFixture on the simulator's cluster cs.
func newFNSimFixtureOn(t *testing.T, cs cloudsim.ClusterSeed, mutate func(*v1alpha1.VitalsCluster)) (*fnFixture, *cloudsim.Sim, *cloudsim.SeededCluster, *openstack.Cloud) {
	t.Helper()
	ctx := context.Background()
	k, c := opPrivateKube(t)
	kc, err := kubernetes.NewForConfig(k.Config())
	if err != nil {
		t.Fatal(err)
	}
	sim, seeded, conn := simTenantOn(t, 40, cs)
	off := v1alpha1.RepairSpec{Enabled: new(false)}
	cl := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: opNamespace(t, c), Name: "c1"},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{RouterID: seeded.RouterID, ProjectID: conn.ProjectID(), NetworkID: seeded.NetworkID,
				SubnetID: seeded.SubnetID, SecurityGroupID: seeded.SecurityGroup},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			Controllers: v1alpha1.ControllersSpec{Flight: v1alpha1.FlightSpec{
				ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: time.Minute}},
				Repairs: v1alpha1.FlightRepairs{SecurityGroupRules: off, SecurityGroupAssociation: off, ErroredServers: off, Routes: off,
					Nodes: nodesCfg},
			}},
		},
	}
	if mutate != nil {
		mutate(cl)
	}
	if err := c.Create(ctx, cl); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	f := &fnFixture{t: t, c: c, kube: kc, key: client.ObjectKeyFromObject(cl), clock: clocktesting.NewFakeClock(time.Now()),
		reg: prometheus.NewRegistry(), events: events.NewFakeRecorder(1000)}
	f.pm = remediation.NewMetrics(f.reg)
	f.checks = remediation.NewChecks(f.clock)
	f.checks.Set(f.key, remediation.CheckCloud, nil)
	wl, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: f.checks, AllowLocal: true, Local: k.Config(),
		HealthInterval: time.Second, HealthTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f.wl = wl
	t.Cleanup(wl.Close)
	f.deps = &pass.Deps{Client: f.c, Tenancy: staticTenancy{conn, conn.ProjectID()}, Workload: wl,
		Clock: f.clock, Recorder: func(string) events.EventRecorder { return f.events }}
	f.restart()
	return f, sim, seeded, conn
}

// actionsOf counts a server's instance actions by name, as the cloud recorded them.
func actionsOf(t *testing.T, cloud *openstack.Cloud, id string) map[string]int {
	t.Helper()
	acts, err := cloud.ListServerActions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, a := range acts {
		n[a.Action]++
	}
	return n
}

// TestFlightNodesPowerOnSim: a node's server left SHUTOFF by a compute host's crash (no user's stop in its
// instance actions) gets the out-of-service taint at once and, once its Node has been NotReady past its dwell, is
// started: once, also across a restart of the operator, with no reboot before the soft reboot's timeout from the
// start (its node boots meanwhile), and the soft reboot after it when the node stays NotReady. A server a user stopped is tainted and left off, and NodesHealthy says who
// stopped it. With repairs.nodes.powerOn false nothing is started.
func TestFlightNodesPowerOnSim(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "powerOn false"}[on], func(t *testing.T) {
			f, sim, seeded, conn := newFNSimFixture(t, 2, func(c *v1alpha1.VitalsCluster) {
				if !on {
					c.Spec.Controllers.Flight.Repairs.Nodes.PowerOn = new(false)
				}
			})
			ctx := context.Background()
			crashed, stopped := seeded.Nodes[0], seeded.Nodes[1]
			var names []string
			for i, sn := range []cloudsim.SeededNode{crashed, stopped} {
				sv, err := conn.GetServer(ctx, sn.ID)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, f.node(*sv, sn.IP, []string{"198.19.1.0/24", "198.19.2.0/24"}[i], condReady))
			}
			f.synced()
			f.pass(time.Minute)
			if err := sim.CrashServer(crashed.ID); err != nil {
				t.Fatal(err)
			}
			cc, err := conn.Client(openstack.ServiceCompute)
			if err != nil {
				t.Fatal(err)
			}
			if err := servers.Stop(ctx, cc, stopped.ID).ExtractErr(); err != nil {
				t.Fatalf("the user's stop: %v", err)
			}
			unknown := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}
			for _, n := range names {
				f.setConditions(f.getNode(n), unknown)
				f.seen(n, unknown)
			}

			// Within the dwell: both tainted, neither started.
			cl := f.pass(time.Minute)
			for _, id := range []string{crashed.ID, stopped.ID} {
				if e := escalation(cl, id); !e.Tainted || e.PoweredOn != nil {
					t.Fatalf("server %s within the dwell: escalation %+v, want tainted and not powered on", id, e)
				}
			}
			// Past the dwell: the crashed one is started (when on), the stopped one left off.
			cl = f.pass(5 * time.Minute)
			msg := condition(cl, v1alpha1.ConditionNodesHealthy).Message
			if on && !strings.Contains(msg, "stopped by user") {
				t.Errorf("NodesHealthy %q does not say a user stopped server %s", msg, stopped.ID)
			}
			for range 2 {
				f.pass(time.Minute)
			}
			f.restart()
			cl = f.pass(time.Minute)
			want := map[bool]int{true: 1}[on]
			if n := actionsOf(t, conn, crashed.ID); n["start"] != want || n["reboot"] != 0 {
				t.Errorf("the crashed server's actions %v: want %d start and no reboot", n, want)
			}
			if e := escalation(cl, crashed.ID); (e.PoweredOn != nil) != on {
				t.Errorf("the crashed server's escalation %+v: poweredOn set %v, want %v", e, e.PoweredOn != nil, on)
			}
			if on {
				// Started, and its Node still not Ready past the soft reboot's timeout from the start: the ladder goes
				// on (no cooldown: the power-on was this escalation's own step).
				for range 3 {
					f.pass(2 * time.Minute)
				}
				if n := actionsOf(t, conn, crashed.ID); n["start"] != 1 || n["reboot"] != 1 {
					t.Errorf("the crashed server's actions %v after the soft reboot's timeout: want 1 start and then 1 reboot", n)
				}
			}
			if n := actionsOf(t, conn, stopped.ID); n["start"] != 0 || n["reboot"] != 0 {
				t.Errorf("the server a user stopped: actions %v, want no start and no reboot", n)
			}
			if sv, err := conn.GetServer(ctx, stopped.ID); err != nil || sv.Status != "SHUTOFF" {
				t.Errorf("the server a user stopped: %+v, %v; want it left SHUTOFF", sv, err)
			}
		})
	}
}
