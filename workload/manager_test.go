package workload_test

// The workload access against real apiservers: the shared kube-apiserver of the harness is the
// management cluster (it holds the kubeconfig Secrets) and, through a Secret, one workload cluster; a
// private kube-apiserver (testenv.PrivateKube) is another workload cluster, stopped and restarted by the
// tests.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/workload"
)

type fixture struct {
	t      testing.TB
	mgmt   client.Client
	ns     string
	checks *remediation.CheckSet
	access *workload.Manager
	reg    *prometheus.Registry

	mu      sync.Mutex
	changed map[types.NamespacedName]int
}

func newFixture(t testing.TB, mutate func(*workload.Options)) *fixture {
	t.Helper()
	cfg := testenv.Kube(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "vitals-workload-" + hex.EncodeToString(b)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	f := &fixture{t: t, mgmt: c, ns: ns, checks: remediation.NewChecks(nil), changed: map[types.NamespacedName]int{}, reg: prometheus.NewRegistry()}
	opts := workload.Options{
		Secrets: c, Checks: f.checks, Registerer: f.reg,
		HealthInterval: 250 * time.Millisecond, HealthTimeout: 2 * time.Second, SecretRecheck: -1,
		// The test kube-apiserver listens on loopback.
		Rules: workload.KubeconfigRules{AllowLoopback: true},
		Changed: func(k types.NamespacedName) {
			f.mu.Lock()
			f.changed[k]++
			f.mu.Unlock()
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	f.access, err = workload.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.access.Close)
	return f
}

// secret creates (or updates) a Secret holding data under key "kubeconfig".
func (f *fixture) secret(name string, data []byte) {
	f.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Data: map[string][]byte{workload.DefaultKubeconfigKey: data}}
	err := f.mgmt.Create(context.Background(), s)
	if err != nil {
		err = f.mgmt.Update(context.Background(), s)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) cluster(name string, ref *v1alpha1.SecretKeyRef) *v1alpha1.VitalsCluster {
	return &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, UID: types.UID("uid-" + name)},
		Spec: v1alpha1.ClusterSpec{KubeconfigSecretRef: ref}}
}

func (f *fixture) for_(c *v1alpha1.VitalsCluster) (workload.Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.access.For(ctx, c)
}

// eventually polls cond until it holds or a minute has passed.
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *fixture) checkReason(k types.NamespacedName) string {
	r, ok := f.checks.Get(k, remediation.CheckWorkload)
	if !ok {
		return "(none)"
	}
	return workload.ReasonOf(r.Err)
}

// reachable returns the vitals_workload_reachable series of cluster k: its reason and value.
func (f *fixture) reachable(k types.NamespacedName) (string, float64, int) {
	mfs, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	var reason string
	var v float64
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != "vitals_workload_reachable" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["vitalscluster"] == k.String() {
				reason, v = labels["reason"], m.GetGauge().GetValue()
				n++
			}
		}
	}
	return reason, v, n
}

func wantReason(c workload.Cluster, reason string) func() error {
	return func() error {
		if got := workload.ReasonOf(c.Healthy()); got != reason {
			return fmt.Errorf("health %v, want %s", c.Healthy(), reason)
		}
		return nil
	}
}

// accessGoroutines counts the goroutines of workload accesses: informers, caches, health loops.
func accessGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "k8s.io/client-go/tools/cache.") || strings.Contains(g, "controller-runtime/pkg/cache") ||
			strings.Contains(g, "vitals/workload.(*remote)") || strings.Contains(g, "vitals/workload.start") {
			n++
		}
	}
	return n
}

