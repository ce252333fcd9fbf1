package node

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// TestNodesRunPods: every node is Ready with its pod network as spec.podCIDR, and runs a pod of the locally
// built pause image (no registry) that gets an address of that network.
func TestNodesRunPods(t *testing.T) {
	c := testenv.Node(t)
	cs := c.Client(t)
	ns := namespace(t, cs)
	for _, n := range c.Nodes {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !nodeReady(node) {
			t.Errorf("node %s not Ready: %v", n, node.Status.Conditions)
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "pause-" + n},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{
				Name: "pause", Image: c.PauseImage, ImagePullPolicy: corev1.PullNever,
			}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPodReady(t, cs, ns, pod.Name, 2*time.Minute)
		if !cidrHas(node.Spec.PodCIDR, p.Status.PodIP) {
			t.Errorf("pod on %s has address %s, outside the node's pod CIDR %s", n, p.Status.PodIP, node.Spec.PodCIDR)
		}
		t.Logf("%s: Ready, pod CIDR %s, kubelet %s, runtime %s; pod address %s", n, node.Spec.PodCIDR,
			node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.ContainerRuntimeVersion, p.Status.PodIP)
	}
}

// TestKubeletStoppedNodeNotReady: a node whose kubelet stops goes NotReady (Unknown: the kubelet stopped
// posting status) within the node lifecycle controller's grace period (20 s here), which taints it
// unreachable (NoSchedule and NoExecute); started again, the node is Ready and the taints are gone.
func TestKubeletStoppedNodeNotReady(t *testing.T) {
	c := testenv.Node(t)
	cs := c.Client(t)
	n := c.Nodes[len(c.Nodes)-1]
	stopped := time.Now()
	c.StopKubelet(t, n)
	var node *corev1.Node
	waitFor(t, 90*time.Second, n+" NotReady with the unreachable taints", func(ctx context.Context) (bool, error) {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := readyCondition(node)
		return ready != nil && ready.Status == corev1.ConditionUnknown &&
			hasTaint(node, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule) &&
			hasTaint(node, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute), nil
	})
	ready := readyCondition(node)
	t.Logf("%s NotReady (%s: %s) and tainted %s after %s", n, ready.Reason, ready.Message, corev1.TaintNodeUnreachable,
		time.Since(stopped).Round(100*time.Millisecond))
	if ready.Reason != "NodeStatusUnknown" {
		t.Errorf("Ready condition reason %q, want NodeStatusUnknown (the node lifecycle controller's)", ready.Reason)
	}

	started := time.Now()
	c.StartKubelet(t, n)
	waitFor(t, 90*time.Second, n+" Ready without the unreachable taints", func(ctx context.Context) (bool, error) {
		var err error
		node, err = cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(node) && !slices.ContainsFunc(node.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Key == corev1.TaintNodeUnreachable || tn.Key == corev1.TaintNodeNotReady
		}), nil
	})
	t.Logf("%s Ready and untainted %s after its kubelet started", n, time.Since(started).Round(100*time.Millisecond))
}

// TestReregisterWithProviderID: a node made anew with the spec.providerID a test chooses (as a cloud's Node
// names its server: openstack:///<Nova server ID>) is Ready again with it, its pod CIDR kept.
func TestReregisterWithProviderID(t *testing.T) {
	c := testenv.Node(t)
	cs := c.Client(t)
	n := c.Nodes[len(c.Nodes)-1]
	before, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := "openstack:///" + randHex(4) + "-" + randHex(2) + "-" + randHex(2) + "-" + randHex(2) + "-" + randHex(6)
	start := time.Now()
	c.Reregister(t, n, id)
	node, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Spec.ProviderID != id || node.Spec.PodCIDR != before.Spec.PodCIDR || !nodeReady(node) || node.UID == before.UID {
		t.Errorf("%s after Reregister: providerID %q (want %q), pod CIDR %q (was %q), Ready %v, UID %s (was %s)", n,
			node.Spec.ProviderID, id, node.Spec.PodCIDR, before.Spec.PodCIDR, nodeReady(node), node.UID, before.UID)
	}
	t.Logf("%s Ready with provider ID %s %s after Reregister", n, id, time.Since(start).Round(100*time.Millisecond))
}

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}
