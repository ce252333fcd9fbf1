package e2e

//lint:file-ignore SA1019 the hand-back's deprecated v1beta1 condition is checked too

// Vitals as Cluster API's external remediation (controllers/remediate) against a real kube-apiserver with
// Cluster API's Machine CRD installed, the VitalsRemediation made from a VitalsRemediationTemplate as Cluster
// API's MachineHealthCheck makes it (external.GenerateTemplate, named like the Machine, owned by it), the
// VitalsCluster's credentials proven by the real tenancy verifier, and real Nova (fake driver) behind the fault
// proxy, which tells soft reboots from hard ones on the wire.

import (
	"context"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/controllers/remediate"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// rmFixture is one VitalsCluster in a namespace of a private kube-apiserver (the management cluster), its
// credentials the operator's in a trusted namespace, connected through the fault proxy in front of Nova.
type rmFixture struct {
	t      *testing.T
	cfg    *rest.Config // the API server's, as its admin
	deps   *pass.Deps
	c      client.Client
	cloud  *openstack.Cloud
	net    *opNet
	nova   *faultproxy.Proxy
	ns     string
	key    types.NamespacedName
	clock  *clocktesting.FakeClock
	rec    *remediate.Reconciler
	m      *remediate.Metrics
	events *events.FakeRecorder
	hosts  int
	checks remediation.Checks
}

// capiCRDs installs Cluster API's CRDs of these files (config/crd/bases of the module the project builds with) in
// the API server of cfg.
func capiCRDs(t *testing.T, cfg *rest.Config, files ...string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api").Output()
	if err != nil {
		t.Fatalf("find the cluster-api module: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join(dir, "config", "crd", "bases", f))
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true, MaxTime: time.Minute, PollInterval: 100 * time.Millisecond,
	}); err != nil {
		t.Fatalf("install Cluster API's CRDs %v: %v", files, err)
	}
}

func newRMFixture(t *testing.T) *rmFixture {
	t.Helper()
	env := testenv.RequireFull(t) // Nova: skipped on the fast tier, a failure when services are required
	k, c := opPrivateKube(t)
	cfg := k.Config()
	capiCRDs(t, cfg, "cluster.x-k8s.io_machines.yaml", "cluster.x-k8s.io_clusters.yaml")
	f := &rmFixture{t: t, cfg: cfg, c: c}
	auth := opAuth(t, env)
	f.cloud = opConnect(t, auth, nil)
	f.net = opNewNet(t, f.cloud)
	pauth, proxies := opFaultProxy(t, env, f.cloud, openstack.ServiceCompute)
	f.nova = proxies[0]
	if err := f.nova.Add(faultproxy.Rule{Name: "soft", Method: "POST", Body: `"SOFT"`, Fault: faultproxy.Pass()},
		faultproxy.Rule{Name: "hard", Method: "POST", Body: `"HARD"`, Fault: faultproxy.Pass()}); err != nil {
		t.Fatal(err)
	}
	viaProxy := opConnect(t, pauth, nil)
	f.ns = opNamespace(t, f.c)
	cl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1"},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{ProjectID: f.cloud.ProjectID(), RouterID: f.net.Router}, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}}}
	if err := f.c.Create(context.Background(), cl); err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	f.key = client.ObjectKeyFromObject(cl)
	// The Machines' Cluster API Cluster: its pause (clusterctl move's) holds every step.
	if err := f.c.Create(context.Background(), &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "c1"},
		Spec: clusterv1.ClusterSpec{Paused: ptr.To(false)}}); err != nil {
		t.Fatalf("create the Cluster API Cluster: %v", err)
	}
	f.clock = clocktesting.NewFakeClock(time.Now())
	f.events = events.NewFakeRecorder(1000)
	reg := prometheus.NewRegistry()
	checks := remediation.NewChecks(f.clock)
	checks.Set(f.key, remediation.CheckCloud, nil)
	f.checks = checks
	// The fences read the cluster live, each write a new read: a pause set a moment before a write holds it.
	p, err := remediation.New(remediation.Options{Clock: f.clock, Recorder: f.events, Metrics: remediation.NewMetrics(reg), Checks: checks,
		Live: f.c, LiveMaxAge: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	verifier := tenancy.NewVerifier(tenancy.Options{Secrets: f.c, Clusters: f.c, TrustedNamespaces: []string{f.ns},
		Operator: func(context.Context) (tenancy.Connection, error) { return viaProxy, nil }})
	// The workload cluster is the same API server (the Machines' Nodes, read again at each reboot's write), reached
	// only as deploy/manifests/workload-rbac.yaml's ServiceAccount (workload_rbac_test.go). Its check feeds the
	// outage freeze: a probe slow on a loaded machine is no outage these tests are about.
	rb := wlRBAC(t, testenv.InlineKubeconfig(t, k.KubeconfigPath()), "kube-system")
	wl, err := workload.NewManager(workload.Options{Secrets: f.c, Checks: checks, AllowLocal: true, Local: rb.Config,
		HealthInterval: time.Second, HealthTimeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wl.Close)
	f.deps = &pass.Deps{Client: f.c, Tenancy: verifier, Policy: p, Clock: f.clock, Workload: wl, Recorder: func(string) events.EventRecorder { return f.events }}
	f.m = remediate.NewMetrics(reg)
	if f.rec, err = remediate.New(f.deps, remediate.Options{Metrics: f.m}); err != nil {
		t.Fatal(err)
	}
	tpl := &v1alpha1.VitalsRemediationTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "reboot"},
		Spec: v1alpha1.VitalsRemediationTemplateSpec{Template: v1alpha1.VitalsRemediationTemplateResource{Spec: v1alpha1.VitalsRemediationSpec{
			SoftRebootTimeout: &metav1.Duration{Duration: 5 * time.Minute}, HardRebootTimeout: &metav1.Duration{Duration: 10 * time.Minute}}}}}
	if err := f.c.Create(context.Background(), tpl); err != nil {
		t.Fatalf("create the remediation template: %v", err)
	}
	return f
}

