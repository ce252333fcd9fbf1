package nodes

import (
	corev1 "k8s.io/api/core/v1"

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
