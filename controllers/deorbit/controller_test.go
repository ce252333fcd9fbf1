package deorbit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

type refusingResolver struct{}

func (refusingResolver) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	return nil, &tenancy.Refusal{Reason: tenancy.ReasonMissingCredentials, Message: "no credentials Secret"}
}
func (refusingResolver) Forget(types.NamespacedName) {}

// noPolicy is never asked: the test reaches no delete.
type noPolicy struct{ remediation.Policy }

// mgmtClient creates objs in the real kube-apiserver of the harness, each namespace they name replaced by
// one of the test's own (objs are changed to show it); a cluster with a deletion timestamp is created with
// its finalizer and deleted.
func mgmtClient(t *testing.T, objs ...*v1alpha1.VitalsCluster) client.Client {
	t.Helper()
	c, cfg := testenv.Clusters(t)
	ctx := context.Background()
	namespaces := map[string]string{}
	for _, o := range objs {
		ns, ok := namespaces[o.Namespace]
		if !ok {
			ns = testenv.Namespace(t, cfg, "deorbit-"+o.Namespace)
			namespaces[o.Namespace] = ns
		}
		deleting := !o.DeletionTimestamp.IsZero()
		o.Namespace, o.DeletionTimestamp, o.UID, o.ResourceVersion = ns, nil, "", ""
		st := o.Status
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		if o.Annotations[v1alpha1.AnnotationConfirmDeorbit] == confirmUID {
			// the confirmation names the UID the API server gave
			o.Annotations[v1alpha1.AnnotationConfirmDeorbit] = string(o.UID)
			if err := c.Update(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		o.Status = st
		if err := c.Status().Update(ctx, o); err != nil {
			t.Fatal(err)
		}
		if deleting {
			if err := c.Delete(ctx, o); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			var cur v1alpha1.VitalsCluster
			if c.Get(context.Background(), client.ObjectKeyFromObject(o), &cur) == nil && len(cur.Finalizers) > 0 {
				cur.Finalizers = nil
				_ = c.Update(context.Background(), &cur)
			}
		}
	})
	return c
}

// confirmUID in the confirmation annotation of a cluster mgmtClient creates stands for the UID it gets.
const confirmUID = "<uid>"

// deleted is a cluster being deleted whose deletion policy is Deorbit, confirmed (the interlock holds), mutated.
func deleted(name string, mutate func(*v1alpha1.VitalsCluster)) *v1alpha1.VitalsCluster {
	now := metav1.Now()
	c := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: []string{v1alpha1.FinalizerDeorbit}, DeletionTimestamp: &now,
		Annotations: map[string]string{v1alpha1.AnnotationConfirmDeorbit: confirmUID}},
		Spec: v1alpha1.ClusterSpec{KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "kc"}, OpenStack: v1alpha1.OpenStackSpec{RouterID: "r1"}, PodCIDRs: []v1alpha1.CIDR{"10.100.0.0/16"},
			DeletionPolicy: v1alpha1.DeletionPolicyDeorbit}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// The finalizer goes at once when deorbit is disabled or the workload cluster is the operator's own; a
// cluster whose cloud cannot be verified is held until the give-up, then goes with a debris report
// that says nothing could be checked.
func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(m.Run())
}

func TestReconcileRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster *v1alpha1.VitalsCluster
		// steps: reconciles, the clock advanced to each requeue
		steps      int
		wantGone   bool
		wantReason string
	}{
		{"orphan", deleted("c1", func(c *v1alpha1.VitalsCluster) { c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan }), 1, true, "Orphaned"},
		{"deletion policy unset: orphan", deleted("c1", func(c *v1alpha1.VitalsCluster) { c.Spec.DeletionPolicy = "" }), 1, true, "Orphaned"},
		{"disabled", deleted("c1", func(c *v1alpha1.VitalsCluster) { c.Spec.Controllers.Deorbit.Enabled = new(bool) }), 1, true, "Disabled"},
		{"deorbit, not confirmed: held", deleted("c1", func(c *v1alpha1.VitalsCluster) { delete(c.Annotations, v1alpha1.AnnotationConfirmDeorbit) }), 3, false, ReasonNotConfirmed},
		{"deorbit, confirmed for another uid: held", deleted("c1", func(c *v1alpha1.VitalsCluster) { c.Annotations[v1alpha1.AnnotationConfirmDeorbit] = "0b1d" }), 3, false, ReasonNotConfirmed},
		{"local workload cluster", deleted("c1", func(c *v1alpha1.VitalsCluster) { c.Spec.KubeconfigSecretRef = nil }), 1, true, "LocalCluster"},
		{"workload unreachable, cloud unverified: held", deleted("c1", nil), 3, false, "WorkloadUnreachable"},
		{"cloud unverified: held", deleted("c1", func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{}
		}), 3, false, "CloudUnverified"},
		{"cloud unverified: given up", deleted("c1", func(c *v1alpha1.VitalsCluster) {
			c.Spec.Controllers.Deorbit.GiveUpAfter = &metav1.Duration{Duration: 10 * time.Minute}
			c.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: time.Minute}
		}), 400, true, "GaveUp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mgmtClient(t, tc.cluster)
			clk := clocktesting.NewFakeClock(time.Now())
			checks := remediation.NewChecks(clk)
			pol, err := remediation.New(remediation.Options{Checks: checks, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(&pass.Deps{Client: c, Tenancy: refusingResolver{}, Policy: pol, Checks: checks, Clock: clk}, Options{Rand: func() float64 { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(tc.cluster)
			var last v1alpha1.VitalsCluster
			for i := 0; i < tc.steps; i++ {
				_ = c.Get(context.Background(), key, &last)
				res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
				if err != nil {
					t.Fatal(err)
				}
				if res.RequeueAfter == 0 {
					break
				}
				clk.Step(res.RequeueAfter)
			}
			err = c.Get(context.Background(), key, &last)
			if gone := apierrors.IsNotFound(err); gone != tc.wantGone {
				t.Fatalf("gone %v (%v), want %v", gone, err, tc.wantGone)
			}
			if tc.wantGone {
				return
			}
			cond := meta.FindStatusCondition(last.Status.Conditions, v1alpha1.ConditionCleanedUp)
			if cond == nil || cond.Reason != tc.wantReason {
				t.Fatalf("CleanedUp %+v, want reason %s", cond, tc.wantReason)
			}
		})
	}
}

// The sweep's guard lists the VitalsClusters from the API server: with sharding, the cache (Client here, which
// shows the cluster's own namespace only) holds this replica's clusters only, and the neighbour that names the
// same cloud cluster may be another replica's. With a watched namespace, it lists there.
func TestSweepGuard(t *testing.T) {
	me := deleted("c1", nil)
	me.UID = "u1"
	spec := func(clusterName string) v1alpha1.ClusterSpec {
		return v1alpha1.ClusterSpec{OpenStack: v1alpha1.OpenStackSpec{RouterID: "r9", ClusterName: clusterName}, PodCIDRs: []v1alpha1.CIDR{"10.200.0.0/16"}}
	}
	other := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "evil", Name: "x", UID: "u2"},
		Spec: spec("c1"), Status: v1alpha1.ClusterStatus{ProjectID: "p1"}}
	elsewhere := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c1", UID: "u3"}, Spec: spec(""), Status: v1alpha1.ClusterStatus{ProjectID: "p2"}}
	c := mgmtClient(t, me, other, elsewhere)
	cache := client.NewNamespacedClient(c, me.Namespace) // this replica's shard: the neighbour is not in it
	for _, tc := range []struct {
		name      string
		cluster   string
		namespace string // Options.Namespace
		reader    client.Reader
		self      types.UID // "": the command's guard, which has no VitalsCluster of its own
		want      string    // in the refusal ("": none)
		wantErr   bool
	}{
		{name: "a neighbour of another shard names the same cloud cluster", cluster: "c1", reader: c, self: me.UID, want: other.Namespace + "/x"},
		{name: "a cluster name no one else uses", cluster: "c2", reader: c, self: me.UID},
		{name: "the neighbour outside the watched namespace", cluster: "c1", namespace: me.Namespace, reader: c, self: me.UID},
		{name: "the command: every VitalsCluster of the name is a neighbour, its teardown not proven", cluster: "c1", namespace: me.Namespace, reader: c,
			want: me.Namespace + "/" + me.Name},
		{name: "the list fails", cluster: "c1", reader: failingReader{}, self: me.UID, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The operator's guard (New wires NeighbourGuard with the API reader and the watched namespace) as the
			// command's: one function.
			if _, err := New(&pass.Deps{Client: cache, APIReader: tc.reader, Tenancy: refusingResolver{}, Policy: noPolicy{}}, Options{Namespace: tc.namespace}); err != nil {
				t.Fatal(err)
			}
			why, err := NeighbourGuard(tc.reader, tc.namespace, tc.self, "p1", tc.cluster)(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("sweep guard: %q, %v; want an error %v", why, err, tc.wantErr)
			}
			switch {
			case tc.want == "" && why != "":
				t.Errorf("sweep guard refuses: %q, want not", why)
			case tc.want != "" && !strings.Contains(why, tc.want):
				t.Errorf("sweep guard: %q, want %s named", why, tc.want)
			case strings.Contains(why, elsewhere.Namespace+"/c1"):
				t.Errorf("sweep guard: %q names %s/c1, of another project", why, elsewhere.Namespace)
			}
		})
	}
}

