package nodes

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// LabelExclude, "true" on a Node (label) or a server (Nova metadata), keeps every repair off it.
const LabelExclude = "vitals.vitalsproject.io/exclude-from-remediation"

// Managers of the machines under Nodes.
const (
	// ManagerClusterAPI: the Node is a Cluster API Machine's (annotation cluster.x-k8s.io/machine, set by
	// Cluster API on the Nodes of its Machines), or the VitalsCluster is a Cluster API Cluster's.
	ManagerClusterAPI = "ClusterAPI"
	// ManagerGardener: Gardener's machine-controller-manager created the server (its metadata
	// kubernetes.io-role-node and kubernetes.io-cluster-<shoot>, or the Node's worker.gardener.cloud/pool).
	ManagerGardener = "Gardener"
	// ManagerMagnum: Magnum created the node (labels magnum.openstack.org/role or nodegroup).
	ManagerMagnum = "Magnum"
)

// Owner is who manages the machine under a Node, and by what Vitals knows it.
type Owner struct {
	// Manager is one of the Manager constants ("" when none is known).
	Manager string
	// Name of the managing object where known (the Machine's name), By the mark that says so.
	Name, By string
}

// OwnerOf finds the manager of a server and its Node (nil when it never registered) from the Node's
// annotations and labels, the server's metadata, and the VitalsCluster's labels.
func OwnerOf(node *corev1.Node, serverMetadata, clusterLabels map[string]string) Owner {
	if node != nil {
		if m := node.Annotations[clusterv1.MachineAnnotation]; m != "" {
			return Owner{Manager: ManagerClusterAPI, Name: m, By: "Node annotation " + clusterv1.MachineAnnotation}
		}
		if p := node.Labels["worker.gardener.cloud/pool"]; p != "" {
			return Owner{Manager: ManagerGardener, Name: p, By: "Node label worker.gardener.cloud/pool"}
		}
		for _, l := range []string{"magnum.openstack.org/nodegroup", "magnum.openstack.org/role"} {
			if v := node.Labels[l]; v != "" {
				return Owner{Manager: ManagerMagnum, Name: v, By: "Node label " + l}
			}
		}
	}
	if c := clusterLabels[clusterv1.ClusterNameLabel]; c != "" {
		return Owner{Manager: ManagerClusterAPI, Name: c, By: "VitalsCluster label " + clusterv1.ClusterNameLabel}
	}
	if _, ok := serverMetadata["kubernetes.io-role-node"]; ok {
		for k := range serverMetadata {
			if strings.HasPrefix(k, "kubernetes.io-cluster-") {
				return Owner{Manager: ManagerGardener, Name: strings.TrimPrefix(k, "kubernetes.io-cluster-"), By: "server metadata " + k}
			}
		}
	}
	return Owner{}
}

// Excluded reports whether the Node's labels or the server's metadata keep repairs off it.
func Excluded(node *corev1.Node, serverMetadata map[string]string) bool {
	if node != nil && v1alpha1.Marked(node.Labels, LabelExclude) {
		return true
	}
	return v1alpha1.Marked(serverMetadata, LabelExclude)
}
