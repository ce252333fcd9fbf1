package e2e

// The Cluster API path drains a Machine's Node before each reboot as flight's node repair does (one drain
// verdict, nodes.AfterDrain, and the cluster's drain settings for both), and never leaves a Node cordoned: the
// cordon is recorded (with the finalizer that undoes it) before it is made, undone when the Machine is healthy
// again, and undone when its MachineHealthCheck deletes the remediation. Against the real kube-apiserver (the
// workload cluster as deploy/manifests/workload-rbac.yaml's ServiceAccount) and real Nova through the fault proxy.

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/remediate"
	"github.com/vitalsproject/vitals/nodes"
)

// TestRemediateDrainPDB: before the soft reboot of a Machine's server its Node is cordoned (recorded first, with
// the finalizer) and its pod evicted; a PodDisruptionBudget that allows no disruption holds the reboot; at the
// drain timeout on the reachable Node the drain ends (DrainTimedOut, the pod and its budget named, the Node
// uncordoned, nothing rebooted) and waits perServer.cooldown; after it, with the budget allowing it, the pod is
// evicted and, once gone, the soft reboot follows (one on the wire). The Machine healthy again: the Node is
// uncordoned and the remediation Succeeded; deleted by its MachineHealthCheck, the finalizer lets it go.
func TestRemediateDrainPDB(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	id := f.server()
	m := f.machine(id)
	name := f.node(id, corev1.ConditionFalse, nil)
	f.nodeRef(m, name)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "db-0", Labels: map[string]string{"app": "db"}},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}
	if err := f.c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// as its kubelet would: Running and Ready, so that its budget protects it
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := f.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "db"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	if err := f.c.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	budget := func(allowed int32) { // as the disruption controller would
		t.Helper()
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1, DesiredHealthy: 1 - allowed, ExpectedPods: 1}
		if err := f.c.Status().Update(ctx, pdb); err != nil {
			t.Fatal(err)
		}
	}
	cordoned := func() bool {
		t.Helper()
		var n corev1.Node
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		return n.Spec.Unschedulable
	}
	rebooted := func() int { return f.nova.Matched("soft") + f.nova.Matched("hard") }
	// conditions are the Node's drain conditions (DrainInProgress, Drained) as "status/reason", "" when absent
	conditions := func() (inProgress, drained string) {
		t.Helper()
		var n corev1.Node
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		if c, ok := nodes.Condition(&n, nodes.ConditionDrainInProgress); ok {
			inProgress = string(c.Status) + "/" + c.Reason
		}
		if c, ok := nodes.Condition(&n, nodes.ConditionDrained); ok {
			drained = string(c.Status) + "/" + c.Reason
		}
		return inProgress, drained
	}
	wantConditions := func(when, inProgress, drained string) {
		t.Helper()
		if i, d := conditions(); i != inProgress || d != drained {
			t.Errorf("%s: node conditions DrainInProgress %q Drained %q, want %q %q", when, i, d, inProgress, drained)
		}
	}
	budget(0)

	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationDraining, remediate.ReasonDraining)
	if !cordoned() || !rem.Status.Cordoned || rem.Status.Node != name || !controllerutil.ContainsFinalizer(rem, v1alpha1.FinalizerUncordon) {
		t.Fatalf("draining: node cordoned %v, status %+v, finalizers %v; want the cordon made and recorded with the finalizer", cordoned(), rem.Status, rem.Finalizers)
	}
	if d := rem.Status.Drain; d == nil || d.Step != remediate.StepSoft || d.Started == nil || len(d.Left) != 1 {
		t.Fatalf("status.drain %+v, want the drain before the soft reboot with one pod left", d)
	}
	if !strings.Contains(rem.Status.Message, "PodDisruptionBudget") {
		t.Errorf("message %q does not say a PodDisruptionBudget holds the pod", rem.Status.Message)
	}
	if rebooted() != 0 {
		t.Fatal("rebooted before the drain")
	}
	wantConditions("draining", "True/Draining", "False/Draining")
	// Within the drain's timeout (10m): still draining, nothing rebooted.
	f.want(f.reconcile(m, 5*time.Minute), v1alpha1.RemediationDraining, remediate.ReasonDraining)
	// Past it, the Node reachable: the drain ends, the budget never overridden.
	rem = f.reconcile(m, 6*time.Minute)
	f.want(rem, v1alpha1.RemediationDrainTimedOut, remediate.ReasonDrainTimedOut)
	if cordoned() || rem.Status.Cordoned {
		t.Fatalf("after the drain timed out: node cordoned %v, status.cordoned %v; want both false", cordoned(), rem.Status.Cordoned)
	}
	if d := rem.Status.Drain; d == nil || d.RetryAfter == nil || len(d.Left) != 1 || !strings.Contains(d.Left[0], "PodDisruptionBudget "+f.ns+"/db") {
		t.Fatalf("status.drain %+v, want the pod and its budget named and a retry time", d)
	}
	if !eventSeen(f.events, remediate.ReasonDrainTimedOut) {
		t.Error("no DrainTimedOut Event")
	}
	wantConditions("the drain timed out", "False/DrainTimedOut", "False/DrainTimedOut")
	if rebooted() != 0 {
		t.Fatal("rebooted with a pod its budget protects")
	}
	// Within perServer.cooldown (1h): no new drain, even once the budget allows it.
	budget(1)
	f.want(f.reconcile(m, 30*time.Minute), v1alpha1.RemediationDrainTimedOut, remediate.ReasonDrainTimedOut)
	if cordoned() {
		t.Fatal("cordoned again within the cooldown")
	}
	// After it: drained again; the pod evicted; the reboot waits for it to be gone.
	f.want(f.reconcile(m, 31*time.Minute), v1alpha1.RemediationDraining, remediate.ReasonDraining)
	var got corev1.Pod
	err := f.c.Get(ctx, client.ObjectKeyFromObject(pod), &got)
	if err == nil && got.DeletionTimestamp == nil {
		t.Fatal("the pod was not evicted once its budget allowed it")
	}
	if rebooted() != 0 {
		t.Fatal("rebooted before the evicted pod was gone")
	}
	if err == nil { // as its kubelet would, once the pod has stopped
		if err := f.c.Delete(ctx, &got, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	rem = f.reconcile(m, time.Minute)
	f.want(rem, v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("drained: soft %d hard %d on the wire, want 1 0", soft, hard)
	}
	if !cordoned() || !rem.Status.Cordoned {
		t.Fatal("the Node is not held cordoned while its Machine reboots")
	}
	wantConditions("drained and rebooted", "False/Drained", "True/Drained")
	// Healthy again: uncordoned, Succeeded.
	m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
		LastTransitionTime: metav1.NewTime(f.clock.Now().Add(time.Minute))}}
	if err := f.c.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	rem = f.reconcile(m, 2*time.Minute)
	f.want(rem, v1alpha1.RemediationSucceeded, remediate.ReasonRecovered)
	if cordoned() || rem.Status.Cordoned {
		t.Fatalf("recovered: node cordoned %v, status.cordoned %v; want the cordon undone", cordoned(), rem.Status.Cordoned)
	}
	wantConditions("recovered", "False/Recovered", "False/Recovered")
	// Its MachineHealthCheck deletes it: the finalizer goes, and so does the remediation.
	f.deleteRemediation(m)
	if rebooted() != 1 {
		t.Fatalf("%d reboots on the wire in all, want 1", rebooted())
	}
}

