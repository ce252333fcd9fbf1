package flight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// Verbs of the node repair's writes.
const (
	VerbRebootServer = nodes.VerbRebootServer
	VerbDrainNode    = nodes.VerbDrainNode
	VerbUncordonNode = nodes.VerbUncordonNode
	VerbTaintNode    = "TaintOutOfService"
	VerbUntaintNode  = "UntaintOutOfService"
)

// Why a server's node is unhealthy (NodeEscalation.Reason), besides the condition that tripped
// ("Ready=Unknown", "KernelDeadlock=True").
const (
	// FaultNeverRegistered: an ACTIVE server that no Node names NodeStartupTimeout after its creation.
	FaultNeverRegistered = "NeverRegistered"
	// FaultShutOff: the server is SHUTOFF under a Node that is not Ready (the out-of-service taint's case).
	FaultShutOff = "ServerShutOff"
	// FaultGone: flight deleted the server and its Node is still there.
	FaultGone = "ServerGone"
	// FaultRequested: the Node carries nodes.AnnotationRemediate (a repair asked for by hand), and no
	// condition has held for its dwell: no dwell, every other guard.
	FaultRequested = "Requested"
)

// Reasons an escalation stops (NodeEscalation.Stopped) and NodesHealthy's reasons.
const (
	// StopNoReplacement: after the hard reboot no delete follows, since no manager replaces the server
	// (repairs.nodes.replacement) or deleting is off (repairs.nodes.delete).
	StopNoReplacement = "NoReplacement"
	// StopRebootLoop: the server had perServer.maxSteps steps in perServer.window.
	StopRebootLoop = "RebootLoop"
	// StopClusterAPI: the Node is a Cluster API Machine's: its MachineHealthCheck remediates it.
	StopClusterAPI = "ManagedByClusterAPI"
	// ReasonTooManyUnhealthy is NodesHealthy's reason while the storm rule holds every disruptive step.
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
)

// NodeConditionPodNetworkHealthy is the node agent's condition (agent/conditions.go; the operator does not
// import the agent); name it in unhealthyConditions to repair nodes whose CNI is broken.
const NodeConditionPodNetworkHealthy corev1.NodeConditionType = "PodNetworkHealthy"

// Nova statuses of a server that is rebooting.
var rebootingStatus = map[string]bool{"REBOOT": true, "HARD_REBOOT": true}

// Nodes repairs the cluster's unhealthy nodes (spec.controllers.flight.repairs.nodes), rebooting first and
// replacing last, with the guards an operator expects of it:
//   - detection with dwell: a Node is unhealthy once one of unhealthyConditions has held for its timeout
//     from the condition's lastTransitionTime; an ACTIVE server with no Node, nodeStartupTimeout after its
//     creation, acted on only when servers.metadata proves it the cluster's (else reported). No timer starts
//     before the cluster's last outage (remediation.Pass.Outage): an outage never becomes mass repairs once
//     it is over;
//   - a step is asked of the policy with its class, its pool and, for a control-plane node, etcd's quorum:
//     the storm rule, the outage freeze and one disruptive step per pool hold it, the safe repairs go on;
//   - before a reboot or a delete the Node is cordoned and drained through the Eviction API
//     (PodDisruptionBudgets honoured); the escalation is draining from the cordon on, whatever the evictions
//     answer; a drain that has not finished by its timeout goes on only when the node is unreachable
//     (drain.force WhenUnreachable), else the step waits and says so;
//   - soft reboot, hard reboot after softRebootTimeout, delete after hardRebootTimeout only for a server
//     whose manager replaces it (replacement.metadataKey; never a Cluster API, Gardener or Magnum server),
//     else the escalation stops at the hard reboot and says so;
//   - a node that heals is uncordoned (only when flight cordoned it); a SHUTOFF server under a NotReady Node,
//     or a server flight deleted whose Node stays, gets the out-of-service taint, taken off when the node is
//     back; a SHUTOFF server no user stopped (a compute host's crash) is started once its Node is unhealthy
//     past its dwell (nodes_poweron.go, repairs.nodes.powerOn);
//   - the steps per server are remembered (status.flight.history): a cooldown between escalations and a cap
//     per window stop reboot loops;
//   - a Cluster API Machine's node is never rebooted or deleted by flight (its MachineHealthCheck, with
//     Vitals as external remediation, does it); control-plane nodes only when turned on; servers in ERROR
//     are the errored-servers repair's, which applies the same guards (guard, noDelete); the exclusion label
//     keeps a node out.
type Nodes struct{}

// Name implements Repair.
func (Nodes) Name() string { return "nodes" }

// Conditions implements Repair.
func (Nodes) Conditions() []string { return []string{v1alpha1.ConditionNodesHealthy} }

// Enabled implements Repair.
func (Nodes) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.Nodes.IsEnabled()
}

