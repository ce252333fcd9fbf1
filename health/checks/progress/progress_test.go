package progress_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// behaviour is what the test reconciler does for a ConfigMap, by name prefix: "block-" waits for
// release, "exit-" ends its worker goroutine (runtime.Goexit), "panic-" panics, others return.
type behaviour struct {
	release chan struct{}
	once    sync.Once
}

func (b *behaviour) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	switch {
	case strings.HasPrefix(req.Name, "block-"):
		<-b.release // ignores ctx, as a hung call does
	case strings.HasPrefix(req.Name, "exit-"):
		runtime.Goexit()
	case strings.HasPrefix(req.Name, "panic-"):
		panic("boom in " + req.Name)
	}
	return reconcile.Result{}, nil
}

func (b *behaviour) unblock() { b.once.Do(func() { close(b.release) }) }

// env is a controller-runtime manager over the ConfigMaps of a fresh namespace of the real
// kube-apiserver, its controller observed by p.
type env struct {
	cs *kubernetes.Clientset
	ns string
	p  *progress.Controller
	b  *behaviour
	mg ctrl.Manager
	// stop stops the manager (idempotent).
	stop func()
}

func start(t *testing.T, opts progress.Options) *env {
	t.Helper()
	cfg := testenv.Kube(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("vitals-progress-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{cs: cs, ns: ns, p: progress.New("test", opts), b: &behaviour{release: make(chan struct{})}, mg: mgr}
	t.Cleanup(e.b.unblock)
	err = ctrl.NewControllerManagedBy(mgr).Named("progress-" + ns).For(&corev1.ConfigMap{}).
		WithOptions(e.p.Observe(controller.Options{MaxConcurrentReconciles: opts.Workers})).Complete(e.p.Reconciler(e.b))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			e.b.unblock()
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(e.stop)
	return e
}

func (e *env) create(t *testing.T, name string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls the check until cond holds for its result (real time; the limit only prevents a hang).
func (e *env) waitFor(t *testing.T, what string, cond func(error) bool) error {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := e.p.Check(t.Context())
		if cond(err) {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: check still says %v (stats %+v)", what, err, e.p.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func failsWith(s string) func(error) bool {
	return func(err error) bool { return err != nil && strings.Contains(err.Error(), s) }
}

func passes(err error) bool { return err == nil }

func done(e *env, n int) func(error) bool {
	return func(err error) bool { return err == nil && e.p.Stats().Done >= n }
}

func TestWorkingControllerIsAlive(t *testing.T) {
	t.Parallel()
	e := start(t, progress.Options{HungAfter: 200 * time.Millisecond, StallAfter: 200 * time.Millisecond})
	for i := range 5 {
		e.create(t, fmt.Sprintf("ok-%d", i))
	}
	e.waitFor(t, "five reconciles", done(e, 5))
	// Idle, with an empty queue, for longer than both limits: still alive.
	time.Sleep(500 * time.Millisecond)
	if err := e.p.Check(t.Context()); err != nil {
		t.Fatalf("idle controller: %v", err)
	}
}

func TestHungReconcile(t *testing.T) {
	t.Parallel()
	e := start(t, progress.Options{HungAfter: 300 * time.Millisecond})
	e.create(t, "block-1")
	err := e.waitFor(t, "hung reconcile", failsWith("reconcile of "+e.ns+"/block-1 running for"))
	t.Logf("hung: %v", err)
	e.b.unblock()
	e.waitFor(t, "after release", passes)
}

func TestWorkerExits(t *testing.T) {
	t.Parallel()
	e := start(t, progress.Options{StallAfter: 300 * time.Millisecond})
	e.create(t, "ok-0")
	e.waitFor(t, "first reconcile", done(e, 1))
	e.create(t, "exit-1")
	err := e.waitFor(t, "worker exited", failsWith("1 of 1 workers gone (worker exited while reconciling "+e.ns+"/exit-1)"))
	t.Logf("exited: %v", err)
	// With its only worker gone the controller takes nothing more: the queue stalls.
	e.create(t, "ok-2")
	err = e.waitFor(t, "stalled queue", failsWith("queue stalled: 1 requests ready, none taken and none running"))
	t.Logf("stalled: %v", err)
}

// TestPanicRecovered: controller-runtime recovers a panicking reconcile (its default) and the worker
// lives on; the controller stays alive and keeps working.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	e := start(t, progress.Options{HungAfter: 300 * time.Millisecond, StallAfter: 300 * time.Millisecond})
	e.create(t, "panic-1")
	for i := range 3 {
		e.create(t, fmt.Sprintf("ok-%d", i))
	}
	e.waitFor(t, "reconciles after the panic", done(e, 3))
	if s := e.p.Stats(); s.Panics == 0 || s.Exited != 0 || !strings.Contains(s.LastPanic, "boom in panic-1") {
		t.Fatalf("stats %+v", s)
	}
	time.Sleep(500 * time.Millisecond)
	if err := e.p.Check(t.Context()); err != nil {
		t.Fatalf("after a recovered panic: %v", err)
	}
}

func TestInformerRunning(t *testing.T) {
	t.Parallel()
	e := start(t, progress.Options{})
	inf, err := e.mg.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	check, err := progress.InformerRunning(progress.InformerOptions{Name: "configmaps", Get: func(context.Context) (progress.Informer, error) { return inf, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(t.Context()); err != nil {
		t.Fatalf("running informer: %v", err)
	}
	// Its run loop ends with the manager's: the informer is stopped.
	e.stop()
	deadline := time.Now().Add(time.Minute)
	for err := check(t.Context()); !errors.Is(err, progress.ErrInformerStopped); err = check(t.Context()) {
		if time.Now().After(deadline) {
			t.Fatalf("stopped informer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
