package workload

import (
	"fmt"
	"testing"

	"github.com/vitalsproject/vitals/remediation"
)

// TestOutages: a workload cluster not configured yet, or refused, closes the remediation gate without
// starting the outage freeze; an API that does not answer, refuses the credentials or lags does both.
func TestOutages(t *testing.T) {
	for _, tc := range []struct {
		err    error
		outage bool
	}{
		{errorf(ReasonUnreachable, "dial tcp: connection refused"), true},
		{errorf(ReasonUnauthorized, "401"), true},
		{errorf(ReasonNotSynced, "nodes"), true},
		{errorf(ReasonConnecting, "first probe"), true},
		{fmt.Errorf("read the Secret: %w", errorf(ReasonMissingKubeconfig, "no Secret")), false},
		{errorf(ReasonLocalNotAllowed, "no kubeconfigSecretRef"), false},
		{errorf(ReasonInvalidKubeconfig, "clusters[0]: no server"), false},
		{errorf(ReasonRefusedKubeconfig, "users[0]: exec"), false},
		{errorf(ReasonStopped, "forgotten"), false},
		{fmt.Errorf("some other failure"), true},
		{nil, false},
	} {
		if got := remediation.IsOutage(tc.err); got != tc.outage {
			t.Errorf("IsOutage(%v) = %v, want %v", tc.err, got, tc.outage)
		}
	}
}