// TestRemediateUncordonOnDelete: a remediation that cordoned its Machine's Node and rebooted the server, deleted
// by its MachineHealthCheck (the Machine healthy again) before it saw the Machine recover, uncordons the Node
// before its finalizer lets it go; a Node someone else cordoned is left cordoned.
func TestRemediateUncordonOnDelete(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	get := func(name string) *corev1.Node {
		t.Helper()
		var n corev1.Node
		if err := f.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		return &n
	}
	id := f.server()
	m := f.machine(id)
	name := f.node(id, corev1.ConditionUnknown, nil)
	f.nodeRef(m, name)
	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if !get(name).Spec.Unschedulable || !rem.Status.Cordoned {
		t.Fatal("the Node was not cordoned before the reboot")
	}
	f.deleteRemediation(m)
	if get(name).Spec.Unschedulable {
		t.Fatal("the remediation is gone and left its Node cordoned")
	}

	// A Node cordoned by someone else before the remediation began: not the remediation's to undo.
	id2 := f.server()
	m2 := f.machine(id2)
	name2 := f.node(id2, corev1.ConditionUnknown, nil)
	n2 := get(name2)
	n2.Spec.Unschedulable = true
	if err := f.c.Update(ctx, n2); err != nil {
		t.Fatal(err)
	}
	f.nodeRef(m2, name2)
	rem = f.reconcile(m2, 0)
	f.want(rem, v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if rem.Status.Cordoned {
		t.Fatal("a cordon the remediation did not make is recorded as its own")
	}
	f.deleteRemediation(m2)
	if !get(name2).Spec.Unschedulable {
		t.Fatal("a Node someone else cordoned was uncordoned")
	}
}

// deleteRemediation deletes m's remediation as its MachineHealthCheck does, reconciles it, and checks that it is
// gone (its finalizer removed).
func (f *rmFixture) deleteRemediation(m *clusterv1.Machine) {
	f.t.Helper()
	ctx := context.Background()
	rem := &v1alpha1.VitalsRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
	if err := f.c.Delete(ctx, rem); err != nil {
		f.t.Fatalf("delete the remediation: %v", err)
	}
	f.reconcileKey(client.ObjectKeyFromObject(m))
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(m), rem); !apierrors.IsNotFound(err) {
		f.t.Fatalf("the deleted remediation is still there (%v): finalizers %v, status %+v", err, rem.Finalizers, rem.Status)
	}
}

