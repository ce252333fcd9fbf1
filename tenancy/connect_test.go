package tenancy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/openstack"
)

// TestConnectError: each failure to connect with a Secret's credentials is a Refusal whose message says
// what to fix and quotes nothing the server answered.
func TestConnectError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		denied bool
		reason string
		want   string
	}{
		{"untrusted certificate", fmt.Errorf("authenticate: Keystone's %w: %w", openstack.ErrUntrustedCertificate, errors.New("x509: certificate signed by unknown authority")),
			false, ReasonInvalidCredentials, "TLS certificate is not trusted (give its CA inline"},
		{"wrong credentials", fmt.Errorf("authenticate: %w", openstack.ErrWrongCredentials), false, ReasonInvalidCredentials, "refused the credentials"},
		{"unreachable", fmt.Errorf("authenticate: %w", openstack.ErrUnreachable), false, ReasonCloudUnavailable, "cannot be reached"},
		{"denied address", errors.New("dial"), true, ReasonInvalidCredentials, "loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := connectError("secret a/b key clouds.yaml", tc.err, tc.denied)
			if r.Reason != tc.reason || !strings.Contains(r.Message, tc.want) || strings.Contains(r.Message, "x509") {
				t.Errorf("refusal %+v, want reason %s and %q, without the error's text", r, tc.reason, tc.want)
			}
		})
	}
}
