package e2e

// Sharding against the real kube-apiserver: four operator replicas in one process, each talking to the API
// server through its own fault proxy, split the VitalsClusters by hash ranges of their UIDs; one replica is
// cut off mid-pass and its ranges move to the others. Every replica runs, besides the operator's own
// controllers, a small controller of the test that removes each cluster's "orphans" (ConfigMaps) after asking
// the operator's remediation policy, as deorbit and flight do with cloud resources: the DELETE requests in the
// proxies' logs are the action log.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/sharding"
)

const orphanLabel = "e2e.vitals.vitalsproject.io/orphan-of"

// orphanGC is the test's controller: over the VitalsCluster watch every controller shares, it removes
// the cluster's orphan ConfigMaps one by one, each after an allowed decision of the remediation policy;
// an action takes a little while (the time a cloud delete takes).
type orphanGC struct {
	client client.Client
	reader client.Reader
	policy remediation.Policy
	took   time.Duration
	// last is what the last reconcile of each cluster came to (for the message of a test that fails)
	last sync.Map
	// cut counts the deletes the replica's fenced validity cut short (fencing.CutByValidity): on a loaded
	// machine a renewal can come late; such a delete is sent again by the same replica, which the action
	// log then shows twice
	cut atomic.Int64
}

// note records what a reconcile of a cluster came to.
func (g *orphanGC) note(name, what string) {
	g.last.Store(name, time.Now().Format("15:04:05.000")+" "+what)
}

