package cloudsim_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/internal/cloudsim"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/openstack/contract"
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
	contract.Run(t, contract.Env{
		Config: openstack.Config{QPS: -1, Auth: openstack.Auth{Source: "cloudsim", Options: gophercloud.AuthOptions{
			IdentityEndpoint: ts.URL + "/v3", Username: "contract", Password: "contract-secret",
			DomainName: "Default", TenantName: "contract"}}},
		Compute: true, BlockStorage: true, LoadBalancer: true,
		ImageID: "cirros", FlavorID: "1",
		Timeout: 30 * time.Second, Poll: 10 * time.Millisecond,
	})
}
