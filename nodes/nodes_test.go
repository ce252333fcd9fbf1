package nodes

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func node(conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Conditions: conds}}
}

func cond(t string, s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeConditionType(t), Status: s, LastTransitionTime: metav1.NewTime(t0.Add(-ago))}
}

func TestJudge(t *testing.T) {
	five := metav1.Duration{Duration: 5 * time.Minute}
	def := v1alpha1.DefaultUnhealthyConditions()
	npd := append(def, v1alpha1.UnhealthyCondition{Type: "KernelDeadlock", Status: "True", Timeout: metav1.Duration{}})
	tests := []struct {
		name      string
		n         *corev1.Node
		conds     []v1alpha1.UnhealthyCondition
		floor     time.Time
		unhealthy bool
		reason    string
		due       time.Time
	}{
		{name: "NotReady for a minute after months of service", n: node(cond("Ready", "False", time.Minute)), conds: def, reason: "Ready=False", due: t0.Add(4 * time.Minute)},
		{name: "NotReady for 6m", n: node(cond("Ready", "False", 6*time.Minute)), conds: def, unhealthy: true, reason: "Ready=False"},
		{name: "Unknown for exactly 5m", n: node(cond("Ready", "Unknown", 5*time.Minute)), conds: def, unhealthy: true, reason: "Ready=Unknown"},
		{name: "Ready", n: node(cond("Ready", "True", time.Hour)), conds: def},
		{name: "a node problem detector condition", n: node(cond("Ready", "True", time.Hour), cond("KernelDeadlock", "True", time.Second)), conds: npd, unhealthy: true, reason: "KernelDeadlock=True"},
		{name: "the outage floor restarts the timer", n: node(cond("Ready", "Unknown", time.Hour)), conds: def, floor: t0.Add(-2 * time.Minute), reason: "Ready=Unknown", due: t0.Add(3 * time.Minute)},
		{name: "no lastTransitionTime: no timer", n: node(corev1.NodeCondition{Type: "Ready", Status: "False"}), conds: def},
		{name: "a custom status", n: node(cond("PodNetworkHealthy", "False", 10*time.Minute)), conds: []v1alpha1.UnhealthyCondition{{Type: "PodNetworkHealthy", Status: "False", Timeout: five}}, unhealthy: true, reason: "PodNetworkHealthy=False"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.n, tt.conds, t0, tt.floor)
			if v.Unhealthy != tt.unhealthy || v.Reason != tt.reason || !v.Due.Equal(tt.due) {
				t.Errorf("Judge = %+v, want unhealthy %v reason %q due %s", v, tt.unhealthy, tt.reason, tt.due)
			}
		})
	}
}

func TestOwnerOf(t *testing.T) {
	withAnn := func(k, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{k: v}}}
	}
	withLabel := func(k, v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{k: v}}}
	}
	tests := []struct {
		name    string
		n       *corev1.Node
		meta    map[string]string
		cluster map[string]string
		want    string
	}{
		{name: "a Machine's Node", n: withAnn("cluster.x-k8s.io/machine", "md-0-abc"), want: ManagerClusterAPI},
		{name: "a Cluster API cluster's server that never registered", cluster: map[string]string{"cluster.x-k8s.io/cluster-name": "c1"}, want: ManagerClusterAPI},
		{name: "Gardener by the Node", n: withLabel("worker.gardener.cloud/pool", "w1"), want: ManagerGardener},
		{name: "Gardener by the server", meta: map[string]string{"kubernetes.io-role-node": "1", "kubernetes.io-cluster-shoot--p--s": "1"}, want: ManagerGardener},
		{name: "Magnum", n: withLabel("magnum.openstack.org/nodegroup", "default-worker"), want: ManagerMagnum},
		{name: "nobody", n: withLabel("kubernetes.io/hostname", "n1"), meta: map[string]string{"kubernetes.io-role-node": "1"}},
	}
	for _, tt := range tests {
		if got := OwnerOf(tt.n, tt.meta, tt.cluster); got.Manager != tt.want {
			t.Errorf("%s: %+v, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEtcdQuorum(t *testing.T) {
	cp := func(name string, ready bool) corev1.Node {
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelControlPlane: ""}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: s}}}}
	}
	etcd := func(node string, ready bool) corev1.Pod {
		s := corev1.ConditionFalse
		if ready {
			s = corev1.ConditionTrue
		}
		return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}}}
	}
	ns := []corev1.Node{cp("a", true), cp("b", true), cp("c", false)}
	// the target's etcd is healthy although its node is broken otherwise: taking it down leaves one of three
	if q := EtcdQuorum("a", ns, []corev1.Pod{etcd("a", true), etcd("b", true), etcd("c", false)}); q.HealthyAfter() >= q.Needed() {
		t.Errorf("a healthy member of 2 of 3: %+v allows it", q)
	}
	if q := EtcdQuorum("c", ns, []corev1.Pod{etcd("a", true), etcd("b", true), etcd("c", false)}); q.HealthyAfter() < q.Needed() {
		t.Errorf("the broken member of 3: %+v holds it", q)
	}
	// no etcd pods (external etcd): the control-plane nodes stand for the members
	if q := EtcdQuorum("c", ns, nil); q.Members != 3 || q.Healthy != 2 || q.TargetHealthy {
		t.Errorf("without etcd pods: %+v", q)
	}
}

