package node

// Flight's node repair on a real node: the whole operator in-process against the shared kube-apiserver (its
// VitalsCluster) and the real cloud (Nova's fake driver, Neutron), its workload cluster the node cluster (a
// kubeconfig Secret naming its apiserver), Nova servers the nodes' providerIDs name. A kubelet stops; the
// node lifecycle controller, the disruption controller, the Eviction API and the kubelet coming back are
// Kubernetes' own.

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/instanceactions"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	glance "github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
)

// The node repair's settings in the test's VitalsCluster: a Node is unhealthy once Ready has been Unknown or
// False for nodeDwell; a drain not done by nodeDrainTimeout goes on only because the node is unreachable;
// the soft reboot's timeout is long enough that no hard reboot follows within the test.
const (
	nodeDwell        = 20 * time.Second
	nodeDrainTimeout = 2 * time.Minute
	flightInterval   = 2 * time.Second
)

// TestFlightRepairsStoppedKubelet: a kubelet stops, its Node goes NotReady (Unknown, the node lifecycle
// controller's), and flight, after the dwell, cordons the node and drains it through the Eviction API. The
// drain's eviction of the pod on it is refused by the real PodDisruptionBudget (minAvailable 2 of the two
// replicas, one on each node): the step waits and says so (NodesHealthy's message, the escalation draining,
// no reboot in Nova). The budget relaxed to minAvailable 1, the eviction goes through; the evicted pod cannot
// end on a node whose kubelet is gone, so at the drain timeout flight goes on (a Warning DrainForced naming
// the pod) and soft-reboots the server (Nova records one reboot, the request was SOFT). The kubelet started
// again, the Node is Ready, the evicted pod is gone, and flight uncordons the node (NodeRecovered) and ends
// the escalation, its soft reboot kept in the server's history. The healthy node's server and pod are never
// touched.
func TestFlightRepairsStoppedKubelet(t *testing.T) {
	nc := testenv.Node(t)
	env := testenv.RequireFull(t)
	cs := nc.Client(t)
	mc, mcfg := testenv.Clusters(t)
	ctx := context.Background()
	target, healthy := nc.Nodes[len(nc.Nodes)-1], nc.Nodes[0]

	cl := newFlightCloud(t, env)
	ids, names := map[string]string{}, map[string]string{}
	for _, n := range nc.Nodes {
		ids[n], names[n] = cl.server(n)
	}
	// Later tests need the nodes as they were: schedulable, without the out-of-service taint (after the
	// operator has stopped: this clean-up is registered before it starts), their kubelets running
	// (StopKubelet's clean-up).
	t.Cleanup(func() { restoreNodes(t, cs, nc.Nodes) })
	var podCIDRs []v1alpha1.CIDR
	for _, n := range nc.Nodes {
		nc.Reregister(t, n, "openstack:///"+ids[n])
		node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		podCIDRs = append(podCIDRs, v1alpha1.CIDR(node.Spec.PodCIDR))
	}

	ns := testenv.Namespace(t, mcfg, "vitals-node-flight")
	if err := mc.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workload"},
		Data: map[string][]byte{"kubeconfig": testenv.InlineKubeconfig(t, nc.Kubeconfig)}}); err != nil {
		t.Fatal(err)
	}
	startOperator(t, operator.Options{RestConfig: mcfg, Namespace: ns, Identity: "node-flight", Cloud: &cl.opAuth,
		TrustedNamespaces: []string{ns}}) // the default checks (10 s, 5 s): on a loaded machine shorter ones time out and close the gate
	off := v1alpha1.RepairSpec{Enabled: new(false)}
	vc := &v1alpha1.VitalsCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nodes"},
		Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "workload"},
			OpenStack: v1alpha1.OpenStackSpec{RouterID: cl.router, ProjectID: cl.cloud.ProjectID(), NetworkID: cl.network,
				SubnetID: cl.subnet, SecurityGroupID: cl.group},
			PodCIDRs:    podCIDRs,
			Remediation: v1alpha1.RemediationSpec{OutageFreeze: &metav1.Duration{Duration: 30 * time.Second}},
			Controllers: v1alpha1.ControllersSpec{
				RouteGC: v1alpha1.RouteGCSpec{ControllerSpec: v1alpha1.ControllerSpec{Enabled: new(false)}},
				Deorbit: v1alpha1.DeorbitSpec{Enabled: new(false)},
				Flight: v1alpha1.FlightSpec{
					ControllerSpec: v1alpha1.ControllerSpec{Interval: &metav1.Duration{Duration: flightInterval}},
					// The node repair only: the network repairs would act on the test network, not the nodes'.
					Repairs: v1alpha1.FlightRepairs{SecurityGroupRules: off, SecurityGroupAssociation: off, ErroredServers: off, Routes: off,
						SecurityGroupSync: v1alpha1.SecurityGroupSyncRepair{RepairSpec: off},
						Nodes: v1alpha1.NodeRepair{
							UnhealthyConditions: []v1alpha1.UnhealthyCondition{
								{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), Timeout: metav1.Duration{Duration: nodeDwell}},
								{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: metav1.Duration{Duration: nodeDwell}},
							},
							Drain:             &v1alpha1.NodeDrain{Timeout: &metav1.Duration{Duration: nodeDrainTimeout}, Force: v1alpha1.DrainForceWhenUnreachable},
							SoftRebootTimeout: &metav1.Duration{Duration: time.Hour},
						}},
				},
			},
		},
	}
	if err := mc.Create(ctx, vc); err != nil {
		t.Fatalf("create the VitalsCluster: %v", err)
	}
	key := client.ObjectKeyFromObject(vc)
	cluster := func(what string, cond func(*v1alpha1.VitalsCluster) (bool, string)) *v1alpha1.VitalsCluster {
		t.Helper()
		var got v1alpha1.VitalsCluster
		waitFor(t, 6*time.Minute, what, func(ctx context.Context) (bool, error) {
			if err := mc.Get(ctx, key, &got); err != nil {
				return false, err
			}
			ok, why := cond(&got)
			if !ok {
				return false, fmt.Errorf("%s", why)
			}
			return true, nil
		})
		return &got
	}
	nodesHealthy := func(c *v1alpha1.VitalsCluster) metav1.Condition {
		if cd := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionNodesHealthy); cd != nil {
			return *cd
		}
		return metav1.Condition{}
	}
	escalation := func(c *v1alpha1.VitalsCluster) v1alpha1.NodeEscalation {
		if c.Status.Flight != nil {
			if i := slices.IndexFunc(c.Status.Flight.Escalations, func(e v1alpha1.NodeEscalation) bool { return e.Server == ids[target] }); i >= 0 {
				return c.Status.Flight.Escalations[i]
			}
		}
		return v1alpha1.NodeEscalation{}
	}
	cluster("NodesHealthy True over both servers", func(c *v1alpha1.VitalsCluster) (bool, string) {
		cd := nodesHealthy(c)
		return cd.Status == metav1.ConditionTrue && strings.Contains(cd.Message, "(2)"), fmt.Sprintf("NodesHealthy %s/%s: %s", cd.Status, cd.Reason, cd.Message)
	})

	// Two replicas, one on each node, that tolerate the unreachable node (they stay bound to it, as a
	// database's pods would); a budget that allows no disruption.
	wns := namespace(t, cs)
	for i, n := range []string{healthy, target} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db-%d", i), Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{NodeName: n, TerminationGracePeriodSeconds: new(int64(5)),
				Containers: []corev1.Container{{Name: "db", Image: nc.PauseImage, ImagePullPolicy: corev1.PullNever}},
				Tolerations: []corev1.Toleration{
					{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
					{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				}},
		}
		if _, err := cs.CoreV1().Pods(wns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPodReady(t, cs, wns, pod.Name, 2*time.Minute)
	}
	two := intstr.FromInt32(2)
	if _, err := cs.PolicyV1().PodDisruptionBudgets(wns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	budget(t, cs, wns, "db", func(s policyv1.PodDisruptionBudgetStatus) bool {
		return s.CurrentHealthy == 2 && s.DisruptionsAllowed == 0
	})

	// The kubelet stops: NotReady (Unknown), and after the dwell flight cordons and drains; the budget
	// refuses the eviction and the step waits.
	nc.StopKubelet(t, target)
	var unknownSince time.Time
	waitFor(t, 90*time.Second, target+" NotReady", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		r := readyCondition(n)
		if r != nil && r.Status == corev1.ConditionUnknown {
			unknownSince = r.LastTransitionTime.Time
			return true, nil
		}
		return false, nil
	})
	got := cluster("the drain blocked by the PodDisruptionBudget", func(c *v1alpha1.VitalsCluster) (bool, string) {
		e, cd := escalation(c), nodesHealthy(c)
		return e.Phase == v1alpha1.PhaseDraining && strings.Contains(cd.Message, "held by a PodDisruptionBudget"),
			fmt.Sprintf("escalation %+v; NodesHealthy %s/%s: %s", e, cd.Status, cd.Reason, cd.Message)
	})
	e := escalation(got)
	if e.Step != v1alpha1.EscalationSoftReboot || !e.Cordoned || e.Node != target || e.Reason != "Ready=Unknown" {
		t.Errorf("draining: escalation %+v, want a soft reboot of %s (Ready=Unknown) that flight cordoned", e, target)
	}
	if e.FirstSeen == nil || e.FirstSeen.Time.Before(unknownSince.Add(nodeDwell).Truncate(time.Second)) {
		t.Errorf("escalation first seen at %v, before the dwell (%s) from Ready=Unknown at %v", e.FirstSeen, nodeDwell, unknownSince)
	}
	// (NodesUnhealthy, or Frozen when a check of the loaded machine's services timed out meanwhile)
	if cd := nodesHealthy(got); cd.Status != metav1.ConditionFalse {
		t.Errorf("draining: NodesHealthy %s/%s (%s), want False", cd.Status, cd.Reason, cd.Message)
	}
	if n, err := cs.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{}); err != nil || !n.Spec.Unschedulable {
		t.Fatalf("%s while draining: unschedulable false (%v)", target, err)
	}
	if p, err := cs.CoreV1().Pods(wns).Get(ctx, "db-1", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the pod the budget protects was evicted (%v)", err)
	}
	if got := cl.reboots(ids[target]); got != 0 {
		t.Fatalf("Nova recorded %d reboots of %s while its drain was blocked", got, ids[target])
	}
	opEvent(t, mc, ns, corev1.EventTypeNormal, "NodeDraining", target)

	// The budget relaxed: the eviction goes through; the pod cannot end (its kubelet is gone), and at the
	// drain timeout the soft reboot follows, the node being unreachable.
	one := intstr.FromInt32(1)
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(wns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MinAvailable = &one
	relaxed := time.Now()
	if _, err := cs.PolicyV1().PodDisruptionBudgets(wns).Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("relax the budget: %v", err)
	}
	waitFor(t, time.Minute, "db-1 evicted", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(wns).Get(ctx, "db-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, err
	})
	if got := cl.reboots(ids[target]); got != 0 {
		t.Fatalf("Nova recorded %d reboots of %s before the drain timed out (the test took longer than the drain timeout %s to relax the budget)",
			got, ids[target], nodeDrainTimeout)
	}
	got = cluster("the soft reboot", func(c *v1alpha1.VitalsCluster) (bool, string) {
		e := escalation(c)
		return e.Step == v1alpha1.EscalationSoftReboot && e.Phase == v1alpha1.PhaseTaken, fmt.Sprintf("escalation %+v; NodesHealthy %+v", e, nodesHealthy(c))
	})
	opEvent(t, mc, ns, corev1.EventTypeWarning, "DrainForced", wns+"/db-1")
	opEvent(t, mc, ns, corev1.EventTypeNormal, "NodeEscalated", ids[target])
	if got := cl.reboots(ids[target]); got != 1 {
		t.Errorf("Nova recorded %d reboots of %s, want 1", got, ids[target])
	}
	// The drain's rounds while the evicted pod could not end wrote nothing: its first line, from before the
	// budget was relaxed, is still among the last actions kept.
	drained := "server " + ids[target] + " (" + target + ")"
	if i := slices.IndexFunc(got.Status.Flight.Actions, func(a v1alpha1.Action) bool { return a.Object == drained }); i < 0 || !got.Status.Flight.Actions[i].Time.Time.Before(relaxed) {
		t.Errorf("status.flight.actions %+v: no line of the drain from before %s (the budget relaxed): its rounds with nothing to evict pushed it out",
			got.Status.Flight.Actions, relaxed.UTC().Format(time.RFC3339))
	}
	rebooted := "server " + ids[target] + " (" + names[target] + ")"
	if !slices.ContainsFunc(got.Status.Flight.Actions, func(a v1alpha1.Action) bool { return a.Action == v1alpha1.ActionDone && a.Object == rebooted }) {
		t.Errorf("status.flight.actions %+v: no line Done for %s (the reboot)", got.Status.Flight.Actions, rebooted)
	}
	if soft, hard := cl.nova.Matched("soft"), cl.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Errorf("reboots asked of Nova: %d SOFT, %d HARD; want one SOFT", soft, hard)
	}

	// The kubelet back: Ready; the evicted pod ends; flight uncordons the node and ends the escalation.
	nc.StartKubelet(t, target)
	got = cluster("the escalation ended", func(c *v1alpha1.VitalsCluster) (bool, string) {
		e, cd := escalation(c), nodesHealthy(c)
		return e.Server == "" && cd.Status == metav1.ConditionTrue, fmt.Sprintf("escalation %+v; NodesHealthy %s/%s: %s", e, cd.Status, cd.Reason, cd.Message)
	})
	opEvent(t, mc, ns, corev1.EventTypeNormal, "NodeRecovered", ids[target])
	waitFor(t, time.Minute, target+" Ready and schedulable", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{})
		return err == nil && nodeReady(n) && !n.Spec.Unschedulable && !hasTaint(n, corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute), err
	})
	waitFor(t, time.Minute, "the evicted pod gone", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(wns).Get(ctx, "db-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if h := got.Status.Flight.History; len(h) != 1 || h[0].Server != ids[target] || len(h[0].Steps) != 1 || h[0].Steps[0].Step != v1alpha1.EscalationSoftReboot {
		t.Errorf("status.flight.history %+v, want the one soft reboot of %s", h, ids[target])
	}
	if p, err := cs.CoreV1().Pods(wns).Get(ctx, "db-0", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil || !podReady(p) {
		t.Errorf("the pod on the healthy node: %v (it must stay Ready, never evicted)", err)
	}
	if got := cl.reboots(ids[healthy]); got != 0 {
		t.Errorf("Nova recorded %d reboots of the healthy node's server", got)
	}
	if n, err := cs.CoreV1().Nodes().Get(ctx, healthy, metav1.GetOptions{}); err != nil || n.Spec.Unschedulable {
		t.Errorf("the healthy node %s was cordoned (%v)", healthy, err)
	}
}

// budget waits until the disruption controller has observed the budget and its status satisfies ok.
func budget(t *testing.T, cs kubernetes.Interface, ns, name string, ok func(policyv1.PodDisruptionBudgetStatus) bool) {
	t.Helper()
	waitFor(t, time.Minute, "PodDisruptionBudget "+name+" observed", func(ctx context.Context) (bool, error) {
		p, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && ok(p.Status), fmt.Errorf("status %+v", p.Status)
	})
}

// opEvent waits for an Event of the operator's about the namespace's VitalsCluster: its type, reason, and a
// note that names what.
func opEvent(t *testing.T, c client.Client, ns, typ, reason, what string) {
	t.Helper()
	waitFor(t, time.Minute, typ+" Event "+reason+" naming "+what, func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Note, what) {
				t.Logf("Event %s %s %s: %s", e.Type, e.Reason, e.Action, e.Note)
				return true, nil
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Errorf("events: %s", strings.Join(seen, ", "))
	})
}

