package openstack_test

import (
	"os"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/contract"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// envAuth returns the test cloud's credentials read by AuthFromEnv, as a service would read them.
func envAuth(t *testing.T, e testenv.OpenStackEnv) openstack.Auth {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range e.Env() {
		k, v, _ := cutEq(kv)
		vars[k] = v
	}
	a, err := openstack.AuthFromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("AuthFromEnv(test cloud): %v", err)
	}
	return a
}

func cutEq(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// TestContract runs the contract suite against the real test cloud.
func TestContract(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	full := e.Tier == testenv.TierFull
	// No rate limit; a generous HTTP timeout, only against hangs (a loaded machine makes Neutron slow).
	cfg := openstack.Config{Auth: envAuth(t, e), QPS: -1, HTTPTimeout: 5 * time.Minute}
	contract.Run(t, contract.Env{
		Config: cfg,
		// The test cloud's credentials are an admin's: they make the external network.
		ExternalNetworkID: contract.ExternalNetwork(t, cfg, "198.51.100.0/24"),
		Compute:           full, BlockStorage: full, LoadBalancer: full,
		ImageID: os.Getenv("OS_TEST_IMAGE_ID"),
		Timeout: 5 * time.Minute,
	})
}
