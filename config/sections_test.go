package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestCheckSections(t *testing.T) {
	read := []string{"operator", "kubernetes", "health_server"}
	tests := []struct {
		name    string
		ini     string
		ignored []string
		errs    []string // each error's text, in order
	}{
		{name: "only sections read", ini: "[operator]\n[kubernetes]\n[health_server]\n"},
		{name: "Kuryr's and oslo's sections ignored", ini: "[DEFAULT]\n[operator]\n[vif_pool]\n[neutron_defaults]\n[oslo_concurrency]\n",
			ignored: []string{"[DEFAULT]", "[vif_pool]", "[neutron_defaults]", "[oslo_concurrency]"}},
		{name: "a misspelt section read", ini: "[kubernetes]\n[operater]\ndry_run = true\n",
			errs: []string{"f.conf:2: [operater]: unknown section, within 2 edits of [operator]"}},
		{name: "two edits away", ini: "[helth_servr]\n", errs: []string{"f.conf:1: [helth_servr]: unknown section, within 2 edits of [health_server]"}},
		{name: "case", ini: "[Operator]\n", errs: []string{"f.conf:1: [Operator]: unknown section, within 2 edits of [operator]"}},
		{name: "three edits away is unknown", ini: "[opr]\n", errs: []string{"f.conf:1: [opr]: unknown section (sections read: [operator], [kubernetes], [health_server]; Kuryr's and oslo's own are ignored)"}},
		{name: "unknown section", ini: "[operator]\n[remediation]\nbudget = 3\n[vif_pool]\n",
			ignored: []string{"[vif_pool]"}, errs: []string{"f.conf:2: [remediation]: unknown section"}},
		{name: "a header that is no name is not shown", ini: "[eyJhbGciOiJSUzI1NiIsImtpZCI6 secret token]\n",
			errs: []string{"f.conf:1: a section header of 41 bytes (not shown): unknown section"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseINI("f.conf", []byte(tc.ini))
			if err != nil {
				t.Fatal(err)
			}
			ignored := f.CheckSections(read, KuryrSections)
			if !reflect.DeepEqual(ignored, tc.ignored) {
				t.Errorf("ignored %v, want %v", ignored, tc.ignored)
			}
			var got []string
			if err := f.Err(); err != nil {
				for _, e := range err.(Errors) {
					got = append(got, e.Error())
				}
			}
			if len(got) != len(tc.errs) {
				t.Fatalf("errors %q, want %d: %q", got, len(tc.errs), tc.errs)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.errs[i]) {
					t.Errorf("error %q, want it to start with %q", got[i], tc.errs[i])
				}
				if strings.Contains(got[i], "secret") || strings.Contains(got[i], "true") || strings.Contains(got[i], "= 3") {
					t.Errorf("error %q shows a value", got[i])
				}
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"operator", "operator", 0}, {"operater", "operator", 1}, {"oprator", "operator", 1}, {"operatorr", "operator", 1},
		{"opreator", "operator", 2}, {"helth_servr", "health_server", 2}, {"cni_health_server", "health_server", 3}, {"", "ab", 2},
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
