package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/client-go/tools/cache"

	"github.com/vitalsproject/vitals/health/checks"
)

// InformersSyncedOptions configure InformersSynced.
type InformersSyncedOptions struct {
	// Informers are the informers' HasSynced functions by name (none: the check passes).
	Informers map[string]cache.InformerSynced
}

// InformersSynced fails while any of the named informers has not synced (HasSynced false). It
// reads memory only, so it does not coalesce.
func InformersSynced(opts InformersSyncedOptions) (checks.Func, error) {
	synced := maps.Clone(opts.Informers)
	names := make([]string, 0, len(synced))
	for n, f := range synced {
		if f == nil {
			return nil, fmt.Errorf("informers synced check: informer %q: no HasSynced function", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return func(ctx context.Context) error {
		var not []string
		for _, n := range names {
			if !synced[n]() {
				not = append(not, n)
			}
		}
		if len(not) > 0 {
			return fmt.Errorf("informers not synced: %s", strings.Join(not, ", "))
		}
		return nil
	}, nil
}

// Syncer is a cache that can wait for its informers, such as controller-runtime's cache.Cache.
type Syncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// CacheSyncedOptions configure CacheSynced.
type CacheSyncedOptions struct {
	// Cache whose informers are waited for (required).
	Cache Syncer
}

// CacheSynced fails while the cache's informers have not synced by the end of ctx (the check's
// timeout).
func CacheSynced(opts CacheSyncedOptions) (checks.Func, error) {
	c := opts.Cache
	if c == nil {
		return nil, errors.New("cache synced check: no Cache")
	}
	return func(ctx context.Context) error {
		if !c.WaitForCacheSync(ctx) {
			return fmt.Errorf("informer cache not synced")
		}
		return nil
	}, nil
}
