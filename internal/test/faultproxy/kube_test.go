package faultproxy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// kubeFixture: a client of the shared kube-apiserver through a proxy, and a namespace of the test's own.
func kubeFixture(t *testing.T) (*faultproxy.Proxy, kubernetes.Interface, string) {
	t.Helper()
	cfg := testenv.Kube(t)
	direct := kubernetes.NewForConfigOrDie(cfg)
	ns := uniqueName("faultproxy")
	if _, err := direct.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	p, pcfg, err := faultproxy.NewKube(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, kubernetes.NewForConfigOrDie(pcfg), ns
}

func TestKubeStatusAndSequence(t *testing.T) {
	t.Parallel()
	p, cs, ns := kubeFixture(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	if err := p.Add(faultproxy.FailTimes("create-conflict", "POST", "/api/v1/namespaces/*/configmaps", 1,
		faultproxy.Status(409, faultproxy.StyleKube, "injected conflict"))); err != nil {
		t.Fatal(err)
	}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "injected conflict") {
		t.Fatalf("create: got %v, want the injected 409 Conflict", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("second create (the sequence passes): %v", err)
	}
	if err := p.Add(faultproxy.Rule{Name: "get-500", Method: "GET", Path: "/api/v1/namespaces/" + ns + "/configmaps/a",
		Fault: faultproxy.Status(500, faultproxy.StyleKube, "etcd on fire")}); err != nil {
		t.Fatal(err)
	}
	// client-go retries some 5xx answers by itself; it must still end with the injected error.
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx(t), "a", metav1.GetOptions{})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("get: got %v, want an InternalError", err)
	}
	if p.Count("create-conflict") != 1 || p.Count("get-500") < 1 {
		t.Fatalf("counts: create-conflict=%d get-500=%d", p.Count("create-conflict"), p.Count("get-500"))
	}
}

func TestKubeConnectionFaults(t *testing.T) {
	t.Parallel()
	p, cs, ns := kubeFixture(t)
	cms := cs.CoreV1().ConfigMaps(ns)
	for _, n := range []string{"a", "b", "c"} {
		if _, err := cms.Create(ctx(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list := "/api/v1/namespaces/" + ns + "/configmaps"
	tests := []struct {
		name  string
		fault faultproxy.Fault
		check func(t *testing.T, l *corev1.ConfigMapList, err error)
		ctxTO time.Duration
	}{
		{"truncate", faultproxy.Truncate(10), func(t *testing.T, _ *corev1.ConfigMapList, err error) {
			if err == nil {
				t.Fatal("want an error for a truncated body")
			}
		}, 0},
		{"timeout", faultproxy.Timeout(0), func(t *testing.T, _ *corev1.ConfigMapList, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "context deadline exceeded") {
				t.Fatalf("got %v, want deadline exceeded", err)
			}
		}, 300 * time.Millisecond},
		{"reorder", faultproxy.Reorder(), func(t *testing.T, l *corev1.ConfigMapList, err error) {
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range l.Items {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != "c,b,a" {
				t.Fatalf("items %v, want c,b,a", names)
			}
		}, 0},
		{"delay", faultproxy.Delay(50 * time.Millisecond), func(t *testing.T, l *corev1.ConfigMapList, err error) {
			if err != nil || len(l.Items) != 3 {
				t.Fatalf("got %v, %v", l, err)
			}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.Clear()
			if err := p.Add(faultproxy.Rule{Name: tt.name, Method: "GET", Path: list, Fault: tt.fault}); err != nil {
				t.Fatal(err)
			}
			c := ctx(t)
			if tt.ctxTO > 0 {
				var cancel context.CancelFunc
				c, cancel = context.WithTimeout(c, tt.ctxTO)
				defer cancel()
			}
			l, err := cms.List(c, metav1.ListOptions{})
			tt.check(t, l, err)
			if p.Count(tt.name) < 1 {
				t.Fatalf("fault %s not counted", tt.name)
			}
		})
	}
}

// A reset POST (not retried by client-go) fails; the object was not created.
func TestKubeReset(t *testing.T) {
	t.Parallel()
	p, cs, ns := kubeFixture(t)
	if err := p.Add(faultproxy.Rule{Name: "rst", Method: "POST", Path: "/api/v1/namespaces/*/configmaps", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "r"}}, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("create through a reset: want an error")
	}
	t.Logf("reset: %v", err)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx(t), "r", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after a reset before the upstream: got %v, want NotFound", err)
	}
	if p.Count("rst") != 1 {
		t.Fatalf("count %d, want 1", p.Count("rst"))
	}
}

// Watches stream through the proxy.
func TestKubeWatchThroughProxy(t *testing.T) {
	t.Parallel()
	p, cs, ns := kubeFixture(t)
	c := ctx(t)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(c, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Fatalf("event %v, want ADDED", ev.Type)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event through the proxy within 30s")
	}
	if p.Requests() < 2 {
		t.Fatalf("requests through the proxy: %d", p.Requests())
	}
}
