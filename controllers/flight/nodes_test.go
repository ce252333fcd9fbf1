package flight

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
)

// TestPlanNode: the node repair's plan for one server: dwell, escalation, owners, caps, the outage floor,
// recovery and the out-of-service taint.
func TestPlanNode(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	active := openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-30 * 24 * time.Hour), Metadata: map[string]string{}}
	node := func(status corev1.ConditionStatus, ago time.Duration, mutate ...func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}, Annotations: map[string]string{}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: at(-ago)}}}}
		for _, m := range mutate {
			m(n)
		}
		return n
	}
	esc := func(step, phase string, since time.Duration) *v1alpha1.NodeEscalation {
		return &v1alpha1.NodeEscalation{Server: "s1", Node: "n1", Step: step, Phase: phase, Since: at(-since), FirstSeen: new(at(-time.Hour)), Reason: "Ready=Unknown"}
	}
	steps := func(ago ...time.Duration) []v1alpha1.StepRecord {
		var out []v1alpha1.StepRecord
		for _, a := range ago {
			out = append(out, v1alpha1.StepRecord{Step: "SoftReboot", Time: at(-a)})
		}
		return out
	}
	requested := func(n *corev1.Node) { n.Annotations[nodes.AnnotationRemediate] = "ticket-42" }
	requestedEsc := func(step, phase string, since time.Duration) *v1alpha1.NodeEscalation {
		e := esc(step, phase, since)
		e.Reason = FaultRequested
		return e
	}
	replaceable := openstack.Server{ID: "s1", Status: "ACTIVE", Created: active.Created, Metadata: map[string]string{"pool": "a"}}
	tests := []struct {
		name    string
		server  openstack.Server
		node    *corev1.Node
		prev    *v1alpha1.NodeEscalation
		steps   []v1alpha1.StepRecord
		spec    func(*v1alpha1.NodeRepair)
		cluster map[string]string
		floor   time.Time
		// unproven: no servers.metadata, the server is the cluster's by a port on networkID only
		unproven bool
		// hostDown: the server's compute host is taken for down, since hostSince ago (default a minute)
		hostDown  bool
		hostSince time.Duration
		act       nodeAct
		step      string
		stop      string
		esc       bool
	}{
		{name: "NotReady for a minute after a month: never touched", server: active, node: node("False", time.Minute), act: actNone},
		{name: "NotReady past its timeout: observed", server: active, node: node("False", 6*time.Minute), esc: true},
		{name: "observed before: soft reboot", server: active, node: node("Unknown", 7*time.Minute), prev: esc("Observed", "", time.Minute), act: actStep, step: "SoftReboot", esc: true},
		{name: "draining: the same step goes on", server: active, node: node("Unknown", 9*time.Minute), prev: esc("SoftReboot", "Draining", time.Minute), act: actStep, step: "SoftReboot", esc: true},
		{name: "soft reboot within its timeout: waits", server: active, node: node("Unknown", time.Hour), prev: esc("SoftReboot", "Taken", 3*time.Minute), esc: true},
		// A step recorded as started (the process stopped after the record, before or after its cloud call):
		// counted as taken at its time, never repeated, its next step not early.
		{name: "soft reboot started, within its timeout: waits, not repeated", server: active, node: node("Unknown", time.Hour), prev: esc("SoftReboot", "Started", 50*time.Second), esc: true},
		{name: "soft reboot started, timed out: hard reboot", server: active, node: node("Unknown", time.Hour), prev: esc("SoftReboot", "Started", 6*time.Minute), act: actStep, step: "HardReboot", esc: true},
		{name: "soft reboot timed out: hard reboot", server: active, node: node("Unknown", time.Hour), prev: esc("SoftReboot", "Taken", 6*time.Minute), act: actStep, step: "HardReboot", esc: true},
		{name: "hard reboot timed out, nobody replaces: stop", server: active, node: node("Unknown", time.Hour), prev: esc("HardReboot", "Taken", 11*time.Minute), stop: StopNoReplacement, esc: true},
		{name: "hard reboot timed out, a manager replaces: delete", server: replaceable, node: node("Unknown", time.Hour), prev: esc("HardReboot", "Taken", 11*time.Minute),
			spec: func(r *v1alpha1.NodeRepair) { r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"} }, act: actStep, step: "Delete", esc: true},
		{name: "delete turned off", server: replaceable, node: node("Unknown", time.Hour), prev: esc("HardReboot", "Taken", 11*time.Minute),
			spec: func(r *v1alpha1.NodeRepair) {
				r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"}
				r.Delete = new(false)
			}, stop: StopNoReplacement, esc: true},
		{name: "Gardener's server is never deleted", server: replaceable, node: node("Unknown", time.Hour, func(n *corev1.Node) { n.Labels["worker.gardener.cloud/pool"] = "w" }),
			prev: esc("HardReboot", "Taken", 11*time.Minute), spec: func(r *v1alpha1.NodeRepair) { r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"} }, stop: "ManagedByGardener", esc: true},
		{name: "a Cluster API Machine's node: never rebooted by flight, refused once", server: active, node: node("Unknown", time.Hour, func(n *corev1.Node) { n.Annotations["cluster.x-k8s.io/machine"] = "md-0" }),
			prev: esc("Observed", "", time.Minute), stop: StopClusterAPI, esc: true},
		{name: "a Cluster API Machine's node, refused before: no second Warning", server: active, node: node("Unknown", time.Hour, func(n *corev1.Node) { n.Annotations["cluster.x-k8s.io/machine"] = "md-0" }),
			prev: func() *v1alpha1.NodeEscalation {
				e := esc("Observed", "Stopped", time.Minute)
				e.Stopped = StopClusterAPI
				return e
			}(), esc: true},
		{name: "three steps in the window: a reboot loop", server: active, node: node("Unknown", time.Hour), prev: esc("Observed", "", 2*time.Minute), steps: steps(20*time.Hour, 3*time.Hour, 2*time.Hour), stop: StopRebootLoop, esc: true},
		{name: "a step 30m ago: cooling down", server: active, node: node("Unknown", time.Hour), prev: esc("Observed", "", 2*time.Minute), steps: steps(30 * time.Minute), esc: true},
		{name: "a step 2h ago: cooled down", server: active, node: node("Unknown", time.Hour), prev: esc("Observed", "", 2*time.Minute), steps: steps(2 * time.Hour), act: actStep, step: "SoftReboot", esc: true},
		{name: "an outage a minute ago restarts the timers", server: active, node: node("Unknown", time.Hour), prev: esc("Observed", "", 2*time.Minute), floor: t0.Add(-time.Minute), esc: true},
		{name: "and after a reboot too", server: active, node: node("Unknown", time.Hour), prev: esc("SoftReboot", "Taken", 6*time.Minute), floor: t0.Add(-time.Minute), esc: true},
		{name: "healed: recover (uncordon)", server: active, node: node("True", time.Minute), prev: func() *v1alpha1.NodeEscalation {
			e := esc("SoftReboot", "Taken", 3*time.Minute)
			e.Cordoned = true
			return e
		}(), act: actRecover, esc: true},
		{name: "rebooting: waits", server: openstack.Server{ID: "s1", Status: "REBOOT", Created: active.Created}, node: node("Unknown", time.Minute), prev: esc("SoftReboot", "Taken", time.Minute), esc: true},
		{name: "SHUTOFF under a NotReady node: the out-of-service taint", server: openstack.Server{ID: "s1", Status: "SHUTOFF", Created: active.Created, Updated: t0.Add(-time.Minute)}, node: node("Unknown", time.Minute), act: actTaint, esc: true},
		{name: "a control-plane node, off by default", server: active, node: node("Unknown", time.Hour, func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }), prev: esc("Observed", "", time.Minute)},
		{name: "excluded", server: active, node: node("Unknown", time.Hour, func(n *corev1.Node) { n.Labels["vitals.vitalsproject.io/exclude-from-remediation"] = "true" }), prev: esc("Observed", "", time.Minute)},
		{name: "never registered, 16m after its creation", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-16 * time.Minute)}, esc: true},
		{name: "never registered, 10m after its creation", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-10 * time.Minute)}},
		{name: "never registered, observed: soft reboot", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-17 * time.Minute)}, prev: esc("Observed", "", time.Minute), act: actStep, step: "SoftReboot", esc: true},
		// Without servers.metadata a bastion or a database VM with a port on the nodes' network is one of the
		// cluster's servers too: no Node names it, and it is reported, never rebooted.
		{name: "never registered without servers.metadata: not observed", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-16 * time.Minute)}, unproven: true},
		{name: "never registered without servers.metadata, observed before: no step, the escalation ends", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-17 * time.Minute)},
			prev: esc("Observed", "", time.Minute), unproven: true},
		{name: "never registered without servers.metadata, soft-rebooted before: no hard reboot", server: openstack.Server{ID: "s1", Status: "ACTIVE", Created: t0.Add(-time.Hour)},
			prev: esc("SoftReboot", "Taken", 6*time.Minute), unproven: true},
		// A repair asked for by hand (the Node's annotation): no dwell, every other guard, one step per request.
		{name: "requested on a Ready node: observed at once", server: active, node: node("True", time.Hour, requested), esc: true},
		{name: "requested, observed before: soft reboot", server: active, node: node("True", time.Hour, requested), prev: requestedEsc("Observed", "", time.Minute), act: actStep, step: "SoftReboot", esc: true},
		{name: "requested, its soft reboot taken: the request is answered, no hard reboot", server: active, node: node("True", time.Hour, requested), prev: requestedEsc("SoftReboot", "Taken", 6*time.Minute), act: actAnswer, esc: true},
		{name: "requested, its soft reboot started: answered too", server: active, node: node("True", time.Hour, requested), prev: requestedEsc("SoftReboot", "Started", 6*time.Minute), act: actAnswer, esc: true},
		{name: "requested on an excluded node: never repaired", server: active, node: node("True", time.Hour, requested, func(n *corev1.Node) { n.Labels["vitals.vitalsproject.io/exclude-from-remediation"] = "true" }),
			prev: requestedEsc("Observed", "", time.Minute)},
		{name: "requested within the cooldown: waits", server: active, node: node("True", time.Hour, requested), prev: requestedEsc("Observed", "", time.Minute), steps: steps(30 * time.Minute), esc: true},
		{name: "requested \"false\": no request", server: active, node: node("True", time.Hour, func(n *corev1.Node) { n.Annotations[nodes.AnnotationRemediate] = "false" })},
		{name: "requested on a NotReady node past its dwell: the condition is the reason", server: active, node: node("Unknown", 7*time.Minute, requested), prev: esc("Observed", "", time.Minute), act: actStep, step: "SoftReboot", esc: true},
		{name: "a NotReady Node without servers.metadata: its server is named, soft reboot", server: active, node: node("Unknown", 7*time.Minute), prev: esc("Observed", "", time.Minute),
			unproven: true, act: actStep, step: "SoftReboot", esc: true},
		// A server on a compute host taken for down is never rebooted: deleted after the ladder's time where
		// a manager replaces it, else left to the host's return or an administrator's evacuation.
		{name: "host down: no soft reboot", server: active, node: node("Unknown", 7*time.Minute), prev: esc("Observed", "", time.Minute), hostDown: true, esc: true},
		{name: "host down, draining before a soft reboot: no reboot", server: active, node: node("Unknown", 9*time.Minute), prev: esc("SoftReboot", "Draining", time.Minute), hostDown: true, esc: true},
		{name: "host down, replaceable, within the ladder's time: waits", server: replaceable, node: node("Unknown", 7*time.Minute), prev: esc("Observed", "", time.Minute), hostDown: true,
			spec: func(r *v1alpha1.NodeRepair) { r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"} }, esc: true},
		{name: "host down, replaceable, past the ladder's time: delete, no reboot", server: replaceable, node: node("Unknown", 2*time.Hour), prev: esc("Observed", "", 16*time.Minute), hostDown: true, hostSince: 16 * time.Minute,
			spec: func(r *v1alpha1.NodeRepair) { r.Replacement = &v1alpha1.ServerReplacement{MetadataKey: "pool"} }, act: actStep, step: "Delete", esc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec v1alpha1.NodeRepair
			if tt.spec != nil {
				tt.spec(&spec)
			}
			cl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Labels: tt.cluster}}
			s := spec.Settings()
			f := &nodesFinding{s: s, now: t0, proven: !tt.unproven}
			sv := tt.server
			if tt.hostDown {
				sv.HostID = "h1"
				since := max(tt.hostSince, time.Minute)
				f.hosts = map[string]v1alpha1.HostFinding{"h1": {HostID: "h1", Servers: []string{"s0", "s1"}, Since: at(-since)}}
			}
			c := newCase(sv, tt.node, nil, s, cl, nil)
			if tt.prev != nil {
				c.prev, c.had = *tt.prev, true
			}
			c.steps = tt.steps
			p := f.plan(c, tt.floor)
			if p.act != tt.act || p.step != tt.step || p.stop != tt.stop || (p.esc != nil) != tt.esc {
				t.Errorf("plan = act %d step %q stop %q esc %+v wait %q; want act %d step %q stop %q esc %v", p.act, p.step, p.stop, p.esc, p.wait, tt.act, tt.step, tt.stop, tt.esc)
			}
		})
	}
}

