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
	check := InformersSynced(funcs)
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
	if err := CacheSynced(syncer(true))(context.Background()); err != nil {
		t.Error(err)
	}
	if err := CacheSynced(syncer(false))(context.Background()); err == nil {
		t.Error("unsynced cache passed")
	}
}

func TestFailedLines(t *testing.T) {
	body := "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]informer-sync failed: reason withheld\nreadyz check failed\n"
	if got, want := failedLines(body), "etcd failed: reason withheld; informer-sync failed: reason withheld"; got != want {
		t.Errorf("failedLines = %q, want %q", got, want)
	}
}
