package cloudsim_test

import (
	"context"
	"errors"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// env is a simulator behind httptest with a fake clock, a project "p1" with user u1 (member)
// and a project "admin" with user admin (admin).
type env struct {
	sim   *cloudsim.Sim
	clk   *clocktesting.FakeClock
	url   string
	p1    string
	admin string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	sim, err := cloudsim.New(cloudsim.Options{Clock: clk, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim.Handler())
	t.Cleanup(ts.Close)
	e := &env{sim: sim, clk: clk, url: ts.URL}
	e.p1 = sim.CreateProject("p1")
	e.admin = sim.CreateProject("admin")
	mustUser(t, sim, "u1", "pw1", false, e.p1)
	mustUser(t, sim, "admin", "adminpw", true, e.admin, e.p1)
	return e
}

func mustUser(t *testing.T, sim *cloudsim.Sim, name, pw string, admin bool, projects ...string) string {
	t.Helper()
	id, err := sim.CreateUser(name, pw, admin, projects...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (e *env) authOpts(user, pw, project string) gophercloud.AuthOptions {
	return gophercloud.AuthOptions{IdentityEndpoint: e.url + "/v3", Username: user, Password: pw,
		DomainName: "Default", TenantName: project}
}

func (e *env) provider(t *testing.T, user, pw, project string) *gophercloud.ProviderClient {
	t.Helper()
	pc, err := gcos.AuthenticatedClient(t.Context(), e.authOpts(user, pw, project))
	if err != nil {
		t.Fatalf("authenticate %s: %v", user, err)
	}
	return pc
}

type clients struct {
	net, compute, volume, lb, identity *gophercloud.ServiceClient
}

func newClients(t *testing.T, pc *gophercloud.ProviderClient) clients {
	t.Helper()
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	var c clients
	var err error
	if c.net, err = gcos.NewNetworkV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if c.compute, err = gcos.NewComputeV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if c.volume, err = gcos.NewBlockStorageV3(pc, eo); err != nil {
		t.Fatal(err)
	}
	if c.lb, err = gcos.NewLoadBalancerV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	if c.identity, err = gcos.NewIdentityV3(pc, eo); err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *env) member(t *testing.T) clients { return newClients(t, e.provider(t, "u1", "pw1", "p1")) }
func (e *env) adminClients(t *testing.T) clients {
	return newClients(t, e.provider(t, "admin", "adminpw", "admin"))
}

// wantCode fails unless err is an HTTP error with the given status.
func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	if !gophercloud.ResponseCodeIs(err, code) {
		t.Fatalf("%s: err %v, want HTTP %d", what, err, code)
	}
}

// body returns the response body of a gophercloud HTTP error.
func body(err error) string {
	var e gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &e) {
		return string(e.Body)
	}
	return ""
}

type (
	ctxT  = context.Context
	pageT = pagination.Page
)
