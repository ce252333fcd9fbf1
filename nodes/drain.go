package nodes

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/openstack"
)

// The remediation policy's verbs of the node steps, the same on every path (flight's node repair and the Cluster
// API remediation): the budgets, Events and status lines name a step alike whichever path took it.
const (
	VerbRebootServer = "RebootServer"
	VerbDrainNode    = "DrainNode"
	VerbUncordonNode = "UncordonNode"
)

// DrainOutcome is what a drain round that left pods means for the step it precedes.
type DrainOutcome int

const (
	// DrainWaits: the drain is within its timeout: the step waits for the next round.
	DrainWaits DrainOutcome = iota
	// DrainForced: the drain timed out on an unreachable Node (Ready Unknown, no kubelet to end a pod
	// gracefully) with drain.force WhenUnreachable: the step goes on without it.
	DrainForced
	// DrainEnds: the drain timed out on a reachable Node, or with drain.force Never: no PodDisruptionBudget is
	// overridden, the step is not taken, the Node is uncordoned and its pool freed, and the next drain waits
	// perServer.cooldown.
	DrainEnds
)

// AfterDrain judges a drain of n begun at started that still leaves pods at now, by the cluster's node settings
// (drain.timeout, drain.force). Both node-repair paths judge a drain by it.
func AfterDrain(n *corev1.Node, started, now time.Time, s v1alpha1.NodeSettings) DrainOutcome {
	if now.Before(started.Add(s.DrainTimeout)) {
		return DrainWaits
	}
	if s.DrainForce == v1alpha1.DrainForceWhenUnreachable && Unreachable(n) {
		return DrainForced
	}
	return DrainEnds
}

// HeldBy names the pods a drain of node left (left: "namespace/name"), each with the PodDisruptionBudgets that
// select it, read through r (uncached); a failed read names the pods alone.
func HeldBy(ctx context.Context, r client.Reader, node string, left []string) []string {
	pods, err := NodePods(ctx, r, node)
	if err != nil {
		return left
	}
	pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return !slices.Contains(left, p.Namespace+"/"+p.Name) })
	by, err := Budgets(ctx, r, pods)
	if err != nil {
		return left
	}
	out := make([]string, 0, len(left))
	for _, id := range left {
		if b := by[id]; len(b) > 0 {
			id += " (PodDisruptionBudget " + strings.Join(b, ", ") + ")"
		}
		out = append(out, id)
	}
	return out
}

// AnswerLost reports whether err, of a step's cloud call that was sent (its record written ahead), leaves unknown
// whether the cloud took it: no answer came (the connection failed, the time ran out) or a server error. A fence's
// refusal was never sent, and an answer of 4xx says the cloud did not take it. Such a step is never sent again
// on the guess that it did not leave: it counts as taken (flight), or the cloud's log tells (the Cluster API path).
func AnswerLost(err error) bool {
	if err == nil {
		return false
	}
	if _, fenced := fencing.ReasonOf(err); fenced {
		return false
	}
	_, code := openstack.ClassOf(err)
	return code == 0 || code >= 500
}