func (g *orphanGC) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var vc v1alpha1.VitalsCluster
	if err := g.client.Get(ctx, req.NamespacedName, &vc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var cms corev1.ConfigMapList
	if err := g.reader.List(ctx, &cms, client.InNamespace(vc.Namespace), client.MatchingLabels{orphanLabel: vc.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(cms.Items) == 0 {
		g.note(vc.Name, "no orphans")
		return ctrl.Result{}, nil
	}
	p := g.policy.Begin(ctx, &vc, "orphans", nil, remediation.Scope{})
	for i := range cms.Items {
		cm := &cms.Items[i]
		a := remediation.Action{Verb: "DeleteConfigMap", Kind: "configmap", ID: cm.Name, Removal: true}
		if d := p.Ask(ctx, a); d.Outcome != remediation.Allowed {
			g.note(vc.Name, fmt.Sprintf("%s %s: %s", d.Outcome, d.Reason, d.Message))
			return ctrl.Result{RequeueAfter: 300 * time.Millisecond}, nil
		}
		time.Sleep(g.took)
		// the delete is sent through the action's fence, as every controller's write (the operator's
		// client refuses one without)
		err := g.client.Delete(fencing.With(ctx, p.Fence(a)), cm, client.Preconditions{UID: &cm.UID})
		p.Done(ctx, a, err)
		g.note(vc.Name, fmt.Sprintf("delete %s: %v", cm.Name, err))
		if fencing.CutByValidity(err) {
			g.cut.Add(1)
		}
		if _, fenced := fencing.ReasonOf(err); fenced {
			return ctrl.Result{RequeueAfter: 300 * time.Millisecond}, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

type shardReplica struct {
	*opRun
	id    string
	proxy *faultproxy.Proxy
	gc    *orphanGC
}

func TestOperatorSharding(t *testing.T) {
	for _, env := range []struct {
		name string
		gate bool
	}{{"gate-off", false}, {"gate-on", true}} {
		t.Run(env.name, func(t *testing.T) {
			var cfg *rest.Config
			if env.gate {
				cfg = testenv.PrivateKube(t, "--feature-gates=ShardedListAndWatch=true").Config()
			} else {
				cfg = testenv.Kube(t)
			}
			testShardedReplicas(t, cfg, env.gate)
		})
	}
}

func testShardedReplicas(t *testing.T, cfg *rest.Config, gate bool) {
	const (
		replicas = 4
		clusters = 32
		orphans  = 3
		// every write ends within the write timeout, shorter than the margin: 6 s leaves the replicas'
		// status writes and deletes room on a loaded test machine (a write cut short and sent again
		// would show as a second delete)
		lease  = 12 * time.Second
		renew  = 2 * time.Second
		margin = 8 * time.Second
		writes = 6 * time.Second
	)
	opInstallCRD(t, cfg)
	c := opClient(t, cfg)
	ns := opNamespace(t, c)
	t.Cleanup(func() { clearFinalizers(c, ns) })
	for i := range clusters {
		vc := &v1alpha1.VitalsCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%02d", i)},
			Spec: v1alpha1.ClusterSpec{
				OpenStack: v1alpha1.OpenStackSpec{RouterID: "router-" + opRandHex(4), SubnetID: "subnet"},
				PodCIDRs:  []v1alpha1.CIDR{"198.19.0.0/16"},
			},
		}
		if err := c.Create(context.Background(), vc); err != nil {
			t.Fatal(err)
		}
		for k := range orphans {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-orphan-%d", vc.Name, k),
				Labels: map[string]string{orphanLabel: vc.Name}}}
			if err := c.Create(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
		}
	}
	limits := remediation.DefaultLimits()
	limits.Actions = 1000
	rs := make([]*shardReplica, replicas)
	for i := range rs {
		r := &shardReplica{id: fmt.Sprintf("replica-%d", i)}
		p, pcfg, err := faultproxy.NewKube(cfg, faultproxy.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		r.proxy = p
		// the action log: every DELETE of a ConfigMap of the namespace, with its time (a 1 ms delay is a
		// fault the proxy records)
		if err := p.Add(faultproxy.Rule{Name: "deletes", Method: "DELETE", Path: "/api/v1/namespaces/" + ns + "/configmaps/*", Fault: faultproxy.Delay(time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		r.opRun = opStartWith(t, operator.Options{
			RestConfig: pcfg, Namespace: ns, HealthAddr: "0", MetricsAddr: "0",
			LeaderElectionNamespace: ns, Identity: r.id, Remediation: &limits,
			Sharding:      &operator.Sharding{Ranges: 16, ClientSide: false, LeaseDuration: lease, RenewInterval: renew, SafetyMargin: margin},
			WriteTimeout:  writes,
			CheckInterval: 500 * time.Millisecond, CheckTimeout: 500 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", r.id),
		}, func(op *operator.Operator) {
			gc := &orphanGC{client: op.Manager().GetClient(), reader: op.Manager().GetAPIReader(), policy: op.Policy(), took: 300 * time.Millisecond}
			r.gc = gc
			if err := ctrl.NewControllerManagedBy(op.Manager()).Named("orphans").For(&v1alpha1.VitalsCluster{}).Complete(gc); err != nil {
				t.Fatal(err)
			}
		})
		rs[i] = r
	}

	// Every replica holds 4 of the 16 ranges, and its cache holds the clusters of its ranges only.
	opEventually(t, 90*time.Second, "4 ranges per replica", func() (bool, string) {
		var got []string
		ok := true
		for _, r := range rs {
			held, _ := r.op.Shard().Held()
			got = append(got, fmt.Sprintf("%s:%v", r.id, held))
			ok = ok && len(held) == 4
		}
		return ok, strings.Join(got, " ")
	})
	opEventually(t, 60*time.Second, "each replica sees its clusters only", func() (bool, string) {
		seen := map[string]string{}
		for _, r := range rs {
			var list v1alpha1.VitalsClusterList
			if err := r.op.Manager().GetCache().List(context.Background(), &list, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			for _, vc := range list.Items {
				if !r.op.Shard().Holds(vc.UID) {
					return false, fmt.Sprintf("%s caches %s, not of its ranges", r.id, vc.Name)
				}
				if o, dup := seen[vc.Name]; dup {
					return false, fmt.Sprintf("%s seen by %s and %s", vc.Name, o, r.id)
				}
				seen[vc.Name] = r.id
			}
		}
		return len(seen) == clusters, fmt.Sprintf("%d of %d clusters seen", len(seen), clusters)
	})

	// Cut one replica off mid-pass: every request of it fails from now on, as for a crashed process
	// or a partition (it can neither renew nor release).
	remaining := func() int {
		var cms corev1.ConfigMapList
		if err := c.List(context.Background(), &cms, client.InNamespace(ns), client.HasLabels{orphanLabel}); err != nil {
			return -1
		}
		return len(cms.Items)
	}
	victim := rs[replicas-1]
	opEventually(t, 60*time.Second, "the victim's pass under way", func() (bool, string) {
		n := len(victim.proxy.Events())
		return n >= 2, fmt.Sprintf("%d deletes by %s", n, victim.id)
	})
	victimRanges, _ := victim.op.Shard().Held()
	before := victim.proxy.Events()
	victim.proxy.Clear()
	if err := victim.proxy.Add(faultproxy.Rule{Name: "cut", Fault: faultproxy.Reset()}); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	ofVictim := func() map[string]bool { // the victim's clusters by name
		var list v1alpha1.VitalsClusterList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, vc := range list.Items {
			if slices.Contains(victimRanges, victim.op.Shard().Space().Of(vc.UID)) {
				out[vc.Name] = true
			}
		}
		return out
	}()
	// stuck says, for each cluster with orphans left, who holds its range and what each replica's last
	// reconcile of it came to
	stuck := func() string {
		var cms corev1.ConfigMapList
		if err := c.List(context.Background(), &cms, client.InNamespace(ns), client.HasLabels{orphanLabel}); err != nil {
			return err.Error()
		}
		var out []string
		done := map[string]bool{}
		for _, cm := range cms.Items {
			cl := cm.Labels[orphanLabel]
			if done[cl] {
				continue
			}
			done[cl] = true
			var vc v1alpha1.VitalsCluster
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cl}, &vc); err != nil {
				out = append(out, cl+": "+err.Error())
				continue
			}
			line := fmt.Sprintf("%s (range %d):", cl, rs[0].op.Shard().Space().Of(vc.UID))
			for _, r := range rs {
				cached := r.op.Manager().GetCache().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: cl}, &v1alpha1.VitalsCluster{}) == nil
				last, _ := r.gc.last.Load(cl)
				line += fmt.Sprintf(" [%s holds=%v cached=%v last=%v]", r.id, r.op.Shard().Holds(vc.UID), cached, last)
			}
			out = append(out, line)
		}
		return strings.Join(out, "; ")
	}
	t.Logf("%s cut off holding ranges %v (%d clusters); %d orphans left", victim.id, victimRanges, len(ofVictim), remaining())
	var moved time.Duration
	opEventually(t, 10*lease, "the cut replica's ranges taken over", func() (bool, string) {
		holders := map[int]string{}
		for _, r := range rs[:replicas-1] {
			held, _ := r.op.Shard().Held()
			for _, i := range held {
				holders[i] = r.id
			}
		}
		for _, i := range victimRanges {
			if holders[i] == "" {
				return false, fmt.Sprintf("range %d not held yet (%v)", i, holders)
			}
		}
		moved = time.Since(cut)
		return true, ""
	})
	t.Logf("the ranges of %s moved after %s (lease duration %s, renew interval %s)", victim.id, moved.Round(10*time.Millisecond), lease, renew)
	opEventually(t, 3*time.Minute, "every orphan removed", func() (bool, string) {
		n := remaining()
		return n == 0, fmt.Sprintf("%d orphans left: %s", n, stuck())
	})

	// The action log: each orphan deleted once, by one replica; a cluster's deletes by two replicas
	// (only after a hand-over) never interleave.
	type action struct {
		at      time.Time
		replica string
		object  string
	}
	var log []action
	for _, r := range rs {
		evs := r.proxy.Events()
		if r == victim {
			evs = before
		}
		for _, e := range evs {
			if e.Rule == "deletes" {
				log = append(log, action{at: e.Time, replica: r.id, object: e.Path[strings.LastIndex(e.Path, "/")+1:]})
			}
		}
	}
	sort.Slice(log, func(i, j int) bool { return log[i].at.Before(log[j].at) })
	// A delete the replica's own validity cut short may be sent again, by the same replica (never by
	// another: its cluster's range is its own until the validity it had ran out)
	cuts := map[string]int64{}
	var allCuts int64
	for _, r := range rs {
		cuts[r.id] = r.gc.cut.Load()
		allCuts += cuts[r.id]
	}
	if n := int64(len(log)); n < clusters*orphans || n > clusters*orphans+allCuts {
		t.Errorf("%d deletes in the action log, want %d (one per orphan), and one more at most for each of the %d cut short by their validity %v",
			len(log), clusters*orphans, allCuts, cuts)
	}
	by := map[string]string{}
	order := map[string][]string{}
	again := map[string]int64{}
	for _, a := range log {
		if r, dup := by[a.object]; dup {
			again[r]++
			if r != a.replica || again[r] > cuts[r] {
				t.Errorf("%s deleted twice: by %s and %s (%s had %d deletes cut short by its validity)", a.object, r, a.replica, r, cuts[r])
			}
		}
		by[a.object] = a.replica
		cl := a.object[:strings.Index(a.object, "-orphan-")]
		if o := order[cl]; len(o) == 0 || o[len(o)-1] != a.replica {
			order[cl] = append(order[cl], a.replica)
		}
	}
	takenOver := 0
	for _, a := range log {
		if a.at.After(cut) && ofVictim[a.object[:strings.Index(a.object, "-orphan-")]] {
			takenOver++
		}
	}
	handed := 0
	for cl, o := range order {
		if len(o) > 1 {
			handed++ // a hand-over: the cut replica's, or a rebalance while the replicas joined
		}
		seen := map[string]bool{}
		for _, r := range o {
			if seen[r] {
				t.Errorf("cluster %s acted on by %v: two replicas in turn, not one after another", cl, o)
			}
			seen[r] = true
		}
	}
	perReplica := map[string]int{}
	for _, r := range by {
		perReplica[r]++
	}
	t.Logf("deletes cut short by the replica's validity (and sent again): %v", cuts)
	t.Logf("action log: %d deletes, per replica %v; %d deletes on the cut replica's clusters after the cut, by the others; %d clusters acted on by one replica, then another",
		len(log), perReplica, takenOver, handed)

	// Server-side sharding: with the gate on the API server sends each replica its ranges only.
	for _, r := range rs[:replicas-1] {
		dropped := counterSum(t, r.reg, "vitals_shard_dropped_total")
		t.Logf("%s dropped %v objects of other ranges itself", r.id, dropped)
		if gate && dropped != 0 {
			t.Errorf("%s: %v objects of other ranges sent by an API server with ShardedListAndWatch", r.id, dropped)
		}
		if !gate && dropped == 0 {
			t.Errorf("%s: nothing dropped by hash although the API server ignores the selector", r.id)
		}
	}
	// kubectl get leases shows who holds what
	var leases []string
	cs, err := kclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := cs.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sharding.LabelRole})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls.Items {
		h := ""
		if l.Spec.HolderIdentity != nil {
			h = *l.Spec.HolderIdentity
		}
		leases = append(leases, l.Name+"="+h)
	}
	slices.Sort(leases)
	t.Logf("leases: %s", strings.Join(leases, " "))
}

// counterSum adds up a counter over all its labels.
func counterSum(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// clearFinalizers lets the namespace's VitalsClusters go (no operator runs any more to release them).
func clearFinalizers(c client.Client, ns string) {
	ctx := context.Background()
	var list v1alpha1.VitalsClusterList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return
	}
	for i := range list.Items {
		vc := &list.Items[i]
		if len(vc.Finalizers) > 0 {
			p := client.MergeFrom(vc.DeepCopy())
			vc.Finalizers = nil
			_ = c.Patch(ctx, vc, p)
		}
		_ = c.Delete(ctx, vc)
	}
}