func TestAccessOutageOfOneClusterAndRecovery(t *testing.T) {
	f := newFixture(t, nil)
	priv := testenv.PrivateKube(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	cs, err := kubernetes.NewForConfig(priv.Config())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.secret("private-kubeconfig", testenv.InlineKubeconfig(t, priv.KubeconfigPath()))
	f.secret("shared-kubeconfig", testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)))
	a := f.cluster("a", &v1alpha1.SecretKeyRef{Name: "private-kubeconfig"})
	b := f.cluster("b", &v1alpha1.SecretKeyRef{Name: "shared-kubeconfig"})
	ka, kb := types.NamespacedName{Namespace: f.ns, Name: "a"}, types.NamespacedName{Namespace: f.ns, Name: "b"}

	wa, err := f.for_(a)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := f.for_(b)
	if err != nil {
		t.Fatal(err)
	}
	if wa.Source() != "secret "+f.ns+"/private-kubeconfig key kubeconfig" {
		t.Fatalf("source %q", wa.Source())
	}
	eventually(t, "a reachable", wantReason(wa, workload.ReasonReachable))
	eventually(t, "b reachable", wantReason(wb, workload.ReasonReachable))

	// Reads go through the informer cache of the workload cluster.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := wa.Reader().List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 || nodes.Items[0].Name != "node-a" {
		t.Fatalf("nodes of the private cluster: %v", nodes.Items)
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := wa.Reader().List(ctx, &pvcs); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a healthy with informers synced", wantReason(wa, workload.ReasonReachable))
	if r := f.checkReason(ka); r != workload.ReasonReachable {
		t.Fatalf("check of a: %s", r)
	}
	// Writes go to the workload cluster, each through the fence of its context: none without one.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "written-by-vitals"}}
	if err := wa.Client().Create(ctx, cm.DeepCopy()); err == nil {
		t.Fatal("a write without a fence was sent")
	} else if r, _ := fencing.ReasonOf(err); r != fencing.ReasonNoFence {
		t.Fatalf("a write without a fence: %v, want a refusal NoFence", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused write reached the private cluster: %v", err)
	}
	open := fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		return ctx, cancel, nil
	})
	if err := wa.Client().Create(fencing.With(ctx, open), cm); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the write did not reach the private cluster: %v", err)
	}

	// The private apiserver goes: a's check fails, b's does not.
	if err := priv.Stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a unreachable", wantReason(wa, workload.ReasonUnreachable))
	eventually(t, "a's check failing", func() error {
		if r := f.checkReason(ka); r != workload.ReasonUnreachable {
			return fmt.Errorf("check %s", r)
		}
		return nil
	})
	if err := wb.Healthy(); err != nil {
		t.Fatalf("b is hurt by a's outage: %v", err)
	}
	if r := f.checkReason(kb); r != workload.ReasonReachable {
		t.Fatalf("b's check is hurt by a's outage: %s", r)
	}
	if reason, v, n := f.reachable(ka); reason != workload.ReasonUnreachable || v != 0 || n != 1 {
		t.Fatalf("metric of a during the outage: reason %s value %g (%d series)", reason, v, n)
	}
	if reason, v, _ := f.reachable(kb); reason != workload.ReasonReachable || v != 1 {
		t.Fatalf("metric of b during a's outage: reason %s value %g", reason, v)
	}
	if msg := wa.Healthy().Error(); strings.Contains(msg, "127.0.0.1") {
		t.Fatalf("the health message names the server: %s", msg)
	}
	// The same access is handed out during the outage (nothing rebuilt, no Secret change).
	if again, err := f.for_(a); err != nil || again != wa {
		t.Fatalf("For during the outage: %v, same access %v", err, again == wa)
	}

	// Back: a recovers on its own.
	if err := priv.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a reachable again", wantReason(wa, workload.ReasonReachable))
	if err := wa.Reader().List(ctx, &nodes); err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes after recovery: %v %v", nodes.Items, err)
	}
	f.mu.Lock()
	if f.changed[ka] < 3 {
		t.Errorf("a's health changed %d times as told to Changed, want at least 3 (reachable, unreachable, reachable)", f.changed[ka])
	}
	f.mu.Unlock()

	// a goes: its access stops, b's stays.
	f.access.Forget(ka)
	select {
	case <-wa.Done():
	default:
		t.Fatal("Forget returned before the access stopped")
	}
	if r := workload.ReasonOf(wa.Healthy()); r != workload.ReasonStopped {
		t.Fatalf("a after Forget: %s", r)
	}
	if f.access.Len() != 1 {
		t.Fatalf("%d accesses, want 1", f.access.Len())
	}
	if _, _, n := f.reachable(ka); n != 0 {
		t.Fatalf("a's metric outlives its access")
	}
	if err := wb.Healthy(); err != nil {
		t.Fatal(err)
	}
	f.access.Forget(kb)
	eventually(t, "no goroutine of any access left", func() error {
		if n := accessGoroutines(); n != 0 {
			return fmt.Errorf("%d goroutines left", n)
		}
		return nil
	})
}

