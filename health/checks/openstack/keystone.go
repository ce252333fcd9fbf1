package openstack

import (
	"context"
	"fmt"
	"github.com/vitalsproject/vitals/health"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"k8s.io/utils/clock"

	vos "github.com/vitalsproject/vitals/openstack"
)

// Options are common to every check of this package.
type Options struct {
	// MinInterval between two rounds of requests (0: the check's default).
	MinInterval time.Duration
	// Clock (nil: the real one).
	Clock clock.PassiveClock
}

func (o Options) coalescer(def time.Duration) *health.Coalescer {
	if o.MinInterval <= 0 {
		o.MinInterval = def
	}
	return health.NewCoalescer(o.Clock, o.MinInterval)
}

// Keystone checks that the cloud's token is still accepted by the Keystone it authenticated
// against: one HEAD /v3/auth/tokens validating our own token (a fernet decrypt and a revocation
// lookup in Keystone, whatever the project's size). A token Keystone no longer knows (expired,
// revoked) is renewed with the stored credentials; the check fails only when Keystone cannot be
// reached or refuses the credentials. Default MinInterval: 5s.
func Keystone(c *vos.Cloud, opts Options) func(context.Context) error {
	co := opts.coalescer(5 * time.Second)
	url := c.Auth().Options.IdentityEndpoint
	return func(ctx context.Context) error {
		return co.Do(ctx, func(ctx context.Context) error {
			ic, err := c.Client(vos.ServiceIdentity)
			if err != nil {
				return err
			}
			tok := c.Token()
			valid, err := tokens.Validate(ctx, ic, tok)
			if err != nil {
				return fmt.Errorf("keystone at %s: validate token: %w", url, err)
			}
			if valid {
				return nil
			}
			// Keystone no longer accepts the subject token: get a new one, as a request would.
			if err := c.Provider().Reauthenticate(ctx, tok); err != nil {
				return fmt.Errorf("keystone at %s: token no longer valid and re-authentication failed: %w", url, err)
			}
			return nil
		})
	}
}
