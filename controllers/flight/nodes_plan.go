package flight

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/nodes"
)

// nodeAct is what the node repair does for one case in a pass.
type nodeAct int

const (
	// actNone: nothing to do in this pass (the zero plan).
	actNone nodeAct = iota
	// actRecover: the node is healthy again: uncordon and untaint what flight did, end the escalation.
	actRecover
	// actStep: drain (a Node) and take the step.
	actStep
	// actTaint: put the out-of-service taint on the Node of a server that is off or gone.
	actTaint
	// actAnswer: take nodes.AnnotationRemediate off a Node whose requested step was taken.
	actAnswer
)

// nodePlan is the plan for one case: what to do, and the escalation to keep (nil: none).
type nodePlan struct {
	act   nodeAct
	step  string
	fault string
	esc   *v1alpha1.NodeEscalation
	// wait says why nothing happens now; stop is a reason the escalation stops at in this pass.
	wait, stop string
}

// plan decides one case at f.now, no timer starting before floor (the last outage).
func (f *nodesFinding) plan(c *nodeCase, floor time.Time) nodePlan {
	now, s := f.now, f.s
	fault, since, due := f.fault(c, floor)
	e := c.prev
	if fault == "" && c.had && rebootingStatus[c.server.Status] {
		fault, due = e.Reason, now // rebooting: neither healed nor a new fault
	}
	if fault == "" {
		if !c.had {
			return nodePlan{}
		}
		return nodePlan{act: actRecover, esc: &e}
	}
	p := nodePlan{fault: fault}
	if fault == FaultNeverRegistered && !f.proven {
		p.wait = "not repaired: no Node names it, and without servers.metadata nothing proves it a server of the cluster (a port on networkID is no proof): reported, never rebooted"
		return p
	}
	if c.skip != "" {
		p.wait = "not repaired: " + c.skip
		if c.had && (e.Cordoned || e.Tainted) {
			p.esc = &e // what flight did stays recorded until the node heals
		}
		return p
	}
	if !c.had {
		if now.Before(due) {
			p.wait = fmt.Sprintf("%s since %s, unhealthy from %s", fault, since.UTC().Format(time.RFC3339), due.UTC().Format(time.RFC3339))
			return p
		}
		e = v1alpha1.NodeEscalation{Server: c.server.ID, Step: v1alpha1.EscalationObserved, Since: metav1.NewTime(now), FirstSeen: ptrTime(now)}
	}
	if e.FirstSeen == nil {
		e.FirstSeen = e.Since.DeepCopy()
	}
	if fault == FaultRequested && answered(c) {
		// the request's step was taken, and taking the annotation off did not go through then
		p.esc, p.act = &e, actAnswer
		p.wait = "its requested " + e.Step + " was taken; the request (" + nodes.AnnotationRemediate + ") is taken off"
		return p
	}
	e.Reason, e.Pool = fault, c.pool
	if c.node != nil {
		e.Node = c.node.Name
	}
	p.esc = &e
	if fault == FaultShutOff || fault == FaultGone {
		if c.node != nil && !e.Tainted {
			p.act = actTaint
		} else {
			p.wait = "out-of-service taint on, until the node is back or its Node is deleted"
		}
		return p
	}
	if c.owner.Manager == nodes.ManagerClusterAPI {
		if e.Phase != v1alpha1.PhaseStopped || e.Stopped != StopClusterAPI {
			p.stop = StopClusterAPI // refused, once: a Warning naming the Machine
		}
		e.Phase, e.Stopped = v1alpha1.PhaseStopped, StopClusterAPI
		p.wait = fmt.Sprintf("a Cluster API Machine's node (%s %s): its MachineHealthCheck remediates it (Vitals as external remediation), never flight", c.owner.By, c.owner.Name)
		return p
	}
	if !c.had {
		p.wait = "first seen " + fault + "; the first step follows at the next pass"
		return p
	}
	if now.Before(due) {
		// the outage floor moved the timer on: the escalation waits as if it had just begun
		p.wait = fmt.Sprintf("%s: its timer restarted after an outage, unhealthy from %s", fault, due.UTC().Format(time.RFC3339))
		return p
	}
	if rebootingStatus[c.server.Status] {
		p.wait = "rebooting (" + c.server.Status + ")"
		return p
	}
	if e.Phase == v1alpha1.PhaseStopped {
		p.wait = "stopped: " + e.Stopped
		return p
	}
	next, at, stop := f.next(c, e, floor)
	if stop != "" {
		e.Phase, e.Stopped = v1alpha1.PhaseStopped, stop
		p.stop = stop
		return p
	}
	if h, down := f.hosts[c.server.HostID]; down && next != v1alpha1.EscalationDelete {
		// No reboot on a host taken for down: a server a manager replaces is deleted once the whole ladder's
		// time has passed, the others wait for the host (or an administrator's evacuation).
		if why := c.noDelete(s); why != "" {
			p.wait = "no reboot: " + hostMessage(h) + "; " + stopMessage(why, s)
			return p
		}
		// from the later of the escalation's start and the host's first sighting as down: a host that comes
		// back within the ladder's time keeps its servers
		next, at = v1alpha1.EscalationDelete, laterOf(laterOf(e.FirstSeen.Time, h.Since.Time), floor).Add(s.SoftReboot+s.HardReboot)
	}
	draining := e.Phase == v1alpha1.PhaseDraining && e.Step == next
	if !draining {
		if n := stepsSince(c.steps, now.Add(-s.Window)); n >= s.MaxSteps {
			e.Phase, e.Stopped = v1alpha1.PhaseStopped, StopRebootLoop
			p.stop = StopRebootLoop
			p.wait = fmt.Sprintf("%d steps in the last %s (perServer.maxSteps %d)", n, s.Window, s.MaxSteps)
			return p
		}
		if last, ok := earlierStep(c.steps, e); e.Step == v1alpha1.EscalationObserved && ok {
			if cool := last.Time.Add(s.Cooldown); now.Before(cool) {
				p.wait = fmt.Sprintf("cooling down after the last step at %s: %s no earlier than %s (perServer.cooldown %s)",
					last.Time.UTC().Format(time.RFC3339), next, cool.UTC().Format(time.RFC3339), s.Cooldown)
				return p
			}
		}
		if now.Before(at) {
			p.wait = fmt.Sprintf("%s due at %s", next, at.UTC().Format(time.RFC3339))
			return p
		}
	}
	p.act, p.step = actStep, next
	return p
}

