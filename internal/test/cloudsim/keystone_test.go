package cloudsim_test

import (
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
)

func TestKeystonePasswordAndCatalog(t *testing.T) {
	e := newEnv(t)
	pc := e.provider(t, "u1", "pw1", "p1")
	c := newClients(t, pc)
	// Every service of the catalog resolves to the simulator's address.
	for name, sc := range map[string]string{"network": c.net.ResourceBaseURL(), "compute": c.compute.Endpoint,
		"volume": c.volume.Endpoint, "lb": c.lb.ResourceBaseURL(), "identity": c.identity.Endpoint} {
		if len(sc) < len(e.url) || sc[:len(e.url)] != e.url {
			t.Errorf("%s endpoint %s not on %s", name, sc, e.url)
		}
	}
	tok, err := tokens.Get(t.Context(), c.identity, pc.Token()).Extract()
	if err != nil {
		t.Fatalf("validate token: %v", err)
	}
	if want := t0.Add(time.Hour); !tok.ExpiresAt.Equal(want) {
		t.Errorf("token expires at %s, want %s", tok.ExpiresAt, want)
	}
	proj, err := tokens.Get(t.Context(), c.identity, pc.Token()).ExtractProject()
	if err != nil || proj.ID != e.p1 || proj.Name != "p1" {
		t.Errorf("token project = %+v, %v; want p1 %s", proj, err, e.p1)
	}
	cat, err := tokens.Get(t.Context(), c.identity, pc.Token()).ExtractServiceCatalog()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, entry := range cat.Entries {
		types[entry.Type] = true
	}
	for _, want := range []string{"identity", "network", "compute", "volumev3", "block-storage", "load-balancer"} {
		if !types[want] {
			t.Errorf("catalog lacks %s: %v", want, types)
		}
	}
	// Revoke: the token stops working.
	other := e.provider(t, "u1", "pw1", "p1")
	oc := newClients(t, other)
	if err := tokens.Revoke(t.Context(), c.identity, other.Token()).Err; err != nil {
		t.Fatalf("revoke: %v", err)
	}
	ok, err := tokens.Validate(t.Context(), c.identity, other.Token())
	if err != nil || ok {
		t.Fatalf("validate revoked token = %v, %v; want false", ok, err)
	}
	_, err = networks.List(oc.net, nil).AllPages(t.Context())
	wantCode(t, "list networks with a revoked token", err, 401)
}

func TestKeystoneRefusals(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		opts gophercloud.AuthOptions
	}{
		{"wrong password", e.authOpts("u1", "nope", "p1")},
		{"unknown user", e.authOpts("nobody", "pw1", "p1")},
		{"project without a role", e.authOpts("u1", "pw1", "admin")},
		{"unknown project", e.authOpts("u1", "pw1", "nope")},
		{"wrong domain", gophercloud.AuthOptions{IdentityEndpoint: e.url + "/v3", Username: "u1", Password: "pw1",
			DomainName: "Other", TenantName: "p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gcos.AuthenticatedClient(t.Context(), tc.opts)
			wantCode(t, "authenticate", err, 401)
		})
	}
}

func TestKeystoneApplicationCredential(t *testing.T) {
	e := newEnv(t)
	uid := mustUser(t, e.sim, "svc", "svcpw", false, e.p1)
	acID, err := e.sim.CreateApplicationCredential(uid, e.p1, "kuryr", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts gophercloud.AuthOptions
		ok   bool
	}{
		{"by id", gophercloud.AuthOptions{ApplicationCredentialID: acID, ApplicationCredentialSecret: "s3cret"}, true},
		{"by name and user", gophercloud.AuthOptions{ApplicationCredentialName: "kuryr", ApplicationCredentialSecret: "s3cret",
			Username: "svc", DomainName: "Default"}, true},
		{"wrong secret", gophercloud.AuthOptions{ApplicationCredentialID: acID, ApplicationCredentialSecret: "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.IdentityEndpoint = e.url + "/v3"
			pc, err := gcos.AuthenticatedClient(t.Context(), tc.opts)
			if !tc.ok {
				wantCode(t, "authenticate", err, 401)
				return
			}
			if err != nil {
				t.Fatalf("authenticate: %v", err)
			}
			c := newClients(t, pc)
			if _, err := networks.List(c.net, nil).AllPages(t.Context()); err != nil {
				t.Fatalf("list networks with an application credential token: %v", err)
			}
		})
	}
}

func TestKeystoneTokenExpiry(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.UpdateKnobs(func(k *cloudsim.Knobs) { k.TokenTTL = cloudsim.Duration(time.Minute) }); err != nil {
		t.Fatal(err)
	}
	pc := e.provider(t, "u1", "pw1", "p1")
	c := newClients(t, pc)
	if _, err := networks.List(c.net, nil).AllPages(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(time.Minute)
	_, err := networks.List(c.net, nil).AllPages(t.Context())
	wantCode(t, "list with an expired token", err, 401)

	// A client that may re-authenticate gets a new token and goes on.
	opts := e.authOpts("u1", "pw1", "p1")
	opts.AllowReauth = true
	pc2, err := gcos.AuthenticatedClient(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	c2 := newClients(t, pc2)
	first := pc2.Token()
	e.clk.Step(2 * time.Minute)
	if _, err := networks.List(c2.net, nil).AllPages(t.Context()); err != nil {
		t.Fatalf("list after re-authentication: %v", err)
	}
	if pc2.Token() == first {
		t.Fatal("the client kept its expired token")
	}
}
