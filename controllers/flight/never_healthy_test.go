package flight

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

func TestDetectNeverHealthy(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := neverHealthySettings{spawn: 15 * time.Minute, soft: 5 * time.Minute, hard: 10 * time.Minute, deleteAllowed: true}
	server := func(id, status string, age time.Duration) openstack.Server {
		return openstack.Server{ID: id, Name: "node-" + id, Status: status, Created: t0.Add(-age)}
	}
	node := func(name string, conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: conds}}
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	notReady := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}
	broken := corev1.NodeCondition{Type: NodeConditionPodNetworkHealthy, Status: corev1.ConditionFalse}
	esc := func(id, step string, since time.Duration, reason string) v1alpha1.NodeEscalation {
		first := metav1.NewTime(t0.Add(-time.Hour))
		return v1alpha1.NodeEscalation{Server: id, Step: step, Since: metav1.NewTime(t0.Add(-since)), FirstSeen: &first, Reason: reason}
	}
	tests := []struct {
		name    string
		servers []openstack.Server
		nodes   map[string]*corev1.Node
		prev    []v1alpha1.NodeEscalation
		s       *neverHealthySettings
		// want: per unhealthy server, its step after detection and the step due ("" none).
		want      map[string][2]string
		recovered int
	}{
		{name: "a Ready node with a healthy pod network", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			nodes: map[string]*corev1.Node{"a": node("a", ready)}, want: map[string][2]string{}},
		{name: "no node, still spawning", servers: []openstack.Server{server("a", "ACTIVE", 10*time.Minute)}, want: map[string][2]string{}},
		{name: "no node past the spawn timeout: observed first, nothing done",
			servers: []openstack.Server{server("a", "ACTIVE", 20*time.Minute)}, want: map[string][2]string{"a": {v1alpha1.EscalationObserved, ""}}},
		{name: "seen again: soft reboot first, never a delete",
			servers: []openstack.Server{server("a", "ACTIVE", 20*time.Minute)},
			prev:    []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationObserved, time.Minute, FaultNeverRegistered)},
			want:    map[string][2]string{"a": {v1alpha1.EscalationObserved, v1alpha1.EscalationSoftReboot}}},
		{name: "soft reboot's timeout not over", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			nodes: map[string]*corev1.Node{"a": node("a", notReady)},
			prev:  []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationSoftReboot, 4*time.Minute, FaultNotReady)},
			want:  map[string][2]string{"a": {v1alpha1.EscalationSoftReboot, ""}}},
		{name: "soft reboot's timeout over: hard reboot", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			nodes: map[string]*corev1.Node{"a": node("a", notReady)},
			prev:  []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationSoftReboot, 5*time.Minute, FaultNotReady)},
			want:  map[string][2]string{"a": {v1alpha1.EscalationSoftReboot, v1alpha1.EscalationHardReboot}}},
		{name: "hard reboot's timeout over: delete", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			prev: []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationHardReboot, 10*time.Minute, FaultNeverRegistered)},
			want: map[string][2]string{"a": {v1alpha1.EscalationHardReboot, v1alpha1.EscalationDelete}}},
		{name: "deleting turned off: the escalation stops at the hard reboot", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			prev: []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationHardReboot, time.Hour, FaultNeverRegistered)},
			s:    &neverHealthySettings{spawn: 15 * time.Minute, soft: 5 * time.Minute, hard: 10 * time.Minute},
			want: map[string][2]string{"a": {v1alpha1.EscalationHardReboot, ""}}},
		{name: "a broken pod network on a Ready node, whatever the server's age",
			servers: []openstack.Server{server("a", "ACTIVE", time.Minute)}, nodes: map[string]*corev1.Node{"a": node("a", ready, broken)},
			prev: []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationObserved, time.Minute, FaultPodNetworkBroken)},
			want: map[string][2]string{"a": {v1alpha1.EscalationObserved, v1alpha1.EscalationSoftReboot}}},
		{name: "a pod network broken only by kubelet's Events (which namespace users can forge) is no fault",
			servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			nodes:   map[string]*corev1.Node{"a": node("a", ready, corev1.NodeCondition{Type: NodeConditionPodNetworkHealthy, Status: corev1.ConditionFalse, Reason: ReasonSandboxNetworkFailures})},
			want:    map[string][2]string{}},
		{name: "rebooting: the escalation waits", servers: []openstack.Server{server("a", "HARD_REBOOT", time.Hour)},
			prev: []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationHardReboot, time.Hour, FaultNeverRegistered)},
			want: map[string][2]string{"a": {v1alpha1.EscalationHardReboot, ""}}},
		{name: "healthy again: the escalation ends", servers: []openstack.Server{server("a", "ACTIVE", time.Hour)},
			nodes: map[string]*corev1.Node{"a": node("a", ready)},
			prev:  []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationSoftReboot, time.Minute, FaultNotReady)},
			want:  map[string][2]string{}, recovered: 1},
		{name: "the server is gone: the escalation ends", prev: []v1alpha1.NodeEscalation{esc("a", v1alpha1.EscalationDelete, time.Minute, FaultNotReady)},
			want: map[string][2]string{}},
		{name: "errored or stopped servers are other repairs' concern", servers: []openstack.Server{server("a", "ERROR", time.Hour), server("b", "SHUTOFF", time.Hour)},
			want: map[string][2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s
			if tt.s != nil {
				st = *tt.s
			}
			f := detectNeverHealthy(tt.servers, tt.nodes, tt.prev, st, t0)
			got := map[string][2]string{}
			for _, e := range f.escalations {
				got[e.Server] = [2]string{e.Step, ""}
				if e.FirstSeen == nil {
					t.Errorf("%s: no FirstSeen", e.Server)
				}
			}
			for _, step := range f.steps {
				g := got[step.server.ID]
				g[1] = step.step
				got[step.server.ID] = g
				if a := stepAction(step); (step.step == v1alpha1.EscalationDelete) != (a.Removal && a.Verb == VerbDeleteServer && a.Evidence.Equal(step.esc.FirstSeen.Time)) {
					t.Errorf("%s: action %+v", step.step, a)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("escalations %v, want %v (waiting: %s)", got, tt.want, strings.Join(f.waiting, "; "))
			}
			for id, w := range tt.want {
				if got[id] != w {
					t.Errorf("%s: step %q, due %q; want %q, %q (waiting: %s)", id, got[id][0], got[id][1], w[0], w[1], strings.Join(f.waiting, "; "))
				}
			}
			if len(f.recovered) != tt.recovered {
				t.Errorf("recovered %d, want %d", len(f.recovered), tt.recovered)
			}
		})
	}
}