// failingReader fails every read.
type failingReader struct{ client.Reader }

func (failingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

// Every series of a cluster goes with its finalizer: after a give-up (the debris is counted without the
// cluster, for the alert) and when someone else removes the finalizer mid-deorbit.
func TestMetricsGoWithTheFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name string
		// interrupt, when set, removes the finalizer by hand after the first step.
		interrupt bool
		wantLeft  float64
	}{
		{name: "given up", wantLeft: 1},
		{name: "finalizer removed by hand", interrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := deleted("c1", func(c *v1alpha1.VitalsCluster) {
				c.Spec.Controllers.Deorbit.GiveUpAfter = &metav1.Duration{Duration: 10 * time.Minute}
				c.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: time.Minute}
			})
			c := mgmtClient(t, cluster)
			clk := clocktesting.NewFakeClock(time.Now())
			checks := remediation.NewChecks(clk)
			pol, err := remediation.New(remediation.Options{Checks: checks, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			r, err := New(&pass.Deps{Client: c, Tenancy: refusingResolver{}, Policy: pol, Checks: checks, Clock: clk},
				Options{Rand: func() float64 { return 0 }, Metrics: NewMetrics(reg)})
			if err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(cluster)
			for i := 0; i < 400; i++ {
				res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					if n := clusterSeries(t, reg, key.String()); n == 0 {
						t.Fatal("no series of the cluster while it is deorbited")
					}
					if tc.interrupt {
						var cur v1alpha1.VitalsCluster
						if err := c.Get(context.Background(), key, &cur); err != nil {
							t.Fatal(err)
						}
						cur.Finalizers = nil
						if err := c.Update(context.Background(), &cur); err != nil {
							t.Fatal(err)
						}
						continue
					}
				}
				if res.RequeueAfter == 0 {
					break
				}
				clk.Step(res.RequeueAfter)
			}
			if err := c.Get(context.Background(), key, &v1alpha1.VitalsCluster{}); !apierrors.IsNotFound(err) {
				t.Fatalf("cluster still there: %v", err)
			}
			if n := clusterSeries(t, reg, key.String()); n != 0 {
				t.Errorf("%d series of the gone cluster are left", n)
			}
			if got := testutil.ToFloat64(r.o.Metrics.DebrisLeft.WithLabelValues(v1alpha1.DeorbitCloud)); got != tc.wantLeft {
				t.Errorf("vitals_deorbit_debris_left_total{type=Cloud} = %v, want %v", got, tc.wantLeft)
			}
		})
	}
}

// clusterSeries counts the series of reg labelled with the cluster.
func clusterSeries(t *testing.T, reg *prometheus.Registry, key string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "vitalscluster" && l.GetValue() == key {
					n++
				}
			}
		}
	}
	return n
}

