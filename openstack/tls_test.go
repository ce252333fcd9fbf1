package openstack

// Keystone behind TLS with a private CA: the shared real Keystone, with a TLS-terminating reverse proxy in
// front of it on 127.0.0.1 whose certificate a CA made by the test signs. Every way of trusting that CA
// (clouds.yaml cacert, OS_CACERT, an INI cafile, a credentials Secret's inline cacert) authenticates; without it the error
// says the certificate is not trusted; insecure works only when asked for.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/test/testcert"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// serverCert is a certificate for 127.0.0.1 and localhost signed by ca.
func serverCert(t *testing.T, ca *testcert.Issued) tls.Certificate {
	t.Helper()
	return testcert.Server(t, ca, []string{"localhost"}, "127.0.0.1").TLS()
}

// tlsKeystone puts a TLS-terminating reverse proxy, with a certificate of ca, in front of the Keystone
// of authURL and returns the auth URL through it.
func tlsKeystone(t *testing.T, authURL string, ca *testcert.Issued) string {
	t.Helper()
	target, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewUnstartedServer(proxy)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert(t, ca)}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the test's point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}

func TestKeystoneBehindTLS(t *testing.T) {
	t.Parallel()
	e := testenv.OpenStack(t)
	ca := testcert.CA(t, "vitals test CA")
	other := testcert.CA(t, "another CA")
	authURL := tlsKeystone(t, e.AuthURL, &ca)
	if !strings.HasPrefix(authURL, "https://127.0.0.1:") {
		t.Fatalf("proxy URL %s", authURL)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.pem", ca.CertPEM())
	otherFile := write("other.pem", other.CertPEM())
	openrc := map[string]string{
		"OS_AUTH_URL": authURL, "OS_USERNAME": e.Username, "OS_PASSWORD": e.Password,
		"OS_PROJECT_NAME": e.ProjectName, "OS_USER_DOMAIN_NAME": e.UserDomainName,
		"OS_PROJECT_DOMAIN_NAME": e.ProjectDomainName, "OS_REGION_NAME": e.RegionName,
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range openrc {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cloudsYAML := func(name, extra string) string {
		return write(name, fmt.Appendf(nil, `clouds:
  tls:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
%s`, authURL, e.Username, e.Password, e.ProjectName, e.UserDomainName, e.ProjectDomainName, e.RegionName, extra))
	}
	clouds := func(path string, kv ...string) func() (Auth, error) {
		return func() (Auth, error) {
			return AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "tls", Paths: []string{path}, Getenv: env(kv...)})
		}
	}
	plainClouds := cloudsYAML("plain.yaml", "")
	ini := func(extra string) func() (Auth, error) {
		p := write(fmt.Sprintf("kuryr-%d.conf", len(extra)), fmt.Appendf(nil, `[neutron]
auth_type = password
auth_url = %s
username = %s
password = %s
user_domain_name = %s
project_name = %s
project_domain_name = %s
region_name = %s
%s
`, authURL, e.Username, e.Password, e.UserDomainName, e.ProjectName, e.ProjectDomainName, e.RegionName, extra))
		return func() (Auth, error) { return AuthFromINI(p) }
	}
	// A credentials Secret's clouds.yaml: the CA inline, never a path.
	secret := func(extra string) func() (Auth, error) {
		return func() (Auth, error) {
			return AuthFromSecretCloudsYAML(fmt.Appendf(nil, `clouds:
  openstack:
    auth:
      auth_url: %s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
%s`, authURL, e.Username, e.Password, e.ProjectName, e.UserDomainName, e.ProjectDomainName, e.RegionName, extra), "openstack", "secret team-a/creds key clouds.yaml")
		}
	}
	inlineCA := func(pemData []byte) string {
		return "    cacert: |\n      " + strings.ReplaceAll(strings.TrimSpace(string(pemData)), "\n", "\n      ") + "\n"
	}
	for _, tc := range []struct {
		name  string
		auth  func() (Auth, error)
		trust bool // authenticates; else fails with ErrUntrustedCertificate
	}{
		{"openrc without a CA", func() (Auth, error) { return AuthFromEnv(env()) }, false},
		{"OS_CACERT", func() (Auth, error) { return AuthFromEnv(env("OS_CACERT", caFile)) }, true},
		{"OS_CACERT of another CA", func() (Auth, error) { return AuthFromEnv(env("OS_CACERT", otherFile)) }, false},
		{"OS_INSECURE=true", func() (Auth, error) { return AuthFromEnv(env("OS_INSECURE", "true")) }, true},
		{"OS_INSECURE=false", func() (Auth, error) { return AuthFromEnv(env("OS_INSECURE", "false")) }, false},
		{"clouds.yaml without a CA", clouds(plainClouds), false},
		{"clouds.yaml cacert", clouds(cloudsYAML("cacert.yaml", "    cacert: "+caFile+"\n")), true},
		{"clouds.yaml cacert of another CA", clouds(cloudsYAML("other.yaml", "    cacert: "+otherFile+"\n")), false},
		{"clouds.yaml verify: false", clouds(cloudsYAML("noverify.yaml", "    verify: false\n")), true},
		{"clouds.yaml verify: true", clouds(cloudsYAML("verify.yaml", "    verify: true\n")), false},
		{"clouds.yaml and OS_CACERT", clouds(plainClouds, "OS_CACERT", caFile), true},
		{"OS_CACERT wins over clouds.yaml cacert", clouds(cloudsYAML("other2.yaml", "    cacert: "+otherFile+"\n"), "OS_CACERT", caFile), true},
		{"clouds.yaml and OS_INSECURE=true", clouds(plainClouds, "OS_INSECURE", "true"), true},
		{"INI without a CA", ini(""), false},
		{"INI cafile", ini("cafile = " + caFile), true},
		{"INI insecure", ini("insecure = true"), true},
		{"Secret without a CA", secret(""), false},
		{"Secret with the CA inline", secret(inlineCA(ca.CertPEM())), true},
		{"Secret with another CA inline", secret(inlineCA(other.CertPEM())), false},
		{"Secret with both CAs inline", secret(inlineCA(append(other.CertPEM(), ca.CertPEM()...))), true},
		{"Secret verify: false", secret("    verify: false\n"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.auth()
			if err != nil {
				t.Fatalf("auth: %v", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			c, err := Connect(ctx, Config{Auth: a, HTTPTimeout: 5 * time.Minute})
			if tc.trust {
				if err != nil {
					t.Fatalf("Connect(%s): %v", a.Source, err)
				}
				if c.Token() == "" || c.ProjectID() == "" {
					t.Fatalf("token %q project %q", c.Token(), c.ProjectID())
				}
				return
			}
			if err == nil {
				t.Fatalf("Connect(%s) authenticated without trusting the CA", a.Source)
			}
			if !errors.Is(err, ErrUntrustedCertificate) || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") ||
				!strings.Contains(err.Error(), "OS_CACERT") {
				t.Errorf("error %q, want ErrUntrustedCertificate naming the x509 failure and how to trust the CA", err)
			}
			var unknown x509.UnknownAuthorityError
			if !errors.As(err, &unknown) {
				t.Errorf("error %v does not wrap x509.UnknownAuthorityError", err)
			}
			if t.Name() == "TestKeystoneBehindTLS/openrc_without_a_CA" {
				t.Logf("without the CA: %v", err)
			}
		})
	}
}

// TestCABundleErrors: a CA bundle that cannot be used is a configuration error naming the option.
func TestCABundleErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		file, inline string
		field, msg   string
	}{
		{"missing file", filepath.Join(dir, "absent.pem"), "", "cafile", "read CA bundle"},
		{"file without PEM", notPEM, "", "cafile", "holds no PEM certificate"},
		{"inline without PEM", "", "/etc/ssl/certs/ca.pem", "cacert", "the inline CA bundle holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ferr := tlsConfig(tc.file, tc.inline, false)
			if ferr == nil || ferr.field != tc.field || !strings.Contains(ferr.msg, tc.msg) {
				t.Errorf("error %v, want field %s and %q", ferr, tc.field, tc.msg)
			}
		})
	}
	// In a Secret, a path is refused (the operator reads no file for a tenant) and PEM that is none is
	// an error at the cacert line.
	for _, tc := range []struct{ cacert, want string }{
		{"/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "not allowed in a credentials Secret"},
		{"|\n      -----BEGIN CERTIFICATE-----\n      bm90IGEgY2VydA==\n      -----END CERTIFICATE-----", "holds no PEM certificate"},
	} {
		_, err := AuthFromSecretCloudsYAML([]byte("clouds:\n  openstack:\n    cacert: "+tc.cacert+"\n    auth:\n      auth_url: https://k/v3\n      username: u\n      password: p\n"),
			"openstack", "secret a/b key clouds.yaml")
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Field != "clouds.openstack.cacert" || cerr.Line != 3 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Secret cacert %q: error %v, want clouds.openstack.cacert at line 3 with %q", tc.cacert, err, tc.want)
		}
	}
	if c, ferr := tlsConfig("", "", false); c != nil || ferr != nil {
		t.Errorf("no CA and not insecure: %v %v, want the system roots (nil)", c, ferr)
	}
}
