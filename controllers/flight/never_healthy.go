package flight

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbRebootServer is the verb of a soft or hard reboot of a server.
const VerbRebootServer = "RebootServer"

// Defaults of the never-healthy repair (spec.controllers.flight.repairs.neverHealthy).
const (
	DefaultSpawnTimeout      = v1alpha1.DefaultNodeStartupTimeout
	DefaultSoftRebootTimeout = v1alpha1.DefaultSoftRebootTimeout
	DefaultHardRebootTimeout = v1alpha1.DefaultHardRebootTimeout
)

// Why a server's node is unhealthy (NodeEscalation.Reason).
const (
	// FaultNeverRegistered: an ACTIVE server past the spawn timeout that no Node names.
	FaultNeverRegistered = "NeverRegistered"
	// FaultNotReady: an ACTIVE server past the spawn timeout whose Node is not Ready.
	FaultNotReady = "NotReady"
	// FaultPodNetworkBroken: the node agent says PodNetworkHealthy=False on the server's Node.
	FaultPodNetworkBroken = "PodNetworkBroken"
)

// ReasonTooManyUnhealthy is NodesHealthy's reason when more servers are unhealthy than the cluster's
// spec.remediation.maxUnhealthy allows: the storm rule holds every step, nothing is rebooted or deleted.
const ReasonTooManyUnhealthy = "TooManyUnhealthy"

// NodeConditionPodNetworkHealthy is the node agent's condition that the never-healthy repair reads
// (agent/conditions.go; the operator does not import the agent). Whoever may write nodes/status can
// set it: it can only ever point at a server of the cluster's own project (the Node must name it by
// providerID, and the cluster's credentials must list it), and the escalation's timeouts, the
// remediation policy's budget and storm rule bound what follows.
const NodeConditionPodNetworkHealthy corev1.NodeConditionType = "PodNetworkHealthy"

// ReasonSandboxNetworkFailures is the agent's PodNetworkHealthy reason when only kubelet's Events
// (which anyone allowed to create Events in a namespace with a pod on the node can write) turned it
// False: no reason to reboot or delete a server. The CNI's own reports (CNIAddFailuresExceeded) are.
const ReasonSandboxNetworkFailures = "SandboxNetworkFailures"

// NeverHealthy repairs servers whose node is not healthy: an ACTIVE server with no Ready Node after
// the spawn timeout (the seed's "nodes running but never healthy", security group updates too slow
// for the node's first boot), or whose Node's agent says the CNI is broken (PodNetworkHealthy=False
// from the CNI's own reports, not from kubelet's Events alone). It escalates as
// the seed prefers, rebooting first: a soft reboot, then after its timeout a hard reboot, then after
// that one's timeout a delete (the cluster's machine management replaces the server). A fault is acted
// on from the second pass that sees it; the escalation is kept in status.flight.escalations, so a
// restarted operator resumes where it was, and deleting is never the first step. Each step is asked
// of the remediation policy (a delete is a removal whose evidence is when the fault was first seen),
// and the server is read again just before, so a step is taken only on a server that is still there
// and ACTIVE.
type NeverHealthy struct{}

// Name implements Repair.
func (NeverHealthy) Name() string { return "neverHealthy" }

// Conditions implements Repair.
func (NeverHealthy) Conditions() []string { return []string{v1alpha1.ConditionNodesHealthy} }

// Enabled implements Repair.
func (NeverHealthy) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.Nodes.IsEnabled()
}

// neverHealthySettings are the repair's timeouts with defaults applied.
type neverHealthySettings struct {
	spawn, soft, hard time.Duration
	deleteAllowed     bool
}

func neverHealthySettingsOf(sp v1alpha1.NodeRepair) neverHealthySettings {
	ns := sp.Settings()
	return neverHealthySettings{spawn: ns.NodeStartupTimeout, soft: ns.SoftReboot, hard: ns.HardReboot, deleteAllowed: ns.Delete}
}

// Nova statuses of a server that is rebooting.
var rebootingStatus = map[string]bool{"REBOOT": true, "HARD_REBOOT": true}