// asChart makes the controller's reads and writes of the Kubernetes API (not the tenancy verifier's) those of
// the chart's operator ServiceAccount with operator.capi.remediate on, through the recording proxy; it returns
// the chart's RBAC and the ServiceAccount's name.
func (f *rmFixture) asChart() (*chartRBAC, string) {
	f.t.Helper()
	cr := applyChartRBAC(f.t, f.cfg, testenv.Helm(f.t), f.ns, "operator:\n  replicas: 1\n  capi:\n    remediate: true\n")
	sa := cr.release + "-operator"
	wc, err := client.NewWithWatch(cr.token(sa), client.Options{Scheme: operator.Scheme()})
	if err != nil {
		f.t.Fatal(err)
	}
	// As the operator's: every write sent through its context's fence (the status writes through the policy's).
	c := fencing.Client(wc)
	f.deps.Client, f.deps.APIReader = c, c
	f.deps.Fencer = f.deps.Policy.(remediation.Fencer)
	if f.rec, err = remediate.New(f.deps, remediate.Options{Metrics: f.m}); err != nil {
		f.t.Fatal(err)
	}
	return cr, sa
}

// machine creates a Machine of cluster c1 whose providerID names server id (controlled by owner, when given),
// and the VitalsRemediation Cluster API's MachineHealthCheck makes for it from the template "reboot".
func (f *rmFixture) machine(id string, owner ...metav1.OwnerReference) *clusterv1.Machine {
	f.t.Helper()
	ctx := context.Background()
	m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "m-" + opRandHex(3), OwnerReferences: owner},
		Spec: clusterv1.MachineSpec{ClusterName: "c1", ProviderID: "openstack:///" + id,
			Bootstrap:         clusterv1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "OpenStackMachine", Name: "osm"}}}
	if err := f.c.Create(ctx, m); err != nil {
		f.t.Fatalf("create machine: %v", err)
	}
	// As the MachineHealthCheck controller does (internal/controllers/machinehealthcheck, external remediation:
	// external.Get of spec.remediation.templateRef, then external.GenerateTemplate, named like the Machine).
	var from unstructured.Unstructured
	from.SetAPIVersion(v1alpha1.GroupVersion.String())
	from.SetKind("VitalsRemediationTemplate")
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "reboot"}, &from); err != nil {
		f.t.Fatalf("get the remediation template: %v", err)
	}
	to := capiClone(f.t, &from, f.ns, "c1", &metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID})
	to.SetName(m.Name)
	if err := f.c.Create(ctx, to); err != nil {
		f.t.Fatalf("create the remediation as Cluster API does: %v", err)
	}
	return m
}