// TestNodesUnhealthy: what the storm rule counts: a Node's unhealthy condition at once, a server without a
// Node only past nodeStartupTimeout (servers of a scale-up are still booting), never a SHUTOFF server.
func TestNodesUnhealthy(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	notReady := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: "False", LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))}}}}
	ready := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: "True", LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}}}
	tests := []struct {
		name     string
		sv       openstack.Server
		node     *corev1.Node
		unproven bool // no servers.metadata
		want     bool
	}{
		{"booting, no Node yet", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-5 * time.Minute)}, nil, false, false},
		{"no Node past nodeStartupTimeout", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-16 * time.Minute)}, nil, false, true},
		{"no Node past nodeStartupTimeout, without servers.metadata: maybe no node at all", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-16 * time.Minute)}, nil, true, false},
		{"NotReady for a minute", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-time.Hour)}, notReady, false, true},
		{"NotReady for a minute, without servers.metadata", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-time.Hour)}, notReady, true, true},
		{"Ready", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-time.Hour)}, ready, false, false},
		{"Ready, a repair requested", openstack.Server{ID: "s", Status: "ACTIVE", Created: t0.Add(-time.Hour)}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{nodes.AnnotationRemediate: "true"}}, Status: ready.Status}, false, true},
		{"SHUTOFF", openstack.Server{ID: "s", Status: "SHUTOFF", Created: t0.Add(-time.Hour), Updated: t0.Add(-time.Minute)}, notReady, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec v1alpha1.NodeRepair
			s := spec.Settings()
			f := &nodesFinding{s: s, now: t0, proven: !tt.unproven, cases: []*nodeCase{newCase(tt.sv, tt.node, nil, s, &v1alpha1.VitalsCluster{}, nil)}}
			if got := len(f.Unhealthy()) == 1; got != tt.want {
				t.Errorf("counted %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNodesHostDown: three nodes of one compute host unreachable together, while another host's node is Ready (and
// one NotReady), are one host finding, which the storm rule counts once; a node on the host whose kubelet reports
// proves it alive; with the host rule off, four unhealthy servers.
func TestNodesHostDown(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cond := func(st corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute))}}}}
	}
	sv := func(id, host string) openstack.Server {
		return openstack.Server{ID: id, Status: "ACTIVE", HostID: host, Zone: "az1", Created: t0.Add(-time.Hour)}
	}
	for _, on := range []bool{true, false} {
		spec := v1alpha1.NodeRepair{HostDown: &v1alpha1.HostDownRepair{Enabled: new(on)}}
		s := spec.Settings()
		f := &nodesFinding{s: s, now: t0, proven: true}
		for _, c := range []struct {
			sv   openstack.Server
			node *corev1.Node
		}{{sv("b", "h1"), cond("Unknown")}, {sv("a", "h1"), cond("Unknown")}, {sv("c", "h1"), cond("Unknown")}, {sv("e", "h2"), cond("False")}, {sv("d", "h2"), cond("True")}} {
			f.cases = append(f.cases, newCase(c.sv, c.node, nil, s, &v1alpha1.VitalsCluster{}, nil))
		}
		f.hosts = f.downHosts([]v1alpha1.HostFinding{{HostID: "h1", Since: metav1.NewTime(t0.Add(-time.Hour))}})
		if !on {
			if len(f.hosts) != 0 || len(f.Unhealthy()) != 4 {
				t.Errorf("host rule off: hosts %v, unhealthy %v; want none, and 4", f.hosts, f.Unhealthy())
			}
			continue
		}
		h, ok := f.hosts["h1"]
		if !ok || len(f.hosts) != 1 || strings.Join(h.Servers, ",") != "a,b,c" || h.Zone != "az1" || !h.Since.Equal(ptrTime(t0.Add(-time.Hour))) {
			t.Fatalf("hosts %+v, want h1 with a, b, c in az1, its first sighting kept", f.hosts)
		}
		if got := f.Unhealthy(); len(got) != 2 {
			t.Errorf("the storm rule counts %v, want the host once and h2's NotReady node", got)
		}
		// a node of the host whose kubelet reports (Ready False) proves the host alive
		f.cases[2] = newCase(sv("c", "h1"), cond("False"), nil, s, &v1alpha1.VitalsCluster{}, nil)
		if hs := f.downHosts(nil); len(hs) != 0 {
			t.Errorf("with a reporting kubelet on h1: hosts %v, want none", hs)
		}
		f.cases[2] = newCase(sv("c", "h1"), cond("Unknown"), nil, s, &v1alpha1.VitalsCluster{}, nil)
		if msg := hostMessage(h); !strings.Contains(msg, "nova host-evacuate") || !strings.Contains(msg, "a, b, c") {
			t.Errorf("host message %q does not name the servers and the evacuation", msg)
		}
	}
}