// NodeFault says what is wrong with a server's node, or "" when nothing is (or it is too early to
// tell). Only ACTIVE servers have faults.
func NodeFault(sv openstack.Server, node *corev1.Node, now time.Time, spawn time.Duration) string {
	if sv.Status != "ACTIVE" {
		return ""
	}
	if node != nil {
		if c, ok := nodeCondition(node, NodeConditionPodNetworkHealthy); ok && c.Status == corev1.ConditionFalse && c.Reason != ReasonSandboxNetworkFailures {
			return FaultPodNetworkBroken
		}
		if c, ok := nodeCondition(node, corev1.NodeReady); ok && c.Status == corev1.ConditionTrue {
			return ""
		}
	}
	if sv.Created.IsZero() || now.Sub(sv.Created) < spawn {
		return "" // still spawning
	}
	if node == nil {
		return FaultNeverRegistered
	}
	return FaultNotReady
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

// nodeStep is a step of an escalation that is due.
type nodeStep struct {
	server openstack.Server
	esc    v1alpha1.NodeEscalation // before the step
	step   string                  // SoftReboot, HardReboot or Delete
}

// Detect implements Repair.
func (NeverHealthy) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	s := neverHealthySettingsOf(in.Read.Settings.Repairs.Nodes)
	return detectNeverHealthy(in.Read.Snapshot.Servers, in.Read.Snapshot.ServerNode, in.Read.Prev.Escalations, s, in.Now)
}

// detectNeverHealthy compares the servers and their Nodes with the escalations so far: a new fault is
// observed (no step yet), a fault seen before gets its next step once that step is due (soft reboot at
// once, hard reboot SoftRebootTimeout after the soft one, delete HardRebootTimeout after the hard one),
// and a server that is healthy again, or gone, leaves the escalations.
func detectNeverHealthy(servers []openstack.Server, nodes map[string]*corev1.Node, prev []v1alpha1.NodeEscalation, s neverHealthySettings, now time.Time) *neverHealthyFinding {
	f := &neverHealthyFinding{settings: s}
	old := make(map[string]v1alpha1.NodeEscalation, len(prev))
	for _, e := range prev {
		old[e.Server] = e
	}
	for _, sv := range servers {
		if sv.Status == "ACTIVE" || rebootingStatus[sv.Status] {
			f.active++
		}
		node := nodes[sv.ID]
		e, had := old[sv.ID]
		fault := NodeFault(sv, node, now, s.spawn)
		if fault == "" && had && rebootingStatus[sv.Status] {
			fault = e.Reason // rebooting: neither healed nor a new fault
		}
		if fault == "" {
			if had {
				f.recovered = append(f.recovered, e)
			}
			continue
		}
		if !had {
			e = v1alpha1.NodeEscalation{Server: sv.ID, Step: v1alpha1.EscalationObserved, Since: metav1.NewTime(now), FirstSeen: ptrTime(now)}
		}
		if e.FirstSeen == nil {
			e.FirstSeen = e.Since.DeepCopy()
		}
		e.Reason = fault
		e.Node = ""
		if node != nil {
			e.Node = node.Name
		}
		f.escalations = append(f.escalations, e)
		f.servers = append(f.servers, sv)
		switch {
		case !had:
			f.waiting = append(f.waiting, fmt.Sprintf("%s %s first seen", sv.ID, fault))
			continue
		case rebootingStatus[sv.Status]:
			f.waiting = append(f.waiting, fmt.Sprintf("%s %s, rebooting", sv.ID, fault))
			continue
		}
		next, at := nextStep(e, s)
		switch {
		case next == "":
			f.waiting = append(f.waiting, fmt.Sprintf("%s %s after a hard reboot; deleting is turned off (repairs.neverHealthy.delete)", sv.ID, fault))
		case now.Before(at):
			f.waiting = append(f.waiting, fmt.Sprintf("%s %s, %s due at %s", sv.ID, fault, next, at.UTC().Format(time.RFC3339)))
		default:
			f.steps = append(f.steps, nodeStep{server: sv, esc: e, step: next})
		}
	}
	return f
}

// nextStep is the step after e's and when it is due; "" when none may follow.
func nextStep(e v1alpha1.NodeEscalation, s neverHealthySettings) (string, time.Time) {
	switch e.Step {
	case v1alpha1.EscalationSoftReboot:
		return v1alpha1.EscalationHardReboot, e.Since.Add(s.soft)
	case v1alpha1.EscalationHardReboot, v1alpha1.EscalationDelete:
		// A delete that did not take (the server is still listed) is asked for again.
		if !s.deleteAllowed {
			return "", time.Time{}
		}
		return v1alpha1.EscalationDelete, e.Since.Add(s.hard)
	}
	return v1alpha1.EscalationSoftReboot, e.Since.Time
}