// nodeCase is one server (or one gone server's Node) the repair looks at.
type nodeCase struct {
	server openstack.Server
	// gone: the server is no longer listed (flight deleted it); node is still there.
	gone bool
	node *corev1.Node
	prev v1alpha1.NodeEscalation
	had  bool
	// owner of the machine; excluded: the exclusion label or metadata; skip says why the repair does not
	// look at it ("" when it does).
	owner        nodes.Owner
	controlPlane bool
	pool         string
	replaceable  bool
	skip         string
	// steps on the server within the window, oldest first.
	steps []v1alpha1.StepRecord
	// dup names the Nodes when more than one names the server (same providerID).
	dup []string
}

// Detect implements Repair: it sorts the cluster's servers into cases; Repair plans each against the
// outage floor and acts.
func (Nodes) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	s := in.Read.Settings.Repairs.Nodes.Settings()
	f := &nodesFinding{s: s, now: in.Now, lease: in.Read.LeaseOutage, proven: len(in.Read.Settings.Read.Metadata) > 0}
	var sel labels.Selector
	if s.NodeSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(s.NodeSelector); err != nil {
			f.err = fmt.Errorf("spec.controllers.flight.repairs.nodes.nodeSelector: %w", err)
			return f
		}
	}
	snap := in.Read.Snapshot
	prev := map[string]v1alpha1.NodeEscalation{}
	for _, e := range in.Read.Prev.Escalations {
		prev[e.Server] = e
	}
	hist := map[string][]v1alpha1.StepRecord{}
	for _, h := range in.Read.Prev.History {
		hist[h.Server] = h.Steps
	}
	f.history = in.Read.Prev.History
	listed := map[string]bool{}
	for _, sv := range snap.Servers {
		listed[sv.ID] = true
		c := newCase(sv, snap.ServerNode[sv.ID], snap.Duplicates[sv.ID], s, in.Cluster, sel)
		c.prev, c.had = prev[sv.ID]
		c.steps = hist[sv.ID]
		if sv.Status == "ACTIVE" || rebootingStatus[sv.Status] {
			f.active++
		}
		f.cases = append(f.cases, c)
	}
	// A server flight deleted whose Node is still there: the out-of-service taint's case, until the Node goes.
	for _, e := range in.Read.Prev.Escalations {
		if listed[e.Server] || e.Step != v1alpha1.EscalationDelete || e.Node == "" {
			continue
		}
		n := nodeNamed(snap.Nodes, e.Node)
		if n == nil || nodes.ServerID(n.Spec.ProviderID) != e.Server {
			continue // the Node is gone (or names another server now): the escalation ends
		}
		f.cases = append(f.cases, &nodeCase{server: openstack.Server{ID: e.Server}, gone: true, node: n, prev: e, had: true, steps: hist[e.Server]})
	}
	f.hosts = f.downHosts(in.Read.Prev.HostsDown)
	return f
}

func nodeNamed(ns []corev1.Node, name string) *corev1.Node {
	for i := range ns {
		if ns[i].Name == name {
			return &ns[i]
		}
	}
	return nil
}

func newCase(sv openstack.Server, node *corev1.Node, dup []string, s v1alpha1.NodeSettings, c *v1alpha1.VitalsCluster, sel labels.Selector) *nodeCase {
	nc := &nodeCase{server: sv, node: node, dup: dup, owner: nodes.OwnerOf(node, sv.Metadata, c.Labels), controlPlane: nodes.IsControlPlane(node)}
	_, nc.replaceable = sv.Metadata[s.ReplacementKey]
	nc.replaceable = nc.replaceable && s.ReplacementKey != ""
	switch {
	case nc.controlPlane:
		nc.pool = nodes.PoolControlPlane
	case s.NodePoolLabel != "" && node != nil && node.Labels[s.NodePoolLabel] != "":
		nc.pool = node.Labels[s.NodePoolLabel]
	case s.NodePoolLabel != "" && sv.Metadata[s.NodePoolLabel] != "":
		nc.pool = sv.Metadata[s.NodePoolLabel]
	default:
		nc.pool = "workers"
	}
	nc.skip = nc.guard(s)
	switch {
	case nc.skip != "":
	case strings.EqualFold(sv.VMState, "error") || sv.Status == "ERROR":
		nc.skip = "in ERROR: the errored-servers repair's"
	case sel != nil && node != nil && !sel.Matches(labels.Set(node.Labels)):
		nc.skip = "not matched by nodeSelector"
	}
	return nc
}

// guard is why no repair may take a disruptive or destructive step on c's server ("" when none): more
// than one Node naming it, the exclusion label or metadata, or a control-plane node while
// repairs.nodes.controlPlane is off. The node repair and the errored-servers repair both apply it.
func (c *nodeCase) guard(s v1alpha1.NodeSettings) string {
	switch {
	case len(c.dup) > 1:
		return duplicateMessage(c.dup)
	case nodes.Excluded(c.node, c.server.Metadata):
		return "excluded by " + nodes.LabelExclude
	case c.controlPlane && !s.ControlPlane:
		return "a control-plane node (repairs.nodes.controlPlane.enabled is false)"
	}
	return ""
}

