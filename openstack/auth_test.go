package openstack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/vitalsproject/vitals/config"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestAuthFromEnv(t *testing.T) {
	base := map[string]string{
		"OS_AUTH_URL": "http://127.0.0.1:5000/v3", "OS_USERNAME": "admin", "OS_PASSWORD": "secret",
		"OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default",
		"OS_REGION_NAME": "RegionOne",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	tests := []struct {
		name      string
		env       map[string]string
		wantField string // config.Error field; "" = success
		check     func(t *testing.T, a Auth)
	}{
		{name: "openrc", env: base, check: func(t *testing.T, a Auth) {
			o := a.Options
			if o.Username != "admin" || o.Password != "secret" || o.DomainName != "Default" || o.Scope == nil ||
				o.Scope.ProjectName != "admin" || o.Scope.DomainName != "Default" || a.Region != "RegionOne" ||
				a.Availability != gophercloud.AvailabilityPublic {
				t.Errorf("auth = %+v scope %+v", a, o.Scope)
			}
		}},
		{name: "domain fallback", env: with("OS_USER_DOMAIN_NAME", "", "OS_PROJECT_DOMAIN_NAME", "", "OS_DOMAIN_NAME", "Corp"),
			check: func(t *testing.T, a Auth) {
				if a.Options.DomainName != "Corp" || a.Options.Scope.DomainName != "Corp" {
					t.Errorf("domains = %q / %+v", a.Options.DomainName, a.Options.Scope)
				}
			}},
		{name: "project id", env: with("OS_PROJECT_NAME", "", "OS_PROJECT_ID", "p1"), check: func(t *testing.T, a Auth) {
			if a.Options.Scope == nil || a.Options.Scope.ProjectID != "p1" {
				t.Errorf("scope = %+v", a.Options.Scope)
			}
		}},
		{name: "application credential", env: map[string]string{"OS_AUTH_URL": "https://k/v3", "OS_AUTH_TYPE": "v3applicationcredential",
			"OS_APPLICATION_CREDENTIAL_ID": "ac1", "OS_APPLICATION_CREDENTIAL_SECRET": "s"}, check: func(t *testing.T, a Auth) {
			if a.Options.ApplicationCredentialID != "ac1" || a.Options.ApplicationCredentialSecret != "s" || a.Options.Password != "" {
				t.Errorf("options = %+v", a.Options)
			}
			if a.User() != "application credential ac1" {
				t.Errorf("User() = %q", a.User())
			}
		}},
		{name: "application credential implied", env: map[string]string{"OS_AUTH_URL": "https://k/v3",
			"OS_APPLICATION_CREDENTIAL_ID": "ac1", "OS_APPLICATION_CREDENTIAL_SECRET": "s"}},
		{name: "internal interface", env: with("OS_INTERFACE", "internal"), check: func(t *testing.T, a Auth) {
			if a.Availability != gophercloud.AvailabilityInternal {
				t.Errorf("availability = %q", a.Availability)
			}
		}},
		{name: "insecure", env: with("OS_INSECURE", "true"), check: func(t *testing.T, a Auth) {
			if a.TLS == nil || !a.TLS.InsecureSkipVerify {
				t.Errorf("TLS = %+v", a.TLS)
			}
		}},
		{name: "no auth url", env: with("OS_AUTH_URL", ""), wantField: "OS_AUTH_URL"},
		{name: "bad auth url", env: with("OS_AUTH_URL", "127.0.0.1:5000"), wantField: "OS_AUTH_URL"},
		{name: "no password", env: with("OS_PASSWORD", ""), wantField: "OS_PASSWORD"},
		{name: "no user", env: with("OS_USERNAME", ""), wantField: "OS_USERNAME"},
		{name: "bad insecure", env: with("OS_INSECURE", "maybe"), wantField: "OS_INSECURE"},
		{name: "bad interface", env: with("OS_INTERFACE", "private"), wantField: "OS_INTERFACE"},
		{name: "bad auth type", env: with("OS_AUTH_TYPE", "token"), wantField: "OS_AUTH_TYPE"},
		{name: "missing cacert", env: with("OS_CACERT", "/nonexistent/ca.pem"), wantField: "OS_CACERT"},
		{name: "app cred without secret", env: map[string]string{"OS_AUTH_URL": "https://k/v3", "OS_AUTH_TYPE": "v3applicationcredential",
			"OS_APPLICATION_CREDENTIAL_ID": "ac1"}, wantField: "OS_APPLICATION_CREDENTIAL_SECRET"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := AuthFromEnv(envOf(tc.env))
			if tc.wantField != "" {
				var ce *config.Error
				if !errors.As(err, &ce) || ce.Field != tc.wantField {
					t.Fatalf("err = %v; want a *config.Error on %s", err, tc.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

const kuryrConf = `[DEFAULT]
debug = true

[kubernetes]
api_root = https://10.0.0.1:6443

[neutron]
# keystoneauth options, as Kuryr reads them
auth_type = password
auth_url = http://127.0.0.1:5000/v3
username = kuryr
password = s3cret
user_domain_name = Default
project_name = service
project_domain_name = Default
region_name = RegionOne
valid_interfaces = internal,public
insecure = false
`

func TestAuthFromINI(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		sections  []string
		wantErr   string // substring of the error; "" = success
		wantLine  int
		wantField string
		check     func(t *testing.T, a Auth)
	}{
		{name: "kuryr neutron section", data: kuryrConf, check: func(t *testing.T, a Auth) {
			o := a.Options
			if o.IdentityEndpoint != "http://127.0.0.1:5000/v3" || o.Username != "kuryr" || o.Password != "s3cret" ||
				o.DomainName != "Default" || o.Scope.ProjectName != "service" || o.Scope.DomainName != "Default" ||
				a.Region != "RegionOne" || a.Availability != gophercloud.AvailabilityInternal || a.TLS != nil {
				t.Errorf("auth = %+v scope %+v", a, o.Scope)
			}
			if !strings.Contains(a.Source, "[neutron]") {
				t.Errorf("source = %q", a.Source)
			}
		}},
		{name: "keystone_authtoken fallback", data: "[keystone_authtoken]\nauth_url = http://k:5000/v3\nusername = neutron\npassword = p\nproject-name = service\nuser_domain_id = default\nproject_domain_id = default\n",
			check: func(t *testing.T, a Auth) {
				if a.Options.Username != "neutron" || a.Options.DomainID != "default" || a.Options.Scope.ProjectName != "service" || a.Options.Scope.DomainID != "default" {
					t.Errorf("options = %+v scope %+v", a.Options, a.Options.Scope)
				}
			}},
		{name: "application credential", data: "[neutron]\nauth_type = v3applicationcredential\nauth_url = http://k:5000/v3\napplication_credential_id = abc\napplication_credential_secret = xyz\n",
			check: func(t *testing.T, a Auth) {
				if a.Options.ApplicationCredentialID != "abc" || a.Options.ApplicationCredentialSecret != "xyz" {
					t.Errorf("options = %+v", a.Options)
				}
			}},
		{name: "explicit section", data: kuryrConf + "\n[other]\nauth_url = http://other:5000/v3\nusername = u\npassword = p\n", sections: []string{"other"},
			check: func(t *testing.T, a Auth) {
				if a.Options.IdentityEndpoint != "http://other:5000/v3" {
					t.Errorf("auth url = %s", a.Options.IdentityEndpoint)
				}
			}},
		{name: "options inherited from DEFAULT", data: "[DEFAULT]\nauth_url = http://k:5000/v3\nuser_domain_name = Default\n\n[neutron]\nusername = kuryr\npassword = p\nproject_name = service\n",
			check: func(t *testing.T, a Auth) {
				if a.Options.IdentityEndpoint != "http://k:5000/v3" || a.Options.Username != "kuryr" || a.Options.DomainName != "Default" {
					t.Errorf("options = %+v", a.Options)
				}
			}},
		{name: "the section that sets auth_url", data: "[neutron]\nservice_metadata_proxy = true\n\n[keystone_authtoken]\nauth_url = http://k:5000/v3\nusername = neutron\npassword = p\n",
			check: func(t *testing.T, a Auth) {
				if a.Options.Username != "neutron" || !strings.Contains(a.Source, "[keystone_authtoken]") {
					t.Errorf("auth = %+v", a)
				}
			}},
		{name: "missing in DEFAULT and section", data: "[DEFAULT]\ndebug = true\n\n[neutron]\nusername = u\npassword = p\n", wantField: "neutron.auth_url", wantLine: 4, wantErr: "missing"},
		{name: "no section", data: "[kubernetes]\napi_root = x\n", wantErr: "no auth section: expected one of [neutron], [keystone_authtoken]"},
		{name: "missing password", data: strings.Replace(kuryrConf, "password = s3cret\n", "", 1), wantField: "neutron.password", wantLine: 7, wantErr: "missing"},
		{name: "bad auth type", data: strings.Replace(kuryrConf, "auth_type = password", "auth_type = kerberos", 1), wantField: "neutron.auth_type", wantLine: 9, wantErr: `"kerberos" is not supported`},
		{name: "bad insecure", data: strings.Replace(kuryrConf, "insecure = false", "insecure = perhaps", 1), wantField: "neutron.insecure", wantLine: 18},
		{name: "bad interface", data: strings.Replace(kuryrConf, "valid_interfaces = internal,public", "valid_interfaces = private", 1), wantField: "neutron.valid_interfaces", wantLine: 17},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kuryr.conf")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := AuthFromINI(path, tc.sections...)
			if tc.wantErr == "" && tc.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, a)
				return
			}
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v; want a *config.Error", err)
			}
			if ce.File != path || ce.Field != tc.wantField || ce.Line != tc.wantLine || !strings.Contains(ce.Msg, tc.wantErr) {
				t.Fatalf("err = %#v; want field %q line %d message containing %q", ce, tc.wantField, tc.wantLine, tc.wantErr)
			}
		})
	}
}

