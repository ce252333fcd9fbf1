package routes

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/internal/base/backoff"
	"github.com/vitalsproject/vitals/openstack"
)

// Method says how routes were removed.
type Method string

const (
	// MethodAtomic: extraroute-atomic's remove_extraroutes.
	MethodAtomic Method = "remove_extraroutes"
	// MethodIfMatch: a whole-list update carrying the router's revision (If-Match).
	MethodIfMatch Method = "if-match update"
)

// Remover removes (and adds) routes of a router without losing a concurrent change.
type Remover struct {
	Routers openstack.Routers
	// IsConflict tells a 409/412 (default openstack.IsConflict).
	IsConflict func(error) bool
	// Attempts on conflict (default 5).
	Attempts int
	// Backoff between the attempts after a conflict (default ConflictBackoff), its jitter drawn from
	// Rand (nil: math/rand), waited on Clock (nil: the real clock).
	Backoff wait.Backoff
	Rand    backoff.Rand
	Clock   clock.Clock
}

// ConflictBackoff spaces the attempts of a removal that met a conflict (someone else changed the
// router): 50 ms doubling, each wait up to half as long again at random, so that two writers that
// collided do not collide again in step.
func ConflictBackoff() wait.Backoff {
	return wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 5, Cap: time.Second}
}

// RemoveResult reports one removal.
type RemoveResult struct {
	Method Method
	// Removed: present before, absent after.
	Removed []openstack.Route
	// Absent: already gone when the router was (re-)read.
	Absent []openstack.Route
	// Conflicts met and retried.
	Conflicts int
}

// Remove removes exactly routes from the router. With extraroute-atomic it calls remove_extraroutes;
// otherwise it reads the router, drops the routes from the list and writes the list with If-Match on
// the revision read, re-reading and recomputing on a conflict. Routes that were added meanwhile are
// kept: only the given routes ever leave the list.
func (rm Remover) Remove(ctx context.Context, routerID string, routes []openstack.Route, atomic bool) (RemoveResult, error) {
	drop := make(map[openstack.Route]bool, len(routes))
	for _, r := range routes {
		drop[r] = true
	}
	var res RemoveResult
	retry := rm.retrier(ctx, &res.Conflicts)
	if atomic {
		res.Method = MethodAtomic
		for {
			after, err := rm.Routers.RemoveRoutes(ctx, routerID, routes)
			if err != nil {
				if retry(err) {
					continue
				}
				return res, fmt.Errorf("remove %d routes from router %s: %w", len(routes), routerID, err)
			}
			left := routeSet(after.Routes)
			for _, r := range routes {
				if left[r] {
					return res, fmt.Errorf("remove route %s via %s from router %s: still present after remove_extraroutes", r.Destination, r.NextHop, routerID)
				}
			}
			res.Removed = routes
			return res, nil
		}
	}
	res.Method = MethodIfMatch
	for {
		cur, err := rm.Routers.GetRouter(ctx, routerID)
		if err != nil {
			return res, fmt.Errorf("read router %s before removing routes: %w", routerID, err)
		}
		keep := make([]openstack.Route, 0, len(cur.Routes))
		present := map[openstack.Route]bool{}
		for _, r := range cur.Routes {
			if drop[r] {
				present[r] = true
				continue
			}
			keep = append(keep, r)
		}
		res.Removed, res.Absent = nil, nil
		for _, r := range routes {
			if present[r] {
				res.Removed = append(res.Removed, r)
			} else {
				res.Absent = append(res.Absent, r)
			}
		}
		if len(res.Removed) == 0 {
			return res, nil
		}
		if _, err := rm.Routers.SetRoutes(ctx, routerID, keep, cur.RevisionNumber); err != nil {
			if retry(err) {
				continue
			}
			res.Removed = nil
			return res, fmt.Errorf("update routes of router %s (revision %d, %d conflicts): %w", routerID, cur.RevisionNumber, res.Conflicts, err)
		}
		return res, nil
	}
}

// retrier returns the wait before the next attempt after a failed one: true after a conflict with
// attempts left (counted in *conflicts), false otherwise or when ctx ended.
func (rm Remover) retrier(ctx context.Context, conflicts *int) func(error) bool {
	isConflict := rm.IsConflict
	if isConflict == nil {
		isConflict = openstack.IsConflict
	}
	attempts := rm.Attempts
	if attempts <= 0 {
		attempts = 5
	}
	policy, clk := rm.Backoff, rm.Clock
	if policy.Duration <= 0 {
		policy = ConflictBackoff()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	bo := backoff.New(policy, rm.Rand)
	return func(err error) bool {
		if !isConflict(err) || *conflicts+1 >= attempts {
			return false
		}
		*conflicts++
		return bo.Wait(ctx, clk)
	}
}

func routeSet(rs []openstack.Route) map[openstack.Route]bool {
	m := make(map[openstack.Route]bool, len(rs))
	for _, r := range rs {
		m[r] = true
	}
	return m
}

// Add adds routes to the router without losing a concurrent change (flight re-adds missing pod
// routes with it). With extraroute-atomic it calls add_extraroutes; otherwise it reads the router,
// appends the routes not yet present and writes the list with If-Match on the revision read,
// re-reading and recomputing on a conflict. It returns the routes that were not present before.
func (rm Remover) Add(ctx context.Context, routerID string, routes []openstack.Route, atomic bool) ([]openstack.Route, error) {
	conflicts := 0
	retry := rm.retrier(ctx, &conflicts)
	for {
		cur, err := rm.Routers.GetRouter(ctx, routerID)
		if err != nil {
			return nil, fmt.Errorf("read router %s before adding routes: %w", routerID, err)
		}
		have := routeSet(cur.Routes)
		var add []openstack.Route
		for _, r := range routes {
			if !have[r] {
				add = append(add, r)
			}
		}
		if len(add) == 0 {
			return nil, nil
		}
		if atomic {
			_, err = rm.Routers.AddRoutes(ctx, routerID, add)
		} else {
			_, err = rm.Routers.SetRoutes(ctx, routerID, append(cur.Routes, add...), cur.RevisionNumber)
		}
		if err == nil {
			return add, nil
		}
		if !retry(err) {
			return nil, fmt.Errorf("add %d routes to router %s (%d conflicts): %w", len(add), routerID, conflicts, err)
		}
	}
}
