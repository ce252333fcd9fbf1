package e2e

// Fresh at the write (nodes.Recheck): immediately before every disruptive write, flight's node repair and the
// Cluster API remediation read the Node from the API server (never the informer cache) and the server from Nova,
// and act only on the state the step was decided on. Against the real kube-apiserver and real Nova through the
// fault proxy.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/controllers/remediate"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// TestFlightNodesDuplicateProviderID: a server two Nodes name (a Ready one, and a stale NotReady one left
// after a re-registration) is never rebooted nor its Nodes cordoned, however long the stale one stays
// NotReady; NodesHealthy says DuplicateProviderID and a Warning names both Nodes.
func TestFlightNodesDuplicateProviderID(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg })
	sv := f.server(40)
	stale := f.node(sv, f.net.IP(40), "198.19.40.0/24", condNotReady)
	live := f.node(sv, f.net.IP(40), "198.19.41.0/24", condReady)
	var cl *v1alpha1.VitalsCluster
	for _, step := range []time.Duration{time.Minute, 6 * time.Minute, time.Minute, time.Minute, 10 * time.Minute} {
		cl = f.pass(step)
	}
	if soft, hard := f.reboots(); soft+hard != 0 {
		t.Fatalf("the server of a Ready Node was rebooted: %d soft, %d hard", soft, hard)
	}
	if f.getNode(stale).Spec.Unschedulable || f.getNode(live).Spec.Unschedulable {
		t.Fatal("a Node of a server two Nodes name was cordoned")
	}
	if e := escalation(cl, sv.ID); e.Step != "" && e.Step != v1alpha1.EscalationObserved {
		t.Fatalf("escalation %+v: a step of a server two Nodes name", e)
	}
	c := condition(cl, v1alpha1.ConditionNodesHealthy)
	if c.Status != metav1.ConditionFalse || c.Reason != flight.ReasonDuplicateProviderID || !strings.Contains(c.Message, stale) || !strings.Contains(c.Message, live) {
		t.Errorf("NodesHealthy = %+v, want DuplicateProviderID naming %s and %s", c, stale, live)
	}
	if !eventSeen(f.events, flight.ReasonDuplicateProviderID) {
		t.Error("no DuplicateProviderID Event")
	}
}

// slowServerGet holds flight's (or remediate's) read of server id at Nova for hold (the fault proxy's delay),
// once (Nova's path with or without the project); it returns the rules' names.
func slowServerGet(t *testing.T, nova *faultproxy.Proxy, id string, hold time.Duration) []string {
	t.Helper()
	// names of their own: the proxy's counts outlive a removed rule
	tag := opRandHex(3)
	names := []string{"slow-get-" + tag, "slow-get-p-" + tag}
	if err := nova.Add(faultproxy.Rule{Name: names[0], Method: "GET", Path: "/v2.1/servers/" + id, Fault: faultproxy.Delay(hold), Times: 1},
		faultproxy.Rule{Name: names[1], Method: "GET", Path: "/v2.1/*/servers/" + id, Fault: faultproxy.Delay(hold), Times: 1}); err != nil {
		t.Fatal(err)
	}
	return names
}

// whileSlow runs pass in the background, does meanwhile once the slow read of slowServerGet has arrived at
// the proxy, and waits for the pass.
func whileSlow(t *testing.T, nova *faultproxy.Proxy, rules []string, pass func() error, meanwhile func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- pass() }()
	opEventually(t, 2*time.Minute, "the read of the server at Nova", func() (bool, string) {
		select {
		case err := <-done:
			done <- err
			return true, "the pass ended first"
		default:
		}
		return nova.Count(rules[0])+nova.Count(rules[1]) > 0, ""
	})
	if nova.Count(rules[0])+nova.Count(rules[1]) == 0 {
		t.Fatal("the pass ended without reading the server again before its write")
	}
	meanwhile()
	if err := <-done; err != nil {
		t.Fatalf("pass: %v", err)
	}
	for _, r := range rules {
		nova.Remove(r)
	}
}