func TestAccessFollowsTheSecret(t *testing.T) {
	f := newFixture(t, nil)
	shared := testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t))
	f.secret("kc", shared)
	c := f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"})
	k := types.NamespacedName{Namespace: f.ns, Name: "c"}
	w1, err := f.for_(c)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "reachable", wantReason(w1, workload.ReasonReachable))
	if w, err := f.for_(c); err != nil || w != w1 {
		t.Fatalf("unchanged Secret: %v, same access %v", err, w == w1)
	}

	// A new resourceVersion: a new access, the old one stopped.
	f.secret("kc", append([]byte("# rotated\n"), shared...))
	w2, err := f.for_(c)
	if err != nil {
		t.Fatal(err)
	}
	if w2 == w1 {
		t.Fatal("the access was not rebuilt after the Secret changed")
	}
	select {
	case <-w1.Done():
	default:
		t.Fatal("the old access still runs")
	}
	eventually(t, "reachable after rotation", wantReason(w2, workload.ReasonReachable))

	// The tenant turns it into something refused: the access stops, the check says why.
	f.secret("kc", []byte(strings.Replace(string(shared), "token:", "tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n    token:", 1)))
	_, err = f.for_(c)
	if workload.ReasonOf(err) != workload.ReasonRefusedKubeconfig || !strings.Contains(err.Error(), "users[0]: tokenFile") {
		t.Fatalf("got %v, want tokenFile refused", err)
	}
	select {
	case <-w2.Done():
	default:
		t.Fatal("a refused kubeconfig left the previous access running")
	}
	if r := f.checkReason(k); r != workload.ReasonRefusedKubeconfig {
		t.Fatalf("check %s", r)
	}

	// A wrong key, then no Secret at all.
	c.Spec.KubeconfigSecretRef.Key = "value"
	_, err = f.for_(c)
	if workload.ReasonOf(err) != workload.ReasonMissingKubeconfig || !strings.Contains(err.Error(), `has no key "value"`) {
		t.Fatalf("got %v", err)
	}
	c.Spec.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: "absent"}
	_, err = f.for_(c)
	if workload.ReasonOf(err) != workload.ReasonMissingKubeconfig {
		t.Fatalf("got %v", err)
	}
	if r := f.checkReason(k); r != workload.ReasonMissingKubeconfig {
		t.Fatalf("check %s", r)
	}
	if f.access.Len() != 0 {
		t.Fatalf("%d accesses run", f.access.Len())
	}
}

func TestAccessLocalCluster(t *testing.T) {
	for _, tt := range []struct {
		name  string
		allow bool
		want  string
	}{
		{name: "not allowed", allow: false, want: workload.ReasonLocalNotAllowed},
		{name: "allowed", allow: true, want: workload.ReasonReachable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var local *rest.Config
			f := newFixture(t, func(o *workload.Options) {
				o.AllowLocal = tt.allow
				if tt.allow {
					local = testenv.Kube(t)
					o.Local = local
				}
			})
			c := f.cluster("local", nil)
			w, err := f.for_(c)
			if !tt.allow {
				if workload.ReasonOf(err) != tt.want || !strings.Contains(err.Error(), "--allow-local-workload") {
					t.Fatalf("got %v, want %s naming the flag", err, tt.want)
				}
				if r := f.checkReason(types.NamespacedName{Namespace: f.ns, Name: "local"}); r != tt.want {
					t.Fatalf("check %s", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Source() != "the operator's own cluster" {
				t.Fatalf("source %q", w.Source())
			}
			eventually(t, "reachable", wantReason(w, tt.want))
		})
	}
}

// For after Close refuses; Close stops every access.
func TestAccessClose(t *testing.T) {
	f := newFixture(t, nil)
	f.secret("kc", testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)))
	w, err := f.for_(f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"}))
	if err != nil {
		t.Fatal(err)
	}
	f.access.Close()
	select {
	case <-w.Done():
	default:
		t.Fatal("Close left the access running")
	}
	_, err = f.for_(f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"}))
	var we *workload.Error
	if !errors.As(err, &we) || we.Reason != workload.ReasonStopped {
		t.Fatalf("For after Close: %v", err)
	}
}

// BenchmarkAccesses measures what one workload access costs the operator: heap and goroutines of an
// access that has read Nodes once (one informer), against the shared kube-apiserver. Run with
// -bench Accesses -benchtime 1x.
func BenchmarkAccesses(b *testing.B) {
	const n = 50
	f := newFixture(b, func(o *workload.Options) { o.HealthInterval = 10 * time.Second })
	f.secret("kc", testenv.InlineKubeconfig(b, testenv.KubeconfigPath(b)))
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		t0 := time.Now()
		var list []workload.Cluster
		for i := range n {
			w, err := f.for_(f.cluster(fmt.Sprintf("c%d", i), &v1alpha1.SecretKeyRef{Name: "kc"}))
			if err != nil {
				b.Fatal(err)
			}
			var nodes corev1.NodeList
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = w.Reader().List(ctx, &nodes)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			list = append(list, w)
		}
		elapsed := time.Since(t0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n/1024, "KiB-heap/access")
		b.ReportMetric(float64(runtime.NumGoroutine()-g0)/n, "goroutines/access")
		b.ReportMetric(float64(elapsed.Milliseconds())/n, "ms-to-first-read/access")
		t1 := time.Now()
		for i := range list {
			f.access.Forget(types.NamespacedName{Namespace: f.ns, Name: fmt.Sprintf("c%d", i)})
		}
		b.ReportMetric(float64(time.Since(t1).Milliseconds())/n, "ms-to-stop/access")
	}
}

// A user the workload cluster lets read /readyz but not Nodes: the informer of Nodes never syncs, the
// read fails at its deadline, and the check says which kind.
func TestAccessInformerNotSynced(t *testing.T) {
	f := newFixture(t, nil)
	kc := string(testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)))
	// the harness's admin impersonates a user without any role
	f.secret("kc", []byte(strings.Replace(kc, "    token:", "    as: vitals-test-nobody\n    token:", 1)))
	w, err := f.for_(f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"}))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "reachable", wantReason(w, workload.ReasonReachable))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	if err := w.Reader().List(ctx, &nodes); err == nil {
		t.Fatal("a forbidden list through the cache succeeded")
	}
	eventually(t, "not synced", wantReason(w, workload.ReasonNotSynced))
	if msg := w.Healthy().Error(); !strings.Contains(msg, "Node") {
		t.Fatalf("the check does not name the kind: %s", msg)
	}
	if r := f.checkReason(types.NamespacedName{Namespace: f.ns, Name: "c"}); r != workload.ReasonNotSynced {
		t.Fatalf("check %s", r)
	}
}

