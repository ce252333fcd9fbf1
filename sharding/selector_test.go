package sharding_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/sharding"
)

// TestSelectorOnTheAPIServer lists VitalsClusters with the selector of a few ranges: with the gate on the
// API server applies it (and echoes it in shardInfo), and its choice is exactly Space.Of's; with the gate
// off it ignores the selector and returns everything (the replicas filter alone).
func TestSelectorOnTheAPIServer(t *testing.T) {
	for _, env := range kubeEnvs {
		t.Run(env.name, func(t *testing.T) {
			cfg := env.cfg(t)
			installCRD(t, cfg)
			ns, _, c := newNamespace(t, cfg)
			clusters := createClusters(t, c, ns, 40)
			sp, err := sharding.NewSpace(16)
			if err != nil {
				t.Fatal(err)
			}
			held := []int{1, 2, 3, 9, 15}
			sel := sp.Selector(held)
			parsed := apisharding.NewSelector(requirements(sp, held)...)
			var want []string
			for _, cl := range clusters {
				in := slices.Contains(held, sp.Of(cl.UID))
				ok, err := parsed.Matches(cl)
				if err != nil {
					t.Fatal(err)
				}
				if ok != in {
					t.Errorf("cluster %s (uid %s): the API server's selector says %v, Space.Of says range %d", cl.Name, cl.UID, ok, sp.Of(cl.UID))
				}
				if in {
					want = append(want, cl.Name)
				}
			}
			var list v1alpha1.VitalsClusterList
			if err := c.List(context.Background(), &list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ShardSelector: sel}}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, cl := range list.Items {
				got = append(got, cl.Name)
			}
			if env.gate {
				// The server filters custom resources, but does not echo shardInfo on them (v1.37: an
				// unstructured list has no SetShardInfo); built-in lists carry it.
				if !slices.Equal(got, want) {
					t.Errorf("server-side sharded list: %v, want %v", got, want)
				}
				t.Logf("gate on: %d of %d clusters in ranges %v, shardInfo %+v", len(got), len(clusters), held, list.ShardInfo)
				return
			}
			if list.ShardInfo != nil {
				t.Errorf("shardInfo %+v with the gate off", list.ShardInfo)
			}
			if len(got) != len(clusters) {
				t.Errorf("gate off: %d clusters, want all %d (the selector is ignored)", len(got), len(clusters))
			}
		})
	}
}

// requirements are the held ranges as the API server's selector holds them (one per range, unjoined).
func requirements(sp sharding.Space, held []int) []apisharding.ShardRangeRequirement {
	var out []apisharding.ShardRangeRequirement
	for _, i := range held {
		b := strings.SplitN(sp.Bounds(i), "-", 2)
		out = append(out, apisharding.ShardRangeRequirement{Key: sharding.Field, Start: b[0], End: b[1]})
	}
	return out
}
