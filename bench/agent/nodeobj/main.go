// Command nodeobj creates or deletes the Node object (no kubelet) that bench/agent/run.sh's agent
// reports on, the namespace that holds the benchmark's Events, the pods bound to the node that those
// Events name (pending: no kubelet runs them, so the agent takes their Events as evidence), and the
// Events.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	node := flag.String("node", "", "node name")
	ns := flag.String("namespace", "vitals-bench-agent", "namespace of the benchmark's events")
	pods := flag.Int("pods", 20, "pods bound to the node, pod-0 to pod-N-1")
	create := flag.Bool("create", false, "create the node and its pods")
	del := flag.Bool("delete", false, "delete the node, its pods and the benchmark's events (the namespace stays)")
	flag.Parse()
	if err := run(*kubeconfig, *node, *ns, *pods, *create, *del); err != nil {
		fmt.Fprintln(os.Stderr, "nodeobj:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node, ns string, pods int, create, del bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if create {
		_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node, err)
		}
		_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
		for i := range pods {
			_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
				Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}},
				metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create pod %s/pod-%d: %w", ns, i, err)
			}
		}
	}
	if del {
		if err := c.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node %s: %w", node, err)
		}
		// The namespace stays: test clusters often run without the namespace controller, which a
		// namespace deletion waits for.
		if err := c.CoreV1().Events(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			return fmt.Errorf("delete events in %s: %w", ns, err)
		}
		zero := int64(0)
		if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{FieldSelector: "spec.nodeName=" + node}); err != nil {
			return fmt.Errorf("delete pods of %s in %s: %w", node, ns, err)
		}
	}
	return nil
}