// TestFlightNodesFreshAtWrite: a Node that turns Ready while flight's read of its server at Nova is slow
// (the fault proxy holds it) is neither cordoned nor rebooted, and the next pass ends the escalation; a Node
// labelled for exclusion at that moment neither.
func TestFlightNodesFreshAtWrite(t *testing.T) {
	parallel(t)
	f, sv, name := observedNotReady(t, 42)
	reconcile := func() error {
		f.clock.Step(time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key})
		return err
	}
	whileSlow(t, f.nova, slowServerGet(t, f.nova, sv.ID, 10*time.Second), reconcile, func() {
		f.setConditions(f.getNode(name), condReady)
	})
	if soft, hard := f.reboots(); soft+hard != 0 || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("a Node Ready at the write: %d soft, %d hard reboots, cordoned %v", soft, hard, f.getNode(name).Spec.Unschedulable)
	}
	cl := f.pass(time.Minute)
	if c := condition(cl, v1alpha1.ConditionNodesHealthy); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready again: NodesHealthy %+v", c)
	}
	if e := escalation(cl, sv.ID); e.Server != "" {
		t.Fatalf("Ready again: escalation %+v", e)
	}

	// NotReady again, a new dwell; labelled for exclusion while the server's read is slow.
	f.setConditions(f.getNode(name), condNotReady)
	if e := escalation(f.pass(6*time.Minute), sv.ID); e.Step != v1alpha1.EscalationObserved {
		t.Fatalf("NotReady again for 6m: escalation %+v, want observed", e)
	}
	whileSlow(t, f.nova, slowServerGet(t, f.nova, sv.ID, 10*time.Second), reconcile, func() {
		n := f.getNode(name)
		n.Labels = map[string]string{nodes.LabelExclude: "true"}
		if _, err := f.kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if soft, hard := f.reboots(); soft+hard != 0 || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("a Node excluded at the write: %d soft, %d hard reboots, cordoned %v", soft, hard, f.getNode(name).Spec.Unschedulable)
	}
	var cl2 v1alpha1.VitalsCluster
	if err := f.c.Get(context.Background(), f.key, &cl2); err != nil {
		t.Fatal(err)
	}
	if c := condition(&cl2, v1alpha1.ConditionNodesHealthy); !strings.Contains(c.Message, "Excluded") {
		t.Errorf("NodesHealthy = %+v, want the drain held as Excluded", c)
	}
}

// TestRemediateFreshNode: the Cluster API path reads the Machine's Node again at the reboot's write: a Node
// labelled for exclusion, or a second Node, Ready, naming the same server, holds the reboot (nothing on the
// wire); once neither holds, the soft reboot is sent.
func TestRemediateFreshNode(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	id := f.server()
	m := f.machine(id)
	own := f.node(id, corev1.ConditionFalse, map[string]string{nodes.LabelExclude: "true"})
	f.nodeRef(m, own)
	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationPending, "Excluded")
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft+hard != 0 {
		t.Fatalf("an excluded Node's server rebooted: soft %d hard %d", soft, hard)
	}
	var n corev1.Node
	if err := f.c.Get(ctx, client.ObjectKey{Name: own}, &n); err != nil {
		t.Fatal(err)
	}
	delete(n.Labels, nodes.LabelExclude)
	if err := f.c.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	other := f.node(id, corev1.ConditionTrue, nil)
	rem = f.reconcile(m, time.Minute)
	f.want(rem, v1alpha1.RemediationPending, string(nodes.ReasonServerShared))
	if !strings.Contains(rem.Status.Message, other) {
		t.Errorf("message %q does not name the Ready Node %s", rem.Status.Message, other)
	}
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft+hard != 0 {
		t.Fatalf("the server of a Ready Node rebooted: soft %d hard %d", soft, hard)
	}
	var o corev1.Node
	if err := f.c.Get(ctx, client.ObjectKey{Name: other}, &o); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Delete(ctx, &o); err != nil {
		t.Fatal(err)
	}
	rem = f.reconcile(m, time.Minute)
	f.want(rem, v1alpha1.RemediationSoftRebooted, "Rebooted")
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 1 0", soft, hard)
	}
}