// ReasonDuplicateProviderID is NodesHealthy's reason, and the Warning's, while more than one Node names a
// server of the cluster.
const ReasonDuplicateProviderID = "DuplicateProviderID"

func duplicateMessage(dup []string) string {
	return fmt.Sprintf("named by %d Nodes (%s) with the same providerID: which of them is the server's is not known, so nothing is done to it (delete the stale Node)",
		len(dup), strings.Join(dup, ", "))
}

// want is the state a step on c is decided on (the Node's tripped condition as the pass read it), which
// nodes.Recheck reads again immediately before the write; state says when the fresh server no longer fits.
func (f *nodesFinding) want(c *nodeCase, floor time.Time, state func(*openstack.Server) string) nodes.Want {
	w := nodes.Want{Server: c.server.ID, ServerState: state}
	if c.node != nil {
		w.Node = c.node.Name
		v := nodes.Judge(c.node, f.s.UnhealthyConditions, f.now, floor)
		w.Condition = v.Condition
		if !v.Unhealthy && nodes.Requested(c.node) {
			// decided on the request alone: the fresh Node must still carry it, whatever its conditions
			w.Condition, w.Requested = corev1.NodeCondition{}, true
		}
	}
	return w
}

// shutOff is the out-of-service taint's nodes.Want.ServerState: the server is still off.
func shutOff(sv *openstack.Server) string {
	if sv.Status != "SHUTOFF" {
		return "is " + sv.Status + " now, no longer SHUTOFF"
	}
	return ""
}

// active is a step's nodes.Want.ServerState: a reboot or a delete is taken on an ACTIVE server only.
func active(sv *openstack.Server) string {
	if sv.Status != "ACTIVE" {
		return "is " + sv.Status + " now, no longer ACTIVE"
	}
	return ""
}

// nodesFinding is what Nodes found.
type nodesFinding struct {
	s       v1alpha1.NodeSettings
	now     time.Time
	err     error
	cases   []*nodeCase
	active  int
	history []v1alpha1.ServerHistory
	// lease is the outage the node Leases show ("" when none).
	lease string
	// proven: servers.metadata is set, so every server of the read carries the cluster's metadata. Without
	// it a server is the cluster's by a port on networkID, which a bastion or a database VM on the nodes'
	// network has too: a server no Node names is then reported, never rebooted (NeverRegistered).
	proven bool
	// floor is the end of the last outage (no timer starts before it), set by Repair.
	floor time.Time
	// hosts are the compute hosts taken for down (hostDown), by hostId.
	hosts map[string]v1alpha1.HostFinding
}

