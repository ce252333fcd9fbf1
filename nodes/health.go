package nodes

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// ReasonSandboxNetworkFailures is the Vitals agent's PodNetworkHealthy reason when only kubelet's Events
// turned it False: anyone allowed to create Events in a namespace with a pod on the node can cause it, so it
// is never evidence for a repair (the CNI's own reports, CNIAddFailuresExceeded, are).
const ReasonSandboxNetworkFailures = "SandboxNetworkFailures"

// Verdict is what the unhealthy conditions say of one Node.
type Verdict struct {
	// Unhealthy: a condition has held its status for its timeout.
	Unhealthy bool
	// Reason names the condition ("Ready=Unknown"), Since when its timer started (its lastTransitionTime,
	// or floor when later): for an unhealthy Node the one that tripped first, else the one due first.
	Reason string
	Since  time.Time
	// Due is when a matching condition that has not yet held long enough will (zero: none matches).
	Due time.Time
	// Condition is the Node's condition Reason names (what Recheck checks again at the write).
	Condition corev1.NodeCondition
}

// Judge applies conds to n at now. A timer never starts before floor (the end of the last outage: the
// conditions written while the workload API server or the kubelets could not talk are not evidence), nor
// is a condition without a lastTransitionTime judged unhealthy (no timer to measure), nor one whose reason
// is ReasonSandboxNetworkFailures.
func Judge(n *corev1.Node, conds []v1alpha1.UnhealthyCondition, now, floor time.Time) Verdict {
	var v Verdict
	for _, uc := range conds {
		for _, c := range n.Status.Conditions {
			if string(c.Type) != uc.Type || string(c.Status) != uc.Status || c.LastTransitionTime.IsZero() || c.Reason == ReasonSandboxNetworkFailures {
				continue
			}
			since := c.LastTransitionTime.Time
			if floor.After(since) {
				since = floor
			}
			due := since.Add(uc.Timeout.Duration)
			reason := fmt.Sprintf("%s=%s", c.Type, c.Status)
			if !now.Before(due) {
				if !v.Unhealthy || due.Before(v.Since.Add(uc.Timeout.Duration)) {
					v.Unhealthy, v.Reason, v.Since, v.Condition = true, reason, since, c
				}
				continue
			}
			if !v.Unhealthy && (v.Due.IsZero() || due.Before(v.Due)) {
				v.Reason, v.Since, v.Due, v.Condition = reason, since, due, c
			}
		}
	}
	return v
}

// Condition returns n's condition of type t.
func Condition(n *corev1.Node, t corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	if n == nil {
		return corev1.NodeCondition{}, false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

// Ready reports whether n's Ready condition is True.
func Ready(n *corev1.Node) bool {
	c, ok := Condition(n, corev1.NodeReady)
	return ok && c.Status == corev1.ConditionTrue
}

// Unreachable reports whether n's kubelet no longer reports (Ready Unknown, as the node lifecycle
// controller sets it when the Lease and status stop): no pod on it can end gracefully.
func Unreachable(n *corev1.Node) bool {
	c, ok := Condition(n, corev1.NodeReady)
	return ok && c.Status == corev1.ConditionUnknown
}
