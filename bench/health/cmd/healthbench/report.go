package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// row is one wrk run, as run.sh writes it (tab-separated):
// contender key path conns requests seconds rps p50 p99 cpu_seconds errors
type row struct {
	contender, key, path string
	conns                int
	requests             float64
	rps                  float64
	p50, p99             float64 // microseconds
	cpuPerReq            float64 // microseconds
	errors               string
}

// parseLatency turns wrk's "1.23ms", "456.00us", "1.02s" into microseconds.
func parseLatency(s string) float64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "us"):
		s = strings.TrimSuffix(s, "us")
	case strings.HasSuffix(s, "ms"):
		s, mult = strings.TrimSuffix(s, "ms"), 1e3
	case strings.HasSuffix(s, "m"):
		s, mult = strings.TrimSuffix(s, "m"), 60e6
	case strings.HasSuffix(s, "s"):
		s, mult = strings.TrimSuffix(s, "s"), 1e6
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f * mult
}

func report(in io.Reader, out io.Writer) error {
	var rows []row
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 10 {
			continue
		}
		conns, _ := strconv.Atoi(f[3])
		requests, _ := strconv.ParseFloat(f[4], 64)
		rps, _ := strconv.ParseFloat(f[6], 64)
		cpu, _ := strconv.ParseFloat(f[9], 64)
		r := row{contender: f[0], key: f[1], path: f[2], conns: conns, requests: requests, rps: rps,
			p50: parseLatency(f[7]), p99: parseLatency(f[8])}
		if requests > 0 {
			r.cpuPerReq = cpu * 1e6 / requests
		}
		if len(f) > 10 {
			r.errors = f[10]
		}
		rows = append(rows, r)
	}
	rows = medians(rows)
	floor := map[int]row{}
	for _, r := range rows {
		if r.contender == "floor" && r.key == "readyz" {
			floor[r.conns] = r
		}
	}
	// Order: contender (as first seen), then path key, then connections.
	order := map[string]int{}
	for _, r := range rows {
		if _, ok := order[r.contender]; !ok {
			order[r.contender] = len(order)
		}
	}
	keyOrder := map[string]int{"readyz": 0, "verbose": 1, "json": 2}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if order[a.contender] != order[b.contender] {
			return order[a.contender] < order[b.contender]
		}
		if keyOrder[a.key] != keyOrder[b.key] {
			return keyOrder[a.key] < keyOrder[b.key]
		}
		return a.conns < b.conns
	})
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "contender\tpath\tconns\tCPU µs/req\t×floor\treq/s\t×floor\tp50 µs\tp99 µs\tp99 ×floor\terrors\t")
	for _, r := range rows {
		fl := floor[r.conns]
		ratio := func(a, b float64) string {
			if b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		errs := r.errors
		if errs == "" {
			errs = "0"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%.0f\t%s\t%.0f\t%.0f\t%s\t%s\t\n", r.contender, r.path, r.conns,
			r.cpuPerReq, ratio(r.cpuPerReq, fl.cpuPerReq), r.rps, ratio(r.rps, fl.rps), r.p50, r.p99, ratio(r.p99, fl.p99), errs)
	}
	return tw.Flush()
}

// medians folds repeated runs of the same contender, path and connection count into one row
// holding the median of each figure.
func medians(rows []row) []row {
	type key struct {
		contender, key string
		conns          int
	}
	groups := map[key][]row{}
	var keys []key
	for _, r := range rows {
		k := key{r.contender, r.key, r.conns}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	med := func(rs []row, f func(row) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	out := make([]row, 0, len(keys))
	for _, k := range keys {
		rs := groups[k]
		m := rs[0]
		m.rps = med(rs, func(r row) float64 { return r.rps })
		m.p50 = med(rs, func(r row) float64 { return r.p50 })
		m.p99 = med(rs, func(r row) float64 { return r.p99 })
		m.cpuPerReq = med(rs, func(r row) float64 { return r.cpuPerReq })
		var errs []string
		for _, r := range rs {
			if strings.TrimSpace(r.errors) != "" {
				errs = append(errs, strings.TrimSpace(r.errors))
			}
		}
		m.errors = strings.Join(errs, "; ")
		out = append(out, m)
	}
	return out
}