// fault is why a case is unhealthy now ("" when it is not), with when its timer started and how long
// it runs; pending names a fault whose timer has not run out.
func (f *nodesFinding) fault(c *nodeCase, floor time.Time) (fault string, since, due time.Time) {
	sv, n, s := c.server, c.node, f.s
	switch {
	case c.gone:
		return FaultGone, c.prev.Since.Time, c.prev.Since.Time
	case sv.Status == "SHUTOFF" && n != nil && !nodes.Ready(n):
		return FaultShutOff, sv.Updated, sv.Updated
	case sv.Status != "ACTIVE" && !rebootingStatus[sv.Status]:
		return "", time.Time{}, time.Time{}
	case n == nil:
		if sv.Created.IsZero() {
			return "", time.Time{}, time.Time{}
		}
		start := laterOf(sv.Created, floor)
		return FaultNeverRegistered, start, start.Add(s.NodeStartupTimeout)
	}
	v := nodes.Judge(n, s.UnhealthyConditions, f.now, floor)
	switch {
	case v.Unhealthy:
		return v.Reason, v.Since, v.Since
	case nodes.Requested(n):
		return FaultRequested, f.now, f.now
	case v.Reason == "":
		return "", time.Time{}, time.Time{}
	}
	return v.Reason, v.Since, v.Due
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Unhealthy counts every server whose Node has an unhealthy condition now, due or not (the storm rule sees
// a mass failure as it starts, not only once its timers have run out), and every server that did not
// register within nodeStartupTimeout (a server still booting is no symptom: a scale-up is no storm), when
// servers.metadata proves it the cluster's (a bastion on the nodes' network is no unhealthy node).
func (f *nodesFinding) Unhealthy() []string {
	var ids []string
	counted := map[string]bool{}
	for _, c := range f.cases {
		if c.gone {
			continue
		}
		fault, _, due := f.fault(c, time.Time{})
		if fault == "" || fault == FaultShutOff || (fault == FaultNeverRegistered && (!f.proven || f.now.Before(due))) {
			continue
		}
		if h, down := f.hosts[c.server.HostID]; down {
			// a host taken for down is one failure: the storm rule counts it once
			if counted[h.HostID] {
				continue
			}
			counted[h.HostID] = true
		}
		ids = append(ids, c.server.ID)
	}
	return ids
}

// inFlight are the servers with a disruptive step under way, by pool: draining, or rebooted and within
// the step's timeout (their next step is theirs).
func inFlight(prev []v1alpha1.NodeEscalation) map[string][]string {
	out := map[string][]string{}
	for _, e := range prev {
		if e.Step == v1alpha1.EscalationObserved || e.Phase == v1alpha1.PhaseStopped || e.Pool == "" {
			continue
		}
		out[e.Pool] = append(out[e.Pool], e.Server)
	}
	return out
}

// actionFor is the policy's view of a step on c: a reboot is disruptive, a delete destructive (a removal
// whose evidence is the fault's first sighting), each in the node's pool, with etcd's quorum for a
// control-plane node.
func actionFor(c *nodeCase, e *v1alpha1.NodeEscalation, step string, q *remediation.Quorum) remediation.Action {
	a := remediation.Action{Verb: VerbRebootServer, Kind: "server", ID: c.server.ID, Name: c.server.Name, Class: remediation.Disruptive, Pool: c.pool, Quorum: q}
	if step == v1alpha1.EscalationDelete {
		a.Verb, a.Class, a.Removal, a.Evidence = VerbDeleteServer, remediation.Destructive, true, e.FirstSeen.Time
	}
	return a
}

// nodeAction is a write on c's Node, named by its server (exclusions match the server's ID or the node's name).
func nodeAction(c *nodeCase, verb string, class remediation.Class) remediation.Action {
	name := ""
	if c.node != nil {
		name = c.node.Name
	}
	return remediation.Action{Verb: verb, Kind: "server", ID: c.server.ID, Name: name, Class: class}
}

// nodeReport gathers what the repair did, for NodesHealthy's message.
type nodeReport struct {
	taken, failed, held, waiting, stopped, blocked []string
	// dups are the servers more than one Node names.
	dups          []string
	storm, frozen bool
}

func (r *nodeReport) add(list *[]string, id, msg string) { *list = append(*list, id+" "+msg) }

func (f *nodesFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	if f.err != nil {
		return []pass.Report{{Status: metav1.ConditionUnknown, Reason: pass.ReasonInvalidSpec, Message: f.err.Error()}}
	}
	outage := env.Pass.Outage()
	f.floor = outage.Last
	var rep nodeReport
	var kept []v1alpha1.NodeEscalation
	hist := newHistory(f.history, f.now.Add(-f.s.Window))
	for _, c := range f.cases {
		if len(c.dup) > 1 {
			msg := fmt.Sprintf("server %s is %s", c.server.ID, duplicateMessage(c.dup))
			rep.dups = append(rep.dups, c.server.ID+" ("+strings.Join(c.dup, ", ")+")")
			env.Warn(ReasonDuplicateProviderID, "Observe", msg)
		}
		p := f.plan(c, outage.Last)
		switch p.act {
		case actRecover:
			if f.recover(ctx, env, c, p.esc) {
				continue
			}
		case actTaint:
			f.taint(ctx, env, c, p.esc, &rep)
		case actStep:
			f.step(ctx, env, c, p, hist, &rep)
		case actAnswer:
			f.answer(ctx, env, c, &rep)
		}
		if p.esc != nil && p.fault == FaultShutOff {
			// after the taint, in its pass or a later one: once per escalation
			f.powerOn(ctx, env, c, p.esc, hist, &rep)
		}
		if p.stop != "" {
			msg := fmt.Sprintf("server %s (%s): %s; %s", c.server.ID, p.fault, p.stop, stopMessage(p.stop, f.s))
			if p.wait != "" {
				msg += " (" + p.wait + ")"
			}
			env.Warn("EscalationStopped", "Stop", msg)
		}
		if p.esc != nil {
			if p.esc.Phase == v1alpha1.PhaseStopped {
				rep.add(&rep.stopped, c.server.ID, p.esc.Stopped+": "+stopMessage(p.esc.Stopped, f.s))
			}
			kept = append(kept, *p.esc)
		}
		if p.wait != "" && p.fault != "" {
			rep.add(&rep.waiting, c.server.ID, p.wait)
		}
	}
	env.Read.Status.Escalations = kept
	env.Read.Status.History = hist.list()
	env.Read.Status.HostsDown = f.hostList()
	env.Read.Status.Counts.HostsDown = int32(len(f.hosts))
	for _, h := range env.Read.Status.HostsDown {
		env.Warn(ReasonHostDown, "Observe", hostMessage(h))
	}
	return f.report(env, kept, &rep, outage)
}

// recover ends an escalation: it uncordons the Node if flight cordoned it and takes off the taint flight
// put on (both safe); it reports whether the escalation may go (false: an undo failed, tried again next pass).
func (f *nodesFinding) recover(ctx context.Context, env *pass.Env[*State], c *nodeCase, e *v1alpha1.NodeEscalation) bool {
	wc := env.Workload.Client()
	if e.Tainted && c.node != nil {
		outcome, _, _ := env.Act(ctx, nodeAction(c, VerbUntaintNode, remediation.Safe), func(ctx context.Context) error {
			_, err := nodes.Taint(ctx, wc, c.node.Name, nodes.TaintOutOfService, false)
			return err
		})
		if outcome != pass.OutcomeDone {
			return false
		}
		e.Tainted = false
	}
	if e.Cordoned && c.node != nil && c.node.Spec.Unschedulable {
		outcome, _, _ := env.Act(ctx, nodeAction(c, VerbUncordonNode, remediation.Safe), func(ctx context.Context) error {
			return nodes.Cordon(ctx, wc, c.node, false)
		})
		if outcome != pass.OutcomeDone {
			return false
		}
	}
	if c.node != nil {
		f.drainConditions(ctx, env, c.node, corev1.ConditionFalse, corev1.ConditionFalse, nodes.ConditionReasonRecovered, "the node is healthy again: the node repair's drain is over", false)
	}
	env.Event(corev1.EventTypeNormal, "NodeRecovered", "Observe", fmt.Sprintf("server %s (node %s) is healthy again after %s, at step %s", e.Server, e.Node, e.Reason, e.Step))
	return true
}

func (f *nodesFinding) taint(ctx context.Context, env *pass.Env[*State], c *nodeCase, e *v1alpha1.NodeEscalation, rep *nodeReport) {
	a := nodeAction(c, VerbTaintNode, remediation.Disruptive)
	outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error {
		// Read again: the Node still not Ready as read, the server still off (or gone, for a server flight deleted).
		w := nodes.Want{Server: c.server.ID, Node: c.node.Name, ServerState: shutOff}
		w.Condition, _ = nodes.Condition(c.node, corev1.NodeReady)
		if _, err := nodes.Recheck(ctx, env.Workload.Client(), env.Cloud, w); err != nil {
			if reason, _ := fencing.ReasonOf(err); !c.gone || reason != nodes.ReasonServerGone {
				return err
			}
		}
		_, err := nodes.Taint(ctx, env.Workload.Client(), c.node.Name, nodes.TaintOutOfService, true)
		return err
	})
	switch outcome {
	case pass.OutcomeDone:
		e.Tainted = true
		rep.add(&rep.taken, c.server.ID, "out-of-service taint on node "+c.node.Name)
		env.Event(corev1.EventTypeNormal, "NodeTainted", VerbTaintNode, fmt.Sprintf("node %s: %s (server %s %s): its pods' volumes may detach and its StatefulSet pods move", c.node.Name, corev1.TaintNodeOutOfService, c.server.ID, e.Reason))
	case pass.OutcomeFailed:
		rep.add(&rep.failed, c.server.ID, "out-of-service taint: "+err.Error())
	default:
		rep.note(d, c.server.ID, "out-of-service taint")
	}
}

func (r *nodeReport) note(d remediation.Decision, id, what string) {
	r.storm = r.storm || d.Reason == remediation.ReasonStorm
	r.frozen = r.frozen || d.Reason == remediation.ReasonFrozen
	r.add(&r.held, id, what+" ("+d.Reason+")")
}

// step drains c's Node (cordon, then one round of evictions per pass) and takes the step once the drain
// is done, or timed out on an unreachable node; a never-registered server's step is taken at once.
func (f *nodesFinding) step(ctx context.Context, env *pass.Env[*State], c *nodeCase, p nodePlan, hist *history, rep *nodeReport) {
	e := p.esc
	var q *remediation.Quorum
	if c.controlPlane {
		qq, err := etcdQuorum(ctx, env, c)
		if err != nil {
			rep.add(&rep.failed, c.server.ID, "read etcd's members: "+err.Error())
			return
		}
		q = &qq
	}
	continuing := false
	if c.node != nil {
		draining := e.Phase == v1alpha1.PhaseDraining && e.Step == p.step
		da := nodeAction(c, VerbDrainNode, remediation.Disruptive)
		da.Pool, da.Quorum, da.Continuation = c.pool, q, draining
		if p.step == v1alpha1.EscalationDelete {
			da.Removal, da.Evidence = true, e.FirstSeen.Time
		}
		var res nodes.DrainResult
		wc := env.Workload.Client()
		evict := true
		if draining && c.node.Spec.Unschedulable {
			// A round with nothing to evict (every pod left is ending already, as evicted pods do for as long
			// as the node's kubelet is gone) writes nothing: it is no action, neither asked of the policy nor
			// recorded, or each pass of a long drain would add a status line and an Event of its own.
			pods, err := nodes.NodePods(ctx, wc, c.node.Name)
			if err != nil {
				rep.add(&rep.failed, c.server.ID, "drain of node "+c.node.Name+": "+err.Error())
				return
			}
			res, evict = nodes.Waiting(pods)
		}
		if evict {
			cordoned := false
			var at metav1.Time
			outcome, d, err := env.Act(ctx, da, func(ctx context.Context) error {
				// Each round of the drain reads the Node and the server again before its first write.
				if _, err := nodes.Recheck(ctx, wc, env.Cloud, f.want(c, f.floor, active)); err != nil {
					return err
				}
				at = metav1.NewTime(env.Time())
				if !c.node.Spec.Unschedulable {
					// Recorded before the cordon: a process stopped after it still knows to uncordon the node.
					rec := *e
					rec.Cordoned = true
					if !draining {
						rec.Step, rec.Phase, rec.Since = p.step, v1alpha1.PhaseDraining, at
					}
					if err := record(ctx, env, rec, nil); err != nil {
						return err
					}
				}
				if err := nodes.Cordon(ctx, wc, c.node, true); err != nil {
					return err
				}
				cordoned = true
				var err error
				res, err = nodes.Drain(ctx, wc, c.node.Name)
				return err
			})
			if cordoned {
				// Recorded once the cordon holds, whatever the evictions did after it: flight uncordons what it
				// cordoned, the drain's timeout runs from here, the next round is this step's (no new action),
				// and the pool counts the node in flight.
				if !c.node.Spec.Unschedulable {
					e.Cordoned = true // flight cordoned it: flight uncordons it
				}
				if !draining {
					e.Step, e.Phase, e.Since = p.step, v1alpha1.PhaseDraining, at
					env.Event(corev1.EventTypeNormal, "NodeDraining", VerbDrainNode, fmt.Sprintf("node %s (server %s, %s): cordoned and draining before a %s", c.node.Name, c.server.ID, e.Reason, p.step))
				}
			}
			switch outcome {
			case pass.OutcomeDone:
			case pass.OutcomeFailed:
				rep.add(&rep.failed, c.server.ID, "drain of node "+c.node.Name+": "+err.Error())
				return
			default:
				rep.note(d, c.server.ID, p.step+" (drain)")
				return
			}
		}
		if e.Phase == v1alpha1.PhaseDraining {
			f.drainState(ctx, env, c, p.step, res)
		}
		if !res.Done() {
			switch nodes.AfterDrain(c.node, e.Since.Time, f.now, f.s) {
			case nodes.DrainWaits:
				msg := fmt.Sprintf("draining node %s before a %s: %d pods left, %d evicted in this pass", c.node.Name, p.step, len(res.Left), len(res.Evicted))
				if len(res.Blocked) > 0 {
					msg += fmt.Sprintf(", %d held by a PodDisruptionBudget or refused by the API server (%s)", len(res.Blocked), strings.Join(res.Blocked, "; "))
				}
				rep.add(&rep.waiting, c.server.ID, msg)
				return
			case nodes.DrainEnds:
				f.drainEnds(ctx, env, c, p, res, hist, rep)
				return
			}
			env.Warn("DrainForced", VerbDrainNode, fmt.Sprintf("node %s is unreachable and its drain timed out (%s) with %d pods left (%s): the %s goes on",
				c.node.Name, f.s.DrainTimeout, len(res.Left), strings.Join(res.Left, ", "), p.step))
		}
		continuing = true
	}
	a := actionFor(c, e, p.step, q)
	a.Continuation = continuing
	var at metav1.Time
	recorded := false
	outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error {
		return takeStep(ctx, env, f.want(c, f.floor, active), p.step, func(ctx context.Context) error {
			// Recorded as started before the cloud call, as taken after it: a process stopped in between
			// neither repeats the step early nor loses it (PhaseStarted counts as taken).
			at = metav1.NewTime(env.Time())
			rec := *e
			rec.Step, rec.Phase, rec.Since = p.step, v1alpha1.PhaseStarted, at
			err := record(ctx, env, rec, &v1alpha1.StepRecord{Step: p.step, Time: at, Reason: e.Reason})
			recorded = err == nil
			return err
		})
	})
	if outcome == pass.OutcomeFailed && recorded && nodes.AnswerLost(err) {
		// Sent, maybe, and the answer lost: as a process stopped there, the step counts as taken (started at its
		// record), never sent again on the guess that it did not leave; the next step follows its timeout.
		e.Step, e.Phase, e.Since = p.step, v1alpha1.PhaseStarted, at
		hist.add(c.server.ID, v1alpha1.StepRecord{Step: p.step, Time: at, Reason: e.Reason})
		rep.add(&rep.failed, c.server.ID, p.step+" sent and its answer lost ("+err.Error()+"): counted as taken, not sent again")
		return
	}
	switch outcome {
	case pass.OutcomeDone:
		e.Step, e.Phase, e.Since = p.step, v1alpha1.PhaseTaken, metav1.NewTime(env.Time())
		hist.add(c.server.ID, v1alpha1.StepRecord{Step: p.step, Time: at, Reason: e.Reason})
		rep.add(&rep.taken, c.server.ID, p.step)
		env.Event(corev1.EventTypeNormal, "NodeEscalated", p.step, fmt.Sprintf("server %s (%s): %s, %s since %s", c.server.ID, c.server.Name, p.step, e.Reason, e.FirstSeen.UTC().Format(time.RFC3339)))
		if e.Reason == FaultRequested {
			f.answer(ctx, env, c, rep)
		}
	case pass.OutcomeFailed:
		rep.add(&rep.failed, c.server.ID, p.step+": "+err.Error())
	default:
		rep.note(d, c.server.ID, p.step)
	}
}

