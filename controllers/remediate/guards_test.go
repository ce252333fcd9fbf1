// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package remediate

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

const testNS = "clusters"

var testNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func testClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, clusterv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.VitalsRemediation{})
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// testMachine is Machine name of Cluster c1, server "srv-"+name, controlled by owner when given.
func testMachine(name string, owner *metav1.OwnerReference, labels map[string]string) *clusterv1.Machine {
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-" + name), Labels: labels},
		Spec: clusterv1.MachineSpec{ClusterName: "c1", ProviderID: "openstack:///srv-" + name}}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return m
}

// testRemediation is the remediation of m, as a MachineHealthCheck makes it.
func testRemediation(m *clusterv1.Machine, phase v1alpha1.RemediationPhase) *v1alpha1.VitalsRemediation {
	rem := &v1alpha1.VitalsRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, UID: types.UID("rem-" + m.Name),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID}}},
		Status: v1alpha1.VitalsRemediationStatus{Phase: phase}}
	if phase == v1alpha1.RemediationSoftRebooted || phase == v1alpha1.RemediationHardRebooted {
		rem.Status.Server = "srv-" + m.Name
		rem.Status.LastStepTime = ptr.To(metav1.NewTime(testNow.Add(-time.Hour)))
	}
	return rem
}

func testCluster(paused bool, annotations map[string]string) *clusterv1.Cluster {
	return &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "c1", Annotations: annotations},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(paused)}}
}

func ownerRef(apiVersion, kind, name string) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}
}

func healthyAt(m *clusterv1.Machine, at time.Time) *clusterv1.Machine {
	m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
		LastTransitionTime: metav1.NewTime(at)}}
	return m
}

func testReconciler(c client.Client) *Reconciler {
	return &Reconciler{d: &pass.Deps{Client: c, APIReader: c, Clock: clocktesting.NewFakeClock(testNow)},
		o: Options{Metrics: NewMetrics(nil), Retry: DefaultRetry, Timeout: DefaultTimeout}}
}

// failClusterReads fails every read of a Cluster.
var failClusterReads = &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*clusterv1.Cluster); ok {
		return errors.New("connection refused")
	}
	return c.Get(ctx, key, obj, opts...)
}}

var pausedAnnotation = map[string]string{clusterv1.PausedAnnotation: ""}

func TestPausedWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster *clusterv1.Cluster
		machine map[string]string
		want    string
	}{
		{"neither", testCluster(false, nil), nil, ""},
		{"the Cluster's spec.paused (clusterctl move)", testCluster(true, nil), nil, "Cluster clusters/c1 of Machine clusters/m1 is paused (spec.paused, or annotation cluster.x-k8s.io/paused)"},
		{"the Cluster's annotation", testCluster(false, pausedAnnotation), nil, "Cluster clusters/c1 of Machine clusters/m1 is paused (spec.paused, or annotation cluster.x-k8s.io/paused)"},
		{"the Machine's annotation", testCluster(false, nil), pausedAnnotation, "Machine clusters/m1 is paused (annotation cluster.x-k8s.io/paused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMachine("m1", nil, nil)
			m.Annotations = tc.machine
			if got := pausedWhy(tc.cluster, m); got != tc.want {
				t.Errorf("pausedWhy = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPoolOf(t *testing.T) {
	for _, tc := range []struct {
		name         string
		owner        *metav1.OwnerReference
		labels       map[string]string
		pool         string
		controlPlane bool
	}{
		{"a MachineSet", ownerRef("cluster.x-k8s.io/v1beta2", "MachineSet", "md-0-7d9f"), nil, "MachineSet/md-0-7d9f", false},
		{"a MachineDeployment's MachineSet: the MachineDeployment", ownerRef("cluster.x-k8s.io/v1beta2", "MachineSet", "md-0-7d9f"),
			map[string]string{clusterv1.MachineDeploymentNameLabel: "md-0"}, "MachineDeployment/md-0", false},
		{"a KubeadmControlPlane", ownerRef("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "cp"),
			map[string]string{clusterv1.MachineControlPlaneLabel: ""}, "KubeadmControlPlane/cp", true},
		{"a control plane, not labelled", ownerRef("controlplane.cluster.x-k8s.io/v1beta1", "K0smotronControlPlane", "cp"), nil, "K0smotronControlPlane/cp", true},
		{"labelled control plane, no owner", nil, map[string]string{clusterv1.MachineControlPlaneLabel: ""}, "", true},
		{"an owner that is not the controller", &metav1.OwnerReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "MachineSet", Name: "ms", UID: "u"}, nil, "", false},
		{"no owner", nil, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testMachine("m1", tc.owner, tc.labels)
			if got := poolOf(m); got != tc.pool {
				t.Errorf("poolOf = %q, want %q", got, tc.pool)
			}
			if got := controlPlane(m); got != tc.controlPlane {
				t.Errorf("controlPlane = %v, want %v", got, tc.controlPlane)
			}
		})
	}
}

// TestFence: the fence of a step reads the Machine and its Cluster at the write: a pause of either, a Cluster
// gone or not read, and a Machine healthy again (the reboots' and the hand-back's re-check) refuse it.
func TestFence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		live    *clusterv1.Machine // nil: gone
		cluster *clusterv1.Cluster // nil: gone
		funcs   *interceptor.Funcs
		want    fencing.Reason // "": entered
	}{
		{name: "the same Machine, not paused", live: testMachine("m1", nil, nil), cluster: testCluster(false, nil)},
		{name: "the Machine gone", cluster: testCluster(false, nil), want: fencing.ReasonInterlock},
		{name: "another Machine of the name", live: func() *clusterv1.Machine { m := testMachine("m1", nil, nil); m.UID = "other"; return m }(),
			cluster: testCluster(false, nil), want: fencing.ReasonInterlock},
		{name: "the Machine being deleted", live: func() *clusterv1.Machine {
			m := testMachine("m1", nil, nil)
			m.Finalizers, m.DeletionTimestamp = []string{"machine.cluster.x-k8s.io"}, ptr.To(metav1.NewTime(testNow))
			return m
		}(), cluster: testCluster(false, nil), want: fencing.ReasonInterlock},
		{name: "the Machine paused", live: func() *clusterv1.Machine {
			m := testMachine("m1", nil, nil)
			m.Annotations = pausedAnnotation
			return m
		}(),
			cluster: testCluster(false, nil), want: fencing.ReasonPaused},
		{name: "the Cluster paused (clusterctl move)", live: testMachine("m1", nil, nil), cluster: testCluster(true, nil), want: fencing.ReasonPaused},
		{name: "the Cluster's paused annotation", live: testMachine("m1", nil, nil), cluster: testCluster(false, pausedAnnotation), want: fencing.ReasonPaused},
		{name: "the Cluster gone", live: testMachine("m1", nil, nil), want: fencing.ReasonInterlock},
		{name: "the Cluster not read", live: testMachine("m1", nil, nil), cluster: testCluster(false, nil), funcs: failClusterReads, want: fencing.ReasonUnverified},
		{name: "the Machine healthy again", live: healthyAt(testMachine("m1", nil, nil), testNow), cluster: testCluster(false, nil), want: fencing.ReasonInterlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []client.Object
			if tc.live != nil {
				objs = append(objs, tc.live)
			}
			if tc.cluster != nil {
				objs = append(objs, tc.cluster)
			}
			r := testReconciler(testClient(t, tc.funcs, objs...))
			entered := false
			next := fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
				entered = true
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				return ctx, cancel, nil
			})
			_, cancel, err := r.fence(testMachine("m1", nil, nil), stillUnhealthy, next).Enter(context.Background())
			if cancel != nil {
				cancel()
			}
			reason, _ := fencing.ReasonOf(err)
			if reason != tc.want || entered != (tc.want == "") {
				t.Errorf("fence: reason %q (%v), entered %v; want reason %q", reason, err, entered, tc.want)
			}
		})
	}
}

