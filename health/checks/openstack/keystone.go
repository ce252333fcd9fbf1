package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/health/checks"
	vos "github.com/vitalsproject/vitals/openstack"
)

// Options are common to every check of this package: Keystone and Neutron take them as they are.
type Options struct {
	// Cloud is the authenticated connection the check asks (required).
	Cloud *vos.Cloud
	// MinInterval between two rounds of requests (0: the check's default).
	MinInterval time.Duration
	// Clock (nil: the real one).
	Clock clock.PassiveClock
}

// build validates o and returns run on o.Cloud, coalesced: at most one round of requests per
// MinInterval (def when 0).
func (o Options) build(check string, def time.Duration, run func(ctx context.Context, c *vos.Cloud) error) (checks.Func, error) {
	c := o.Cloud
	if c == nil {
		return nil, fmt.Errorf("%s check: no Cloud", check)
	}
	if o.MinInterval <= 0 {
		o.MinInterval = def
	}
	co := health.NewCoalescer(o.Clock, o.MinInterval)
	return func(ctx context.Context) error {
		return co.Do(ctx, func(ctx context.Context) error { return run(ctx, c) })
	}, nil
}

// Keystone checks that the cloud's token is still accepted by the Keystone it authenticated
// against: one HEAD /v3/auth/tokens validating our own token (a fernet decrypt and a revocation
// lookup in Keystone, whatever the project's size). A token Keystone no longer knows (expired,
// revoked) is renewed with the stored credentials; the check fails only when Keystone cannot be
// reached or refuses the credentials. Default MinInterval: 5s.
func Keystone(opts Options) (checks.Func, error) {
	return opts.build("keystone", 5*time.Second, func(ctx context.Context, c *vos.Cloud) error {
		url := c.Auth().Options.IdentityEndpoint
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
