package access_test

// The access controller's workload part, in a real controller-runtime manager against the harness's
// kube-apiserver (the management cluster, holding VitalsClusters and kubeconfig Secrets), with a private
// kube-apiserver (testenv.PrivateKube) as one workload cluster, stopped and restarted, and the shared
// apiserver itself, through a Secret, as another.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// refusing is the tenancy of a cluster without credentials: this test is about the workload part.
type refusing struct{}

func (refusing) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	return nil, &tenancy.Refusal{Reason: tenancy.ReasonMissingCredentials, Message: "no credentials in this test"}
}
func (refusing) Forget(types.NamespacedName) {}

func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestWorkloadReachableFollowsEachWorkloadCluster(t *testing.T) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	cfg := testenv.Kube(t)
	testenv.InstallCRD(t, cfg)
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := testenv.Namespace(t, cfg, "vitals-access")

	priv := testenv.PrivateKube(t)
	for name, kc := range map[string][]byte{"private-kubeconfig": testenv.InlineKubeconfig(t, priv.KubeconfigPath()), "shared-kubeconfig": testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t))} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": kc}}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}

	// The operator's side: a manager, the access reconciler with its workload part.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: operator.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	store := remediation.NewChecks(nil)
	changes := access.NewWorkloadChanges()
	wm, err := workload.NewManager(workload.Options{Secrets: mgr.GetAPIReader(), Checks: store, Changed: changes.Changed,
		HealthInterval: 300 * time.Millisecond, HealthTimeout: 2 * time.Second,
		Rules: workload.KubeconfigRules{AllowLoopback: true}}) // the test kube-apiserver listens on loopback
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(wm); err != nil {
		t.Fatal(err)
	}
	r, err := access.New(&pass.Deps{Client: mgr.GetClient(), Tenancy: refusing{}, Checks: store, Workload: wm,
		Recorder: func(string) events.EventRecorder { return mgr.GetEventRecorder("vitals-access") }}, access.Options{WorkloadChanges: changes})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		if n := wm.Len(); n != 0 {
			t.Errorf("%d workload accesses outlive the manager", n)
		}
	})

	create := func(name, secret string) types.NamespacedName {
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: secret},
			OpenStack:           v1alpha1.OpenStackSpec{RouterID: "router-" + name},
			PodCIDRs:            []v1alpha1.CIDR{"198.19.0.0/16"},
		}}
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
		return client.ObjectKeyFromObject(vc)
	}
	condition := func(k types.NamespacedName, status metav1.ConditionStatus, reason string) func() error {
		return func() error {
			var vc v1alpha1.VitalsCluster
			if err := c.Get(ctx, k, &vc); err != nil {
				return err
			}
			cd := meta.FindStatusCondition(vc.Status.Conditions, v1alpha1.ConditionWorkloadReachable)
			if cd == nil {
				return fmt.Errorf("no %s condition", v1alpha1.ConditionWorkloadReachable)
			}
			if cd.Status != status || cd.Reason != reason {
				return fmt.Errorf("%s is %s/%s (%s), want %s/%s", cd.Type, cd.Status, cd.Reason, cd.Message, status, reason)
			}
			return nil
		}
	}
	// The remediation gate of a controller that needs the workload cluster (as deorbit and flight do).
	policy, err := remediation.New(remediation.Options{Checks: store})
	if err != nil {
		t.Fatal(err)
	}
	gate := func(k types.NamespacedName) remediation.Decision {
		t.Helper()
		var vc v1alpha1.VitalsCluster
		if err := c.Get(ctx, k, &vc); err != nil {
			t.Fatal(err)
		}
		p := policy.Begin(ctx, &vc, "test", []string{remediation.CheckWorkload}, remediation.Scope{Unhealthy: 1, Total: 10})
		a := remediation.Action{Verb: "DeletePersistentVolumeClaim", Kind: "pvc", ID: "default/data"}
		d := p.Ask(ctx, a)
		if d.Outcome == remediation.Allowed {
			p.Done(ctx, a, nil)
		}
		return d
	}
	check := func(k types.NamespacedName) string {
		res, ok := store.Get(k, remediation.CheckWorkload)
		if !ok {
			return "(none)"
		}
		return workload.ReasonOf(res.Err)
	}

	ka, kb := create("a", "private-kubeconfig"), create("b", "shared-kubeconfig")
	eventually(t, "a reachable", condition(ka, metav1.ConditionTrue, workload.ReasonReachable))
	eventually(t, "b reachable", condition(kb, metav1.ConditionTrue, workload.ReasonReachable))

	// What deorbit and flight will do: read the workload cluster through the access.
	var vca v1alpha1.VitalsCluster
	if err := c.Get(ctx, ka, &vca); err != nil {
		t.Fatal(err)
	}
	wa, err := wm.For(ctx, &vca)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(priv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Node of the private cluster in the cache", func() error {
		var nodes corev1.NodeList
		if err := wa.Reader().List(ctx, &nodes); err != nil {
			return err
		}
		if len(nodes.Items) != 1 {
			return fmt.Errorf("%d nodes", len(nodes.Items))
		}
		return nil
	})
	// The check runs on its own interval: wait for its first result after the sync rather than read it once.
	eventually(t, "a's workload check reachable", func() error {
		if r := check(ka); r != workload.ReasonReachable {
			return fmt.Errorf("a's workload check: %s", r)
		}
		return nil
	})
	if d := gate(ka); d.Outcome != remediation.Allowed {
		t.Fatalf("the gate of a with its workload cluster up: %+v", d)
	}

	// The private apiserver goes: a's condition and check fail, b's do not.
	if err := priv.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a unreachable", condition(ka, metav1.ConditionFalse, workload.ReasonUnreachable))
	eventually(t, "a's workload check unreachable", func() error {
		if r := check(ka); r != workload.ReasonUnreachable {
			return fmt.Errorf("a's workload check during the outage: %s", r)
		}
		return nil
	})
	if err := condition(kb, metav1.ConditionTrue, workload.ReasonReachable)(); err != nil {
		t.Fatalf("b during a's outage: %v", err)
	}
	if r := check(kb); r != workload.ReasonReachable {
		t.Fatalf("b's workload check during a's outage: %s", r)
	}
	if d := gate(ka); d.Outcome != remediation.Held || d.Reason != remediation.ReasonGateClosed {
		t.Fatalf("the gate of a during its outage: %+v", d)
	}
	if d := gate(kb); d.Outcome != remediation.Allowed {
		t.Fatalf("the gate of b during a's outage: %+v", d)
	}
	eventually(t, "an Event on a", func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == "a" && e.Reason == "Workload"+workload.ReasonUnreachable {
				if strings.Contains(e.Note, "127.0.0.1") {
					return fmt.Errorf("the Event names the server: %s", e.Note)
				}
				return nil
			}
		}
		return fmt.Errorf("no WorkloadUnreachable Event among %d", len(evs.Items))
	})

	// Back.
	if err := priv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reachable again", condition(ka, metav1.ConditionTrue, workload.ReasonReachable))

	// a goes: its access stops (the finalizer is released at once until deorbit exists); b's stays.
	if err := c.Delete(ctx, &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wa.Done():
	case <-time.After(90 * time.Second):
		t.Fatal("the access of a deleted VitalsCluster still runs")
	}
	if n := wm.Len(); n != 1 {
		t.Fatalf("%d accesses run, want b's only", n)
	}
	eventually(t, "a gone, and its checks", func() error {
		if err := c.Get(ctx, ka, &vca); err == nil {
			return fmt.Errorf("a still exists")
		}
		if r := check(ka); r != "(none)" {
			return fmt.Errorf("a's check outlives it: %s", r)
		}
		return nil
	})
	if err := condition(kb, metav1.ConditionTrue, workload.ReasonReachable)(); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
