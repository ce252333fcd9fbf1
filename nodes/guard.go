package nodes

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/remediation"
)

// TaintOutOfService is the taint of Kubernetes' non-graceful node shutdown: on a Node whose machine is off
// or gone, it lets the pods' volumes detach and StatefulSet pods move (the pod garbage collector deletes
// the pods bound to it).
var TaintOutOfService = corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

// Cordon marks the Node unschedulable (desired true) or schedulable again; the write goes through c, so
// through the fence of ctx. A Node already as desired is not written.
func Cordon(ctx context.Context, c client.Client, n *corev1.Node, desired bool) error {
	if n.Spec.Unschedulable == desired {
		return nil
	}
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, desired)
	if err := c.Patch(ctx, n.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		verb := "cordon"
		if !desired {
			verb = "uncordon"
		}
		return fmt.Errorf("%s node %s: %w", verb, n.Name, err)
	}
	return nil
}

// Taint puts t on the Node (desired true) or takes it off, read again uncached and updated with its
// resourceVersion (a conflict is an error: the next pass tries again). A Node already as desired, or gone,
// is not written. It reports whether it wrote.
func Taint(ctx context.Context, c client.Client, name string, t corev1.Taint, desired bool) (bool, error) {
	var n corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read node %s before tainting it: %w", name, err)
	}
	has := slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
	if has == desired {
		return false, nil
	}
	if desired {
		at := metav1.Now()
		t.TimeAdded = &at
		n.Spec.Taints = append(n.Spec.Taints, t)
	} else {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
	}
	if err := c.Update(ctx, &n); err != nil {
		return false, fmt.Errorf("update the taints of node %s (%s %s): %w", name, t.Key, map[bool]string{true: "added", false: "removed"}[desired], err)
	}
	return true, nil
}

// DrainResult is one round of a drain.
type DrainResult struct {
	// Left are the pods still to go ("namespace/name"), those evicted in this round included.
	Left []string
	// Evicted in this round; Blocked by a PodDisruptionBudget (the API server's 429) or refused by the API
	// server otherwise (a 500 for a pod two budgets select, a webhook's denial), with its message.
	Evicted []string
	Blocked []string
	// Skipped: DaemonSet pods, mirror pods, finished pods: a drain leaves them, as kubectl drain
	// --ignore-daemonsets does.
	Skipped int
}

// Done reports whether no pod is left to go.
func (r DrainResult) Done() bool { return len(r.Left) == 0 }

// NodePods lists node's pods (uncached, by field selector), sorted by namespace and name.
func NodePods(ctx context.Context, c client.Reader, node string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("list the pods of node %s: %w", node, err)
	}
	out := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.Spec.NodeName != node })
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out, nil
}

// Waiting is what a round of a drain over pods (NodePods) would find without asking anything: the pods
// still to go, and whether any of them would be evicted. False: every pod left is being deleted already
// (evicted earlier, and ending, or never ending on a node whose kubelet is gone), or none is left, and the
// round would write nothing.
func Waiting(pods []corev1.Pod) (DrainResult, bool) {
	var r DrainResult
	evict := false
	for i := range pods {
		p := &pods[i]
		if Leaves(p) {
			r.Skipped++
			continue
		}
		r.Left = append(r.Left, p.Namespace+"/"+p.Name)
		evict = evict || p.DeletionTimestamp == nil
	}
	return r, evict
}

// Drain runs one round of a drain of node: it lists the node's pods (NodePods) and asks the Eviction API
// to evict each that is left, which honours PodDisruptionBudgets; a pod the API server refuses, for its
// budget (429) or otherwise, is Blocked and asked again next round, and the round goes on with the other
// pods. A write refused at its fence, or one that finds the API server unreachable, ends the round with an
// error: no further eviction would get through. Pods being deleted are waited for, not evicted again.
// It never deletes a pod itself: a PodDisruptionBudget is never overridden. The evictions go through c, so
// through the fence of ctx.
func Drain(ctx context.Context, c client.Client, node string) (DrainResult, error) {
	pods, err := NodePods(ctx, c, node)
	if err != nil {
		return DrainResult{}, err
	}
	var r DrainResult
	for i := range pods {
		p := &pods[i]
		if Leaves(p) {
			r.Skipped++
			continue
		}
		id := p.Namespace + "/" + p.Name
		r.Left = append(r.Left, id)
		if p.DeletionTimestamp != nil {
			continue // being deleted: wait for it
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		err := c.SubResource("eviction").Create(ctx, p, ev)
		switch {
		case err == nil:
			r.Evicted = append(r.Evicted, id)
		case apierrors.IsNotFound(err):
			r.Left = r.Left[:len(r.Left)-1]
		case fenced(err) || remediation.Unreachable(err):
			return r, fmt.Errorf("evict pod %s from node %s: %w", id, node, err)
		default:
			r.Blocked = append(r.Blocked, id+": "+err.Error())
		}
	}
	return r, nil
}

// Budgets names, for each of pods ("namespace/name"), the PodDisruptionBudgets of its namespace whose selector
// matches it ("namespace/name"), read through r (uncached: the budgets as they are now).
func Budgets(ctx context.Context, r client.Reader, pods []corev1.Pod) (map[string][]string, error) {
	out := map[string][]string{}
	byNS := map[string][]policyv1.PodDisruptionBudget{}
	for i := range pods {
		p := &pods[i]
		pdbs, ok := byNS[p.Namespace]
		if !ok {
			var l policyv1.PodDisruptionBudgetList
			if err := r.List(ctx, &l, client.InNamespace(p.Namespace)); err != nil {
				return nil, fmt.Errorf("list the PodDisruptionBudgets of namespace %s: %w", p.Namespace, err)
			}
			pdbs = l.Items
			byNS[p.Namespace] = pdbs
		}
		for _, b := range pdbs {
			if b.Spec.Selector == nil {
				continue // policy/v1: a nil selector selects no pod (an empty one selects every pod of the namespace)
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil {
				continue
			}
			if sel.Matches(labels.Set(p.Labels)) {
				out[p.Namespace+"/"+p.Name] = append(out[p.Namespace+"/"+p.Name], b.Namespace+"/"+b.Name)
			}
		}
	}
	return out, nil
}

func fenced(err error) bool {
	_, ok := fencing.ReasonOf(err)
	return ok
}

// Leaves reports whether a drain leaves the pod on its node: a DaemonSet's pod (its controller would put
// it back, and it tolerates the cordon), a mirror pod (a static pod of the kubelet), a finished pod.
func Leaves(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return true
	}
	return false
}
