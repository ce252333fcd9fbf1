package testenv

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
)

// Names of the environment variables that describe the Cluster API management cluster (hack/capi.sh).
const (
	EnvCAPIKubeconfig        = "VITALS_TEST_CAPI_KUBECONFIG"
	EnvCAPICloudsYAML        = "VITALS_TEST_CAPI_CLOUDS_YAML"
	EnvCAPIExternalNetworkID = "VITALS_TEST_CAPI_EXTERNAL_NETWORK_ID"
	EnvCAPIProjectID         = "VITALS_TEST_CAPI_OS_PROJECT_ID"
	EnvCAPIProjectName       = "VITALS_TEST_CAPI_OS_PROJECT_NAME"
	EnvCAPIUsername          = "VITALS_TEST_CAPI_OS_USERNAME"
	EnvCAPIPassword          = "VITALS_TEST_CAPI_OS_PASSWORD"
)

var capiNames = []string{EnvCAPIKubeconfig, EnvCAPICloudsYAML, EnvCAPIExternalNetworkID, EnvCAPIProjectID,
	EnvCAPIProjectName, EnvCAPIUsername, EnvCAPIPassword}

// CAPIEnv describes the Cluster API management cluster that hack/capi.sh runs on the test cloud: a
// kube-apiserver of its own with the Cluster API core manager and the OpenStack provider (CAPO), their CRDs and
// webhooks, CAPO acting in the project Tenant with that project's credentials (CloudsYAML).
type CAPIEnv struct {
	// Kubeconfig is the path of the management cluster's kubeconfig (token of group system:masters).
	Kubeconfig string
	// CloudsYAML is the path of a clouds.yaml (cloud "openstack") with the tenant's credentials: what a Cluster's
	// identity Secret (OpenStackCluster spec.identityRef, key clouds.yaml) holds.
	CloudsYAML string
	// ExternalNetworkID is the external network CAPO gives a cluster's router its gateway on (made by the harness
	// with admin rights; no floating IP on it reaches anything).
	ExternalNetworkID string
	// ProjectID is the tenant project's ID.
	ProjectID string
	// Tenant holds the credentials of the project CAPO acts in (a member, not an admin).
	Tenant OpenStackEnv
}

// CAPI returns the Cluster API management cluster. It skips t (fails it when VITALS_TESTENV_REQUIRED=1) in
// -short runs and when the cluster is not running. CAPO acts on every Cluster of it and the tests read the
// tenant's whole project: tests that use it must not run in parallel with each other.
func CAPI(t testing.TB) CAPIEnv {
	t.Helper()
	admin := OpenStack(t)
	s := load()
	v, from := s.group(EnvCAPIKubeconfig, capiNames...)
	if v[EnvCAPIKubeconfig] == "" {
		unavailable(t, "Cluster API management cluster not available: %s (full tier; %s unset)", makeHint, EnvCAPIKubeconfig)
	}
	for _, n := range capiNames {
		if v[n] == "" {
			t.Fatalf("Cluster API management cluster (from %s): %s is empty", from, n)
		}
	}
	for _, f := range []string{v[EnvCAPIKubeconfig], v[EnvCAPICloudsYAML]} {
		if _, err := os.Stat(f); err != nil {
			unavailable(t, "Cluster API management cluster not available: %s (from %s): %v; %s", f, from, err, makeHint)
		}
	}
	tenant := admin
	tenant.Username, tenant.Password = v[EnvCAPIUsername], v[EnvCAPIPassword]
	tenant.ProjectName = v[EnvCAPIProjectName]
	tenant.UserDomainName, tenant.ProjectDomainName, tenant.DomainName = "Default", "Default", "Default"
	return CAPIEnv{
		Kubeconfig: v[EnvCAPIKubeconfig], CloudsYAML: v[EnvCAPICloudsYAML],
		ExternalNetworkID: v[EnvCAPIExternalNetworkID], ProjectID: v[EnvCAPIProjectID], Tenant: tenant,
	}
}

// Config returns a client configuration for the management cluster's kube-apiserver; each call returns a new
// copy.
func (c CAPIEnv) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg := kubeconfigAt(t, c.Kubeconfig, "Cluster API management cluster")
	cfg.QPS, cfg.Burst = 50, 100
	return cfg
}
