package openstack

import (
	"errors"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/config"
)

func TestParseSecretCloudConf(t *testing.T) {
	const src = "workload secret kube-system/cloud-config key cloud.conf"
	tests := []struct {
		name string
		data string
		// wantLine and wantField of the *config.Error; wantMsg "" means success.
		wantLine  int
		wantField string
		wantMsg   string
		check     func(t *testing.T, cc CloudConf)
	}{
		{name: "application credential", data: "[Global]\nauth-url = https://keystone.example:5000/v3\napplication-credential-id = abc\napplication-credential-secret = " + secret + "\nregion = RegionOne\n\n[LoadBalancer]\nuse-octavia = true\n",
			check: func(t *testing.T, cc CloudConf) {
				o := cc.Auth.Options
				if o.IdentityEndpoint != "https://keystone.example:5000/v3" || o.ApplicationCredentialID != "abc" || o.ApplicationCredentialSecret != secret || cc.Auth.Region != "RegionOne" || cc.UseClouds {
					t.Errorf("got %+v", cc)
				}
			}},
		{name: "password with tenant (the older names), quoted", data: "[Global]\nauth-url=\"http://10.0.0.1:5000/v3\"\nusername=alice\npassword=\"" + secret + "\"\ntenant-name=team-a\ndomain-name=Default\n",
			check: func(t *testing.T, cc CloudConf) {
				o := cc.Auth.Options
				if o.Username != "alice" || o.Password != secret || o.Scope == nil || o.Scope.ProjectName != "team-a" || o.DomainName != "Default" {
					t.Errorf("got %+v (scope %+v)", o, o.Scope)
				}
			}},
		{name: "project id, user id, underscores", data: "[global]\nauth_url = https://k/v3\nuser_id = u\npassword = " + secret + "\nproject_id = p\n",
			check: func(t *testing.T, cc CloudConf) {
				if o := cc.Auth.Options; o.UserID != "u" || o.Scope == nil || o.Scope.ProjectID != "p" {
					t.Errorf("got %+v", o)
				}
			}},
		{name: "use-clouds", data: "[Global]\nuse-clouds = true\nclouds-file = /etc/config/clouds.yaml\ncloud = prod\n",
			check: func(t *testing.T, cc CloudConf) {
				if !cc.UseClouds || cc.Cloud != "prod" {
					t.Errorf("got %+v", cc)
				}
			}},
		{name: "use-clouds, default cloud", data: "[Global]\nuse-clouds = true\n",
			check: func(t *testing.T, cc CloudConf) {
				if !cc.UseClouds || cc.Cloud != DefaultCloudsYAMLCloud {
					t.Errorf("got %+v", cc)
				}
			}},
		{name: "empty", data: " \n", wantMsg: "empty"},
		{name: "a clouds.yaml", data: "clouds:\n  openstack:\n    auth:\n      password: " + secret + "\n", wantLine: 1, wantMsg: "option before any [section] header"},
		{name: "no Global", data: "[BlockStorage]\nbs-version = v3\n", wantMsg: "no [Global] section"},
		{name: "no auth-url", data: "[Global]\nusername = a\npassword = " + secret + "\n", wantLine: 1, wantField: "Global.auth-url", wantMsg: "missing"},
		{name: "auth-url not http", data: "[Global]\nauth-url = file:///" + secret + "\n", wantLine: 2, wantField: "Global.auth-url", wantMsg: "not an http(s) URL"},
		{name: "auth-url with user", data: "[Global]\nauth-url = https://u:" + secret + "@k/v3\n", wantLine: 2, wantField: "Global.auth-url", wantMsg: "user information"},
		{name: "no password", data: "[Global]\nauth-url = https://k/v3\nusername = a\n", wantLine: 1, wantField: "Global.password", wantMsg: "missing"},
		{name: "no user", data: "[Global]\nauth-url = https://k/v3\npassword = " + secret + "\n", wantLine: 1, wantField: "Global.username", wantMsg: "missing"},
		{name: "application credential without secret", data: "[Global]\nauth-url = https://k/v3\napplication-credential-id = " + secret + "\n", wantLine: 1, wantField: "Global.application-credential-secret", wantMsg: "missing"},
		{name: "trust", data: "[Global]\nauth-url = https://k/v3\ntrust-id = " + secret + "\n", wantLine: 3, wantField: "Global.trust-id", wantMsg: "not supported"},
		{name: "use-clouds not a bool", data: "[Global]\nuse-clouds = " + secret + "\n", wantLine: 2, wantField: "Global.use-clouds", wantMsg: "not a boolean"},
		{name: "bad section header", data: "[Global\nauth-url = " + secret + "\n", wantLine: 1, wantMsg: "invalid section header"},
		{name: "too large", data: "[Global]\n" + strings.Repeat("# "+secret+"\n", MaxCloudConfSize/8), wantMsg: "too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := ParseSecretCloudConf([]byte(tc.data), src)
			if tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if cc.Auth.Source != src && !cc.UseClouds {
					t.Errorf("source %q", cc.Auth.Source)
				}
				tc.check(t, cc)
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantMsg)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error quotes the input: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), src) {
				t.Errorf("error %q, want %q naming the source", err, tc.wantMsg)
			}
			var ce *config.Error
			var ces config.Errors
			switch {
			case errors.As(err, &ce):
				if ce.Line != tc.wantLine || ce.Field != tc.wantField {
					t.Errorf("at line %d field %q, want line %d field %q", ce.Line, ce.Field, tc.wantLine, tc.wantField)
				}
			case errors.As(err, &ces):
				if len(ces) == 0 || ces[0].Line != tc.wantLine {
					t.Errorf("errors %v, want line %d", ces, tc.wantLine)
				}
			default:
				t.Errorf("error %T, want a *config.Error", err)
			}
		})
	}
}

// TestAuthFromWorkloadCloudsYAML: the files a consumer's clouds.yaml names are ignored, not refused (the
// credentials are tried with the cluster's own connection's TLS); a value too large is refused unread.
func TestAuthFromWorkloadCloudsYAML(t *testing.T) {
	const src = "workload secret kube-system/cinder-csi-cloud-config key clouds.yaml"
	data := "clouds:\n  openstack:\n    cacert: /etc/config/ca.crt\n    auth:\n      auth_url: https://k:5000/v3\n      application_credential_id: abc\n      application_credential_secret: " + secret + "\n    auth_type: v3applicationcredential\n"
	a, err := AuthFromWorkloadCloudsYAML([]byte(data), "openstack", src)
	if err != nil {
		t.Fatal(err)
	}
	if a.Options.ApplicationCredentialID != "abc" || a.TLS != nil {
		t.Errorf("got %+v", a)
	}
	if _, err := AuthFromSecretCloudsYAML([]byte(data), "openstack", src); err == nil {
		t.Error("the credentials Secret's reader accepts a cacert path")
	}
	big := strings.Repeat("#"+secret+"\n", MaxCloudConfSize/8)
	if _, err := AuthFromWorkloadCloudsYAML([]byte(big), "openstack", src); !errors.Is(err, ErrTooLarge) || strings.Contains(err.Error(), secret) {
		t.Errorf("a too large value: %v", err)
	}
}
