package flight

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbAnswerRequest takes a Node's repair request (nodes.AnnotationRemediate) off once its step is taken.
const VerbAnswerRequest = "AnswerRemediationRequest"

// answer takes the repair request off c's Node: its step was taken (a safe write, recorded). A failure is
// tried again at the next pass, which takes no further step on the request meanwhile (answered).
func (f *nodesFinding) answer(ctx context.Context, env *pass.Env[*State], c *nodeCase, rep *nodeReport) {
	if c.node == nil || !nodes.Requested(c.node) {
		return
	}
	outcome, _, err := env.Act(ctx, nodeAction(c, VerbAnswerRequest, remediation.Safe), func(ctx context.Context) error {
		return nodes.Unrequest(ctx, env.Workload.Client(), c.node)
	})
	if outcome == pass.OutcomeFailed {
		rep.add(&rep.failed, c.server.ID, "take "+nodes.AnnotationRemediate+" off node "+c.node.Name+": "+err.Error())
	}
}

// drainState writes the node-lifecycle conditions of a drain round on c's Node: in progress, or done.
func (f *nodesFinding) drainState(ctx context.Context, env *pass.Env[*State], c *nodeCase, step string, res nodes.DrainResult) {
	if res.Done() {
		f.drainConditions(ctx, env, c.node, corev1.ConditionFalse, corev1.ConditionTrue, "Drained",
			fmt.Sprintf("cordoned and drained by the node repair before a %s (%s)", step, c.prev.Reason), true)
		return
	}
	f.drainConditions(ctx, env, c.node, corev1.ConditionTrue, corev1.ConditionFalse, "Draining",
		fmt.Sprintf("cordoned and draining before a %s: %d pods left", step, len(res.Left)), true)
}

// drainConditions sets ConditionDrainInProgress and ConditionDrained on n when they change: a safe action each
// (SetNodeCondition). A drain round writes both (all: a Node shows the whole state once a drain began); the end
// of a drain or a recovery writes none that was never written (a Node never drained says nothing of drains). They say what the repair does; a
// failed write is logged and never holds the repair.
func (f *nodesFinding) drainConditions(ctx context.Context, env *pass.Env[*State], n *corev1.Node, inProgress, drained corev1.ConditionStatus, reason, msg string, all bool) {
	for _, cond := range []corev1.NodeCondition{
		{Type: nodes.ConditionDrainInProgress, Status: inProgress, Reason: reason, Message: msg},
		{Type: nodes.ConditionDrained, Status: drained, Reason: reason, Message: msg},
	} {
		cur, had := nodes.Condition(n, cond.Type)
		if had && cur.Status == cond.Status && cur.Reason == cond.Reason && cur.Message == cond.Message || !had && !all && cond.Status != corev1.ConditionTrue {
			continue
		}
		a := remediation.Action{Verb: VerbSetNodeCondition, Kind: "node", ID: n.Name, Name: string(cond.Type) + "=" + string(cond.Status), Class: remediation.Safe}
		outcome, _, err := env.Act(ctx, a, func(ctx context.Context) error {
			return nodes.WriteCondition(ctx, env.Workload.Client(), n, cond, env.Time())
		})
		if outcome == pass.OutcomeFailed {
			logf.FromContext(ctx).Error(err, "node condition not written", "node", n.Name, "condition", cond.Type)
		}
	}
}
