package clusterstatus_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/clusterstatus"
	"github.com/vitalsproject/vitals/internal/testenv"
)

// TestWriteSkipsUnchanged: against the real kube-apiserver, a status write that changes nothing sends
// no request; one that changes something is written and read back.
func TestWriteSkipsUnchanged(t *testing.T) {
	real, ns := realClient(t)
	writes := 0
	cl := interceptor.NewClient(real, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			writes++
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	ctx := context.Background()
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: "router"}, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}}}
	if err := real.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	verified := func(st *v1alpha1.ClusterStatus) {
		clusterstatus.SetCondition(st, 1, v1alpha1.ConditionCloudVerified, metav1.ConditionTrue, "Verified", "project p proven")
		st.ProjectID = "p"
	}
	steps := []struct {
		name       string
		mutate     func(*v1alpha1.ClusterStatus)
		wantWrites int
	}{
		{"a new condition is written", verified, 1},
		{"the same condition again is not", verified, 1},
		{"nothing changed is not", func(*v1alpha1.ClusterStatus) {}, 1},
		{"a changed message is written", func(st *v1alpha1.ClusterStatus) {
			clusterstatus.SetCondition(st, 1, v1alpha1.ConditionCloudVerified, metav1.ConditionTrue, "Verified", "project p proven again")
		}, 2},
	}
	for _, s := range steps {
		// as a controller does: the cluster as read, then the write
		var got v1alpha1.VitalsCluster
		if err := real.Get(ctx, client.ObjectKeyFromObject(vc), &got); err != nil {
			t.Fatal(err)
		}
		if err := clusterstatus.Write(ctx, cl, nil, &got, s.mutate); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if writes != s.wantWrites {
			t.Errorf("%s: %d writes, want %d", s.name, writes, s.wantWrites)
		}
	}
	var got v1alpha1.VitalsCluster
	if err := real.Get(ctx, client.ObjectKeyFromObject(vc), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ProjectID != "p" || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Message != "project p proven again" {
		t.Errorf("status read back: %+v", got.Status)
	}
}

// TestWriteRereadsLiveOnConflict: against the real kube-apiserver, a status write that conflicts (another
// controller wrote the cluster since it was read) reads the cluster again from live, not from a cache
// that still holds the old version, and keeps both writers' changes; with the lagging cache alone the
// write fails.
func TestWriteRereadsLiveOnConflict(t *testing.T) {
	real, ns := realClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		live     bool
		wantFail bool
	}{
		{name: "re-read from the API server", live: true},
		{name: "re-read from a lagging cache", live: false, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "c-"},
				Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: "router"}, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"}}}
			if err := real.Create(ctx, vc); err != nil {
				t.Fatal(err)
			}
			stale := vc.DeepCopy() // what a cache that lags the API server keeps answering
			cache := interceptor.NewClient(real, interceptor.Funcs{
				Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					stale.DeepCopyInto(obj.(*v1alpha1.VitalsCluster))
					return nil
				},
			})
			// another controller writes first
			other := vc.DeepCopy()
			clusterstatus.SetCondition(&other.Status, 1, v1alpha1.ConditionCloudVerified, metav1.ConditionTrue, "Verified", "by access")
			if err := real.Status().Update(ctx, other); err != nil {
				t.Fatal(err)
			}
			var live client.Reader
			if tc.live {
				live = real
			}
			mine := stale.DeepCopy()
			err := clusterstatus.Write(ctx, cache, live, mine, func(st *v1alpha1.ClusterStatus) {
				clusterstatus.SetCondition(st, 1, v1alpha1.ConditionRemediationAllowed, metav1.ConditionTrue, "Allowed", "by routegc")
			})
			if tc.wantFail {
				if !apierrors.IsConflict(err) {
					t.Fatalf("write with a lagging cache: %v, want a conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("write: %v", err)
			}
			var got v1alpha1.VitalsCluster
			if err := real.Get(ctx, client.ObjectKeyFromObject(vc), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 2 {
				t.Errorf("conditions read back: %+v, want both writers' conditions", got.Status.Conditions)
			}
		})
	}
}

// realClient installs the VitalsCluster CRD in the real kube-apiserver and returns a client of it and a
// namespace of the test's own.
func realClient(t *testing.T) (client.WithWatch, string) {
	t.Helper()
	cfg := testenv.Kube(t)
	_, here, _, _ := runtime.Caller(0)
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(filepath.Dir(here), "..", "..", "deploy", "crds")}, ErrorIfPathMissing: true,
		MaxTime: time.Minute, PollInterval: 100 * time.Millisecond,
	}); err != nil {
		t.Fatalf("install the VitalsCluster CRD: %v", err)
	}
	scheme := kruntime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	real, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := "clusterstatus-" + hex.EncodeToString(b[:])
	if err := real.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = real.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	return real, ns
}

func TestAppendActions(t *testing.T) {
	lines := func(from, to int) []v1alpha1.Action {
		var out []v1alpha1.Action
		for i := from; i < to; i++ {
			out = append(out, v1alpha1.Action{Reason: fmt.Sprint(i)})
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		have, add     []v1alpha1.Action
		first, length int
	}{
		{name: "empty", first: -1},
		{name: "room left", have: lines(0, 3), add: lines(3, 5), first: 0, length: 5},
		{name: "exactly full", have: lines(0, 10), add: lines(10, v1alpha1.MaxActions), first: 0, length: v1alpha1.MaxActions},
		{name: "oldest go", have: lines(0, v1alpha1.MaxActions), add: lines(v1alpha1.MaxActions, v1alpha1.MaxActions+3), first: 3, length: v1alpha1.MaxActions},
		{name: "more than fit at once", add: lines(0, v1alpha1.MaxActions+7), first: 7, length: v1alpha1.MaxActions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.ClusterStatus{Actions: tc.have}
			clusterstatus.AppendActions(st, tc.add...)
			if len(st.Actions) != tc.length {
				t.Fatalf("%d actions, want %d", len(st.Actions), tc.length)
			}
			if tc.length > 0 {
				if got := st.Actions[0].Reason; got != fmt.Sprint(tc.first) {
					t.Errorf("oldest kept %s, want %d", got, tc.first)
				}
				last := tc.add[len(tc.add)-1].Reason
				if got := st.Actions[len(st.Actions)-1].Reason; got != last {
					t.Errorf("newest %s, want %s", got, last)
				}
			}
		})
	}
}
