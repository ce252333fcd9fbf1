package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// printSharded prints one row per replica of each sharded run.
func printSharded(results []result) {
	shardedHeader()
	for _, r := range results {
		shardedRows(r)
	}
	b, _ := json.Marshal(results)
	fmt.Printf("\njson: %s\n", b)
}

func shardedHeader() {
	fmt.Println("| clusters | replicas | shard selector | warm-up (clusters without a first pass) | late at the end / late passes (all replicas) | replica | ranges | clusters passed | passes in window | pass p50 / p99 | RSS avg / max | heap in use | CPU | apiserver bytes: start to end / window | requests/s in window | reconciles/s in window |")
	fmt.Println("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
}

func shardedRows(r result) {
	mode := "sent"
	if r.ShardMode == "client" {
		mode = "not sent (--shard-client-side)"
	}
	for i, rr := range r.PerReplica {
		fmt.Printf("| %d | %d | %s | %.0f s (%d) | %d / %d of %d | %d | %.0f | %d | %.0f in %.0f s | %.2f / %.2f s | %.1f / %.1f MiB | %.1f MiB | %.3f cores | %.1f / %.1f MiB | %s | %s |\n",
			r.Clusters, r.Replicas, mode, r.FirstPassAll, r.FirstPassMissing, r.Late, r.LateGaps, r.Gaps, i, rr.RangesHeld, rr.Clusters, rr.Passes, r.WindowSeconds,
			rr.PassP50, rr.PassP99, rr.RSSMiBAvg, rr.RSSMiBMax, rr.HeapMiB, rr.CPUCoresAvg, float64(rr.APIBytesTotal)/(1<<20), float64(rr.APIBytesWin)/(1<<20),
			rates(rr.Requests, r.WindowSeconds), rates(rr.Reconciles, r.WindowSeconds))
	}
}

// rates prints counts over seconds as "total (key rate, ...)".
func rates(counts map[string]float64, seconds float64) string {
	var parts []string
	total := 0.0
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		total += counts[k]
		parts = append(parts, fmt.Sprintf("%s %.1f", k, counts[k]/seconds))
	}
	return fmt.Sprintf("%.1f (%s)", total/seconds, strings.Join(parts, ", "))
}