// capiClone is Cluster API v1.11's external.GenerateTemplate (sigs.k8s.io/cluster-api/controllers/external), which
// the MachineHealthCheck controller makes a remediation request with: spec.template of the template, its kind
// without "Template", the cloned-from annotations, the cluster-name label and the owner reference to the Machine.
// (The package itself needs modules the project does not otherwise require.)
func capiClone(t *testing.T, from *unstructured.Unstructured, ns, cluster string, owner *metav1.OwnerReference) *unstructured.Unstructured {
	t.Helper()
	tpl, found, err := unstructured.NestedMap(from.Object, "spec", "template")
	if err != nil || !found {
		t.Fatalf("template %s has no spec.template (%v)", from.GetName(), err)
	}
	to := &unstructured.Unstructured{Object: tpl}
	to.SetNamespace(ns)
	to.SetAnnotations(map[string]string{clusterv1.TemplateClonedFromNameAnnotation: from.GetName(),
		clusterv1.TemplateClonedFromGroupKindAnnotation: from.GroupVersionKind().GroupKind().String()})
	to.SetLabels(map[string]string{clusterv1.ClusterNameLabel: cluster})
	to.SetOwnerReferences([]metav1.OwnerReference{*owner})
	to.SetAPIVersion(from.GetAPIVersion())
	to.SetKind(strings.TrimSuffix(from.GetKind(), clusterv1.TemplateSuffix))
	return to
}

// reconcile moves the clock on by step, reconciles m's remediation and returns it.
func (f *rmFixture) reconcile(m *clusterv1.Machine, step time.Duration) *v1alpha1.VitalsRemediation {
	f.t.Helper()
	f.clock.Step(step)
	key := client.ObjectKeyFromObject(m)
	f.reconcileKey(key)
	var rem v1alpha1.VitalsRemediation
	if err := f.c.Get(context.Background(), key, &rem); err != nil {
		f.t.Fatal(err)
	}
	return &rem
}

// reconcileKey reconciles the remediation of key once.
func (f *rmFixture) reconcileKey(key types.NamespacedName) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
}

// node creates a Node whose providerID names server id, Ready with status ready (False: its kubelet reports;
// Unknown: unreachable), and returns its name; it is deleted with the test.
func (f *rmFixture) node(id string, ready corev1.ConditionStatus, labels map[string]string) string {
	f.t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "rm-" + opRandHex(4), Labels: labels}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + id}}
	if err := f.c.Create(ctx, n); err != nil {
		f.t.Fatalf("create node: %v", err)
	}
	f.t.Cleanup(func() { _ = f.c.Delete(context.Background(), n) })
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test", LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	if err := f.c.Status().Update(ctx, n); err != nil {
		f.t.Fatalf("node status: %v", err)
	}
	return n.Name
}

// nodeRef sets m's status.nodeRef to node, as Cluster API does once the Machine's Node registered.
func (f *rmFixture) nodeRef(m *clusterv1.Machine, node string) {
	f.t.Helper()
	m.Status.NodeRef = clusterv1.MachineNodeReference{Name: node}
	if err := f.c.Status().Update(context.Background(), m); err != nil {
		f.t.Fatalf("machine nodeRef: %v", err)
	}
}

func (f *rmFixture) server() string {
	f.t.Helper()
	f.hosts++
	id := f.net.Server(f.cloud, 10+f.hosts)
	f.waitActive(f.cloud, id)
	return id
}

func (f *rmFixture) waitActive(cloud *openstack.Cloud, id string) {
	f.t.Helper()
	opEventually(f.t, 3*time.Minute, "server "+id+" ACTIVE", func() (bool, string) {
		sv, err := cloud.GetServer(context.Background(), id)
		if err != nil {
			return false, err.Error()
		}
		return sv.Status == "ACTIVE", sv.Status
	})
}

// reboots are Nova's instance actions "reboot" of server id (what arrived).
func (f *rmFixture) reboots(id string) int {
	f.t.Helper()
	fn := &fnFixture{t: f.t, cloud: f.cloud}
	return fn.novaReboots(id)
}

