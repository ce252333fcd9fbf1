package openstack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/config"
)

func TestPickAuth(t *testing.T) {
	dir := t.TempDir()
	clouds := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(clouds, []byte(`clouds:
  prod:
    auth: {auth_url: "http://clouds:5000/v3", username: from-clouds, password: p, project_name: admin}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ini := func(data string) *config.INI {
		f, err := config.ParseINI("operator.conf", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	env := map[string]string{"OS_AUTH_URL": "http://env:5000/v3", "OS_USERNAME": "from-env", "OS_PASSWORD": "p",
		"OS_CLIENT_CONFIG_FILE": clouds}
	withEnv := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range env {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		src      AuthSources
		env      map[string]string
		wantUser string
		wantErr  string
	}{
		{"INI section first", AuthSources{INI: ini("[neutron]\nauth_url = http://ini:5000/v3\nusername = from-ini\npassword = p\n"), Cloud: "prod"},
			env, "from-ini", ""},
		{"INI auth_url in DEFAULT", AuthSources{INI: ini("[DEFAULT]\nauth_url = http://ini:5000/v3\n\n[neutron]\nusername = from-ini\npassword = p\n")},
			env, "from-ini", ""},
		{"INI auth_uri alias", AuthSources{INI: ini("[keystone_authtoken]\nauth_uri = http://ini:5000/v3\nusername = from-ini\npassword = p\n")},
			env, "from-ini", ""},
		{"INI without auth_url: --cloud", AuthSources{INI: ini("[neutron]\nusername = u\n"), Cloud: "prod"}, env, "from-clouds", ""},
		{"INI without auth section: OS_CLOUD", AuthSources{INI: ini("[kubernetes]\nnamespace = a\n")}, withEnv("OS_CLOUD", "prod"), "from-clouds", ""},
		{"--cloud over OS_CLOUD and OS_*", AuthSources{Cloud: "prod"}, withEnv("OS_CLOUD", "nope"), "from-clouds", ""},
		{"OS_* variables", AuthSources{}, env, "from-env", ""},
		{"a broken INI section does not fall through", AuthSources{INI: ini("[neutron]\nauth_url = http://ini:5000/v3\nusername = u\n"), Cloud: "prod"},
			env, "", "operator.conf:1: neutron.password: missing"},
		{"a broken cloud does not fall through", AuthSources{Cloud: "staging"}, env, "", `cloud "staging" not found`},
		{"nothing", AuthSources{}, map[string]string{}, "", ErrNoCredentials.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.Getenv = envOf(tc.env)
			a, err := PickAuth(tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || a.Options.Username != tc.wantUser {
				t.Fatalf("got %q from %s, %v; want %q", a.Options.Username, a.Source, err, tc.wantUser)
			}
		})
	}
	if _, err := PickAuth(AuthSources{Getenv: envOf(nil)}); !errors.Is(err, ErrNoCredentials) {
		t.Fatalf("err = %v, want ErrNoCredentials", err)
	}
}
