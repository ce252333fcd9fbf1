package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	checks "github.com/vitalsproject/vitals/health/checks/kubernetes"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

func run(t *testing.T, f func(context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return f(ctx)
}

func clients(t *testing.T, cfg *rest.Config) (rest.Interface, kclient.Interface) {
	t.Helper()
	rc, err := checks.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc, cs
}

func TestReadyzAndListWatch(t *testing.T) {
	t.Parallel()
	rc, cs := clients(t, testenv.Kube(t))
	if err := run(t, testenv.MustCheck(t)(checks.Readyz(checks.ReadyzOptions{Client: rc}))); err != nil {
		t.Errorf("readyz: %v", err)
	}
	if err := run(t, testenv.MustCheck(t)(checks.ListWatch(checks.ListWatchOptions{Namespaces: cs.CoreV1().Namespaces()}))); err != nil {
		t.Errorf("list+watch: %v", err)
	}
	err := run(t, testenv.MustCheck(t)(checks.ListWatch(checks.ListWatchOptions{Namespaces: cs.CoreV1().Namespaces(), Namespace: "no-such-namespace"})))
	if err != nil {
		t.Errorf("list+watch of an absent namespace (an empty list, then a watch): %v", err)
	}
}

// TestAPIServerRestart stops a private kube-apiserver: /readyz and list+watch fail at their first run
// after the stop, and pass again at their first run after the restart.
func TestAPIServerRestart(t *testing.T) {
	t.Parallel()
	k := testenv.PrivateKube(t)
	cfg := k.Config()
	cfg.Timeout = 5 * time.Second
	rc, cs := clients(t, cfg)
	const interval = 100 * time.Millisecond
	readyz := testenv.MustCheck(t)(checks.Readyz(checks.ReadyzOptions{Client: rc, Options: checks.Options{MinInterval: interval}}))
	lw := testenv.MustCheck(t)(checks.ListWatch(checks.ListWatchOptions{Namespaces: cs.CoreV1().Namespaces(), Options: checks.Options{MinInterval: interval}}))
	for name, f := range map[string]func(context.Context) error{"readyz": readyz, "list+watch": lw} {
		if err := run(t, f); err != nil {
			t.Fatalf("%s before the stop: %v", name, err)
		}
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	for name, f := range map[string]func(context.Context) error{"readyz": readyz, "list+watch": lw} {
		err := run(t, f)
		if err == nil {
			t.Fatalf("%s passed with the apiserver stopped", name)
		}
		t.Logf("%s down: %v", name, err)
	}
	if err := k.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	for name, f := range map[string]func(context.Context) error{"readyz": readyz, "list+watch": lw} {
		if err := run(t, f); err != nil {
			t.Fatalf("%s after the restart: %v", name, err)
		}
	}
}

func TestLeaderLease(t *testing.T) {
	t.Parallel()
	_, cs := clients(t, testenv.Kube(t))
	ctx := t.Context()
	ns := fmt.Sprintf("vitals-lease-%d", time.Now().UnixNano())
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	renew := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	_, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "vitals-operator"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("pod-a"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: renew}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		identity string
		lease    string
		now      time.Time
		isLeader func() bool
		wantErr  string
	}{
		{name: "held and fresh", identity: "pod-a", now: renew.Add(10 * time.Second)},
		{name: "at the deadline", identity: "pod-a", now: renew.Add(15 * time.Second)},
		{name: "expired", identity: "pod-a", now: renew.Add(16 * time.Second), wantErr: "expired: renewed at 2026-11-21T12:00:00Z, duration 15s, 1s ago"},
		{name: "held by another", identity: "pod-b", now: renew, wantErr: `held by "pod-a", not by "pod-b"`},
		{name: "standby", identity: "pod-b", now: renew, isLeader: func() bool { return false }},
		{name: "no lease", identity: "pod-a", lease: "absent", now: renew, wantErr: "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.lease
			if name == "" {
				name = "vitals-operator"
			}
			check := testenv.MustCheck(t)(checks.LeaderLease(checks.LeaseOptions{Leases: cs.CoordinationV1().Leases(ns), Namespace: ns, Name: name, Identity: tc.identity, IsLeader: tc.isLeader,
				Options: checks.Options{Clock: clocktesting.NewFakePassiveClock(tc.now)}}))
			err := run(t, check)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