func TestLeases(t *testing.T) {
	lease := func(name string, renew time.Time) coordinationv1.Lease {
		r := metav1.NewMicroTime(renew)
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{RenewTime: &r}}
	}
	var l Leases
	// first sight: fresh, whatever the renew times say (the kubelets' clocks are not ours)
	if s, n := l.Observe([]coordinationv1.Lease{lease("a", t0.Add(-time.Hour)), lease("b", t0), lease("c", t0)}, t0); s != 0 || n != 3 {
		t.Fatalf("first: %d of %d stale", s, n)
	}
	// a renewed, b and c not, 41 s later
	s, n := l.Observe([]coordinationv1.Lease{lease("a", t0.Add(time.Second)), lease("b", t0), lease("c", t0)}, t0.Add(41*time.Second))
	if s != 2 || n != 3 || MostStale(s, n) == "" {
		t.Errorf("41s later: %d of %d stale, MostStale %q", s, n, MostStale(s, n))
	}
	if MostStale(1, 1) != "" || MostStale(1, 3) != "" || MostStale(2, 4) != "" {
		t.Errorf("one stale Lease, or half, is no outage")
	}
}

func TestLeaves(t *testing.T) {
	ctrl := true
	ds := corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &ctrl}}}}
	rs := corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: &ctrl}}}}
	mirror := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}
	done := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	bare := corev1.Pod{}
	for _, tt := range []struct {
		p    corev1.Pod
		want bool
	}{{ds, true}, {mirror, true}, {done, true}, {rs, false}, {bare, false}} {
		if got := Leaves(&tt.p); got != tt.want {
			t.Errorf("Leaves(%+v) = %v", tt.p.ObjectMeta, got)
		}
	}
}

// TestWaiting: a drain round that would evict nothing (every pod left ending, or none left) is told apart
// from one that would ask the Eviction API.
func TestWaiting(t *testing.T) {
	ctrl := true
	now := metav1.NewTime(t0)
	pod := func(name string, mutate ...func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		for _, m := range mutate {
			m(&p)
		}
		return p
	}
	ending := func(p *corev1.Pod) { p.DeletionTimestamp = &now }
	daemon := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &ctrl}}
	}
	for _, tt := range []struct {
		name    string
		pods    []corev1.Pod
		left    []string
		skipped int
		evict   bool
	}{
		{name: "no pod", evict: false},
		{name: "a DaemonSet's pod only", pods: []corev1.Pod{pod("ds", daemon)}, skipped: 1, evict: false},
		{name: "evicted, ending", pods: []corev1.Pod{pod("db-1", ending), pod("ds", daemon)}, left: []string{"ns/db-1"}, skipped: 1, evict: false},
		{name: "one still running", pods: []corev1.Pod{pod("db-1", ending), pod("web-0")}, left: []string{"ns/db-1", "ns/web-0"}, evict: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, evict := Waiting(tt.pods)
			if evict != tt.evict || !slices.Equal(r.Left, tt.left) || r.Skipped != tt.skipped || len(r.Evicted)+len(r.Blocked) != 0 {
				t.Errorf("Waiting = %+v, evict %v; want left %v, skipped %d, evict %v", r, evict, tt.left, tt.skipped, tt.evict)
			}
		})
	}
}

// TestDrain: one round of a drain: a pod the API server refuses, for its budget (429) or otherwise (a 500
// for a pod two budgets select, a webhook's denial), is Blocked and the round goes on with the other pods; a
// refusal at the fence or an API server out of reach ends the round with an error.
func TestDrain(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: "n1"}}
	}
	gr := corev1.Resource("pods")
	for _, tt := range []struct {
		name    string
		refuse  error // the answer to the eviction of ns/a; ns/b is evicted
		evicted []string
		blocked int
		err     bool
	}{
		{name: "both evicted", evicted: []string{"ns/a", "ns/b"}},
		{name: "a PodDisruptionBudget (429)", refuse: apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), evicted: []string{"ns/b"}, blocked: 1},
		{name: "two budgets (500)", refuse: apierrors.NewInternalError(errors.New("this pod has more than one PodDisruptionBudget")), evicted: []string{"ns/b"}, blocked: 1},
		{name: "a webhook's denial (403)", refuse: apierrors.NewForbidden(gr, "a", errors.New("denied")), evicted: []string{"ns/b"}, blocked: 1},
		{name: "gone (404): not left", refuse: apierrors.NewNotFound(gr, "a"), evicted: []string{"ns/b"}},
		{name: "refused at the fence", refuse: &fencing.Error{Reason: fencing.ReasonPaused, Message: "paused"}, err: true},
		{name: "the API server out of reach", refuse: syscall.ECONNREFUSED, err: true},
		{name: "the API server not ready (503)", refuse: apierrors.NewServiceUnavailable("etcd leader changed"), err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(pod("a"), pod("b")).
				WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
				WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
					if sub == "eviction" && obj.GetName() == "a" && tt.refuse != nil {
						return tt.refuse
					}
					return nil
				}}).Build()
			r, err := Drain(context.Background(), c, "n1")
			if (err != nil) != tt.err {
				t.Fatalf("Drain: %v, want an error %v", err, tt.err)
			}
			if tt.err {
				return
			}
			if !slices.Equal(r.Evicted, tt.evicted) || len(r.Blocked) != tt.blocked || len(r.Left) != len(tt.evicted)+tt.blocked {
				t.Errorf("Drain = %+v; want evicted %v, %d blocked, the rest left", r, tt.evicted, tt.blocked)
			}
		})
	}
}