// TestFlightNodesWriteAhead: the pass that cordons a node and soft-reboots its server loses its one status
// write (the API server refuses it, as if the operator were killed after Nova's answer); the restarted
// operator finds the cordon and the soft reboot recorded before they were sent: it neither reboots the server
// again within softRebootTimeout nor loses the step (the hard reboot follows it, once, on time), and uncordons
// the node when it heals. Each step is counted once at the fault proxy.
func TestFlightNodesWriteAhead(t *testing.T) {
	parallel(t)
	f, sv, name := observedNotReady(t, 44)
	// The records before the cordon and before the reboot go through; every status write after them fails.
	failing := &statusAfter{Client: f.c, allow: 2}
	f.deps.Writer = &pass.Writer{Client: failing, Clock: f.clock}
	f.restart()
	f.clock.Step(time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: f.key}); err == nil {
		t.Fatal("the pass's status write was refused, and the pass says nothing")
	}
	if soft, hard := f.reboots(); soft != 1 || hard != 0 || !f.getNode(name).Spec.Unschedulable {
		t.Fatalf("the pass: %d soft, %d hard reboots, cordoned %v; want one soft reboot of a cordoned node", soft, hard, f.getNode(name).Spec.Unschedulable)
	}
	var cl v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &cl); err != nil {
		t.Fatal(err)
	}
	if e := escalation(&cl, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseStarted || !e.Cordoned {
		t.Fatalf("recorded before the reboot: %+v, want SoftReboot Started, cordoned", e)
	}

	// The operator restarts (a new runner and policy, its writes through again).
	f.deps.Writer = &pass.Writer{Client: f.c, Clock: f.clock}
	f.restart()
	f.waitStatus(sv.ID, "ACTIVE")
	for range 4 {
		f.pass(time.Minute)
	}
	if soft, hard := f.reboots(); soft != 1 || hard != 0 {
		t.Fatalf("within softRebootTimeout after the restart: %d soft, %d hard reboots, want 1 and 0", soft, hard)
	}
	cl2 := f.pass(2 * time.Minute)
	if soft, hard := f.reboots(); soft != 1 || hard != 1 {
		t.Fatalf("after softRebootTimeout: %d soft, %d hard reboots, want 1 and 1; NodesHealthy %+v", soft, hard, condition(cl2, v1alpha1.ConditionNodesHealthy))
	}
	if h := cl2.Status.Flight.History; len(h) != 1 || len(h[0].Steps) != 2 {
		t.Errorf("history %+v, want the soft and the hard reboot", h)
	}
	f.waitStatus(sv.ID, "ACTIVE")
	f.heals(sv, name)
}

// heals writes the Node Ready again and runs a pass: the escalation must end with the node uncordoned by
// flight.
func (f *fnFixture) heals(sv openstack.Server, name string) {
	f.t.Helper()
	f.setConditions(f.getNode(name), condReady)
	cl := f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Server != "" || f.getNode(name).Spec.Unschedulable {
		f.t.Fatalf("healed: escalation %+v, cordoned %v; want it ended and the node uncordoned by flight", e, f.getNode(name).Spec.Unschedulable)
	}
}

