package tenancy

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/openstack"
)

func TestSameKeystone(t *testing.T) {
	const own = "https://keystone.example:5000/v3"
	tests := []struct {
		other string
		same  bool
	}{
		{"https://keystone.example:5000/v3", true},
		{"https://keystone.example:5000/v3/", true},
		{"https://keystone.example:5000", true},
		{"https://keystone.example:5000/", true},
		{"https://KEYSTONE.example:5000/v3", true},
		{"HTTPS://keystone.example:5000/v2.0", true},
		{" https://keystone.example:5000/v3 ", true},
		{"http://keystone.example:5000/v3", false},       // another scheme
		{"https://keystone.example:5001/v3", false},      // another port
		{"https://keystone.example/v3", false},           // the default port is not 5000
		{"https://keystone.example.evil:5000/v3", false}, // another host
		{"https://10.0.0.1:5000/v3", false},              // its address: names are not resolved
		{"https://keystone.example:5000/identity/v3", false},
		{"https://u:p@keystone.example:5000/v3", false}, // user information
		{"https://keystone.example:5000/v3?x=1", false},
		{"https://keystone.example:5000/v3#x", false},
		{"file:///etc/passwd", false},
		{"keystone.example:5000/v3", false},
		{"", false},
	}
	k := NewKeystone(openstack.Auth{Options: gophercloud.AuthOptions{IdentityEndpoint: own}}, true, nil)
	for _, tc := range tests {
		if got := k.Same(tc.other); got != tc.same {
			t.Errorf("Same(%q) = %v, want %v", tc.other, got, tc.same)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"https://k:443/v3", "https://k/v3"},
		{"http://k:80", "http://k/"},
		{"https://[fd00::1]:5000/v3", "https://[FD00::1]:5000"},
		{"https://k/identity/v3", "https://k/identity/"},
	} {
		na, _ := NormalizeAuthURL(tc.a)
		nb, _ := NormalizeAuthURL(tc.b)
		if na != nb || na == "" {
			t.Errorf("NormalizeAuthURL(%q) = %q, NormalizeAuthURL(%q) = %q: want equal", tc.a, na, tc.b, nb)
		}
	}
}

// TestKeystoneAuthenticate: credentials of another Keystone are never dialed; those of the same one are dialed
// at the cluster's own endpoint (not the Secret's spelling of it), with the cluster's TLS settings and the
// given credentials only; a refusal quotes nothing of the credentials.
func TestKeystoneAuthenticate(t *testing.T) {
	const own = "https://keystone.example:5000/v3"
	var dialed []openstack.Auth
	connect := func(_ context.Context, a openstack.Auth, _ http.RoundTripper) (Connection, error) {
		dialed = append(dialed, a)
		return nil, openstack.ErrWrongCredentials
	}
	cluster := openstack.Auth{Options: gophercloud.AuthOptions{IdentityEndpoint: own, Username: "cluster-user", Password: "cluster-pw"}, Region: "RegionTwo"}
	k := NewKeystone(cluster, true, connect)
	creds := func(url string) openstack.Auth {
		return openstack.Auth{Options: gophercloud.AuthOptions{IdentityEndpoint: url, ApplicationCredentialID: "ac-id", ApplicationCredentialSecret: "ac-secret"}}
	}
	_, r := k.Authenticate(context.Background(), creds("https://attacker.example:5000/v3"), "workload secret kube-system/cloud-config")
	if r == nil || r.Reason != ReasonOtherKeystone || !strings.Contains(r.Message, "not checked") || len(dialed) != 0 {
		t.Fatalf("another Keystone: refusal %+v, dialed %d times", r, len(dialed))
	}
	_, r = k.Authenticate(context.Background(), creds("https://keystone.example:5000"), "workload secret kube-system/cloud-config")
	if r == nil || r.Reason != ReasonInvalidCredentials || len(dialed) != 1 {
		t.Fatalf("wrong credentials: refusal %+v, dialed %d times", r, len(dialed))
	}
	a := dialed[0]
	if a.Options.IdentityEndpoint != own || a.Region != "RegionTwo" || a.Options.Username != "" || a.Options.Password != "" || a.Options.ApplicationCredentialID != "ac-id" {
		t.Errorf("dialed with %+v: want the cluster's endpoint and region, the Secret's credentials only", a)
	}
	for _, s := range []string{"ac-id", "ac-secret", "cluster-pw"} {
		if strings.Contains(r.Message, s) {
			t.Errorf("the refusal %q quotes a credential", r.Message)
		}
	}
}