func (f *rmFixture) want(rem *v1alpha1.VitalsRemediation, phase v1alpha1.RemediationPhase, reason string) {
	f.t.Helper()
	if rem.Status.Phase != phase || rem.Status.Reason != reason {
		f.t.Fatalf("remediation %s: phase %s reason %s (%s), want %s %s; actions %+v", rem.Name, rem.Status.Phase, rem.Status.Reason, rem.Status.Message, phase, reason, rem.Status.Actions)
	}
}

func (f *rmFixture) steps(step, outcome string) float64 {
	return testutil.ToFloat64(f.m.Steps.WithLabelValues(step, outcome))
}

// TestRemediateMachine: a Machine's server is rebooted soft, then hard after softRebootTimeout (told apart on the
// wire and recorded by Nova), and the remediation stops, saying so, when the hard reboot did not bring the Machine
// back; nothing is deleted. A Machine healthy again after the soft reboot ends its remediation with no hard one.
func TestRemediateMachine(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	id := f.server()
	m := f.machine(id)

	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 0 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 1 0", soft, hard)
	}
	if rem.Status.Server != id || len(rem.Status.Actions) != 1 || rem.Status.Actions[0].Action != v1alpha1.ActionDone || rem.Status.Actions[0].Controller != remediate.Name {
		t.Fatalf("status %+v: want server %s and one Done line of %s", rem.Status, id, remediate.Name)
	}
	f.waitActive(f.cloud, id)
	// Within softRebootTimeout: nothing more.
	f.want(f.reconcile(m, 4*time.Minute), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if f.nova.Matched("soft")+f.nova.Matched("hard") != 1 {
		t.Fatal("a step within softRebootTimeout")
	}
	rem = f.reconcile(m, 2*time.Minute)
	f.want(rem, v1alpha1.RemediationHardRebooted, remediate.ReasonRebooted)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 1 || hard != 1 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 1 1", soft, hard)
	}
	f.waitActive(f.cloud, id)
	rem = f.reconcile(m, 11*time.Minute)
	f.want(rem, v1alpha1.RemediationStopped, remediate.ReasonNoRecovery)
	if !strings.Contains(rem.Status.Message, "never deletes the server") || !strings.Contains(rem.Status.Message, "nothing would replace it") {
		t.Errorf("message %q does not say that the server is left, and why", rem.Status.Message)
	}
	if n := f.reboots(id); n != 2 {
		t.Errorf("Nova recorded %d reboots of %s, want 2", n, id)
	}
	if sv, err := f.cloud.GetServer(context.Background(), id); err != nil || sv.Status != "ACTIVE" {
		t.Errorf("server %s after the remediation stopped: %+v %v, want it there and ACTIVE", id, sv, err)
	}
	// A stopped remediation does nothing more.
	f.reconcile(m, time.Hour)
	if f.nova.Matched("soft")+f.nova.Matched("hard") != 2 || f.steps(remediate.StepSoft, pass.OutcomeDone) != 1 || f.steps(remediate.StepHard, pass.OutcomeDone) != 1 {
		t.Fatal("a step after the remediation stopped")
	}
	if got := testutil.ToFloat64(f.m.Stopped.WithLabelValues(remediate.ReasonNoRecovery)); got != 1 {
		t.Errorf("vitals_remediate_stopped_total{reason=NoRecovery} = %v, want 1", got)
	}

	// Healthy again after the soft reboot: Succeeded, no hard reboot.
	id2 := f.server()
	m2 := f.machine(id2)
	f.want(f.reconcile(m2, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	m2.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
		LastTransitionTime: metav1.NewTime(f.clock.Now().Add(time.Minute))}}
	if err := f.c.Status().Update(context.Background(), m2); err != nil {
		t.Fatal(err)
	}
	f.want(f.reconcile(m2, 2*time.Minute), v1alpha1.RemediationSucceeded, remediate.ReasonRecovered)
	f.reconcile(m2, time.Hour)
	if soft, hard := f.nova.Matched("soft"), f.nova.Matched("hard"); soft != 2 || hard != 1 {
		t.Fatalf("reboots on the wire: soft %d hard %d, want 2 1", soft, hard)
	}
	if !eventSeen(f.events, remediate.ReasonRecovered) {
		t.Error("no Recovered Event")
	}
}

