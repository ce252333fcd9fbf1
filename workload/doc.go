// Package workload gives the operator access to each VitalsCluster's own Kubernetes cluster (the workload
// cluster): one cached client and informer set per cluster, built from the kubeconfig Secret the spec names,
// started on demand and stopped when the VitalsCluster goes. Its health (API reachable, informers synced) is
// a per-cluster check that gates remediation.
package workload
