package nodes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// TestAfterDrain: a drain that leaves pods waits within its timeout, goes on past it only on an unreachable
// Node with force WhenUnreachable, and ends otherwise (a reachable Node's PodDisruptionBudget is never
// overridden).
func TestAfterDrain(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	node := func(ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	}
	when := v1alpha1.NodeSettings{DrainTimeout: 10 * time.Minute, DrainForce: v1alpha1.DrainForceWhenUnreachable}
	never := v1alpha1.NodeSettings{DrainTimeout: 10 * time.Minute, DrainForce: v1alpha1.DrainForceNever}
	for _, tc := range []struct {
		name  string
		node  *corev1.Node
		after time.Duration
		s     v1alpha1.NodeSettings
		want  DrainOutcome
	}{
		{"within the timeout, reachable", node(corev1.ConditionTrue), 9 * time.Minute, when, DrainWaits},
		{"within the timeout, unreachable", node(corev1.ConditionUnknown), 9 * time.Minute, when, DrainWaits},
		{"timed out, unreachable", node(corev1.ConditionUnknown), 10 * time.Minute, when, DrainForced},
		{"timed out, reachable", node(corev1.ConditionTrue), 10 * time.Minute, when, DrainEnds},
		{"timed out, NotReady but reporting", node(corev1.ConditionFalse), time.Hour, when, DrainEnds},
		{"timed out, unreachable, force Never", node(corev1.ConditionUnknown), time.Hour, never, DrainEnds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AfterDrain(tc.node, start, start.Add(tc.after), tc.s); got != tc.want {
				t.Errorf("AfterDrain = %v, want %v", got, tc.want)
			}
		})
	}
}
