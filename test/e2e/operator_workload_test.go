package e2e

// The whole operator reads workload clusters through kubeconfigSecretRef: a private kube-apiserver
// (testenv.PrivateKube) whose outage shows on its VitalsCluster only, and never on the operator's own
// probes; a VitalsCluster without a reference is refused while the operator does not serve its own
// cluster.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

func TestOperatorWorkloadAccess(t *testing.T) {
	parallel(t)
	cfg, c, ns := opKube(t)
	ctx := context.Background()
	priv := testenv.PrivateKube(t)
	cs, err := kubernetes.NewForConfig(priv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, kc := range map[string][]byte{"private": testenv.InlineKubeconfig(t, priv.KubeconfigPath()), "shared": testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t))} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": kc}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	r := opStart(t, operator.Options{RestConfig: cfg, Namespace: ns, Identity: "workload-test",
		CheckInterval: time.Second, CheckTimeout: time.Second})
	create := func(name string, ref *v1alpha1.SecretKeyRef) types.NamespacedName {
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: ref,
			OpenStack:           v1alpha1.OpenStackSpec{RouterID: "router-" + name},
			PodCIDRs:            []v1alpha1.CIDR{"198.19.0.0/16"},
			// This test is about the workload access: its deletion is not deorbit's (see controllers/deorbit).
			Controllers: v1alpha1.ControllersSpec{Deorbit: v1alpha1.DeorbitSpec{Enabled: new(bool)}},
		}}
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
		return client.ObjectKeyFromObject(vc)
	}
	condition := func(k types.NamespacedName, status metav1.ConditionStatus, reason string) func() (bool, string) {
		return func() (bool, string) {
			var vc v1alpha1.VitalsCluster
			if err := c.Get(ctx, k, &vc); err != nil {
				return false, err.Error()
			}
			cd := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionWorkloadReachable)
			if cd == nil {
				return false, "no condition"
			}
			return cd.Status == status && cd.Reason == reason, fmt.Sprintf("%s/%s: %s", cd.Status, cd.Reason, cd.Message)
		}
	}
	check := func(k types.NamespacedName) string {
		res, ok := r.op.Policy().Checks().Get(k, remediation.CheckWorkload)
		if !ok {
			return "(none)"
		}
		return workload.ReasonOf(res.Err)
	}
	// The gate of a controller that needs the workload cluster, as deorbit and flight will ask it.
	gate := func(k types.NamespacedName) remediation.Decision {
		t.Helper()
		var vc v1alpha1.VitalsCluster
		if err := c.Get(ctx, k, &vc); err != nil {
			t.Fatal(err)
		}
		p := r.op.Policy().Begin(ctx, &vc, "e2e", []string{remediation.CheckWorkload}, remediation.Scope{Unhealthy: 1, Total: 10})
		a := remediation.Action{Verb: "DeletePersistentVolumeClaim", Kind: "pvc", ID: "default/data"}
		d := p.Ask(ctx, a)
		if d.Outcome == remediation.Allowed {
			p.Done(ctx, a, nil)
		}
		return d
	}
	probesOK := func() {
		t.Helper()
		for _, p := range []string{"/livez", "/readyz"} {
			if code, body := probe(r.op.HealthAddr(), p+"?verbose"); code != 200 {
				t.Fatalf("%s = %d during a workload cluster's outage: %s", p, code, body)
			}
		}
	}

	ka := create("a", &v1alpha1.SecretKeyRef{Name: "private"})
	kb := create("b", &v1alpha1.SecretKeyRef{Name: "shared"})
	kl := create("local", nil)
	opEventually(t, 2*time.Minute, "a reachable", condition(ka, metav1.ConditionTrue, workload.ReasonReachable))
	opEventually(t, 2*time.Minute, "b reachable", condition(kb, metav1.ConditionTrue, workload.ReasonReachable))
	opEventually(t, 2*time.Minute, "local refused", condition(kl, metav1.ConditionFalse, workload.ReasonLocalNotAllowed))

	// What deorbit and flight do: read the workload cluster's objects through the access.
	var vca v1alpha1.VitalsCluster
	if err := c.Get(ctx, ka, &vca); err != nil {
		t.Fatal(err)
	}
	wa, err := r.op.Workload().For(ctx, &vca)
	if err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := wa.Reader().List(ctx, &nodes); err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes of the workload cluster: %v %v", nodes.Items, err)
	}

	if err := priv.Stop(); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 2*time.Minute, "a unreachable", condition(ka, metav1.ConditionFalse, workload.ReasonUnreachable))
	if got := check(ka); got != workload.ReasonUnreachable {
		t.Fatalf("a's workload check during its outage: %s", got)
	}
	if ok, msg := condition(kb, metav1.ConditionTrue, workload.ReasonReachable)(); !ok {
		t.Fatalf("b during a's outage: %s", msg)
	}
	if got := check(kb); got != workload.ReasonReachable {
		t.Fatalf("b's workload check during a's outage: %s", got)
	}
	if d := gate(ka); d.Outcome != remediation.Held || d.Reason != remediation.ReasonGateClosed || !strings.Contains(d.Message, remediation.CheckWorkload) {
		t.Fatalf("the gate of a during its outage: %+v", d)
	}
	if d := gate(kb); d.Reason == remediation.ReasonGateClosed && strings.Contains(d.Message, remediation.CheckWorkload) {
		t.Fatalf("b's gate closed by a's outage: %+v", d)
	}
	probesOK()

	if err := priv.Start(); err != nil {
		t.Fatal(err)
	}
	opEventually(t, 2*time.Minute, "a reachable again", condition(ka, metav1.ConditionTrue, workload.ReasonReachable))

	if err := c.Delete(ctx, &vca); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wa.Done():
	case <-time.After(2 * time.Minute):
		t.Fatal("the access of a deleted VitalsCluster still runs")
	}
	if n := r.op.Workload().Len(); n != 1 {
		t.Fatalf("%d workload accesses run, want b's only", n)
	}
}