func TestAuthFromCloudsYAML(t *testing.T) {
	dir := t.TempDir()
	clouds := `clouds:
  prod:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: admin
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
  dev:
    auth:
      auth_url: http://dev:5000/v3
      username: dev
      password: devpass
`
	secure := `clouds:
  prod:
    auth:
      password: from-secure
`
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	path := write("clouds.yaml", clouds)
	write("secure.yaml", secure)

	a, err := AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "prod", Paths: []string{path}, Getenv: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Options.Password != "from-secure" || a.Options.Username != "admin" || a.Region != "RegionOne" ||
		a.Availability != gophercloud.AvailabilityInternal || a.Options.Scope == nil || a.Options.Scope.ProjectName != "admin" {
		t.Errorf("prod = %+v scope %+v", a, a.Options.Scope)
	}
	// OS_CLOUD picks the cloud; OS_CLIENT_CONFIG_FILE the file.
	a, err = AuthFromCloudsYAML(CloudsYAMLOptions{Getenv: envOf(map[string]string{"OS_CLOUD": "dev", "OS_CLIENT_CONFIG_FILE": path})})
	if err != nil || a.Options.Password != "devpass" || !strings.Contains(a.Source, "cloud dev") {
		t.Errorf("dev = %+v, %v", a, err)
	}

	// PickAuth follows OS_CLOUD, else reads OS_* variables.
	a, err = PickAuth(AuthSources{Getenv: envOf(map[string]string{"OS_CLOUD": "dev", "OS_CLIENT_CONFIG_FILE": path})})
	if err != nil || a.Options.Username != "dev" {
		t.Errorf("PickAuth(OS_CLOUD) = %+v, %v", a, err)
	}
	a, err = PickAuth(AuthSources{Getenv: envOf(map[string]string{"OS_AUTH_URL": "http://k/v3", "OS_USERNAME": "u", "OS_PASSWORD": "p"})})
	if err != nil || a.Options.Username != "u" || !strings.Contains(a.Source, "environment") {
		t.Errorf("PickAuth(OS_*) = %+v, %v", a, err)
	}

	_, err = AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "staging", Paths: []string{path}, Getenv: envOf(nil)})
	want := `cloud "staging" not found in ` + path + `; known: dev, prod`
	if err == nil || err.Error() != want {
		t.Errorf("unknown cloud: err %v; want %q", err, want)
	}
	_, err = AuthFromCloudsYAML(CloudsYAMLOptions{Getenv: envOf(map[string]string{"OS_CLIENT_CONFIG_FILE": path})})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Field != "OS_CLOUD" {
		t.Errorf("no cloud name: err %v", err)
	}
	_, err = AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "prod", Paths: []string{filepath.Join(dir, "nope.yaml")}, Getenv: envOf(nil)})
	if err == nil || !strings.Contains(err.Error(), "no clouds.yaml found") {
		t.Errorf("no file: err %v", err)
	}
	bad := write("bad.yaml", "clouds: [\n")
	_, err = AuthFromCloudsYAML(CloudsYAMLOptions{Cloud: "prod", Paths: []string{bad}, Getenv: envOf(nil)})
	if !errors.As(err, &ce) || ce.File != bad {
		t.Errorf("bad yaml: err %v", err)
	}
}