// Kinds outside the scheme (VolumeSnapshots of the external snapshotter, any CRD) are read as
// unstructured objects, and metadata only where that is enough; their informers count for the health.
func TestAccessReadsUnstructuredAndMetadata(t *testing.T) {
	f := newFixture(t, nil)
	f.secret("kc", testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)))
	w, err := f.for_(f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := w.Reader().List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	svcs := &metav1.PartialObjectMetadataList{}
	svcs.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceList"))
	if err := w.Reader().List(ctx, svcs, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	if len(svcs.Items) == 0 {
		t.Fatal("no Service in default (the kubernetes Service is expected)")
	}
	eventually(t, "reachable with both informers synced", wantReason(w, workload.ReasonReachable))
	// A kind the server does not serve fails the read, not the health.
	absent := &unstructured.UnstructuredList{}
	absent.SetGroupVersionKind(schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshotList"})
	if err := w.Reader().List(ctx, absent); err == nil {
		t.Fatal("listing an unserved kind succeeded")
	}
	time.Sleep(600 * time.Millisecond) // two probes
	if err := w.Healthy(); err != nil {
		t.Fatalf("an unserved kind hurts the health: %v", err)
	}
}

// The teardown client (a bucket of its own) reads through the access's connection, and sends no
// write without a fence, as Client.
func TestAccessTeardownClient(t *testing.T) {
	f := newFixture(t, nil)
	f.secret("kc", testenv.InlineKubeconfig(t, testenv.KubeconfigPath(t)))
	w, err := f.for_(f.cluster("c", &v1alpha1.SecretKeyRef{Name: "kc"}))
	if err != nil {
		t.Fatal(err)
	}
	td, err := w.Teardown()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Teardown(); err != nil {
		t.Fatalf("a second Teardown: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var svcs corev1.ServiceList
	if err := td.List(ctx, &svcs, client.InNamespace("default")); err != nil || len(svcs.Items) == 0 {
		t.Fatalf("list Services through the teardown client: %d, %v", len(svcs.Items), err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vitals-teardown-absent"}}
	if reason, ok := fencing.ReasonOf(td.Delete(ctx, cm)); !ok || reason != fencing.ReasonNoFence {
		t.Fatalf("a delete without a fence: reason %q (%v), want %s", reason, ok, fencing.ReasonNoFence)
	}
	fenced := fencing.With(ctx, fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		return wctx, cancel, nil
	}))
	if err := td.Delete(fenced, cm); !apierrors.IsNotFound(err) {
		t.Fatalf("a fenced delete of an absent ConfigMap: %v, want NotFound from the API server", err)
	}
}
