package access

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

// resolver answers what the test says, and records what it was told to forget.
type resolver struct {
	err       error
	forgotten []types.NamespacedName
}

func (r *resolver) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	if r.err != nil {
		return nil, r.err
	}
	return &tenancy.Scope{ProjectID: "p1", Source: "secret ns/creds key clouds.yaml", Router: &openstack.Router{ID: "r1", ProjectID: "p1"}}, nil
}

func (r *resolver) Forget(k types.NamespacedName) { r.forgotten = append(r.forgotten, k) }

func TestReconcile(t *testing.T) {
	unavailable := &tenancy.Refusal{Reason: tenancy.ReasonCloudUnavailable, Message: "Keystone cannot be reached"}
	tests := []struct {
		name string
		// results of successive resolutions
		results     []error
		wantReason  string
		wantStatus  metav1.ConditionStatus
		wantProject string
		wantEvents  int
		wantCheck   bool // the cloud check passes
		// proofs counted by result (vitals_access_passes_total)
		wantPasses map[string]float64
	}{
		{"verified", []error{nil}, tenancy.ReasonVerified, metav1.ConditionTrue, "p1", 1, true, map[string]float64{pass.ResultOK: 1}},
		{"verified twice: one event", []error{nil, nil}, tenancy.ReasonVerified, metav1.ConditionTrue, "p1", 1, true, map[string]float64{pass.ResultOK: 2}},
		{"refused", []error{&tenancy.Refusal{Reason: tenancy.ReasonForeignResource, Message: "router r9 is not in project p1"}},
			tenancy.ReasonForeignResource, metav1.ConditionFalse, "", 1, false, map[string]float64{pass.ResultError: 1}},
		{"verified, then foreign: the project is no longer proven", []error{nil, &tenancy.Refusal{Reason: tenancy.ReasonForeignProject, Message: "x"}},
			tenancy.ReasonForeignProject, metav1.ConditionFalse, "", 2, false, map[string]float64{pass.ResultOK: 1, pass.ResultError: 1}},
		{"verified, then unavailable: the last proof stays", []error{nil, unavailable},
			tenancy.ReasonCloudUnavailable, metav1.ConditionFalse, "p1", 2, false, map[string]float64{pass.ResultOK: 1, pass.ResultAborted: 1}},
		{"a plain error is CloudUnavailable", []error{errors.New("list clusters: timeout")},
			tenancy.ReasonCloudUnavailable, metav1.ConditionFalse, "", 1, false, map[string]float64{pass.ResultAborted: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, key := newCluster(t)
			res := &resolver{}
			rec := events.NewFakeRecorder(10)
			checks := remediation.NewChecks(nil)
			m := pass.NewMetrics(Name, prometheus.NewRegistry())
			r, err := New(&pass.Deps{Client: c, Tenancy: res, Checks: checks,
				Recorder: func(string) events.EventRecorder { return rec }, Clock: clocktesting.NewFakeClock(time.Now())}, Options{Metrics: m})
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range tc.results {
				res.err = err
				out, rerr := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
				if rerr != nil {
					t.Fatal(rerr)
				}
				if out.RequeueAfter != DefaultInterval {
					t.Errorf("requeue after %s, want %s", out.RequeueAfter, DefaultInterval)
				}
			}
			var cl v1alpha1.VitalsCluster
			if err := c.Get(context.Background(), key, &cl); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(cl.Status.Conditions, v1alpha1.ConditionCloudVerified)
			if cond == nil || cond.Reason != tc.wantReason || cond.Status != tc.wantStatus || cl.Status.ProjectID != tc.wantProject {
				t.Fatalf("condition %+v, projectID %q; want %s/%s, %q", cond, cl.Status.ProjectID, tc.wantStatus, tc.wantReason, tc.wantProject)
			}
			if got := len(rec.Events); got != tc.wantEvents {
				t.Errorf("%d events, want %d", got, tc.wantEvents)
			}
			if len(cl.Finalizers) != 0 {
				t.Errorf("finalizers %v of a cluster whose deletion policy is Orphan", cl.Finalizers)
			}
			r2, ok := checks.Get(key, remediation.CheckCloud)
			if !ok || (r2.Err == nil) != tc.wantCheck {
				t.Errorf("cloud check %+v (reported %v), want passing %v", r2, ok, tc.wantCheck)
			}
			for _, result := range []string{pass.ResultOK, pass.ResultAborted, pass.ResultError} {
				if got := testutil.ToFloat64(m.Passes.WithLabelValues(key.String(), result)); got != tc.wantPasses[result] {
					t.Errorf("%s proofs counted: %v, want %v", result, got, tc.wantPasses[result])
				}
			}
			if got, want := testutil.CollectAndCount(m.LastSuccess), min(1, int(tc.wantPasses[pass.ResultOK])); got != want {
				t.Errorf("%d last-success series, want %d", got, want)
			}
		})
	}
}

