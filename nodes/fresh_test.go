// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0

package nodes

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
)

// servers is a ServerReader over a map (a missing ID: Nova's 404; err: every read fails).
type servers struct {
	by  map[string]*openstack.Server
	err error
}

func (s servers) GetServer(_ context.Context, id string) (*openstack.Server, error) {
	if s.err != nil {
		return nil, s.err
	}
	sv, ok := s.by[id]
	if !ok {
		return nil, gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusNotFound, Expected: []int{http.StatusOK}}
	}
	return sv, nil
}

// TestRecheck: immediately before a disruptive write the Node (uncached) and the server are read again, and the
// write goes on only when they are as the step was decided on.
func TestRecheck(t *testing.T) {
	then := metav1.NewTime(t0.Add(-10 * time.Minute))
	unknown := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: then}
	mk := func(name, server string, mutate ...func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "openstack:///" + server},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{unknown}}}
		for _, m := range mutate {
			m(n)
		}
		return n
	}
	ready := func(n *corev1.Node) {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	}
	flapped := func(n *corev1.Node) { n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0) }
	excluded := func(n *corev1.Node) { n.Labels = map[string]string{LabelExclude: "true"} }
	requested := func(n *corev1.Node) { n.Annotations = map[string]string{AnnotationRemediate: "true"} }
	active := &openstack.Server{ID: "s1", Status: "ACTIVE"}
	isActive := func(sv *openstack.Server) string {
		if sv.Status != "ACTIVE" {
			return "not ACTIVE"
		}
		return ""
	}
	want := Want{Server: "s1", Node: "n1", Condition: unknown, ServerState: isActive}
	for _, tt := range []struct {
		name    string
		nodes   []*corev1.Node
		server  *openstack.Server
		want    Want
		listErr error
		novaErr error
		reason  fencing.Reason // "": the write goes on
	}{
		{name: "still unhealthy, still its server", nodes: []*corev1.Node{mk("n1", "s1"), mk("n2", "s2", ready)}, server: active, want: want},
		{name: "Ready now", nodes: []*corev1.Node{mk("n1", "s1", ready)}, server: active, want: want, reason: ReasonNodeRecovered},
		{name: "flapped: Unknown again, a new dwell", nodes: []*corev1.Node{mk("n1", "s1", flapped)}, server: active, want: want, reason: ReasonNodeRecovered},
		{name: "labelled for exclusion meanwhile", nodes: []*corev1.Node{mk("n1", "s1", excluded)}, server: active, want: want, reason: fencing.ReasonExcluded},
		{name: "the server excluded by its metadata", nodes: []*corev1.Node{mk("n1", "s1")}, want: want, reason: fencing.ReasonExcluded,
			server: &openstack.Server{ID: "s1", Status: "ACTIVE", Metadata: map[string]string{LabelExclude: "True"}}},
		{name: "the Node is gone", nodes: []*corev1.Node{mk("n2", "s2")}, server: active, want: want, reason: ReasonNodeGone},
		{name: "the Node names another server", nodes: []*corev1.Node{mk("n1", "s9")}, server: active, want: want, reason: ReasonNodeMoved},
		{name: "a second Node, Ready, names the server", nodes: []*corev1.Node{mk("n1", "s1"), mk("n1-new", "s1", ready)}, server: active, want: want, reason: ReasonServerShared},
		{name: "a second Node, NotReady, names the server", nodes: []*corev1.Node{mk("n1", "s1"), mk("n1-old", "s1")}, server: active, want: want},
		{name: "never registered, still none", nodes: []*corev1.Node{mk("n2", "s2")}, server: active, want: Want{Server: "s1", ServerState: isActive}},
		{name: "never registered, a Node now", nodes: []*corev1.Node{mk("late", "s1")}, server: active, want: Want{Server: "s1"}, reason: ReasonNodeRegistered},
		{name: "a server fault, no condition checked", nodes: []*corev1.Node{mk("n1", "s1", ready)}, server: active, want: Want{Server: "s1", Node: "n1"}},
		{name: "the server is no longer ACTIVE", nodes: []*corev1.Node{mk("n1", "s1")}, server: &openstack.Server{ID: "s1", Status: "REBOOT"}, want: want, reason: ReasonServerChanged},
		{name: "the server is gone", nodes: []*corev1.Node{mk("n1", "s1")}, want: want, reason: ReasonServerGone},
		{name: "requested, still requested", nodes: []*corev1.Node{mk("n1", "s1", ready, requested)}, server: active, want: Want{Server: "s1", Node: "n1", Requested: true}},
		{name: "requested, the request withdrawn", nodes: []*corev1.Node{mk("n1", "s1", ready)}, server: active, want: Want{Server: "s1", Node: "n1", Requested: true}, reason: ReasonRequestWithdrawn},
		{name: "requested, excluded meanwhile", nodes: []*corev1.Node{mk("n1", "s1", ready, requested, excluded)}, server: active, want: Want{Server: "s1", Node: "n1", Requested: true}, reason: fencing.ReasonExcluded},
		{name: "the Nodes cannot be read", listErr: errors.New("connection refused"), server: active, want: want, reason: fencing.ReasonUnverified},
		{name: "Nova cannot be read", nodes: []*corev1.Node{mk("n1", "s1")}, novaErr: errors.New("503"), want: want, reason: fencing.ReasonUnverified},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			for _, n := range tt.nodes {
				b = b.WithObjects(n)
			}
			if tt.listErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return tt.listErr
				}})
			}
			sv := servers{by: map[string]*openstack.Server{}, err: tt.novaErr}
			if tt.server != nil {
				sv.by[tt.server.ID] = tt.server
			}
			fresh, err := Recheck(context.Background(), b.Build(), sv, tt.want)
			reason, _ := fencing.ReasonOf(err)
			if reason != tt.reason || (err != nil) != (tt.reason != "") {
				t.Fatalf("Recheck: %v (reason %q), want reason %q", err, reason, tt.reason)
			}
			if err == nil && (fresh.Server == nil || (tt.want.Node != "" && fresh.Node == nil)) {
				t.Errorf("Recheck read %+v", fresh)
			}
		})
	}
}

func TestDuplicates(t *testing.T) {
	n := func(name, pid string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: pid}}
	}
	got := Duplicates([]corev1.Node{n("b", "openstack:///s1"), n("a", "openstack://RegionOne/s1"), n("c", "openstack:///s2"), n("d", ""), n("e", "")})
	if len(got) != 1 || !slices.Equal(got["s1"], []string{"a", "b"}) {
		t.Errorf("Duplicates = %v, want s1 named by a and b only", got)
	}
}

// TestBudgets: the PodDisruptionBudgets that select each pod, by the pod's namespace and labels (a nil
// selector selects no pod, an empty one every pod of the namespace).
func TestBudgets(t *testing.T) {
	pdb := func(ns, name string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	c := fake.NewClientBuilder().WithObjects(
		pdb("a", "db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		pdb("a", "all", &metav1.LabelSelector{}),
		pdb("a", "none", nil),
		pdb("b", "db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
	).Build()
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db-0", Labels: map[string]string{"app": "db"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web-0", Labels: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "db-0", Labels: map[string]string{"app": "db"}}},
	}
	got, err := Budgets(context.Background(), c, pods)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{"a/db-0": {"a/all", "a/db"}, "a/web-0": {"a/all"}, "c/db-0": nil} {
		g := slices.Clone(got[id])
		slices.Sort(g)
		if !slices.Equal(g, want) {
			t.Errorf("Budgets[%s] = %v, want %v", id, g, want)
		}
	}
}
