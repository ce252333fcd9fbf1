package flight

import (
	"context"

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
	inProgress, drained, reason, msg := nodes.DrainRound(step, c.prev.Reason, res)
	f.drainConditions(ctx, env, c.node, inProgress, drained, reason, msg, true)
}

// drainConditions sets the drain conditions on n that change (nodes.DrainConditions): a safe action each. They
// say what the repair does; a failed write is logged and never holds the repair.
func (f *nodesFinding) drainConditions(ctx context.Context, env *pass.Env[*State], n *corev1.Node, inProgress, drained corev1.ConditionStatus, reason, msg string, all bool) {
	for _, cond := range nodes.DrainConditions(n, inProgress, drained, reason, msg, all) {
		a := remediation.Action{Verb: VerbSetNodeCondition, Kind: "node", ID: n.Name, Name: string(cond.Type) + "=" + string(cond.Status), Class: remediation.Safe}
		outcome, _, err := env.Act(ctx, a, func(ctx context.Context) error {
			return nodes.WriteCondition(ctx, env.Workload.Client(), n, cond, env.Time())
		})
		if outcome == pass.OutcomeFailed {
			logf.FromContext(ctx).Error(err, "node condition not written", "node", n.Name, "condition", cond.Type)
		}
	}
}
