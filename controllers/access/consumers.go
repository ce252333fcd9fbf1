package access

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// MaxStaleConsumers bounds the stale pods named per Secret (status.access.workloadCredentials[].staleConsumers).
const MaxStaleConsumers = 16

// usesSecret reports whether pod reads the Secret name: a secret volume, a projected volume's secret source, or
// an env or envFrom of any container (init containers too) that refers to it.
func usesSecret(pod *corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == name {
			return true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil && s.Secret.Name == name {
					return true
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name {
					return true
				}
			}
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil && e.SecretRef.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// podStarted is when pod's containers started, as far as the API shows: the earliest start of its containers
// that ever started (running, or terminated since); for a pod none of whose containers ever started (not yet
// scheduled, its image not pulled, a cluster without nodes), when its kubelet accepted it (status.startTime),
// else its creation. A pod is as old as its oldest container: one container still running since before a
// change holds the old credentials.
func podStarted(pod *corev1.Pod) time.Time {
	var first time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		var at time.Time
		switch {
		case cs.State.Running != nil:
			at = cs.State.Running.StartedAt.Time
		case cs.State.Terminated != nil:
			at = cs.State.Terminated.StartedAt.Time
		}
		if !at.IsZero() && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	switch {
	case !first.IsZero():
		return first
	case pod.Status.StartTime != nil:
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}

// staleConsumers judges the consumers of Secret name among pods after a change of it seen at changeSeen: the
// pods that use it (usesSecret; pods being deleted or finished do not count) and, sorted, the names of those
// that started before changeSeen (at most MaxStaleConsumers; more is the count beyond them). Times compare at
// the second, as the API writes them: a pod started in the second the change was seen is taken as started after.
func staleConsumers(pods []corev1.Pod, name string, changeSeen time.Time) (consumers int, stale []string, more int) {
	seen := changeSeen.Truncate(time.Second)
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !usesSecret(p, name) {
			continue
		}
		consumers++
		if podStarted(p).Truncate(time.Second).Before(seen) {
			stale = append(stale, p.Name)
		}
	}
	slices.Sort(stale)
	if len(stale) > MaxStaleConsumers {
		more = len(stale) - MaxStaleConsumers
		stale = stale[:MaxStaleConsumers]
	}
	return consumers, stale, more
}
