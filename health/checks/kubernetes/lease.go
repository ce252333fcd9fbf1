package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/health/checks"
)

// LeaseGetter reads Leases of one namespace: client-go's CoordinationV1().Leases(namespace) is one.
type LeaseGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error)
}

// LeaseOptions configure LeaderLease.
type LeaseOptions struct {
	Options
	// Leases reads the Leases of Namespace (required): client-go's CoordinationV1().Leases(namespace).
	Leases LeaseGetter
	// Namespace of the Lease, for messages (leases reads that namespace).
	Namespace string
	Name      string
	// Identity this process holds the lease as (the leader elector's identity).
	Identity string
	// IsLeader, when set, says whether this process believes it leads; while it does not, the
	// check passes (a standby replica is healthy). Nil: the process must hold the lease.
	IsLeader func() bool
}

// LeaderLease checks the leader election Lease: held by Identity, and renewed recently enough that
// renewTime + leaseDurationSeconds is not past (by the injected clock). A leader that stopped
// renewing, or lost the lease without noticing, fails.
func LeaderLease(opts LeaseOptions) (checks.Func, error) {
	leases := opts.Leases
	switch {
	case leases == nil:
		return nil, errors.New("leader lease check: no Leases client")
	case opts.Name == "" || opts.Identity == "":
		return nil, fmt.Errorf("leader lease check: Name %q and Identity %q: expected both", opts.Name, opts.Identity)
	}
	co := opts.coalescer()
	clk := opts.clock()
	return func(ctx context.Context) error {
		if opts.IsLeader != nil && !opts.IsLeader() {
			return nil
		}
		return co.Do(ctx, func(ctx context.Context) error {
			l, err := leases.Get(ctx, opts.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get lease %s/%s: %w", opts.Namespace, opts.Name, err)
			}
			holder := ""
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			if holder != opts.Identity {
				return fmt.Errorf("lease %s/%s is held by %q, not by %q", opts.Namespace, opts.Name, holder, opts.Identity)
			}
			if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
				return fmt.Errorf("lease %s/%s has no renewTime or leaseDurationSeconds", opts.Namespace, opts.Name)
			}
			d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			expiry := l.Spec.RenewTime.Add(d)
			if now := clk.Now(); now.After(expiry) {
				return fmt.Errorf("lease %s/%s expired: renewed at %s, duration %s, %s ago",
					opts.Namespace, opts.Name, l.Spec.RenewTime.UTC().Format(time.RFC3339), d, now.Sub(expiry).Round(time.Millisecond))
			}
			return nil
		})
	}, nil
}