// drainEnds ends a drain that timed out on a reachable node (or with drain.force Never): a PodDisruptionBudget
// is never overridden, and a drain that cannot finish must not hold its pool for ever. The step is not taken;
// the node is uncordoned when flight cordoned it; the escalation goes back to Observed (its pool is free) with
// the drain in the history, so that the next drain waits perServer.cooldown (and counts toward maxSteps); the
// Warning and NodesHealthy name the pods left and the budgets that select them.
func (f *nodesFinding) drainEnds(ctx context.Context, env *pass.Env[*State], c *nodeCase, p nodePlan, res nodes.DrainResult, hist *history, rep *nodeReport) {
	e, wc := p.esc, env.Workload.Client()
	held := strings.Join(nodes.HeldBy(ctx, wc, c.node.Name, res.Left), ", ")
	msg := fmt.Sprintf("the drain of node %s before a %s timed out (%s) with %d pods left: %s; the node is reachable, so no PodDisruptionBudget is overridden: the %s is not taken, the node's pool is free, and the next drain waits perServer.cooldown (%s)",
		c.node.Name, p.step, f.s.DrainTimeout, len(res.Left), held, p.step, f.s.Cooldown)
	if e.Cordoned && c.node.Spec.Unschedulable {
		outcome, _, err := env.Act(ctx, nodeAction(c, VerbUncordonNode, remediation.Safe), func(ctx context.Context) error {
			return nodes.Cordon(ctx, wc, c.node, false)
		})
		if outcome != pass.OutcomeDone {
			// the drain ends once the node is schedulable again: tried again next pass
			rep.add(&rep.blocked, c.server.ID, msg+"; uncordoning it did not go through ("+outcome+errText(err)+")")
			return
		}
	}
	now := metav1.NewTime(env.Time())
	hist.add(c.server.ID, v1alpha1.StepRecord{Step: v1alpha1.EscalationDrainTimedOut, Time: now, Reason: e.Reason})
	e.Step, e.Phase, e.Since, e.Cordoned = v1alpha1.EscalationObserved, "", now, false
	f.drainConditions(ctx, env, c.node, corev1.ConditionFalse, corev1.ConditionFalse, v1alpha1.EscalationDrainTimedOut,
		fmt.Sprintf("the drain before a %s timed out (%s) with %d pods left; it is tried again after perServer.cooldown", p.step, f.s.DrainTimeout, len(res.Left)), false)
	env.Warn("DrainTimedOut", VerbDrainNode, msg)
	rep.add(&rep.blocked, c.server.ID, msg)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// record writes e, and the step st when set, into the flight block of the cluster's status now (pass.Env's
// WriteAhead), ahead of the write it precedes.
func record(ctx context.Context, env *pass.Env[*State], e v1alpha1.NodeEscalation, st *v1alpha1.StepRecord) error {
	return env.WriteAhead(ctx, func(s *v1alpha1.ClusterStatus) {
		if s.Flight == nil {
			s.Flight = &v1alpha1.FlightStatus{}
		}
		fl := s.Flight
		if i := slices.IndexFunc(fl.Escalations, func(x v1alpha1.NodeEscalation) bool { return x.Server == e.Server }); i >= 0 {
			fl.Escalations[i] = e
		} else {
			fl.Escalations = append(fl.Escalations, e)
		}
		if st != nil {
			h := newHistory(fl.History, time.Time{})
			h.add(e.Server, *st)
			fl.History = h.list()
		}
	})
}

// etcdQuorum reads etcd's members (kube-system pods labelled component=etcd, uncached) for a control-plane
// node's step.
func etcdQuorum(ctx context.Context, env *pass.Env[*State], c *nodeCase) (remediation.Quorum, error) {
	pods, err := nodes.EtcdPods(ctx, env.Workload.Client())
	if err != nil {
		return remediation.Quorum{}, err
	}
	return nodes.EtcdQuorum(c.node.Name, env.Read.Snapshot.Nodes, pods), nil
}

// takeStep reads the Node again from the API server and the server from Nova (through the cluster's
// scoped cloud: it must still be the project's), nodes.Recheck, and takes the step only if both are still as
// it was decided on (w).
func takeStep(ctx context.Context, env *pass.Env[*State], w nodes.Want, step string, started func(context.Context) error) error {
	fresh, err := nodes.Recheck(ctx, env.Workload.Client(), env.Cloud, w)
	if err != nil {
		return fmt.Errorf("%s not taken: %w", step, err)
	}
	if err := started(ctx); err != nil {
		return fmt.Errorf("%s not taken: %w", step, err)
	}
	sv := fresh.Server
	switch step {
	case v1alpha1.EscalationSoftReboot:
		return env.Cloud.RebootServer(ctx, sv.ID, false)
	case v1alpha1.EscalationHardReboot:
		return env.Cloud.RebootServer(ctx, sv.ID, true)
	}
	return env.Cloud.DeleteServer(ctx, sv.ID)
}

// report is NodesHealthy after the pass.
func (f *nodesFinding) report(env *pass.Env[*State], kept []v1alpha1.NodeEscalation, rep *nodeReport, outage remediation.Outage) []pass.Report {
	if len(kept) == 0 && len(rep.waiting) == 0 && len(rep.dups) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "NodesHealthy",
			Message: fmt.Sprintf("every ACTIVE server of the cluster (%d) has a healthy Node, or is still starting", f.active)}}
	}
	list := func(name string, l []string) string {
		if len(l) == 0 {
			return ""
		}
		return fmt.Sprintf("; %s %d [%s]", name, len(l), strings.Join(l, "; "))
	}
	summary := fmt.Sprintf("%d of %d servers unhealthy", len(f.Unhealthy()), f.active) + list("steps taken", rep.taken) + list("failed", rep.failed) +
		list("held back", rep.held) + list("drain blocked", rep.blocked) + list("stopped", rep.stopped) + list("waiting", rep.waiting) +
		list("named by several Nodes, never acted on", rep.dups)
	reason := "NodesUnhealthy"
	storm, why := remediation.Storm(env.Cluster, remediation.Scope{Unhealthy: len(env.Unhealthy), Total: len(env.Read.Snapshot.Servers)})
	switch {
	case storm || rep.storm:
		if why == "" {
			why = "the remediation policy's storm rule holds every disruptive step"
		}
		return []pass.Report{{Status: metav1.ConditionFalse, Reason: ReasonTooManyUnhealthy,
			Message: "too many unhealthy nodes to repair any (" + why + "): nothing is rebooted, drained or deleted; " + summary}}
	case rep.frozen || f.now.Before(outage.Until):
		reason = remediation.ReasonFrozen
		summary = fmt.Sprintf("frozen after an outage (%s, last seen %s) until %s, and every timer restarted; %s", outage.Why, outage.Last.UTC().Format(time.RFC3339), outage.Until.UTC().Format(time.RFC3339), summary)
	case len(f.hosts) > 0:
		reason = ReasonHostDown
		var hs []string
		for _, h := range f.hostList() {
			hs = append(hs, hostMessage(h))
		}
		summary = strings.Join(hs, "; ") + "; " + summary
	case len(rep.dups) > 0:
		reason = ReasonDuplicateProviderID
	case len(rep.failed) > 0:
		reason = "RepairFailed"
	case slices.ContainsFunc(kept, func(e v1alpha1.NodeEscalation) bool { return e.Stopped == StopRebootLoop }):
		reason = StopRebootLoop
	case slices.ContainsFunc(kept, func(e v1alpha1.NodeEscalation) bool { return e.Stopped == StopNoReplacement }):
		reason = StopNoReplacement
	case len(rep.blocked) > 0:
		reason = "DrainBlocked"
	}
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason, Message: summary}}
}