// restoreNodes makes the nodes schedulable and takes the out-of-service taint off, whatever the test left.
func restoreNodes(t *testing.T, cs kubernetes.Interface, names []string) {
	ctx := context.Background()
	for _, name := range names {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("restore node %s: %v", name, err)
			continue
		}
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(x corev1.Taint) bool { return x.Key == corev1.TaintNodeOutOfService })
		if !n.Spec.Unschedulable && len(taints) == len(n.Spec.Taints) {
			continue
		}
		n.Spec.Unschedulable, n.Spec.Taints = false, taints
		if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Errorf("restore node %s (uncordon, out-of-service taint off): %v", name, err)
		}
	}
}

// startOperator runs the whole operator in-process until the test ends.
func startOperator(t *testing.T, o operator.Options) {
	t.Helper()
	o.Registry = prometheus.NewRegistry()
	o.HealthAddr, o.MetricsAddr = "127.0.0.1:0", "127.0.0.1:0"
	o.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	op, err := operator.New(o)
	if err != nil {
		t.Fatalf("operator.New: %v", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("operator: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the operator did not stop within 30s")
		}
	})
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// flightCloud is what the test's VitalsCluster names in the test cloud, each deleted when the test ends: a
// network with a subnet, a router and a security group; Nova servers on the network stand for the nodes.
// The operator reaches Nova through a fault proxy whose rules count the reboots it asks for, SOFT and HARD
// apart (Nova's instance actions record a reboot, not its type).
type flightCloud struct {
	t       *testing.T
	cloud   *openstack.Cloud
	nova    *faultproxy.Proxy
	opAuth  openstack.Auth
	network string
	subnet  string
	router  string
	group   string
}