// TestInterlock: a deleted cluster whose deletion policy is Deorbit is held, with nothing deleted, until the
// interlock holds; the condition says why and how to go on (confirm with the UID, or Orphan), once as an Event.
// A confirmation names the UID; with it the teardown steps; with the policy set back to Orphan the cluster goes.
func TestInterlock(t *testing.T) {
	ctx := context.Background()
	cluster := deleted("c1", func(c *v1alpha1.VitalsCluster) {
		delete(c.Annotations, v1alpha1.AnnotationConfirmDeorbit)
		c.Spec.OpenStack.NetworkID = "n1"
	})
	c := mgmtClient(t, cluster)
	key := client.ObjectKeyFromObject(cluster)
	clk := clocktesting.NewFakeClock(time.Now())
	checks := remediation.NewChecks(clk)
	pol, err := remediation.New(remediation.Options{Checks: checks, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(20)
	r, err := New(&pass.Deps{Client: c, Tenancy: refusingResolver{}, Policy: pol, Checks: checks, Clock: clk,
		Recorder: func(string) events.EventRecorder { return rec }}, Options{Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	step := func() (v1alpha1.VitalsCluster, ctrl.Result) {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.VitalsCluster
		if err := c.Get(ctx, key, &got); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return got, res
	}
	for range 2 {
		got, res := step()
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionCleanedUp)
		if cond == nil || cond.Reason != ReasonNotConfirmed || res.RequeueAfter != NotConfirmedRequeue {
			t.Fatalf("CleanedUp %+v, requeue %s: want %s, requeue %s", cond, res.RequeueAfter, ReasonNotConfirmed, NotConfirmedRequeue)
		}
		for _, want := range []string{"nothing was deleted", "no annotation " + v1alpha1.AnnotationConfirmDeorbit, "no Cluster API Cluster owns it",
			"was ever seen matching its selector while it lived",
			"kubectl -n " + key.Namespace + " annotate vitalscluster c1 " + v1alpha1.AnnotationConfirmDeorbit + "=" + string(got.UID),
			`kubectl -n ` + key.Namespace + ` patch vitalscluster c1 --type merge -p '{"spec":{"deletionPolicy":"Orphan"}}'`} {
			if !strings.Contains(cond.Message, want) {
				t.Errorf("CleanedUp's message %q does not say %q", cond.Message, want)
			}
		}
		if got.Status.Deorbit != nil && got.Status.Deorbit.StartTime != nil {
			t.Fatalf("deorbit started without the interlock: %+v", got.Status.Deorbit)
		}
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d Events, want one DeorbitNotConfirmed", n)
	}
	// Confirmed: the teardown steps (here the workload cluster is unreachable and the cloud unverified).
	var cur v1alpha1.VitalsCluster
	if err := c.Get(ctx, key, &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = map[string]string{v1alpha1.AnnotationConfirmDeorbit: string(cur.UID)}
	if err := c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	got, _ := step()
	if d := got.Status.Deorbit; d == nil || d.StartTime == nil || !strings.Contains(d.Interlock, "confirmed by annotation") {
		t.Fatalf("after the confirmation: deorbit status %+v, want a started teardown with its interlock", d)
	}
	// Orphan: released, saying where the teardown stopped.
	got.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	step()
	if err := c.Get(ctx, key, &cur); !apierrors.IsNotFound(err) {
		t.Fatalf("after Orphan: %v, want the cluster gone", err)
	}
}

// scopeResolver resolves every cluster to scope.
type scopeResolver struct{ scope *tenancy.Scope }

func (s scopeResolver) Resolve(context.Context, *v1alpha1.VitalsCluster) (*tenancy.Scope, error) {
	return s.scope, nil
}
func (scopeResolver) Forget(types.NamespacedName) {}

// A router its owner's teardown has deleted (CAPO deletes a cluster's router before its network): the scope
// proves none, and the step has no router to remove routes from (they went with it) rather than a read that
// fails until the give-up.
func TestInputRouterGone(t *testing.T) {
	me := deleted("c1", nil)
	sub := deleted("c2", func(c *v1alpha1.VitalsCluster) { c.Spec.OpenStack.SubnetID = "s1" })
	c := mgmtClient(t, me, sub)
	router := &openstack.Router{ID: "r1", ProjectID: "p1"}
	subnet := &openstack.Subnet{ID: "s1", ProjectID: "p1", CIDR: "10.0.0.1/24"}
	for _, tc := range []struct {
		name        string
		cluster     *v1alpha1.VitalsCluster
		scope       *tenancy.Scope
		want        string
		wantSubnets string
	}{
		{"router proven", me, &tenancy.Scope{ProjectID: "p1", Router: router}, "r1", "[]"},
		{"router gone", me, &tenancy.Scope{ProjectID: "p1", Gone: []string{"router r1"}}, "", "[]"},
		// only the routes via the nodes' subnet are the cluster's
		{"subnet proven", sub, &tenancy.Scope{ProjectID: "p1", Router: router, Subnet: subnet}, "r1", "[10.0.0.0/24]"},
		// gone with its routes: none is provably the cluster's
		{"subnet gone", sub, &tenancy.Scope{ProjectID: "p1", Router: router, Gone: []string{"subnet s1"}}, "", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(&pass.Deps{Client: c, Tenancy: scopeResolver{tc.scope}, Policy: noPolicy{}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, scope, err := r.input(context.Background(), tc.cluster, SettingsOf(tc.cluster))
			if err != nil || scope != tc.scope {
				t.Fatalf("input: scope %+v, %v; want the resolver's", scope, err)
			}
			if in.Target.RouterID != tc.want || fmt.Sprint(in.Target.Subnets) != tc.wantSubnets {
				t.Fatalf("target router %q, subnets %v; want %q, %s", in.Target.RouterID, in.Target.Subnets, tc.want, tc.wantSubnets)
			}
		})
	}
}