// neverHealthyFinding is what NeverHealthy found.
type neverHealthyFinding struct {
	settings neverHealthySettings
	active   int
	// escalations after this pass (before its steps) and the unhealthy servers, in the same order.
	escalations []v1alpha1.NodeEscalation
	servers     []openstack.Server
	steps       []nodeStep
	waiting     []string
	recovered   []v1alpha1.NodeEscalation
}

func (f *neverHealthyFinding) Unhealthy() []string {
	ids := make([]string, len(f.servers))
	for i, sv := range f.servers {
		ids[i] = sv.ID
	}
	return ids
}

// stepAction is the policy's view of a step: a reboot is a change, a delete a removal whose evidence
// is the fault's first sighting.
func stepAction(st nodeStep) remediation.Action {
	a := remediation.Action{Verb: VerbRebootServer, Kind: "server", ID: st.server.ID, Name: st.server.Name, Class: remediation.Disruptive}
	if st.step == v1alpha1.EscalationDelete {
		a.Verb, a.Removal, a.Evidence, a.Class = VerbDeleteServer, true, st.esc.FirstSeen.Time, remediation.Destructive
	}
	return a
}

func (f *neverHealthyFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	for _, e := range f.recovered {
		env.Event(corev1.EventTypeNormal, "NodeRecovered", "Observe", fmt.Sprintf("server %s is healthy again (or gone) after %s, at step %s", e.Server, e.Reason, e.Step))
	}
	byServer := map[string]int{}
	for i, e := range f.escalations {
		byServer[e.Server] = i
	}
	var taken, failed, held []string
	storm := false
	for _, st := range f.steps {
		a := stepAction(st)
		outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error { return takeStep(ctx, env, st) })
		switch outcome {
		case pass.OutcomeDone:
			e := &f.escalations[byServer[st.server.ID]]
			e.Step, e.Since = st.step, metav1.NewTime(env.Now)
			taken = append(taken, st.server.ID+" "+st.step)
			env.Event(corev1.EventTypeNormal, "NodeEscalated", st.step, fmt.Sprintf("server %s (%s): %s, %s since %s", st.server.ID, st.server.Name, st.step, st.esc.Reason, st.esc.FirstSeen.UTC().Format(time.RFC3339)))
		case pass.OutcomeFailed:
			failed = append(failed, st.server.ID+" "+st.step+": "+err.Error())
		default:
			storm = storm || d.Reason == remediation.ReasonStorm
			held = append(held, st.server.ID+" "+st.step+" ("+d.Reason+")")
		}
	}
	env.Read.Status.Escalations = f.escalations
	if len(f.escalations) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "NodesHealthy",
			Message: fmt.Sprintf("every ACTIVE server of the cluster (%d) has a Ready Node with a healthy pod network, or is still spawning", f.active)}}
	}
	summary := fmt.Sprintf("%d of %d servers unhealthy; steps taken %d [%s], failed %d [%s], held back %d [%s], waiting %d [%s]",
		len(f.escalations), f.active, len(taken), strings.Join(taken, ", "), len(failed), strings.Join(failed, "; "),
		len(held), strings.Join(held, "; "), len(f.waiting), strings.Join(f.waiting, "; "))
	reason := "NodesUnhealthy"
	if ok, why := remediation.Storm(env.Cluster, remediation.Scope{Unhealthy: len(env.Unhealthy), Total: len(env.Read.Snapshot.Servers)}); ok || storm {
		if why == "" {
			why = "the remediation policy's storm rule holds every step"
		}
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonTooManyUnhealthy,
			Message: "too many unhealthy nodes to repair any (" + why + "): nothing is rebooted or deleted; " + summary}}
	}
	if len(failed) > 0 {
		reason = "RepairFailed"
	}
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason, Message: summary}}
}

// takeStep reads the server again (through the cluster's scoped cloud: it must still be the
// project's) and takes the step only if it is still ACTIVE.
func takeStep(ctx context.Context, env *pass.Env[*State], st nodeStep) error {
	sv, err := env.Cloud.GetServer(ctx, st.server.ID)
	if err != nil {
		return fmt.Errorf("read server %s again: %w", st.server.ID, err)
	}
	if sv.Status != "ACTIVE" {
		return fmt.Errorf("server %s is %s now, no longer ACTIVE: %s not taken", sv.ID, sv.Status, st.step)
	}
	switch st.step {
	case v1alpha1.EscalationSoftReboot:
		return env.Cloud.RebootServer(ctx, sv.ID, false)
	case v1alpha1.EscalationHardReboot:
		return env.Cloud.RebootServer(ctx, sv.ID, true)
	}
	return env.Cloud.DeleteServer(ctx, sv.ID)
}