// TestInFlight: the reboots in flight of a pool are those of the other remediations of the namespace soft or hard
// rebooted, of a Machine (still there) of the same pool.
func TestInFlight(t *testing.T) {
	ms := ownerRef("cluster.x-k8s.io/v1beta2", "MachineSet", "md-0-7d9f")
	other := ownerRef("cluster.x-k8s.io/v1beta2", "MachineSet", "md-1-2c4e")
	for _, tc := range []struct {
		name    string
		owner   *metav1.OwnerReference
		phase   v1alpha1.RemediationPhase
		machine bool // the other remediation's Machine is there
		want    bool
	}{
		{"soft rebooted, same MachineSet", ms, v1alpha1.RemediationSoftRebooted, true, true},
		{"hard rebooted, same MachineSet", ms, v1alpha1.RemediationHardRebooted, true, true},
		{"pending, same MachineSet", ms, v1alpha1.RemediationPending, true, false},
		{"succeeded, same MachineSet", ms, v1alpha1.RemediationSucceeded, true, false},
		{"stopped (handed back), same MachineSet", ms, v1alpha1.RemediationStopped, true, false},
		{"soft rebooted, another MachineSet", other, v1alpha1.RemediationSoftRebooted, true, false},
		{"soft rebooted, its Machine gone", ms, v1alpha1.RemediationSoftRebooted, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			self := testMachine("m1", ms, nil)
			selfRem := testRemediation(self, v1alpha1.RemediationSoftRebooted) // its own reboot is not another's
			m2 := testMachine("m2", tc.owner, nil)
			objs := []client.Object{self, selfRem, testRemediation(m2, tc.phase)}
			if tc.machine {
				objs = append(objs, m2)
			}
			r := testReconciler(testClient(t, nil, objs...))
			got, err := r.inFlight(context.Background(), selfRem, poolOf(self))
			if err != nil {
				t.Fatal(err)
			}
			ids := got[poolOf(self)]
			if busy := len(ids) == 1 && ids[0] == "srv-m2"; busy != tc.want || len(got) > 1 || len(ids) > 1 {
				t.Errorf("inFlight = %v, want m2's server in flight: %v", got, tc.want)
			}
		})
	}
}

// TestRemediateHolds: before a step, the Machine healthy or paused by Cluster API (its Cluster too), or its Cluster
// not read, holds it; otherwise the step goes on (to the VitalsCluster, missing here).
func TestRemediateHolds(t *testing.T) {
	ms := ownerRef("cluster.x-k8s.io/v1beta2", "MachineSet", "md-0-7d9f")
	for _, tc := range []struct {
		name      string
		machine   *clusterv1.Machine
		phase     v1alpha1.RemediationPhase
		cluster   *clusterv1.Cluster
		funcs     *interceptor.Funcs
		wantPhase v1alpha1.RemediationPhase
		want      string
	}{
		{name: "neither: the reboot goes on", machine: testMachine("m1", ms, nil), cluster: testCluster(false, nil),
			wantPhase: v1alpha1.RemediationPending, want: ReasonNoVitalsCluster},
		{name: "healthy before the first step", machine: healthyAt(testMachine("m1", ms, nil), testNow.Add(-time.Minute)), cluster: testCluster(false, nil),
			wantPhase: v1alpha1.RemediationPending, want: ReasonMachineHealthy},
		{name: "healthy since before the soft reboot: no hard one", machine: healthyAt(testMachine("m1", ms, nil), testNow.Add(-2*time.Hour)),
			phase: v1alpha1.RemediationSoftRebooted, cluster: testCluster(false, nil), wantPhase: v1alpha1.RemediationSoftRebooted, want: ReasonMachineHealthy},
		{name: "healthy since the soft reboot: recovered", machine: healthyAt(testMachine("m1", ms, nil), testNow.Add(-time.Minute)),
			phase: v1alpha1.RemediationSoftRebooted, cluster: testCluster(false, nil), wantPhase: v1alpha1.RemediationSucceeded, want: ReasonRecovered},
		{name: "the Cluster paused (clusterctl move)", machine: testMachine("m1", ms, nil), cluster: testCluster(true, nil),
			wantPhase: v1alpha1.RemediationPending, want: ReasonMachinePaused},
		{name: "the Cluster's paused annotation", machine: testMachine("m1", ms, nil), cluster: testCluster(false, pausedAnnotation),
			wantPhase: v1alpha1.RemediationPending, want: ReasonMachinePaused},
		{name: "the Machine paused", machine: func() *clusterv1.Machine { m := testMachine("m1", ms, nil); m.Annotations = pausedAnnotation; return m }(),
			cluster: testCluster(false, nil), wantPhase: v1alpha1.RemediationPending, want: ReasonMachinePaused},
		{name: "the Cluster gone", machine: testMachine("m1", ms, nil), wantPhase: v1alpha1.RemediationPending, want: ReasonReadFailed},
		{name: "the Cluster not read", machine: testMachine("m1", ms, nil), cluster: testCluster(false, nil), funcs: failClusterReads,
			wantPhase: v1alpha1.RemediationPending, want: ReasonReadFailed},
		{name: "the hand-back, the Cluster paused", machine: testMachine("m1", ms, nil), phase: v1alpha1.RemediationHardRebooted, cluster: testCluster(true, nil),
			wantPhase: v1alpha1.RemediationHardRebooted, want: ReasonMachinePaused},
		{name: "the hand-back, the Cluster not read", machine: testMachine("m1", ms, nil), phase: v1alpha1.RemediationHardRebooted, funcs: failClusterReads,
			wantPhase: v1alpha1.RemediationHardRebooted, want: ReasonReadFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rem := testRemediation(tc.machine, tc.phase)
			objs := []client.Object{tc.machine, rem}
			if tc.cluster != nil {
				objs = append(objs, tc.cluster)
			}
			c := testClient(t, tc.funcs, objs...)
			if _, err := testReconciler(c).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(rem)}); err != nil {
				t.Fatal(err)
			}
			var got v1alpha1.VitalsRemediation
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(rem), &got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tc.wantPhase || got.Status.Reason != tc.want {
				t.Errorf("phase %s reason %s (%s), want %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message, tc.wantPhase, tc.want)
			}
		})
	}
}