func newFlightCloud(t *testing.T, env testenv.OpenStackEnv) *flightCloud {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	auth := openstack.Auth{Options: env.AuthOptions(), Region: env.RegionName}
	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: -1, HTTPTimeout: time.Minute})
	if err != nil {
		t.Fatalf("connect to the test cloud: %v", err)
	}
	f := &flightCloud{t: t, cloud: cloud}
	nw, err := cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	name := "vitals-node-flight-" + randHex(3)
	n, err := networks.Create(ctx, nw, networks.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	f.network = n.ID
	t.Cleanup(func() { _ = networks.Delete(context.Background(), nw, n.ID).ExtractErr() })
	octet, _ := rand.Int(rand.Reader, big.NewInt(250))
	s, err := subnets.Create(ctx, nw, subnets.CreateOpts{NetworkID: n.ID, Name: name, CIDR: fmt.Sprintf("10.231.%d.0/24", octet.Int64()), IPVersion: gophercloud.IPv4}).Extract()
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	f.subnet = s.ID
	t.Cleanup(func() { _ = subnets.Delete(context.Background(), nw, s.ID).ExtractErr() })
	r, err := routers.Create(ctx, nw, routers.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create router: %v", err)
	}
	f.router = r.ID
	t.Cleanup(func() { _ = routers.Delete(context.Background(), nw, r.ID).ExtractErr() })
	g, err := groups.Create(ctx, nw, groups.CreateOpts{Name: name}).Extract()
	if err != nil {
		t.Fatalf("create security group: %v", err)
	}
	f.group = g.ID
	t.Cleanup(func() { _ = groups.Delete(context.Background(), nw, g.ID).ExtractErr() })

	fp, err := faultproxy.NewCloud(env.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fp.Close() })
	cc, err := cloud.Client(openstack.ServiceCompute)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cc.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if f.nova, err = fp.Service(u.Scheme + "://" + u.Host); err != nil {
		t.Fatal(err)
	}
	if err := f.nova.Add(faultproxy.Rule{Name: "soft", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "hard", Method: "POST", Body: `"HARD"`, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	f.opAuth = auth
	f.opAuth.Options.IdentityEndpoint = fp.AuthURL()
	return f
}

// server boots a Nova server (fake driver) on the network for node, deleted when the test ends, waits
// until it is ACTIVE, and returns its ID and name.
func (f *flightCloud) server(node string) (string, string) {
	f.t.Helper()
	ctx := context.Background()
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		f.t.Fatal(err)
	}
	pages, err := glance.List(cc, glance.ListOpts{Name: "cirros-fake"}).AllPages(ctx)
	if err != nil {
		f.t.Fatalf("list images: %v", err)
	}
	imgs, err := glance.ExtractImages(pages)
	if err != nil || len(imgs) == 0 {
		f.t.Fatalf("no image cirros-fake (%v)", err)
	}
	name := node + "-" + randHex(3)
	sv, err := servers.Create(ctx, cc, servers.CreateOpts{Name: name, FlavorRef: "1", ImageRef: imgs[0].ID,
		Networks: []servers.Network{{UUID: f.network}}}, nil).Extract()
	if err != nil {
		f.t.Fatalf("create server for %s: %v", node, err)
	}
	f.t.Cleanup(func() { _ = servers.Delete(context.Background(), cc, sv.ID).ExtractErr() })
	waitFor(f.t, 3*time.Minute, "server "+sv.ID+" ACTIVE", func(ctx context.Context) (bool, error) {
		got, err := f.cloud.GetServer(ctx, sv.ID)
		if err != nil {
			return false, err
		}
		return got.Status == "ACTIVE", fmt.Errorf("status %s", got.Status)
	})
	return sv.ID, name // Nova's answer to a create names no server
}

// reboots counts the reboots among the instance actions Nova recorded for a server (create, reboot, ...).
func (f *flightCloud) reboots(id string) int {
	f.t.Helper()
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	err = instanceactions.List(cc, id, nil).EachPage(context.Background(), func(_ context.Context, p pagination.Page) (bool, error) {
		acts, err := instanceactions.ExtractInstanceActions(p)
		n += len(slices.DeleteFunc(acts, func(a instanceactions.InstanceAction) bool { return a.Action != "reboot" }))
		return true, err
	})
	if err != nil {
		f.t.Fatalf("list the instance actions of server %s: %v", id, err)
	}
	return n
}