// TestRemediateStormAndFreeze: the Cluster API path's storm rule counts its Cluster's Machines (3 of 3 found
// unhealthy by their MachineHealthCheck: every reboot held, Storm, then its cooldown), and its outage freeze
// reads the engine's own checks of the cluster (the cloud check failing closes the gate; once it is back, the
// freeze holds the reboot until outageFreeze has passed); then the soft reboot is sent, once.
func TestRemediateStormAndFreeze(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	id := f.server()
	m := f.machine(id)
	unhealthy := func(m *clusterv1.Machine, st metav1.ConditionStatus) {
		t.Helper()
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: st, Reason: "Test", LastTransitionTime: metav1.NewTime(f.clock.Now())}}
		if err := f.c.Status().Update(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	unhealthy(m, metav1.ConditionFalse)
	var others []*clusterv1.Machine
	for range 2 {
		o := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "m-" + opRandHex(3)},
			Spec: clusterv1.MachineSpec{ClusterName: "c1", Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "OpenStackMachine", Name: "osm"}}}
		if err := f.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		unhealthy(o, metav1.ConditionFalse)
		others = append(others, o)
	}
	f.want(f.reconcile(m, 0), v1alpha1.RemediationPending, remediation.ReasonStorm)
	for _, o := range others {
		unhealthy(o, metav1.ConditionTrue)
	}
	f.clock.Step(10 * time.Minute) // past the storm's cooldown
	f.checks.Set(f.key, remediation.CheckCloud, errors.New("the cloud did not answer"))
	f.want(f.reconcile(m, time.Minute), v1alpha1.RemediationPending, remediation.ReasonGateClosed)
	f.checks.Set(f.key, remediation.CheckCloud, nil)
	f.want(f.reconcile(m, time.Minute), v1alpha1.RemediationPending, remediation.ReasonFrozen)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft+hard != 0 {
		t.Fatalf("rebooted in a storm or a freeze: soft %d hard %d", soft, hard)
	}
	f.want(f.reconcile(m, time.Hour), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 1 0", soft, hard)
	}
}

// TestFlightErroredDrain: a server in ERROR whose Node may still run pods is deleted only after its Node was
// cordoned and drained: the cordon recorded before it is sent, the pod evicted through the Eviction API, the
// delete (counted at the fault proxy) waiting until the pod is gone.
func TestFlightErroredDrain(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Controllers.Flight.Repairs.Nodes.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "e2e-pool"}
		c.Spec.Controllers.Flight.Repairs.ErroredServers = v1alpha1.RepairSpec{}
	})
	ctx := context.Background()
	sv := f.server(46)
	f.metadata(sv.ID, map[string]string{"e2e-pool": "a"})
	name := f.node(sv, f.net.IP(46), "198.19.46.0/24", condReady)
	pod := f.runningPod(name, map[string]string{"app": "db"}, corev1.PodStatus{Phase: corev1.PodRunning})
	tag := opRandHex(3)
	if err := f.nova.Add(faultproxy.Rule{Name: "delete-" + tag, Method: "DELETE", Path: "/v2.1/servers/" + sv.ID, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "delete-p-" + tag, Method: "DELETE", Path: "/v2.1/*/servers/" + sv.ID, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	deletes := func() int { return f.nova.Matched("delete-"+tag) + f.nova.Matched("delete-p-"+tag) }
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		t.Fatal(err)
	}
	if err := servers.ResetState(ctx, cc, sv.ID, servers.StateError).ExtractErr(); err != nil {
		t.Fatalf("reset the server to error: %v", err)
	}
	f.waitStatus(sv.ID, "ERROR")
	f.pass(time.Minute) // first sighting: the proof age (1m) runs
	cl := f.pass(2 * time.Minute)
	if deletes() != 0 {
		t.Fatalf("deleted before its Node was drained")
	}
	if !f.getNode(name).Spec.Unschedulable {
		t.Fatalf("the Node of a server to delete was not cordoned; ServersHealthy %+v", condition(cl, v1alpha1.ConditionServersHealthy))
	}
	if st := cl.Status.Flight; len(st.Errored) != 1 || !st.Errored[0].Cordoned {
		t.Errorf("sightings %+v, want the cordon recorded", cl.Status.Flight.Errored)
	}
	if c := condition(cl, v1alpha1.ConditionServersHealthy); !strings.Contains(c.Message, "draining node "+name) {
		t.Errorf("ServersHealthy = %+v, want the delete waiting for the drain", c)
	}
	got, err := f.kube.CoreV1().Pods(f.key.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp == nil {
		t.Fatal("the pod was not evicted before the delete")
	}
	if err == nil {
		// as its kubelet would, once the pod has stopped
		if err := f.kube.CoreV1().Pods(f.key.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
			t.Fatal(err)
		}
	}
	f.pass(time.Minute)
	if deletes() != 1 {
		t.Fatalf("drained: %d deletes on the wire, want 1", deletes())
	}
}

// statusAfter lets the first allow status applies (status patches, with patches) through and refuses the others
// (the API server's 503).
type statusAfter struct {
	client.Client
	mu      sync.Mutex
	allow   int
	patches bool
}

// refuse counts one status write and says whether it is refused.
func (c *statusAfter) refuse() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allow--
	if c.allow < 0 {
		return apierrors.NewServiceUnavailable("the operator is gone")
	}
	return nil
}

