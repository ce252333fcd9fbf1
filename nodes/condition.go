package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ConditionPodRouteDuplicate is the Node condition the operator's flight sets on a Node whose pod CIDR has
// more than one route on the cluster's router (True), and clears (False) once one is left: what the
// cluster's status says, on the Node the duplicate concerns, as node-problem-detector reports a node's own
// problems.
const ConditionPodRouteDuplicate corev1.NodeConditionType = "PodRouteDuplicate"

// The node-lifecycle conditions of Kubernetes' Node Lifecycle Conditions proposal, which the node repair writes
// on a Node it drains: DrainInProgress True from the cordon until the drain is done or ends, Drained True once
// every pod that had to go is gone; both False (with the reason) once the drain ends unfinished or the node is
// back.
const (
	ConditionDrainInProgress corev1.NodeConditionType = "DrainInProgress"
	ConditionDrained         corev1.NodeConditionType = "Drained"
)

// The reasons of the drain conditions, the same on every node-repair path.
const (
	ConditionReasonDraining      = "Draining"
	ConditionReasonDrained       = "Drained"
	ConditionReasonDrainTimedOut = "DrainTimedOut"
	ConditionReasonRecovered     = "Recovered"
)

// VerbSetNodeCondition is the remediation policy's verb of a Node condition's write (a safe action).
const VerbSetNodeCondition = "SetNodeCondition"

// DrainConditions are the drain conditions (DrainInProgress, Drained) with the statuses, reason and message
// given that n needs written: those that differ from n's. A drain round writes both (all: a Node shows the
// whole state once a drain began); the end of a drain or a recovery (all false) writes none that n never had
// unless True (a Node never drained says nothing of drains).
func DrainConditions(n *corev1.Node, inProgress, drained corev1.ConditionStatus, reason, msg string, all bool) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, cond := range []corev1.NodeCondition{
		{Type: ConditionDrainInProgress, Status: inProgress, Reason: reason, Message: msg},
		{Type: ConditionDrained, Status: drained, Reason: reason, Message: msg},
	} {
		cur, had := Condition(n, cond.Type)
		if had && cur.Status == cond.Status && cur.Reason == cond.Reason && cur.Message == cond.Message || !had && !all && cond.Status != corev1.ConditionTrue {
			continue
		}
		out = append(out, cond)
	}
	return out
}

// DrainRound is the drain conditions of a drain round with result res before step (why: what the step is for;
// "" when nothing more is known): in progress, or done.
func DrainRound(step, why string, res DrainResult) (inProgress, drained corev1.ConditionStatus, reason, msg string) {
	what := step
	if why != "" {
		what += " (" + why + ")"
	}
	if res.Done() {
		return corev1.ConditionFalse, corev1.ConditionTrue, ConditionReasonDrained, "cordoned and drained by the node repair before a " + what
	}
	return corev1.ConditionTrue, corev1.ConditionFalse, ConditionReasonDraining, fmt.Sprintf("cordoned and draining before a %s: %d pods left", step, len(res.Left))
}

// NeedsCondition says whether n's condition of cond's type differs from cond in status, reason or message
// (a Node without it needs it only when cond is True: a problem never seen is not reported as gone).
func NeedsCondition(n *corev1.Node, cond corev1.NodeCondition) bool {
	cur, ok := Condition(n, cond.Type)
	if !ok {
		return cond.Status == corev1.ConditionTrue
	}
	return cur.Status != cond.Status || cur.Reason != cond.Reason || cur.Message != cond.Message
}

// SetCondition writes cond on n's status (a strategic merge patch of that one condition, keyed by its type:
// the kubelet's and other writers' conditions are left as they are), when NeedsCondition says so. Its
// lastTransitionTime is now when the status changes, else kept; lastHeartbeatTime is now. The write goes
// through c, so through the fence of ctx. It reports whether it wrote.
func SetCondition(ctx context.Context, c client.Client, n *corev1.Node, cond corev1.NodeCondition, now time.Time) (bool, error) {
	if !NeedsCondition(n, cond) {
		return false, nil
	}
	return true, WriteCondition(ctx, c, n, cond, now)
}

// WriteCondition writes cond on n's status as SetCondition does, whether or not NeedsCondition says so (a
// condition False that n never had, say).
func WriteCondition(ctx context.Context, c client.Client, n *corev1.Node, cond corev1.NodeCondition, now time.Time) error {
	cond.LastHeartbeatTime = metav1.NewTime(now)
	cond.LastTransitionTime = metav1.NewTime(now)
	if cur, ok := Condition(n, cond.Type); ok && cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{cond}}})
	if err != nil {
		return fmt.Errorf("encode condition %s of node %s: %w", cond.Type, n.Name, err)
	}
	if err := c.Status().Patch(ctx, n.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return fmt.Errorf("set condition %s=%s of node %s: %w", cond.Type, cond.Status, n.Name, err)
	}
	return nil
}
