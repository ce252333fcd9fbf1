package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Bad flags exit 2 with the flag named, before any cloud or cluster is reached.
func TestDeorbitBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deorbit"}, "--cluster-name"},
		{[]string{"deorbit", "--cluster-name", "c1", "--router", "r1"}, "--pod-cidr"},
		{[]string{"deorbit", "--cluster-name", "c1", "--give-up-after", "10s"}, "--give-up-after"},
		{[]string{"deorbit", "--cluster-name", "c1", "--parallel-deletes", "0"}, "--parallel-deletes"},
		{[]string{"deorbit", "--cluster-name", "c1", "--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, &out, &errb); code != ExitConfig {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, errb.String(), ExitConfig)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: %q does not name %s", tc.args, errb.String(), tc.want)
		}
	}
}