// TestQuorum: a control-plane Machine's reboot carries etcd's quorum as flight reads it (the etcd pods of
// kube-system on the workload cluster's Nodes, the Machine's Node the target); without the workload cluster there
// is none, and the reboot waits.
func TestQuorum(t *testing.T) {
	node := func(name string, ready bool) *corev1.Node {
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	}
	etcd := func(on string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "etcd-" + on, Labels: map[string]string{"component": "etcd"}},
			Spec: corev1.PodSpec{NodeName: on}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	for _, tc := range []struct {
		name    string
		access  workload.Access
		objs    []client.Object
		want    remediation.Quorum
		wantErr bool
	}{
		{name: "no workload access", wantErr: true},
		{name: "the workload cluster refused", access: fakeAccess{err: errors.New("kubeconfig refused")}, wantErr: true},
		{name: "three members, the target's down", objs: []client.Object{node("cp-a", true), node("cp-b", true), node("cp-c", false), etcd("cp-a"), etcd("cp-b"), etcd("cp-c")},
			want: remediation.Quorum{Members: 3, Healthy: 2}},
		{name: "three members, one down, the target healthy", objs: []client.Object{node("cp-a", true), node("cp-b", false), node("cp-c", true), etcd("cp-a"), etcd("cp-b"), etcd("cp-c")},
			want: remediation.Quorum{Members: 3, Healthy: 2, TargetHealthy: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testReconciler(testClient(t, nil))
			r.d.Workload = tc.access
			if tc.objs != nil {
				r.d.Workload = fakeAccess{c: testClient(t, nil, tc.objs...)}
			}
			m := testMachine("m1", ownerRef("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlane", "cp"), nil)
			m.Status.NodeRef = clusterv1.MachineNodeReference{Name: "cp-c"}
			got, err := r.quorum(context.Background(), &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "c1"}}, m)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("quorum = %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

type fakeAccess struct {
	c   client.Client
	err error
}

func (a fakeAccess) For(context.Context, *v1alpha1.VitalsCluster) (workload.Cluster, error) {
	if a.err != nil {
		return nil, a.err
	}
	return fakeCluster{a.c}, nil
}

func (fakeAccess) Forget(types.NamespacedName) {}

type fakeCluster struct{ c client.Client }

func (f fakeCluster) Reader() client.Reader            { return f.c }
func (f fakeCluster) Client() client.Client            { return f.c }
func (f fakeCluster) Teardown() (client.Client, error) { return f.c, nil }
func (fakeCluster) Healthy() error                     { return nil }
func (fakeCluster) Source() string                     { return "fake" }
func (fakeCluster) Done() <-chan struct{}              { return nil }