// TestRemediateHandBack: a Machine a MachineSet controls, which neither reboot brought back, is handed back to it
// as Cluster API's contract for external remediation has it: its OwnerRemediated condition False with reason
// WaitingForRemediation, in the v1beta2 conditions and the deprecated v1beta1 ones, the conditions it had kept,
// and the server left to Cluster API. A Machine healthy again at the moment of the write is not handed back. The
// controller runs as the chart's operator ServiceAccount (operator.capi.remediate: true): every request it makes
// is allowed by the chart, the status patch of the Machine among them.
func TestRemediateHandBack(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	cr, sa := f.asChart()
	ctx := context.Background()
	ms := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet", Name: "workers-7d9f", UID: "6b1c2f4e-0d5a-4c1b-9e8f-2a7d3c4b5e6f", Controller: ptr.To(true)}
	id := f.server()
	m := f.machine(id, ms)
	// The conditions Cluster API's controllers set stay as they are.
	m.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionFalse, Reason: "UnhealthyNode",
		LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-time.Minute))}}
	if err := f.c.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	f.want(f.reconcile(m, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	f.waitActive(f.cloud, id)
	f.want(f.reconcile(m, 6*time.Minute), v1alpha1.RemediationHardRebooted, remediate.ReasonRebooted)
	f.waitActive(f.cloud, id)
	rem := f.reconcile(m, 11*time.Minute)
	f.want(rem, v1alpha1.RemediationStopped, remediate.ReasonHandedBack)
	if !strings.Contains(rem.Status.Message, "MachineSet workers-7d9f") {
		t.Errorf("message %q does not name the MachineSet", rem.Status.Message)
	}
	var got clusterv1.Machine
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(m), &got); err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != clusterv1.MachineOwnerRemediatedWaitingForRemediationReason {
		t.Fatalf("Machine's %s condition %+v, want False %s", clusterv1.MachineOwnerRemediatedCondition, c, clusterv1.MachineOwnerRemediatedWaitingForRemediationReason)
	}
	if h := meta.FindStatusCondition(got.Status.Conditions, clusterv1.MachineHealthCheckSucceededCondition); h == nil || h.Status != metav1.ConditionFalse {
		t.Errorf("the Machine's %s condition was not kept: %+v", clusterv1.MachineHealthCheckSucceededCondition, got.Status.Conditions)
	}
	if got.Status.Deprecated == nil || got.Status.Deprecated.V1Beta1 == nil || len(got.Status.Deprecated.V1Beta1.Conditions) != 1 ||
		got.Status.Deprecated.V1Beta1.Conditions[0].Type != clusterv1.MachineOwnerRemediatedV1Beta1Condition || got.Status.Deprecated.V1Beta1.Conditions[0].Status != "False" {
		t.Errorf("the Machine's v1beta1 conditions %+v, want OwnerRemediated False", got.Status.Deprecated)
	}
	if f.steps(remediate.StepReplace, pass.OutcomeDone) != 1 || !eventSeen(f.events, remediate.ReasonHandedBack) {
		t.Errorf("hand-back not recorded: vitals_remediate_steps_total{step=replace,outcome=done} %v", f.steps(remediate.StepReplace, pass.OutcomeDone))
	}
	if sv, err := f.cloud.GetServer(ctx, id); err != nil || sv.Status != "ACTIVE" {
		t.Errorf("server %s after the hand-back: %+v %v, want it left to Cluster API", id, sv, err)
	}

	// Healthy again at the write: the fence refuses the hand-back.
	id2 := f.server()
	m2 := f.machine(id2, ms)
	f.want(f.reconcile(m2, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	f.waitActive(f.cloud, id2)
	f.want(f.reconcile(m2, 6*time.Minute), v1alpha1.RemediationHardRebooted, remediate.ReasonRebooted)
	f.waitActive(f.cloud, id2)
	healthy := func(ctx context.Context) {
		var live clusterv1.Machine
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(m2), &live); err != nil {
			t.Fatal(err)
		}
		// before the hard reboot: the remediation does not count it as recovered, and the fence sees it healthy
		live.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
			LastTransitionTime: metav1.NewTime(f.clock.Now().Add(-7 * time.Minute))}}
		if err := f.c.Status().Update(ctx, &live); err != nil {
			t.Fatal(err)
		}
	}
	healthy(ctx)
	rem = f.reconcile(m2, 11*time.Minute)
	f.want(rem, v1alpha1.RemediationHardRebooted, string(fencing.ReasonInterlock))
	if err := f.c.Get(ctx, client.ObjectKeyFromObject(m2), &got); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, clusterv1.MachineOwnerRemediatedCondition); c != nil {
		t.Errorf("a Machine healthy at the write was handed back: %+v", c)
	}
	if n := f.steps(remediate.StepReplace, pass.OutcomeHeld); n != 1 {
		t.Errorf("vitals_remediate_steps_total{step=replace,outcome=held} = %v, want 1", n)
	}
	if f := cr.forbidden(sa); len(f) > 0 {
		t.Errorf("the chart does not allow what the remediate controller did: %s", strings.Join(f, "; "))
	}
	if !cr.used(sa)[rbacPerm{"cluster.x-k8s.io", "machines/status", "patch"}] {
		t.Error("the run did not patch a Machine's status as the chart's ServiceAccount")
	}
}