// TestFinalizerFollowsDeletionPolicy: the deorbit finalizer is on a cluster whose deletionPolicy is Deorbit only
// (with the deorbit controller): set when the policy becomes Deorbit, taken off when it is Orphan again (and off
// a cluster of an older operator, which set it on every cluster).
func TestFinalizerFollowsDeletionPolicy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		deorbit bool // the deorbit controller runs
		stale   bool // the cluster carries the finalizer already
		policy  v1alpha1.DeletionPolicy
		want    bool
	}{
		{name: "Orphan (the default)", deorbit: true},
		{name: "Orphan, set by an older operator", deorbit: true, stale: true},
		{name: "Deorbit", deorbit: true, policy: v1alpha1.DeletionPolicyDeorbit, want: true},
		{name: "Deorbit without the deorbit controller", policy: v1alpha1.DeletionPolicyDeorbit, stale: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, key := newCluster(t)
			var vc v1alpha1.VitalsCluster
			if err := c.Get(ctx, key, &vc); err != nil {
				t.Fatal(err)
			}
			if vc.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan {
				t.Fatalf("the API server defaulted deletionPolicy to %q, want Orphan", vc.Spec.DeletionPolicy)
			}
			if tc.policy != "" {
				vc.Spec.DeletionPolicy = tc.policy
			}
			if tc.stale {
				vc.Finalizers = []string{v1alpha1.FinalizerDeorbit}
			}
			if err := c.Update(ctx, &vc); err != nil {
				t.Fatal(err)
			}
			r, err := New(&pass.Deps{Client: c, Tenancy: &resolver{}}, Options{Deorbit: tc.deorbit})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, key, &vc); err != nil {
				t.Fatal(err)
			}
			if got := controllerutil.ContainsFinalizer(&vc, v1alpha1.FinalizerDeorbit); got != tc.want {
				t.Errorf("finalizers %v, want the deorbit finalizer %v", vc.Finalizers, tc.want)
			}
		})
	}
}

func TestReconcileDeletion(t *testing.T) {
	c, key := newCluster(t)
	ctx := context.Background()
	var vc v1alpha1.VitalsCluster
	if err := c.Get(ctx, key, &vc); err != nil {
		t.Fatal(err)
	}
	vc.Finalizers = []string{v1alpha1.FinalizerDeorbit}
	if err := c.Update(ctx, &vc); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &vc); err != nil {
		t.Fatal(err)
	}
	res := &resolver{}
	checks := remediation.NewChecks(nil)
	checks.Set(key, remediation.CheckCloud, nil)
	r := newReconciler(t, &pass.Deps{Client: c, Tenancy: res, Checks: checks})
	r.o.Metrics.Observe(key, pass.ResultOK, time.Second, time.Now()) // an earlier proof
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), key, &v1alpha1.VitalsCluster{}); !apierrors.IsNotFound(err) {
		t.Fatalf("cluster after its finalizer went: %v, want gone", err)
	}
	if len(res.forgotten) != 1 || res.forgotten[0] != key {
		t.Errorf("forgotten %v", res.forgotten)
	}
	if _, ok := checks.Get(key, remediation.CheckCloud); ok {
		t.Errorf("the cloud check is still kept")
	}
	if n := testutil.CollectAndCount(r.o.Metrics.Passes) + testutil.CollectAndCount(r.o.Metrics.LastSuccess); n != 0 {
		t.Errorf("%d proof series of the deleted cluster kept", n)
	}
	// A cluster already gone is forgotten too.
	if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(res.forgotten) != 2 {
		t.Errorf("forgotten %v", res.forgotten)
	}
}

// newCluster creates a VitalsCluster in a namespace of its own in the real kube-apiserver of the harness.
func newCluster(t *testing.T) (client.Client, types.NamespacedName) {
	t.Helper()
	c, cfg := testenv.Clusters(t)
	key := types.NamespacedName{Namespace: testenv.Namespace(t, cfg, "access"), Name: "c1"}
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: "r1"}, PodCIDRs: []v1alpha1.CIDR{"10.100.0.0/16"}}}
	if err := c.Create(context.Background(), vc); err != nil {
		t.Fatal(err)
	}
	return c, key
}

func newReconciler(t *testing.T, d *pass.Deps) *Reconciler {
	t.Helper()
	r, err := New(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
