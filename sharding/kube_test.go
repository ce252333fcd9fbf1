package sharding_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
)

// GateOn is the flag that turns server-side sharded list and watch on.
const gateOn = "--feature-gates=ShardedListAndWatch=true"

var crdMu sync.Mutex

// installCRD installs (or updates) the VitalsCluster CRD and waits until it serves.
func installCRD(t testing.TB, cfg *rest.Config) {
	t.Helper()
	crdMu.Lock()
	defer crdMu.Unlock()
	_, here, _, _ := runtime.Caller(0)
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(filepath.Dir(here), "..", "deploy", "crds")}, ErrorIfPathMissing: true,
		MaxTime: time.Minute, PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("install the VitalsCluster CRD: %v", err)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// kubeEnv is one API server for a test: the shared one (gate off) or a private one with the gate on.
type kubeEnv struct {
	name string
	gate bool
	cfg  func(t *testing.T) *rest.Config
}

var kubeEnvs = []kubeEnv{
	{name: "gate-off", cfg: func(t *testing.T) *rest.Config { return testenv.Kube(t) }},
	{name: "gate-on", gate: true, cfg: func(t *testing.T) *rest.Config { return testenv.PrivateKube(t, gateOn).Config() }},
}

// newNamespace creates a namespace for one test and deletes it at the end.
func newNamespace(t *testing.T, cfg *rest.Config) (string, kclient.Interface, client.Client) {
	t.Helper()
	cs, err := kclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: operator.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := "shard-" + randHex(4)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		// no finalizers run here: clear them, so that the namespace goes
		var list v1alpha1.VitalsClusterList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err == nil {
			for i := range list.Items {
				cl := &list.Items[i]
				if len(cl.Finalizers) > 0 {
					p := client.MergeFrom(cl.DeepCopy())
					cl.Finalizers = nil
					_ = c.Patch(ctx, cl, p)
				}
			}
		}
		_ = c.DeleteAllOf(ctx, &v1alpha1.VitalsCluster{}, client.InNamespace(ns))
		_ = cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	return ns, cs, c
}

// createClusters creates n VitalsClusters named c000… in ns.
func createClusters(t *testing.T, c client.Client, ns string, n int) []*v1alpha1.VitalsCluster {
	t.Helper()
	out := make([]*v1alpha1.VitalsCluster, n)
	for i := range n {
		cl := &v1alpha1.VitalsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%03d", i)},
			Spec: v1alpha1.ClusterSpec{
				OpenStack: v1alpha1.OpenStackSpec{RouterID: "router-" + randHex(4), SubnetID: "subnet"},
				PodCIDRs:  []v1alpha1.CIDR{"198.19.0.0/16"},
			},
		}
		if err := c.Create(context.Background(), cl); err != nil {
			t.Fatalf("create cluster %d: %v", i, err)
		}
		out[i] = cl
	}
	return out
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