func eventSeen(r *events.FakeRecorder, reason string) bool {
	for {
		select {
		case e := <-r.Events:
			if strings.Contains(e, " "+reason+" ") {
				return true
			}
		default:
			return false
		}
	}
}

// TestRemediateForeignServer: a Machine whose providerID names a server of another project (seen by the test
// cloud's admin credentials, the cluster's) stops with ForeignServer, and nothing is sent to Nova.
func TestRemediateForeignServer(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	tenant := opNewTenant(t, f.cloud, testenv.RequireFull(t))
	tnet := opNewNet(t, tenant.Cloud)
	foreign := tnet.Server(tenant.Cloud, 10)
	f.waitActive(tenant.Cloud, foreign)
	m := f.machine(foreign)
	rem := f.reconcile(m, 0)
	f.want(rem, v1alpha1.RemediationStopped, remediate.ReasonForeignServer)
	if !strings.Contains(rem.Status.Message, f.cloud.ProjectID()) {
		t.Errorf("message %q does not name the cluster's project", rem.Status.Message)
	}
	if f.nova.Matched("soft")+f.nova.Matched("hard") != 0 || f.reboots(foreign) != 0 {
		t.Fatal("a reboot of a foreign server was sent")
	}
}

// TestRemediatePauseAtWrite: a pause set after the policy allowed the reboot and before it is sent (the VitalsCluster's
// pause annotation, or Cluster API's pause of the Machine or of its Cluster, as clusterctl move sets it) holds it at
// the write: nothing reaches Nova, the remediation stays Pending and says why; once the pause is off the reboot goes
// out.
func TestRemediatePauseAtWrite(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	cc, err := f.cloud.Client(openstack.ServiceCompute)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cc.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		reason string
		pause  func(m *clusterv1.Machine, on bool) client.Object
	}{
		{name: "cluster", reason: remediation.ReasonPaused, pause: func(_ *clusterv1.Machine, on bool) client.Object {
			var cl v1alpha1.VitalsCluster
			if err := f.c.Get(context.Background(), f.key, &cl); err != nil {
				t.Fatal(err)
			}
			cl.Annotations = map[string]string{v1alpha1.AnnotationPaused: map[bool]string{true: "true", false: "false"}[on]}
			return &cl
		}},
		{name: "machine", reason: remediation.ReasonPaused, pause: func(m *clusterv1.Machine, on bool) client.Object {
			var live clusterv1.Machine
			if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(m), &live); err != nil {
				t.Fatal(err)
			}
			live.Annotations = nil
			if on {
				live.Annotations = map[string]string{clusterv1.PausedAnnotation: "true"}
			}
			return &live
		}},
		{name: "capi-cluster", reason: remediation.ReasonPaused, pause: func(_ *clusterv1.Machine, on bool) client.Object {
			var cl clusterv1.Cluster
			if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "c1"}, &cl); err != nil {
				t.Fatal(err)
			}
			cl.Spec.Paused = ptr.To(on)
			return &cl
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := f.server()
			m := f.machine(id)
			soft := f.nova.Matched("soft")
			// The controller reads the server, the policy allows the reboot, and the scoped cloud reads the server
			// again right before the write: that read is held 3 s, and the pause comes meanwhile.
			rule := faultproxy.Rule{Name: "slow-" + tc.name, Method: "GET", Path: strings.TrimSuffix(u.Path, "/") + "/servers/" + id,
				Sequence: []faultproxy.Fault{faultproxy.Pass(), faultproxy.Delay(3 * time.Second)}}
			if err := f.nova.Add(rule); err != nil {
				t.Fatal(err)
			}
			done := make(chan *v1alpha1.VitalsRemediation, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				_, _ = f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
				var rem v1alpha1.VitalsRemediation
				_ = f.c.Get(ctx, client.ObjectKeyFromObject(m), &rem)
				done <- &rem
			}()
			opEventually(t, time.Minute, "the write's read of the server", func() (bool, string) { return f.nova.Matched(rule.Name) >= 2, "" })
			if err := f.c.Update(context.Background(), tc.pause(m, true)); err != nil {
				t.Fatal(err)
			}
			rem := <-done
			f.nova.Remove(rule.Name)
			f.want(rem, v1alpha1.RemediationPending, tc.reason)
			if f.nova.Matched("soft") != soft || f.reboots(id) != 0 {
				t.Fatal("the reboot was sent past the pause")
			}
			if n := len(rem.Status.Actions); n == 0 || rem.Status.Actions[n-1].Action != v1alpha1.ActionSkipped {
				t.Fatalf("actions %+v: want a Skipped line last", rem.Status.Actions)
			}
			if err := f.c.Update(context.Background(), tc.pause(m, false)); err != nil {
				t.Fatal(err)
			}
			f.want(f.reconcile(m, 2*time.Minute), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
			if f.nova.Matched("soft") != soft+1 {
				t.Fatal("no soft reboot once the pause was off")
			}
		})
	}
}