// history is status.flight.history being rewritten: each server's steps within the window.
type history struct {
	since time.Time
	by    map[string][]v1alpha1.StepRecord
	order []string
}

// maxHistoryServers bounds status.flight.history (the CRD's limit); maxHistorySteps each server's steps.
const (
	maxHistoryServers = 1000
	maxHistorySteps   = 100
)

func newHistory(prev []v1alpha1.ServerHistory, since time.Time) *history {
	h := &history{since: since, by: map[string][]v1alpha1.StepRecord{}}
	for _, s := range prev {
		for _, st := range s.Steps {
			if st.Time.After(since) {
				h.add(s.Server, st)
			}
		}
	}
	return h
}

func (h *history) add(server string, st v1alpha1.StepRecord) {
	if _, ok := h.by[server]; !ok {
		h.order = append(h.order, server)
	}
	steps := append(h.by[server], st)
	if n := len(steps) - maxHistorySteps; n > 0 {
		steps = steps[n:]
	}
	h.by[server] = steps
}

func (h *history) list() []v1alpha1.ServerHistory {
	order := h.order
	if n := len(order) - maxHistoryServers; n > 0 {
		order = order[n:]
	}
	var out []v1alpha1.ServerHistory
	for _, s := range order {
		out = append(out, v1alpha1.ServerHistory{Server: s, Steps: h.by[s]})
	}
	return out
}
