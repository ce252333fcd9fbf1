// Package clusterapi is what Vitals knows of Cluster API and its OpenStack provider (CAPO): which
// VitalsCluster a Cluster on an OpenStackCluster gets (Spec: credentials from CAPO's identity Secret, the
// router, network, subnet and nodes' security group from the OpenStackCluster's status, the pod CIDRs from the
// Cluster's network, the workload kubeconfig from Cluster API's <cluster>-kubeconfig Secret), and how deletion
// waits for deorbit inside Cluster API's lifecycle: the answer to the BeforeClusterDelete hook of a Cluster with a
// topology (BeforeClusterDelete, served by NewExtensionServer), and the Machines' pre-terminate deletion hook
// that holds every Cluster's servers, and CAPO's network teardown with them (MachineDeletionHook, HoldMachines).
//
// It uses Cluster API's and CAPO's own API types (sigs.k8s.io/cluster-api/api/core/v1beta2,
// sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1), of the versions hack/tools/capi builds the managers
// from, and reads nothing itself: callers hand it the objects they read.
package clusterapi
