// Command nodeobj creates or deletes the Node object (no kubelet) that bench/agent/run.sh's agent
// reports on, the namespace that holds the benchmark's Events, and those Events.
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
	create := flag.Bool("create", false, "create the node")
	del := flag.Bool("delete", false, "delete the node and the benchmark's events (the namespace stays)")
	flag.Parse()
	if err := run(*kubeconfig, *node, *ns, *create, *del); err != nil {
		fmt.Fprintln(os.Stderr, "nodeobj:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, node, ns string, create, del bool) error {
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
	}
	return nil
}
