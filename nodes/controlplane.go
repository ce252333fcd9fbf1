package nodes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/remediation"
)

// Control-plane labels: kubeadm's and its older name.
const (
	LabelControlPlane = "node-role.kubernetes.io/control-plane"
	LabelMaster       = "node-role.kubernetes.io/master"
)

// PoolControlPlane is the pool of every control-plane node: one at a time.
const PoolControlPlane = "control-plane"

// IsControlPlane reports whether n carries a control-plane role label.
func IsControlPlane(n *corev1.Node) bool {
	if n == nil {
		return false
	}
	_, cp := n.Labels[LabelControlPlane]
	_, m := n.Labels[LabelMaster]
	return cp || m
}

// EtcdPods lists etcd's members as EtcdQuorum reads them: kubeadm's static pods of kube-system, labelled
// component=etcd (r: the workload cluster's uncached reader, so that a member down a moment ago is seen).
func EtcdPods(ctx context.Context, r client.Reader) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace("kube-system"), client.MatchingLabels{"component": "etcd"}); err != nil {
		return nil, fmt.Errorf("list etcd's pods: %w", err)
	}
	return pods.Items, nil
}

// EtcdQuorum is etcd's quorum for taking target down: the members are the etcd pods of kube-system
// (kubeadm's static pods, label component=etcd) by their node, healthy when the pod is Ready on a Ready Node;
// without any, the control-plane nodes stand for the members (healthy when Ready).
func EtcdQuorum(target string, nodes []corev1.Node, etcdPods []corev1.Pod) remediation.Quorum {
	ready := map[string]bool{}
	for i := range nodes {
		ready[nodes[i].Name] = Ready(&nodes[i])
	}
	var q remediation.Quorum
	if len(etcdPods) > 0 {
		for _, p := range etcdPods {
			q.Members++
			if ready[p.Spec.NodeName] && podReady(&p) {
				q.Healthy++
				if p.Spec.NodeName == target {
					q.TargetHealthy = true
				}
			}
		}
		return q
	}
	for i := range nodes {
		if !IsControlPlane(&nodes[i]) {
			continue
		}
		q.Members++
		if ready[nodes[i].Name] {
			q.Healthy++
			if nodes[i].Name == target {
				q.TargetHealthy = true
			}
		}
	}
	return q
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
