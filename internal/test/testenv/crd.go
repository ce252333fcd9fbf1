package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

var crdMu sync.Mutex

// InstallCRD installs (or updates) the VitalsCluster CRD of deploy/crds in the API server of cfg and waits
// until it serves. Test packages run in parallel: the CRD they install is the one of this checkout.
func InstallCRD(t testing.TB, cfg *rest.Config) {
	t.Helper()
	crdMu.Lock()
	defer crdMu.Unlock()
	_, here, _, _ := runtime.Caller(0)
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(filepath.Dir(here), "..", "..", "..", "deploy", "crds")}, ErrorIfPathMissing: true,
		MaxTime: time.Minute, PollInterval: 100 * time.Millisecond,
	}); err != nil {
		t.Fatalf("install the VitalsCluster CRD: %v", err)
	}
}

// Namespace creates a namespace of the test's own in the API server of cfg, named prefix-<random>, and
// deletes it when the test ends.
func Namespace(t testing.TB, cfg *rest.Config, prefix string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := prefix + "-" + hex.EncodeToString(b)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return ns
}

// Clusters returns a client of the shared test kube-apiserver that knows the core types and VitalsClusters,
// with the VitalsCluster CRD installed, and the client's configuration.
func Clusters(t testing.TB) (client.WithWatch, *rest.Config) {
	t.Helper()
	cfg := Kube(t)
	InstallCRD(t, cfg)
	s := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg
}
