package testenv

import (
	"net/url"
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Names of the environment variables that describe the workload cluster (hack/workload.sh).
const (
	EnvWorkloadKubeconfig   = "VITALS_TEST_WORKLOAD_KUBECONFIG"
	EnvWorkloadClusterName  = "VITALS_TEST_WORKLOAD_CLUSTER_NAME"
	EnvWorkloadStorageClass = "VITALS_TEST_WORKLOAD_STORAGE_CLASS"
	EnvWorkloadSnapClass    = "VITALS_TEST_WORKLOAD_SNAPSHOT_CLASS"
	EnvWorkloadSubnetID     = "VITALS_TEST_WORKLOAD_SUBNET_ID"
	EnvWorkloadRouterID     = "VITALS_TEST_WORKLOAD_ROUTER_ID"
	EnvWorkloadNodeIP       = "VITALS_TEST_WORKLOAD_NODE_IP"
	EnvWorkloadProjectID    = "VITALS_TEST_WORKLOAD_OS_PROJECT_ID"
	EnvWorkloadProjectName  = "VITALS_TEST_WORKLOAD_OS_PROJECT_NAME"
	EnvWorkloadUsername     = "VITALS_TEST_WORKLOAD_OS_USERNAME"
	EnvWorkloadPassword     = "VITALS_TEST_WORKLOAD_OS_PASSWORD"
)

var workloadNames = []string{EnvWorkloadKubeconfig, EnvWorkloadClusterName, EnvWorkloadStorageClass, EnvWorkloadSnapClass,
	EnvWorkloadSubnetID, EnvWorkloadRouterID, EnvWorkloadNodeIP, EnvWorkloadProjectID, EnvWorkloadProjectName, EnvWorkloadUsername, EnvWorkloadPassword}

// WorkloadEnv describes the workload cluster that hack/workload.sh runs on the test cloud: a kube-apiserver of
// its own with kube-controller-manager, the OpenStack cloud controller manager (LoadBalancer Services become
// Octavia load balancers) and Cinder CSI with csi-provisioner (PVCs of StorageClass become Cinder volumes),
// csi-snapshotter and snapshot-controller (VolumeSnapshots of SnapshotClass become Cinder snapshots), all acting
// in the project Tenant with that project's credentials.
type WorkloadEnv struct {
	// Kubeconfig is the path of the workload cluster's kubeconfig (token of group system:masters).
	Kubeconfig string
	// ClusterName is the name the cloud controllers tag the cluster's resources with (their --cluster-name and
	// --cluster): what spec.openstack.clusterName of a VitalsCluster for this cluster says.
	ClusterName string
	// StorageClass provisions Cinder volumes (cinder.csi.openstack.org, reclaim policy Delete).
	StorageClass string
	// SnapshotClass is the VolumeSnapshotClass of Cinder snapshots (csi-snapshotter and snapshot-controller run;
	// deletion policy Delete).
	SnapshotClass string
	// SubnetID is the tenant's subnet the load balancers' VIPs and the Node's address (NodeIP) are on.
	SubnetID string
	// RouterID is the tenant's router, with an interface on SubnetID (the cluster's pod routes).
	RouterID string
	// NodeIP is the InternalIP of the cluster's one Node (no kubelet), on SubnetID: a pod route's next hop.
	NodeIP string
	// ProjectID is the tenant project's ID.
	ProjectID string
	// Tenant holds the credentials of the cluster's own project (a member, not an admin).
	Tenant OpenStackEnv
}

// Workload returns the workload cluster of the deorbit end-to-end tests. It skips t (fails it when
// VITALS_TESTENV_REQUIRED=1) in -short runs and when the cluster is not running. Its cloud controllers act on
// every Service and PVC of the cluster and the deorbit tests sweep the cloud by its ClusterName: tests that use
// it must not run in parallel with each other.
func Workload(t testing.TB) WorkloadEnv {
	t.Helper()
	admin := OpenStack(t)
	s := load()
	v, from := s.group(EnvWorkloadKubeconfig, workloadNames...)
	if v[EnvWorkloadKubeconfig] == "" {
		unavailable(t, "workload cluster not available: %s (full tier; %s unset)", makeHint, EnvWorkloadKubeconfig)
	}
	for _, n := range workloadNames {
		if v[n] == "" {
			t.Fatalf("workload cluster (from %s): %s is empty", from, n)
		}
	}
	if _, err := os.Stat(v[EnvWorkloadKubeconfig]); err != nil {
		unavailable(t, "workload cluster not available: kubeconfig %s (from %s): %v; %s", v[EnvWorkloadKubeconfig], from, err, makeHint)
	}
	tenant := admin
	tenant.Username, tenant.Password = v[EnvWorkloadUsername], v[EnvWorkloadPassword]
	tenant.ProjectName = v[EnvWorkloadProjectName]
	tenant.UserDomainName, tenant.ProjectDomainName, tenant.DomainName = "Default", "Default", "Default"
	return WorkloadEnv{
		Kubeconfig: v[EnvWorkloadKubeconfig], ClusterName: v[EnvWorkloadClusterName],
		StorageClass: v[EnvWorkloadStorageClass], SnapshotClass: v[EnvWorkloadSnapClass], SubnetID: v[EnvWorkloadSubnetID], RouterID: v[EnvWorkloadRouterID], NodeIP: v[EnvWorkloadNodeIP], ProjectID: v[EnvWorkloadProjectID],
		Tenant: tenant,
	}
}

// Config returns a client configuration for the workload cluster's kube-apiserver; each call returns a new copy.
func (w WorkloadEnv) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg := kubeconfigAt(t, w.Kubeconfig, "workload cluster")
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// kubeconfigAt loads the kubeconfig at path of a cluster the harness runs (what names it in messages) and checks
// that its server answers: it skips t (fails it when services are required) when it does not.
func kubeconfigAt(t testing.TB, path, what string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("kubeconfig %s: server %q: %v", path, cfg.Host, err)
	}
	if err := reachable(u.Host); err != nil {
		unavailable(t, "%s not available at %s (kubeconfig %s): %v; %s", what, cfg.Host, path, err, makeHint)
	}
	return cfg
}