// TestRemediateHostDown: a Machine whose server runs on a compute host flight takes for down
// (status.flight.hostsDown, with the hostId real Nova shows now) and whose Node is unreachable is handed back to
// its MachineSet at once, with no reboot on the wire; a Machine on the other host is rebooted as before. A finding
// that names a server whose Node reports (forged by a status writer, or stale) hands nothing back: that Machine
// is rebooted the usual way.
func TestRemediateHostDown(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	ms := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet", Name: "workers-5c2a", UID: "1f7e3c2a-9b4d-4e6f-8a1c-3d5e7f9a0b2c", Controller: new(true)}
	f.hosts++
	dead := f.net.ServerOn(f.cloud, 10+f.hosts, "compute-1")
	f.hosts++
	reporting := f.net.ServerOn(f.cloud, 10+f.hosts, "compute-1")
	f.hosts++
	alive := f.net.ServerOn(f.cloud, 10+f.hosts, "compute-2")
	f.waitActive(f.cloud, dead)
	f.waitActive(f.cloud, reporting)
	f.waitActive(f.cloud, alive)
	sv, err := f.cloud.GetServer(ctx, dead)
	if err != nil {
		t.Fatal(err)
	}
	var vc v1alpha1.VitalsCluster
	if err := f.c.Get(ctx, f.key, &vc); err != nil {
		t.Fatal(err)
	}
	// as flight's host rule writes it
	vc.Status.Flight = &v1alpha1.FlightStatus{HostsDown: []v1alpha1.HostFinding{{HostID: sv.HostID, Zone: sv.Zone, Servers: []string{dead, reporting, "a-second-server"},
		Since: metav1.NewTime(f.clock.Now().Add(-time.Hour))}}}
	if err := f.c.Status().Update(ctx, &vc); err != nil {
		t.Fatal(err)
	}
	m := f.machine(dead, ms)
	f.nodeRef(m, f.node(dead, corev1.ConditionUnknown, nil))
	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationStopped, remediate.ReasonHandedBack)
	if !strings.Contains(rem.Status.Message, "takes for down") || !strings.Contains(rem.Status.Message, "MachineSet workers-5c2a") {
		t.Errorf("message %q does not say the host is down and name the MachineSet", rem.Status.Message)
	}
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft+hard != 0 {
		t.Fatalf("a server on a dead host rebooted: soft %d hard %d", soft, hard)
	}
	m2 := f.machine(alive, ms)
	f.want(f.reconcile(m2, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	// the finding names reporting's server too, but its Node's kubelet reports (NotReady, not unreachable): the
	// host is not taken for down for it
	ms2 := ms // another pool: the reboot of m2 is in flight in ms's
	ms2.Name, ms2.UID = "workers-7d1b", "6b0d2e4f-1a3c-4b5d-9e7f-2c4a6e8b0d1f"
	m3 := f.machine(reporting, ms2)
	f.nodeRef(m3, f.node(reporting, corev1.ConditionFalse, nil))
	f.want(f.reconcile(m3, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if soft := f.nova.Matched("soft"); soft != 2 {
		t.Errorf("%d soft reboots on the wire, want 2 (the Machine on the live host, the one whose Node reports)", soft)
	}
}