func TestPathTemplate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/v2.0/routers/4f1c5a3e-6d1b-4d5c-9e57-2b3c4d5e6f70/remove_extraroutes", "/v2.0/routers/{id}/remove_extraroutes"},
		{"/v2.0/ports", "/v2.0/ports"},
		{"/v3/auth/tokens", "/v3/auth/tokens"},
		{"/v3/9a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d/volumes/detail", "/v3/{id}/volumes/detail"},
		{"/v2.1/servers/4f1c5a3e-6d1b-4d5c-9e57-2b3c4d5e6f70/action", "/v2.1/servers/{id}/action"},
		{"/v2.1/flavors/1", "/v2.1/flavors/{id}"},
		{"/v2.0/quotas/9a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d/details", "/v2.0/quotas/{id}/details"},
		{"/v2/lbaas/loadbalancers", "/v2/lbaas/loadbalancers"},
		{"", "/"},
	}
	for _, tc := range tests {
		if got := PathTemplate(tc.in); got != tc.want {
			t.Errorf("PathTemplate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestListOptsOnly(t *testing.T) {
	if err := (ListOpts{DeviceID: "x"}).only("volumes", "Name", "ProjectID"); err == nil || !strings.Contains(err.Error(), "filter DeviceID is not supported for volumes") {
		t.Errorf("err = %v", err)
	}
	if err := (ListOpts{Name: "x", PageSize: 1}).only("volumes", "Name"); err != nil {
		t.Errorf("err = %v", err)
	}
	if err := (ListOpts{PageSize: -1}).only("ports"); err == nil {
		t.Error("negative page size accepted")
	}
}
