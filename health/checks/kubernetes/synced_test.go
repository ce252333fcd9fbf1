package kubernetes

import (
	"context"
	"testing"

	"k8s.io/client-go/tools/cache"
)

func TestInformersSynced(t *testing.T) {
	synced := map[string]bool{"pods": true, "nodes": false, "clusters": false}
	funcs := map[string]cache.InformerSynced{}
	for n := range synced {
		funcs[n] = func() bool { return synced[n] }
	}
	check, err := InformersSynced(InformersSyncedOptions{Informers: funcs})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(context.Background()); err == nil || err.Error() != "informers not synced: clusters, nodes" {
		t.Fatalf("err = %v", err)
	}
	synced["nodes"], synced["clusters"] = true, true
	if err := check(context.Background()); err != nil {
		t.Fatalf("all synced: %v", err)
	}
}

type syncer bool

func (s syncer) WaitForCacheSync(context.Context) bool { return bool(s) }

func TestCacheSynced(t *testing.T) {
	for _, synced := range []bool{true, false} {
		check, err := CacheSynced(CacheSyncedOptions{Cache: syncer(synced)})
		if err != nil {
			t.Fatal(err)
		}
		if err := check(context.Background()); (err == nil) != synced {
			t.Errorf("cache synced %v: %v", synced, err)
		}
	}
	if _, err := CacheSynced(CacheSyncedOptions{}); err == nil {
		t.Error("CacheSynced without a Cache accepted")
	}
}

func TestFailedLines(t *testing.T) {
	body := "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n"
	if got, want := failedLines(body), "etcd failed: reason withheld; informer-sync failed: reason withheld"; got != want {
		t.Errorf("failedLines = %q, want %q", got, want)
	}
}
