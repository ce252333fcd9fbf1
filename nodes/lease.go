package nodes

import (
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeaseStaleAfter is how long a node Lease may go without a renewal, as this replica saw it, before it
// counts as stale (kubelet renews it every 10 s; the node lifecycle controller's grace period is 40 s or more).
const LeaseStaleAfter = 40 * time.Second

// Leases remembers when each node Lease of one workload cluster was last seen renewed, on the reader's own
// clock (as the node lifecycle controller does): the kubelets' clocks and the API server's never enter the
// judgement. A Lease seen for the first time is fresh; one whose renewTime has not changed for
// LeaseStaleAfter is stale. Safe for concurrent use.
type Leases struct {
	mu   sync.Mutex
	seen map[string]leaseSeen
}

type leaseSeen struct {
	renew string
	at    time.Time
}

// Observe records leases (all node Leases of the cluster) at now and returns how many are stale.
func (l *Leases) Observe(leases []coordinationv1.Lease, now time.Time) (stale, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := make(map[string]leaseSeen, len(leases))
	for i := range leases {
		le := &leases[i]
		renew := ""
		if r := le.Spec.RenewTime; r != nil {
			renew = r.UTC().Format(time.RFC3339Nano)
		}
		s, ok := l.seen[le.Name]
		if !ok || s.renew != renew {
			s = leaseSeen{renew: renew, at: now}
		}
		next[le.Name] = s
		total++
		if now.Sub(s.at) >= LeaseStaleAfter {
			stale++
		}
	}
	l.seen = next
	return stale, total
}

// MostStale says why stale of total node Leases is an outage ("" when it is not): more than half of them,
// and at least two (one stale Lease is one broken node, for the repairs).
func MostStale(stale, total int) string {
	if stale < 2 || 2*stale <= total {
		return ""
	}
	return fmt.Sprintf("%d of %d node Leases stale at once (not renewed for %s): the kubelets cannot reach the API server, or it cannot keep up", stale, total, LeaseStaleAfter)
}
