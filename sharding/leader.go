package sharding

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/clock"
)

// Leader is the fenced validity of the single replica that leader election lets act: a wrapper of the
// elector's resource lock that records when each successful acquisition or renewal was sent. The others may
// take over once they saw the record unchanged for a lease duration, measured from when they saw it, which
// is after it was sent: so this replica may act until the send time of its last successful write plus the
// lease duration, minus a safety margin that lets a write allowed just before end first (client-go's own
// margin is lease duration - renew deadline: the leader gives up at the renew deadline).
type Leader struct {
	resourcelock.Interface
	lease, margin time.Duration
	clock         clock.PassiveClock

	mu    sync.Mutex
	until time.Time
}

// NewLeader wraps lock; give the elector the Leader as its lock. margin must be positive and less than
// lease.
func NewLeader(lock resourcelock.Interface, lease, margin time.Duration, clk clock.PassiveClock) (*Leader, error) {
	if margin <= 0 || margin >= lease {
		return nil, fmt.Errorf("sharding: leader election: expected 0 < safety margin (%s) < lease duration (%s)", margin, lease)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Leader{Interface: lock, lease: lease, margin: margin, clock: clk}, nil
}

// Create creates the record; written, it starts this replica's validity.
func (l *Leader) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Create)
}

// Update writes the record; a renewal extends this replica's validity, a release (another holder, or
// none) ends it before it is sent.
func (l *Leader) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, r, l.Interface.Update)
}

func (l *Leader) write(ctx context.Context, r resourcelock.LeaderElectionRecord, write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	ours := r.HolderIdentity == l.Identity()
	if !ours {
		l.mu.Lock()
		l.until = time.Time{}
		l.mu.Unlock()
	}
	sent := l.clock.Now()
	if err := write(ctx, r); err != nil {
		return err
	}
	if ours {
		l.mu.Lock()
		if u := sent.Add(l.lease - l.margin); u.After(l.until) {
			l.until = u
		}
		l.mu.Unlock()
	}
	return nil
}

// Validity is the end of this replica's fenced validity, the same for every object; ok is false while it
// does not lead (it never acquired, or released).
func (l *Leader) Validity(types.UID) (until time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until, !l.until.IsZero()
}
