package openstack

import (
	"errors"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/test/testcert"
)

// secret marks every value a test input holds: it must never appear in an error.
const secret = "s3cr3t-Zq9"

func TestAuthFromSecretCloudsYAML(t *testing.T) {
	const good = `clouds:
  openstack:
    auth:
      auth_url: https://keystone.example:5000/v3
      username: alice
      password: ` + secret + `
      project_name: team-a
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
`
	testCA := string(testcert.CA(t, "test CA").CertPEM())
	tests := []struct {
		name  string
		data  string
		cloud string
		// wantLine and wantField of the *config.Error; wantField "" means success.
		wantLine  int
		wantField string
		wantMsg   string
		// ca: the CA bundle given apart (CAPO's identity Secret's cacert key)
		ca string
	}{
		{name: "password", data: good},
		{name: "application credential", data: "clouds:\n  openstack:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: http://10.0.0.1:5000/v3\n      application_credential_id: abc\n      application_credential_secret: " + secret + "\n"},
		{name: "inline CA bundle", data: "clouds:\n  openstack:\n    cacert: |\n" + indent(testCA, "      ") + "    auth:\n      auth_url: https://k:5000/v3\n      user_id: u\n      password: " + secret + "\n      project_id: p\n"},
		{name: "inline CA bundle that is no certificate", data: "clouds:\n  openstack:\n    cacert: |\n      -----BEGIN CERTIFICATE-----\n      " + secret + "\n      -----END CERTIFICATE-----\n    auth:\n      auth_url: https://k:5000/v3\n      user_id: u\n      password: x\n", wantLine: 3, wantField: "clouds.openstack.cacert", wantMsg: "no PEM certificate"},
		{name: "verify false", data: "clouds:\n  openstack:\n    verify: false\n    auth:\n      auth_url: https://k:5000/v3\n      user_id: u\n      password: " + secret + "\n      project_id: p\n"},
		{name: "not YAML", data: "token: " + secret + "\n  [oops: " + secret, wantLine: 2, wantField: "", wantMsg: "not valid YAML"},
		{name: "a PEM key", data: "-----BEGIN PRIVATE KEY-----\n" + secret + "\n-----END PRIVATE KEY-----\n", wantLine: 1, wantMsg: "not a mapping"},
		{name: "a bare token", data: secret, wantLine: 1, wantMsg: "not a mapping"},
		{name: "empty", data: "", wantMsg: "empty"},
		{name: "a kubeconfig", data: "apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user:\n    token: " + secret + "\n", wantLine: 1, wantField: "clouds", wantMsg: "missing"},
		{name: "clouds is a list", data: "clouds:\n- " + secret + "\n", wantLine: 2, wantField: "clouds", wantMsg: "not a mapping"},
		{name: "other cloud", data: good, cloud: "prod", wantLine: 2, wantField: "clouds.prod", wantMsg: "no such cloud"},
		{name: "cacert file", data: "clouds:\n  openstack:\n    cacert: /var/run/secrets/kubernetes.io/serviceaccount/token\n    auth:\n      auth_url: https://k/v3\n      password: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.cacert", wantMsg: "not allowed"},
		{name: "client cert", data: "clouds:\n  openstack:\n    auth:\n      auth_url: https://k/v3\n    cert: /etc/vitals/tls.crt\n    key: /etc/vitals/tls.key\n", wantLine: 5, wantField: "clouds.openstack.cert", wantMsg: "not allowed"},
		{name: "profile", data: "clouds:\n  openstack:\n    profile: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.profile", wantMsg: "not allowed"},
		{name: "auth_url not http", data: "clouds:\n  openstack:\n    auth:\n      auth_url: file:///" + secret + "\n", wantLine: 4, wantField: "clouds.openstack.auth.auth_url", wantMsg: "not an http(s) URL"},
		{name: "auth_url with user", data: "clouds:\n  openstack:\n    auth:\n      auth_url: https://u:" + secret + "@k/v3\n", wantLine: 4, wantField: "clouds.openstack.auth.auth_url", wantMsg: "user information"},
		{name: "password not a string", data: "clouds:\n  openstack:\n    auth:\n      auth_url: https://k/v3\n      password: [" + secret + "]\n", wantLine: 5, wantField: "clouds.openstack.auth.password", wantMsg: "not a string"},
		{name: "auth_type unknown", data: "clouds:\n  openstack:\n    auth_type: " + secret + "\n    auth:\n      auth_url: https://k/v3\n", wantLine: 3, wantField: "clouds.openstack.auth_type", wantMsg: "not supported"},
		{name: "interface unknown", data: "clouds:\n  openstack:\n    interface: " + secret + "\n    auth:\n      auth_url: https://k/v3\n      username: a\n      password: b\n", wantLine: 3, wantField: "clouds.openstack.interface", wantMsg: "not an endpoint interface"},
		{name: "verify not a bool", data: "clouds:\n  openstack:\n    verify: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.verify", wantMsg: "not a boolean"},
		{name: "no auth", data: "clouds:\n  openstack:\n    region_name: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.auth", wantMsg: "missing"},
		{name: "no password", data: "clouds:\n  openstack:\n    auth:\n      auth_url: https://k/v3\n      username: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.auth.password", wantMsg: "missing"},
		{name: "CA bundle apart, the entry's cacert a path of CAPO's", ca: testCA, data: "clouds:\n  openstack:\n    cacert: /etc/certs/cacert\n    auth:\n      auth_url: https://k:5000/v3\n      user_id: u\n      password: " + secret + "\n      project_id: p\n"},
		{name: "CA bundle apart that is no certificate", ca: "-----BEGIN CERTIFICATE-----\n" + secret + "\n-----END CERTIFICATE-----\n", data: "clouds:\n  openstack:\n    auth:\n      auth_url: https://k:5000/v3\n      user_id: u\n      password: x\n", wantLine: 3, wantField: "the Secret's CA bundle key", wantMsg: "no PEM certificate"},
		{name: "no auth_url", data: "clouds:\n  openstack:\n    auth:\n      password: " + secret + "\n", wantLine: 3, wantField: "clouds.openstack.auth.auth_url", wantMsg: "missing"},
	}
	const source = "secret ns/creds key clouds.yaml"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cloud := tc.cloud
			if cloud == "" {
				cloud = "openstack"
			}
			a, err := AuthFromSecretCloudsYAMLWithCA([]byte(tc.data), cloud, source, tc.ca)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if a.Options.IdentityEndpoint == "" || !strings.HasPrefix(a.Source, source) {
					t.Fatalf("auth %+v", a)
				}
				if (strings.Contains(tc.data, "cacert") || tc.ca != "") && (a.TLS == nil || a.TLS.RootCAs == nil) {
					t.Fatalf("the inline CA bundle is not used: TLS %+v", a.TLS)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error holds the Secret's contents: %v", err)
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err %T %v, want *config.Error", err, err)
			}
			if ce.File != source || ce.Line != tc.wantLine || ce.Field != tc.wantField || !strings.Contains(ce.Msg, tc.wantMsg) {
				t.Errorf("err %q: file %q line %d field %q; want %q line %d field %q msg containing %q",
					err, ce.File, ce.Line, ce.Field, source, tc.wantLine, tc.wantField, tc.wantMsg)
			}
		})
	}
}

func TestAuthFromSecretCloudsYAMLReadsNoEnvironment(t *testing.T) {
	// gophercloud's clouds parser reads OS_CACERT, OS_CERT, OS_KEY, OS_REGION_NAME and OS_INTERFACE
	// from the process: the operator's own settings must not flow into a tenant's cloud.
	t.Setenv("OS_CACERT", "/nonexistent/ca.pem")
	t.Setenv("OS_CERT", "/nonexistent/tls.crt")
	t.Setenv("OS_KEY", "/nonexistent/tls.key")
	t.Setenv("OS_REGION_NAME", "operator-region")
	t.Setenv("OS_INTERFACE", "admin")
	t.Setenv("OS_PASSWORD", "operator-password")
	a, err := AuthFromSecretCloudsYAML([]byte("clouds:\n  openstack:\n    auth:\n      auth_url: https://k/v3\n      username: a\n      password: b\n"), "openstack", "secret ns/c key k")
	if err != nil {
		t.Fatal(err)
	}
	if a.TLS != nil || a.Region != "" || a.Availability != "public" || a.Options.Password != "b" {
		t.Fatalf("the operator's environment reached the tenant's auth: TLS %v region %q interface %q", a.TLS, a.Region, a.Availability)
	}
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}
