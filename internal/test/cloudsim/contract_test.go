package cloudsim_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/contract"
	"github.com/vitalsproject/vitals/openstack"
)

// TestContract runs the openstack package's contract suite, the one that also runs against
// the real services, against the simulator: a failure here is a simulator bug.
func TestContract(t *testing.T) {
	// Short latencies (on the real clock) make every asynchronous state show, as the real services' do.
	knobs := cloudsim.DefaultKnobs()
	for _, d := range []*cloudsim.Duration{&knobs.ServerBuildLatency, &knobs.ServerRebootLatency, &knobs.ServerDeleteLatency,
		&knobs.VolumeCreateLatency, &knobs.VolumeDeleteLatency, &knobs.LBCreateLatency, &knobs.LBDeleteLatency} {
		*d = cloudsim.Duration(30 * time.Millisecond)
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: 1, Knobs: &knobs})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	pid := sim.CreateProject("contract")
	if _, err := sim.CreateUser("contract", "contract-secret", false, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreateUser("contract-admin", "contract-admin-secret", true, pid); err != nil {
		t.Fatal(err)
	}
	external := contract.ExternalNetwork(t, openstack.Config{QPS: -1, Auth: openstack.Auth{Source: "cloudsim", Options: gophercloud.AuthOptions{
		IdentityEndpoint: ts.URL + "/v3", Username: "contract-admin", Password: "contract-admin-secret",
		DomainName: "Default", TenantName: "contract"}}}, "203.0.113.0/24")
	contract.Run(t, contract.Env{
		Config: openstack.Config{QPS: -1, Auth: openstack.Auth{Source: "cloudsim", Options: gophercloud.AuthOptions{
			IdentityEndpoint: ts.URL + "/v3", Username: "contract", Password: "contract-secret",
			DomainName: "Default", TenantName: "contract"}}},
		ExternalNetworkID: external,
		Compute:           true, BlockStorage: true, LoadBalancer: true,
		ImageID: "cirros", FlavorID: "1",
		Timeout: 30 * time.Second, Poll: 10 * time.Millisecond,
	})
}