func (c *statusAfter) Status() client.SubResourceWriter {
	return statusAfterWriter{c.Client.Status(), c}
}

type statusAfterWriter struct {
	client.SubResourceWriter
	c *statusAfter
}

func (w statusAfterWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if !w.c.patches {
		if err := w.c.refuse(); err != nil {
			return err
		}
	}
	return w.SubResourceWriter.Apply(ctx, obj, opts...)
}

func (w statusAfterWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if w.c.patches {
		if err := w.c.refuse(); err != nil {
			return err
		}
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// TestFlightNodesRemediationRequest: a repair asked for by hand on a Ready node (the Node's annotation
// vitals.vitalsproject.io/remediate-node, as Cluster API's remediate-machine) goes through every guard but the
// dwell: the exclusion label holds it; once the label is off the node is observed, then cordoned, drained (the
// node-lifecycle conditions DrainInProgress and Drained on the Node) and soft-rebooted once, the request is
// taken off as answered, and no hard reboot follows; the healthy node is then uncordoned and its conditions say
// the drain is over.
func TestFlightNodesRemediationRequest(t *testing.T) {
	parallel(t)
	f := newFNFixture(t, func(c *v1alpha1.VitalsCluster) {
		c.Spec.Controllers.Flight.Repairs.Nodes = nodesCfg
		c.Spec.Remediation.MaxUnhealthy = &intstr.IntOrString{Type: intstr.String, StrVal: "100%"} // one node of one
	})
	sv := f.server(48)
	name := f.node(sv, f.net.IP(48), "198.19.48.0/24", condReady)
	f.pass(time.Minute)

	// Requested on an excluded node: never acted on.
	f.annotate(name, map[string]*string{nodes.AnnotationRemediate: ptr.To("ticket-48")}, map[string]*string{nodes.LabelExclude: ptr.To("true")})
	for range 3 {
		f.pass(2 * time.Minute)
	}
	if soft, hard := f.reboots(); soft+hard != 0 || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("an excluded node's request: %d soft, %d hard reboots, cordoned %v; want nothing done", soft, hard, f.getNode(name).Spec.Unschedulable)
	}

	// The exclusion taken off: observed at once (no dwell), then drained and soft-rebooted at the next pass.
	f.annotate(name, nil, map[string]*string{nodes.LabelExclude: nil})
	cl := f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationObserved || e.Reason != flight.FaultRequested {
		t.Fatalf("requested: escalation %+v, want Observed for %s", e, flight.FaultRequested)
	}
	cl = f.pass(time.Minute)
	if e := escalation(cl, sv.ID); e.Step != v1alpha1.EscalationSoftReboot || e.Phase != v1alpha1.PhaseTaken || !e.Cordoned {
		t.Fatalf("then: escalation %+v, want the soft reboot taken on the cordoned node", e)
	}
	if soft, hard := f.reboots(); soft != 1 || hard != 0 {
		t.Fatalf("on the wire: %d soft, %d hard reboots; want 1 soft", soft, hard)
	}
	n := f.getNode(name)
	if _, ok := n.Annotations[nodes.AnnotationRemediate]; ok || !n.Spec.Unschedulable {
		t.Fatalf("after the step: annotations %v, cordoned %v; want the request taken off, the node still cordoned", n.Annotations, n.Spec.Unschedulable)
	}
	wantNodeConditions(t, n, map[corev1.NodeConditionType]string{nodes.ConditionDrainInProgress: "False/Drained", nodes.ConditionDrained: "True/Drained"})

	// Answered: past softRebootTimeout the Ready node gets no hard reboot; the escalation ends, the node is
	// uncordoned and its drain conditions say it is over.
	f.waitStatus(sv.ID, "ACTIVE")
	cl = f.pass(6 * time.Minute)
	if soft, hard := f.reboots(); soft != 1 || hard != 0 {
		t.Fatalf("after the answered request: %d soft, %d hard reboots; want no further step", soft, hard)
	}
	if e := escalation(cl, sv.ID); e.Server != "" || f.getNode(name).Spec.Unschedulable {
		t.Fatalf("healthy, answered: escalation %+v, cordoned %v; want it ended and the node uncordoned", e, f.getNode(name).Spec.Unschedulable)
	}
	wantNodeConditions(t, f.getNode(name), map[corev1.NodeConditionType]string{nodes.ConditionDrainInProgress: "False/Recovered", nodes.ConditionDrained: "False/Recovered"})
}

// annotate sets (a value) or removes (nil) annotations and labels on the Node name (a merge patch).
func (f *fnFixture) annotate(name string, annotations, labels map[string]*string) {
	f.t.Helper()
	meta := map[string]any{}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	if labels != nil {
		meta["labels"] = labels
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.kube.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		f.t.Fatalf("annotate node %s: %v", name, err)
	}
}

// wantNodeConditions checks the Node's conditions of the given types, each as "Status/Reason".
func wantNodeConditions(t *testing.T, n *corev1.Node, want map[corev1.NodeConditionType]string) {
	t.Helper()
	for typ, w := range want {
		got := "absent"
		if c, ok := nodes.Condition(n, typ); ok {
			got = string(c.Status) + "/" + c.Reason
		}
		if got != w {
			t.Errorf("node %s condition %s = %s, want %s", n.Name, typ, got, w)
		}
	}
}

// TestRemediateWriteAhead: the Cluster API path records a reboot as started before its Nova call. With every
// status write after that record refused (an operator killed between the call and its last write), the
// remediation is left SoftRebootStarted; the restarted operator finds the reboot in Nova's instance-action log
// (status.rebootsBefore: one more) and counts that step as taken at its record's time: no second soft reboot
// within softRebootTimeout, the hard reboot once it has passed (each counted on the wire). The case of a call that
// never left is TestRemediateStoppedMidStep's.
func TestRemediateWriteAhead(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	id := f.server()
	m := f.machine(id)
	restart := func(c client.Client) {
		t.Helper()
		f.deps.Client = c
		var err error
		if f.rec, err = remediate.New(f.deps, remediate.Options{Metrics: f.m}); err != nil {
			t.Fatal(err)
		}
	}
	restart(&statusAfter{Client: f.c, allow: 1, patches: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err == nil {
		t.Fatal("the last status write was refused, and the reconcile says nothing")
	}
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 1 0", soft, hard)
	}
	var rem v1alpha1.VitalsRemediation
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(m), &rem); err != nil {
		t.Fatal(err)
	}
	if rem.Status.Phase != v1alpha1.RemediationSoftRebootStarted || rem.Status.LastStepTime == nil {
		t.Fatalf("recorded before the reboot: %+v, want SoftRebootStarted with its time", rem.Status)
	}

	restart(f.c)
	f.waitActive(f.cloud, id)
	for range 2 {
		f.want(f.reconcile(m, 2*time.Minute), v1alpha1.RemediationSoftRebooted, remediate.ReasonStepConfirmed)
	}
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("within softRebootTimeout after the restart: soft %d hard %d, want 1 0", soft, hard)
	}
	f.want(f.reconcile(m, 2*time.Minute), v1alpha1.RemediationHardRebooted, remediate.ReasonRebooted)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 1 {
		t.Fatalf("after softRebootTimeout: soft %d hard %d, want 1 1", soft, hard)
	}
}