// next is the step after e's, when it is due, or why none follows.
func (f *nodesFinding) next(c *nodeCase, e v1alpha1.NodeEscalation, floor time.Time) (string, time.Time, string) {
	s := f.s
	if e.Phase == v1alpha1.PhaseDraining {
		return e.Step, e.Since.Time, ""
	}
	start := laterOf(e.Since.Time, floor)
	if e.PoweredOn != nil && e.Step == v1alpha1.EscalationObserved {
		// started after a crash: its node boots before a reboot is asked of it, as after a soft reboot
		return v1alpha1.EscalationSoftReboot, laterOf(e.PoweredOn.Time, floor).Add(s.SoftReboot), ""
	}
	switch e.Step {
	case v1alpha1.EscalationSoftReboot:
		return v1alpha1.EscalationHardReboot, start.Add(s.SoftReboot), ""
	case v1alpha1.EscalationHardReboot, v1alpha1.EscalationDelete:
		// a delete that did not take (the server is still listed) is asked for again
		if stop := c.noDelete(s); stop != "" {
			return "", time.Time{}, stop
		}
		return v1alpha1.EscalationDelete, start.Add(s.HardReboot), ""
	}
	return v1alpha1.EscalationSoftReboot, e.Since.Time, ""
}

// noDelete is why c's server is never deleted ("" when it may be), a stop reason: its manager (Cluster
// API, Gardener, Magnum) replaces it itself, or deleting is off or no manager would replace it
// (repairs.nodes.delete, replacement.metadataKey). The node repair and the errored-servers repair both
// apply it.
func (c *nodeCase) noDelete(s v1alpha1.NodeSettings) string {
	switch {
	case c.owner.Manager != "":
		return "ManagedBy" + c.owner.Manager
	case !s.Delete || !c.replaceable:
		return StopNoReplacement
	}
	return ""
}

// earlierStep is the last step of an earlier escalation of the server (the cooldown runs from it): a power-on of
// e itself (taken while it was Observed) is e's own step, after which the ladder goes on with no cooldown.
func earlierStep(steps []v1alpha1.StepRecord, e v1alpha1.NodeEscalation) (v1alpha1.StepRecord, bool) {
	for i := len(steps) - 1; i >= 0; i-- {
		if st := steps[i]; st.Step != StepPowerOn || e.FirstSeen == nil || st.Time.Time.Before(e.FirstSeen.Time) {
			return st, true
		}
	}
	return v1alpha1.StepRecord{}, false
}

// stepsSince counts the steps taken after t.
func stepsSince(steps []v1alpha1.StepRecord, t time.Time) int {
	n := 0
	for _, st := range steps {
		if st.Time.After(t) {
			n++
		}
	}
	return n
}

// stopMessage explains a stop reason.
func stopMessage(stop string, s v1alpha1.NodeSettings) string {
	switch stop {
	case StopNoReplacement:
		if !s.Delete {
			return "deleting is turned off (repairs.nodes.delete: false): a human replaces the server"
		}
		if s.ReplacementKey == "" {
			return "no manager replaces deleted servers (repairs.nodes.replacement names none): a human replaces the server"
		}
		return "the server lacks metadata " + s.ReplacementKey + " (repairs.nodes.replacement): no manager would replace it, a human does"
	case StopRebootLoop:
		return fmt.Sprintf("%d steps within %s (perServer.maxSteps): left alone, it keeps failing", s.MaxSteps, s.Window)
	case StopClusterAPI:
		return "a Cluster API Machine's node: its MachineHealthCheck remediates it"
	}
	return "its manager (" + stop + ") replaces it: flight never deletes it"
}

// answered reports whether c's escalation took the step its Node's request (nodes.AnnotationRemediate) asked
// for: a request is answered by one step, and asks for the next only when made again.
func answered(c *nodeCase) bool {
	e := c.prev
	return c.had && e.Reason == FaultRequested && (e.Phase == v1alpha1.PhaseTaken || e.Phase == v1alpha1.PhaseStarted) &&
		e.Step != v1alpha1.EscalationObserved
}