// TestRemediatePool: one reboot at a time per MachineSet: the remediation of a second Machine of a MachineSet whose
// first is being rebooted waits (PoolBusy) and nothing of it reaches Nova, a Machine of another MachineSet is
// rebooted meanwhile, and the second goes once the first is healthy again.
func TestRemediatePool(t *testing.T) {
	parallel(t)
	f := newRMFixture(t)
	ctx := context.Background()
	ms := func(name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineSet", Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}
	}
	a, b, c := f.server(), f.server(), f.server()
	ma, mb, mc := f.machine(a, ms("workers-a")), f.machine(b, ms("workers-a")), f.machine(c, ms("workers-b"))

	f.want(f.reconcile(ma, 0), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	rem := f.reconcile(mb, time.Second)
	f.want(rem, v1alpha1.RemediationPending, remediation.ReasonPoolBusy)
	if !strings.Contains(rem.Status.Message, "MachineSet/workers-a") || !strings.Contains(rem.Status.Message, a) {
		t.Errorf("message %q does not name the pool and the server in flight", rem.Status.Message)
	}
	f.want(f.reconcile(mc, time.Second), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if f.nova.Matched("soft") != 2 || f.reboots(b) != 0 {
		t.Fatalf("reboots on the wire: soft %d, of the held server %d; want 2, 0", f.nova.Matched("soft"), f.reboots(b))
	}
	if n := f.steps(remediate.StepSoft, pass.OutcomeHeld); n != 1 {
		t.Errorf("vitals_remediate_steps_total{step=soft,outcome=held} = %v, want 1", n)
	}

	// The first healthy again: its remediation succeeds, and the second Machine of the MachineSet is rebooted.
	f.waitActive(f.cloud, a)
	ma.Status.Conditions = []metav1.Condition{{Type: clusterv1.MachineHealthCheckSucceededCondition, Status: metav1.ConditionTrue, Reason: "Succeeded",
		LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	if err := f.c.Status().Update(ctx, ma); err != nil {
		t.Fatal(err)
	}
	f.want(f.reconcile(ma, time.Minute), v1alpha1.RemediationSucceeded, remediate.ReasonRecovered)
	f.want(f.reconcile(mb, time.Minute), v1alpha1.RemediationSoftRebooted, remediate.ReasonRebooted)
	if f.nova.Matched("soft") != 3 {
		t.Fatalf("soft reboots on the wire: %d, want 3", f.nova.Matched("soft"))
	}
}
