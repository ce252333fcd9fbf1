package kubernetes

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/client-go/tools/cache"
)

// InformersSynced fails while any of the named informers has not synced (HasSynced false). It
// reads memory only, so it does not coalesce.
func InformersSynced(synced map[string]cache.InformerSynced) func(context.Context) error {
	names := make([]string, 0, len(synced))
	for n := range synced {
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
	}
}

// Syncer is a cache that can wait for its informers, such as controller-runtime's cache.Cache.
type Syncer interface {
	WaitForCacheSync(ctx context.Context) bool
}

// CacheSynced fails while c's informers have not synced by the end of ctx (the check's timeout).
func CacheSynced(c Syncer) func(context.Context) error {
	return func(ctx context.Context) error {
		if !c.WaitForCacheSync(ctx) {
			return fmt.Errorf("informer cache not synced")
		}
		return nil
	}
}
