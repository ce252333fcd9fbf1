// Package nodes is what Vitals knows of a workload cluster's Nodes when it repairs them: when a Node is
// unhealthy (a condition held for its timeout, from the condition's own lastTransitionTime), who manages
// the machine under it (a Cluster API Machine's is never rebooted or deleted behind it; Gardener's and
// Magnum's are never deleted), whether it is a control-plane node and what etcd's quorum allows, whether
// most node Leases went stale at once, and the guards around every disruptive step, written through the
// workload cluster's fenced client: cordon, drain through the Eviction API (PodDisruptionBudgets honoured;
// DaemonSet and mirror pods left as kubectl drain leaves them), uncordon, and the
// node.kubernetes.io/out-of-service taint.
//
// It reads nothing by itself: callers hand it the objects they read, and a client whose writes are fenced
// (workload.Cluster.Client). Controllers import it; it imports no controller.
package nodes
