package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/cli/agentcmd"
	"github.com/vitalsproject/vitals/internal/cli/cloudsimcmd"
)

// TestVersionFlag: every binary built on cobra answers --version with one line and exit 0 (healthcheck and
// vitals-cni have their own tests).
func TestVersionFlag(t *testing.T) {
	for name, main := range map[string]func([]string, *bytes.Buffer, *bytes.Buffer) int{
		"vitals":          func(a []string, o, e *bytes.Buffer) int { return Main(a, o, e) },
		"vitals-agent":    func(a []string, o, e *bytes.Buffer) int { return agentcmd.Main(a, o, e) },
		"vitals-cloudsim": func(a []string, o, e *bytes.Buffer) int { return cloudsimcmd.Main(a, o, e) },
	} {
		var out, errb bytes.Buffer
		code := main([]string{"--version"}, &out, &errb)
		if code != ExitOK || !strings.HasPrefix(out.String(), name+" ") || strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "go1.") {
			t.Errorf("%s --version: exit %d, %q %q; want one line with the version and Go's", name, code, out.String(), errb.String())
		}
	}
}

// TestFlagsCheckedBeforeAnyCall: a pod CIDR with host bits, or a context the kubeconfig does not have, is
// a configuration error (exit 2) that says what was wrong and what was expected, before any cloud or
// cluster is asked.
func TestFlagsCheckedBeforeAnyCall(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"routes", "audit", "--router", "r1", "--pod-cidr", "198.19.0.1/16"}, []string{"--pod-cidr", "198.19.0.1/16 has host bits set", "198.19.0.0/16"}},
		{[]string{"deorbit", "--cluster-name", "c1", "--router", "r1", "--pod-cidr", "10.100.3.7/16"}, []string{"--pod-cidr", "10.100.0.0/16"}},
		{[]string{"doctor", "prod", "-n", "clusters", "--kubeconfig", kc, "--context", "prod"}, []string{"--context", `no context "prod"`, kc, "its contexts:"}},
		{[]string{"deorbit", "--cluster-name", "c1", "--kubeconfig", kc, "--context", "prod"}, []string{"--context", `no context "prod"`}},
		{[]string{"operator", "--kubeconfig", kc, "--context", "prod"}, []string{"--context", `no context "prod"`}},
	} {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb)
		if code != ExitConfig {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, errb.String(), ExitConfig)
		}
		for _, w := range tc.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%v: %q does not say %q", tc.args, errb.String(), w)
			}
		}
	}
}

// TestCloudFlags: every command that reads OpenStack credentials takes --os-cloud (the openstack client's
// flag; --cloud is its hidden alias), and every command that reads a kubeconfig takes --context.
func TestCloudFlags(t *testing.T) {
	root := NewRootCommand(&bytes.Buffer{}, &bytes.Buffer{})
	for _, path := range [][]string{{"operator"}, {"doctor"}, {"deorbit"}, {"routes", "audit"}} {
		cmd, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flags().Lookup("os-cloud"); f == nil || f.Hidden {
			t.Errorf("vitals %s has no visible --os-cloud", strings.Join(path, " "))
		}
		if f := cmd.Flags().Lookup("cloud"); f == nil || !f.Hidden {
			t.Errorf("vitals %s: --cloud is not a hidden alias", strings.Join(path, " "))
		}
		if cmd.Flags().Lookup("kubeconfig") != nil && cmd.Flags().Lookup("context") == nil {
			t.Errorf("vitals %s reads a kubeconfig without --context", strings.Join(path, " "))
		}
	}
	if agentcmd.NewCommand("vitals-agent").Flags().Lookup("context") == nil {
		t.Errorf("vitals-agent reads a kubeconfig without --context")
	}
}
