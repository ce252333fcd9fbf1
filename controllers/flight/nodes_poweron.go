package flight

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbStartServer is the node repair's power-on of a server that crashed off.
const VerbStartServer = "StartServer"

// StepPowerOn is the history's name of a power-on (status.flight.history: it counts toward perServer.maxSteps).
const StepPowerOn = "PowerOn"

// stoppedBy reads a server's instance-action log for why it is off: "" when no user stopped it since it last ran
// (the newest stop is the cloud's own, Nova's power-state sync after its compute host crashed; or it was started
// after the last stop, or never stopped), else the user's stop it was.
func stoppedBy(actions []openstack.ServerAction) string {
	for i := len(actions) - 1; i >= 0; i-- {
		switch a := actions[i]; a.Action {
		case "start":
			return "" // it ran after the last stop: it went off without one
		case "stop":
			if a.UserID == "" {
				return ""
			}
			return fmt.Sprintf("stopped by user %s at %s (request %s)", a.UserID, a.StartTime.UTC().Format(time.RFC3339), a.RequestID)
		}
	}
	return ""
}

// powerOn starts the SHUTOFF server of c, whose Node carries the out-of-service taint, once per escalation: when
// its Node has been unhealthy past its dwell, no manager owns the server, and no user stopped it. The start is
// asked of the policy (disruptive: budget, dry-run, pauses, exclusions, storm, outage freeze), recorded before the
// call (e.PoweredOn and the history: a restart never starts it twice) and taken only when the server, read again,
// is still SHUTOFF and the Node, read again uncached, still not Ready as decided on.
func (f *nodesFinding) powerOn(ctx context.Context, env *pass.Env[*State], c *nodeCase, e *v1alpha1.NodeEscalation, hist *history, rep *nodeReport) {
	switch {
	case !f.s.PowerOn || c.skip != "" || c.node == nil || c.gone || !e.Tainted || e.PoweredOn != nil || c.server.Status != "SHUTOFF":
		return
	case c.owner.Manager != "":
		rep.add(&rep.waiting, c.server.ID, "SHUTOFF: its manager ("+c.owner.Manager+") powers it on or replaces it, never flight")
		return
	}
	if v := nodes.Judge(c.node, f.s.UnhealthyConditions, f.now, f.floor); !v.Unhealthy {
		rep.add(&rep.waiting, c.server.ID, "SHUTOFF: powered on once its Node has been unhealthy past its dwell")
		return
	}
	actions, err := env.Cloud.ListServerActions(ctx, c.server.ID)
	if err != nil {
		rep.add(&rep.failed, c.server.ID, "read its instance actions before a power-on: "+err.Error())
		return
	}
	if by := stoppedBy(actions); by != "" {
		rep.add(&rep.waiting, c.server.ID, "SHUTOFF, "+by+": left off")
		return
	}
	var at metav1.Time
	w := f.want(c, f.floor, shutOff)
	w.Condition, _ = nodes.Condition(c.node, corev1.NodeReady)
	outcome, d, err := env.Act(ctx, nodeAction(c, VerbStartServer, remediation.Disruptive), func(ctx context.Context) error {
		fresh, err := nodes.Recheck(ctx, env.Workload.Client(), env.Cloud, w)
		if err != nil {
			return fmt.Errorf("power-on not taken: %w", err)
		}
		// Recorded before the cloud call: a process stopped in between never starts the server a second time.
		at = metav1.NewTime(env.Time())
		rec := *e
		rec.PoweredOn = &at
		if err := record(ctx, env, rec, &v1alpha1.StepRecord{Step: StepPowerOn, Time: at, Reason: e.Reason}); err != nil {
			return fmt.Errorf("power-on not taken: %w", err)
		}
		e.PoweredOn = &at
		return env.Cloud.StartServer(ctx, fresh.Server.ID)
	})
	switch outcome {
	case pass.OutcomeDone:
		hist.add(c.server.ID, v1alpha1.StepRecord{Step: StepPowerOn, Time: at, Reason: e.Reason})
		rep.add(&rep.taken, c.server.ID, "power-on (SHUTOFF with no user's stop)")
		env.Event(corev1.EventTypeNormal, "ServerPoweredOn", VerbStartServer, fmt.Sprintf("server %s (node %s) was SHUTOFF with no user's stop since it last ran (a compute host's crash): started; the out-of-service taint stays until the node is back", c.server.ID, c.node.Name))
	case pass.OutcomeFailed:
		if e.PoweredOn != nil {
			hist.add(c.server.ID, v1alpha1.StepRecord{Step: StepPowerOn, Time: at, Reason: e.Reason})
		}
		rep.add(&rep.failed, c.server.ID, "power-on: "+err.Error())
	default:
		rep.note(d, c.server.ID, "power-on")
	}
}
