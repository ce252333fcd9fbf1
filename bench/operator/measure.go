package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vitalsproject/vitals/internal/test/benchproc"
)

// env is what one size's runs share: the clusters, the cloud, the API servers and the samplers.
type env struct {
	o       options
	n       int
	ns      string
	simURL  string
	sim     *benchproc.Process
	routers []string
	api     *apiserver
	wl      *workload
	smp     *sampler
	pw      *passWatch
}

// memPoint is the memory of the API servers at one stage, in MiB.
type memPoint struct {
	Stage string `json:"stage"`
	Load  string `json:"load"`
	// Resident sets (ps), and the kube-apiserver's Go heap in use (its go_memstats_heap_inuse_bytes).
	APIServerRSS  float64 `json:"apiserver_rss_mib"`
	APIServerHeap float64 `json:"apiserver_heap_inuse_mib"`
	EtcdRSS       float64 `json:"etcd_rss_mib"`
	EtcdDB        float64 `json:"etcd_db_mib"` // etcd_mvcc_db_total_size_in_use_in_bytes
	WorkloadRSS   float64 `json:"workload_apiserver_rss_mib,omitempty"`
	WorkloadHeap  float64 `json:"workload_apiserver_heap_inuse_mib,omitempty"`
}

// memory samples the API servers now.
func (e *env) memory(ctx context.Context, stage string) memPoint {
	p := memPoint{Stage: stage, Load: benchproc.LoadAvg(), APIServerRSS: e.smp.now("kube-apiserver"), EtcdRSS: e.smp.now("etcd"),
		WorkloadRSS: e.smp.now("workload-apiserver")}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if m := e.api.scrape(sctx); m != nil {
		p.APIServerHeap = m.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	}
	if e.wl != nil {
		if m := e.wl.api.scrape(sctx); m != nil {
			p.WorkloadHeap = m.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
		}
	}
	if e.o.etcdURL != "" {
		if m, err := scrape(sctx, nil, e.o.etcdURL+"/metrics"); err == nil {
			p.EtcdDB = m.sum("etcd_mvcc_db_total_size_in_use_in_bytes", nil) / (1 << 20)
		}
	}
	return p
}

// replica is one operator process and its proxy to the kube-apiserver.
type replica struct {
	name       string
	op         *benchproc.Process
	proxy      *countingProxy
	metricsURL string
}

// replicaResult is what one replica of a sharded run measured in the steady window.
type replicaResult struct {
	Passes        float64 `json:"passes"` // routegc's
	PassP50       float64 `json:"pass_p50_seconds"`
	PassP99       float64 `json:"pass_p99_seconds"`
	RangesHeld    float64 `json:"ranges_held"`
	Clusters      int     `json:"clusters"` // VitalsClusters it passed since its start (series of vitals_routegc_passes_total)
	HeapMiB       float64 `json:"heap_inuse_mib_end"`
	RSSMiBAvg     float64 `json:"rss_mib_avg"`
	RSSMiBMax     float64 `json:"rss_mib_max"`
	CPUCoresAvg   float64 `json:"cpu_cores_avg"`
	APIBytesTotal int64   `json:"apiserver_bytes_total"`  // from the replica's start to the window's end
	APIBytesWin   int64   `json:"apiserver_bytes_window"` // in the window
	// Requests it sent the apiserver in the window, by method (rest_client_requests_total)
	Requests map[string]float64 `json:"apiserver_requests_window"`
	// Reconciles of each controller in the window (controller_runtime_reconcile_total)
	Reconciles map[string]float64 `json:"reconciles_window"`
}

// phase is what one window measured.
type phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Load    string  `json:"load_avg_end"`
	// Controllers' passes, by controller.
	Controllers map[string]ctlStats `json:"controllers"`
	// Writes of the status (vitals_status_writes_total), "owner result" -> count.
	Writes map[string]float64 `json:"status_writes"`
	// Requests the kube-apiserver served, "VERB resource[/subresource]" -> count (apiserver_request_total).
	APIRequests map[string]float64 `json:"apiserver_requests"`
	// Requests the workload API server served.
	WorkloadRequests map[string]float64 `json:"workload_requests,omitempty"`
	// Requests the operators sent to the kube-apiserver by method (rest_client_requests_total): the client's
	// side, its rate limits.
	ClientRequests map[string]float64 `json:"operator_requests"`
	Reconciles     map[string]float64 `json:"reconciles"`
	// Probes of the workload accesses by reason (vitals_workload_probes_total).
	WorkloadProbes map[string]float64 `json:"workload_probes,omitempty"`
	RoutesRemoved  float64            `json:"routes_removed"`
	// Requests the operators sent OpenStack, by service and operation (vitals_openstack_requests_total).
	CloudRequests map[string]float64 `json:"openstack_requests,omitempty"`
	SimCalls      float64            `json:"sim_api_calls"`
	// Processes: RSS (MiB) and CPU (cores) in the window.
	Procs map[string]procStats `json:"processes"`
	// The operators' Go heap in use at the end (MiB, all replicas).
	OperatorHeap float64 `json:"operator_heap_inuse_mib_end"`
	// OperatorMissing are the replicas whose metrics could not be read at the window's start or end: their
	// status writes, requests, reconciles and pass results are left out (the passes seen between come from
	// the scrapes that did answer).
	OperatorMissing []string `json:"operator_metrics_missing,omitempty"`
}

// ctlStats are one controller's passes in a window.
type ctlStats struct {
	Passes   float64            `json:"passes"`   // ended in the window
	Expected float64            `json:"expected"` // clusters × window / interval
	Results  map[string]float64 `json:"results"`  // vitals_<c>_passes_total by result
	PassP50  float64            `json:"pass_p50_seconds"`
	PassP99  float64            `json:"pass_p99_seconds"`
	PassMax  float64            `json:"pass_max_bucket_seconds"`
	// Times between two passes of one cluster ending in the window; late: longer than interval + slack.
	Gaps     int     `json:"gaps"`
	GapP50   float64 `json:"gap_p50_seconds"`
	GapP99   float64 `json:"gap_p99_seconds"`
	GapMax   float64 `json:"gap_max_seconds"`
	LateGaps int     `json:"late_gaps"`
	// Clusters whose last pass is older than interval + slack at the window's end (windows at least an
	// interval long).
	LateAtEnd int `json:"late_at_end"`
}

type procStats struct {
	RSS stat    `json:"rss_mib"`
	CPU float64 `json:"cpu_cores"`
}

// snapshot is every counter a phase subtracts, taken at one time.
type snapshot struct {
	at  time.Time
	ops []metrics
	api metrics
	wl  metrics
	sim map[string]float64
	cpu map[string]float64
}

func (e *env) snapshot(ctx context.Context, rs []*replica) (snapshot, error) {
	s := snapshot{at: time.Now(), cpu: map[string]float64{}}
	for _, r := range rs {
		m, err := scrapeRetry(ctx, r.metricsURL)
		if err != nil {
			// The window goes on without the operator's side (its metrics page could not be written in
			// time: a large fleet on a loaded machine); the API server's side still counts.
			fmt.Printf("the metrics of %s could not be read (%v): its numbers are left out of this window; load %s\n", r.name, err, benchproc.LoadAvg())
			m = nil
		}
		s.ops = append(s.ops, m)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s.api = e.api.scrape(sctx)
	if e.wl != nil {
		s.wl = e.wl.api.scrape(sctx)
	}
	s.sim, _ = getJSONMap(sctx, e.simURL+"/_sim/stats")
	for _, name := range e.smp.names() {
		s.cpu[name] = e.smp.cpu(name)
	}
	return s, nil
}

// scrapeRetry scrapes url, up to five times 5 s apart: on a loaded machine the operator's metrics server
// may time out writing a large page.
func scrapeRetry(ctx context.Context, url string) (metrics, error) {
	var err error
	for range 5 {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		var m metrics
		m, err = scrape(sctx, nil, url)
		cancel()
		if err == nil {
			return m, nil
		}
		if !benchproc.Sleep(ctx, 5*time.Second) {
			break
		}
	}
	return nil, err
}

// measure runs reps operators with --sharding (0: one without) on the VitalsClusters of e.ns, waits for every
// cluster's first pass of every controller, then measures the steady window and, with -change-clusters, the
// change.
func measure(ctx context.Context, e *env, dir string, reps int, mode string) (result, error) {
	o := e.o
	res := result{Clusters: e.n, Replicas: reps, ShardMode: mode, FirstPass: map[string]float64{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	opStart := time.Now()
	rs, stop, err := e.startReplicas(dir, reps, mode)
	defer stop()
	if err != nil {
		return res, err
	}

	// Warm-up: until every cluster had a first pass of every controller of these operators.
	warmup := o.warmup
	if warmup <= 0 {
		warmup = 2*o.interval + 30*time.Second
	}
	deadline := opStart.Add(warmup)
	for {
		for _, c := range e.pw.tracked() {
			if _, done := res.FirstPass[c]; !done && len(e.pw.since(c, opStart)) >= e.n {
				res.FirstPass[c] = time.Since(opStart).Seconds()
			}
		}
		passed := e.pw.passedAll(opStart)
		if passed >= e.n && len(e.pw.tracked()) > 0 {
			break
		}
		if time.Now().After(deadline) {
			// Not all within the warm-up: that is a result too (late passes), measure on.
			res.FirstPassMissing = e.n - passed
			break
		}
		for _, r := range rs {
			if r.op.Exited() {
				return res, fmt.Errorf("operator exited; log %s", r.op.LogPath)
			}
		}
		if !benchproc.Sleep(ctx, time.Second) {
			return res, ctx.Err()
		}
	}
	res.FirstPassAll = time.Since(opStart).Seconds()
	fmt.Printf("warm-up: %.0f s, %d clusters without a pass of every controller (%v); load %s\n",
		res.FirstPassAll, res.FirstPassMissing, res.FirstPass, benchproc.LoadAvg())
	res.Memory = append(res.Memory, e.memory(ctx, "warm: every cluster passed once"))
	if !benchproc.Sleep(ctx, o.steadyAfter) {
		return res, ctx.Err()
	}

	s0, err := e.snapshot(ctx, rs)
	if err != nil {
		return res, err
	}
	bytes0 := make([]int64, len(rs))
	for i, r := range rs {
		bytes0[i] = r.proxy.received()
	}
	if !e.wait(ctx, rs, o.window) {
		return res, ctx.Err()
	}
	s1, err := e.snapshot(ctx, rs)
	if err != nil {
		return res, err
	}
	steady := e.phase("steady", rs, s0, s1, opStart)
	res.Phases = append(res.Phases, steady)
	res.Memory = append(res.Memory, e.memory(ctx, "steady: end of the steady window"))
	rg := steady.Controllers["routegc"]
	res.LateGaps, res.Gaps, res.Late, res.WindowSeconds = rg.LateGaps, rg.Gaps, rg.LateAtEnd, steady.Seconds
	for i, r := range rs {
		res.PerReplica = append(res.PerReplica, replicaOf(r, s0.ops[i], s1.ops[i], e.smp, s0, s1, bytes0[i]))
	}

	if o.changeClusters > 0 {
		changed, err := orphanRoutes(ctx, e.simURL, e.routers, o.changeClusters, o.workers)
		if err != nil {
			return res, err
		}
		fmt.Printf("change: a route orphaned in %d clusters (%s ... %s); load %s\n", len(changed), changed[0], changed[len(changed)-1], benchproc.LoadAvg())
		if !e.wait(ctx, rs, o.changeWindow) {
			return res, ctx.Err()
		}
		s2, err := e.snapshot(ctx, rs)
		if err != nil {
			return res, err
		}
		ch := e.phase(fmt.Sprintf("change: a route orphaned in %d clusters", len(changed)), rs, s1, s2, opStart)
		res.Phases = append(res.Phases, ch)
		res.Memory = append(res.Memory, e.memory(ctx, "change: end of the change window"))
	}
	return res, nil
}

// startReplicas starts reps operators (0: one without --sharding); stop stops them and their proxies.
func (e *env) startReplicas(dir string, reps int, mode string) ([]*replica, func(), error) {
	o := e.o
	var rs []*replica
	stop := func() {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Add(1)
			go func() { defer wg.Done(); r.op.Stop(15 * time.Second); r.proxy.close() }()
		}
		wg.Wait()
	}
	var env []string
	for k, v := range adminEnv(e.simURL) {
		env = append(env, k+"="+v)
	}
	for i := range max(reps, 1) {
		ports, err := benchproc.FreePorts(2)
		if err != nil {
			return rs, stop, err
		}
		kubeconfig := o.kubeconfig
		r := &replica{name: fmt.Sprintf("operator-%d", i), metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])}
		e.pw.add(r.metricsURL)
		args := []string{"operator", "--namespace", e.ns,
			"--health-bind-address", "127.0.0.1", "--health-port", strconv.Itoa(ports[0]),
			"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--routegc-interval", o.interval.String(),
			"--access-interval", o.interval.String(), "--flight-interval", o.interval.String(),
			"--log-level", o.operatorLogLevel}
		if e.wl != nil {
			args = append(args, "--allow-loopback-workload") // the workload API server is on this host
		}
		if reps == 0 {
			args = append(args, "--leader-elect=false")
		} else {
			// Each replica behind its own proxy, which counts the bytes the kube-apiserver sends it.
			as := ""
			if o.asOperator {
				as = e.ns
			}
			if r.proxy, kubeconfig, err = proxiedKubeconfig(o.kubeconfig, filepath.Join(dir, fmt.Sprintf("kubeconfig-%d", i)), as); err != nil {
				return rs, stop, err
			}
			args = append(args, "--sharding", "--leader-election-namespace", e.ns,
				"--leader-election-id", fmt.Sprintf("bench-r%d-%s", reps, mode),
				"--shard-lease-duration", o.shardLease.String(), "--shard-renew-interval", o.shardRenew.String(),
				"--shard-safety-margin", o.shardMargin.String())
			if mode == "client" {
				args = append(args, "--shard-client-side")
			}
		}
		args = append(args, "--kubeconfig", kubeconfig)
		args = append(append(args, workersFlag(o.routegcWorkers)...), o.operatorFlags...)
		op, err := benchproc.Start(dir, r.name, o.vitals, env, args...)
		if err != nil {
			r.proxy.close()
			return rs, stop, err
		}
		r.op = op
		rs = append(rs, r)
		e.smp.watch(r.name, op.PID())
	}
	return rs, stop, nil
}

// wait waits d, failing when an operator exits; false when ctx ended.
func (e *env) wait(ctx context.Context, rs []*replica, d time.Duration) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for _, r := range rs {
			if r.op.Exited() {
				fmt.Fprintf(os.Stderr, "operator-bench: %s exited; log %s\n", r.name, r.op.LogPath)
			}
		}
		if !benchproc.Sleep(ctx, min(5*time.Second, time.Until(end))) {
			return false
		}
	}
	return true
}

// phase is what the window from s0 to s1 shows.
func (e *env) phase(name string, rs []*replica, s0, s1 snapshot, opStart time.Time) phase {
	o := e.o
	secs := s1.at.Sub(s0.at).Seconds()
	p := phase{Name: name, Seconds: secs, Load: benchproc.LoadAvg(), Controllers: map[string]ctlStats{},
		Writes: map[string]float64{}, ClientRequests: map[string]float64{}, Reconciles: map[string]float64{},
		WorkloadProbes: map[string]float64{}, Procs: map[string]procStats{}}
	var m0, m1 metrics
	for i := range rs {
		if s0.ops[i] == nil || s1.ops[i] == nil {
			p.OperatorMissing = append(p.OperatorMissing, rs[i].name)
			continue // a delta from or to nothing would count since the start
		}
		m0, m1 = mergeMetrics(m0, s0.ops[i]), mergeMetrics(m1, s1.ops[i])
		p.OperatorHeap += s1.ops[i].sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
	}
	addAll(p.Writes, m1.deltaBy(m0, "vitals_status_writes_total", "owner", "result"))
	addAll(p.ClientRequests, m1.deltaBy(m0, "rest_client_requests_total", "method"))
	addAll(p.Reconciles, m1.deltaBy(m0, "controller_runtime_reconcile_total", "controller"))
	addAll(p.WorkloadProbes, m1.deltaBy(m0, "vitals_workload_probes_total", "reason"))
	p.CloudRequests = m1.deltaBy(m0, "vitals_openstack_requests_total", "openstack_service", "operation")
	p.RoutesRemoved = m1.sum("vitals_routegc_routes_removed_total", nil) - m0.sum("vitals_routegc_routes_removed_total", nil)
	p.APIRequests = requests(s0.api, s1.api)
	if s1.wl != nil {
		p.WorkloadRequests = requests(s0.wl, s1.wl)
	}
	p.SimCalls = s1.sim["Requests"] - s0.sim["Requests"]
	for _, n := range e.smp.names() {
		p.Procs[n] = procStats{RSS: e.smp.between(n, s0.at, s1.at), CPU: (s1.cpu[n] - s0.cpu[n]) / secs}
	}
	for _, c := range controllers {
		st := ctlStats{Expected: float64(e.n) * secs / o.interval.Seconds(), Results: m1.deltaBy(m0, "vitals_"+c+"_passes_total", "result")}
		h := m1.histogramDelta(m0, "vitals_"+c+"_pass_duration_seconds")
		st.PassP50, st.PassP99, st.PassMax = finite(h.quantile(0.5)), finite(h.quantile(0.99)), finite(h.maxBucket())
		var gaps []float64
		for _, ts := range e.pw.since(c, opStart) {
			for i, t := range ts {
				if t.Before(s0.at) || t.After(s1.at) {
					continue
				}
				st.Passes++
				if i > 0 {
					gaps = append(gaps, t.Sub(ts[i-1]).Seconds())
				}
			}
		}
		slices.Sort(gaps)
		if len(gaps) > 0 {
			st.GapP50, st.GapP99, st.GapMax = gaps[len(gaps)/2], gaps[len(gaps)*99/100], gaps[len(gaps)-1]
			for _, g := range gaps {
				if g > (o.interval + o.slack).Seconds() {
					st.LateGaps++
				}
			}
		}
		st.Gaps = len(gaps)
		if s1.at.Sub(s0.at) >= o.interval && st.Passes > 0 {
			last := e.pw.lastOf(c)
			for i := range e.n {
				if t, ok := last[clusterName(i)]; !ok || s1.at.Sub(t) > o.interval+o.slack {
					st.LateAtEnd++
				}
			}
		}
		p.Controllers[c] = st
	}
	return p
}

// requests are the API server's requests between two scrapes by "VERB resource[/subresource]", without the
// bench's own scrapes of /metrics.
func requests(m0, m1 metrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m1.deltaBy(m0, "apiserver_request_total", "verb", "resource", "subresource") {
		f := strings.Fields(k)
		if len(f) == 0 || len(f) == 1 { // a non-resource request (/metrics, /readyz, ...): by verb only
			out[strings.Join(f, " ")+" (non-resource)"] += v
			continue
		}
		key := f[0] + " " + f[1]
		if len(f) > 2 {
			key += "/" + f[2]
		}
		out[key] += v
	}
	return out
}

func replicaOf(r *replica, m0, m1 metrics, smp *sampler, s0, s1 snapshot, bytes0 int64) replicaResult {
	secs := s1.at.Sub(s0.at).Seconds()
	rss := smp.between(r.name, s0.at, s1.at)
	rr := replicaResult{CPUCoresAvg: (s1.cpu[r.name] - s0.cpu[r.name]) / secs,
		APIBytesTotal: r.proxy.received(), APIBytesWin: r.proxy.received() - bytes0,
		RangesHeld: m1.sum("vitals_shard_ranges_held", nil), HeapMiB: m1.sum("go_memstats_heap_inuse_bytes", nil) / (1 << 20),
		RSSMiBAvg: rss.Avg, RSSMiBMax: rss.Max}
	rr.Passes = m1.sum("vitals_routegc_passes_total", nil) - m0.sum("vitals_routegc_passes_total", nil)
	rr.Clusters = m1.distinct("vitals_routegc_passes_total", "vitalscluster")
	rr.Requests = m1.deltaBy(m0, "rest_client_requests_total", "method")
	rr.Reconciles = m1.deltaBy(m0, "controller_runtime_reconcile_total", "controller")
	h := m1.histogramDelta(m0, "vitals_routegc_pass_duration_seconds")
	rr.PassP50, rr.PassP99 = finite(h.quantile(0.5)), finite(h.quantile(0.99))
	return rr
}

func addAll(dst, src map[string]float64) {
	for k, v := range src {
		dst[k] += v
	}
}

// finite is v, or -1 for the bucket above the highest bound (+Inf, which JSON cannot hold).
func finite(v float64) float64 {
	if math.IsInf(v, 0) {
		return -1
	}
	return v
}

// printResult prints what one run measured, phase by phase.
func printResult(r result, o options) {
	fmt.Printf("\n== %d clusters", r.Clusters)
	if r.Replicas > 0 {
		fmt.Printf(", %d replicas (shard selector %s)", r.Replicas, r.ShardMode)
	}
	fmt.Printf(": setup %.0f s; warm-up %.0f s (first pass of every cluster: %s; %d clusters without a pass of every controller)\n",
		r.SetupSeconds, r.FirstPassAll, seconds(r.FirstPass), r.FirstPassMissing)
	fmt.Println("memory (MiB): stage | kube-apiserver RSS / Go heap in use | etcd RSS / db in use | workload apiserver RSS / heap | load")
	for _, m := range r.Memory {
		fmt.Printf("  %s | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %s\n", m.Stage, m.APIServerRSS, m.APIServerHeap, m.EtcdRSS, m.EtcdDB, m.WorkloadRSS, m.WorkloadHeap, m.Load)
	}
	for _, p := range r.Phases {
		fmt.Printf("phase %s: %.0f s, load at the end %s\n", p.Name, p.Seconds, p.Load)
		if len(p.OperatorMissing) > 0 {
			fmt.Printf("  the metrics of %s could not be read at the window's start or end: their own numbers are left out\n", strings.Join(p.OperatorMissing, ", "))
		}
		for _, c := range controllers {
			st := p.Controllers[c]
			fmt.Printf("  %-7s passes %.0f (expected %.0f at one per %s; %s); pass p50 %s p99 %s max %s; between passes p50 %.1f p99 %.1f max %.1f s, %d of %d late; %d clusters late at the end\n",
				c, st.Passes, st.Expected, o.interval, counts(st.Results), dur(st.PassP50), dur(st.PassP99), dur(st.PassMax),
				st.GapP50, st.GapP99, st.GapMax, st.LateGaps, st.Gaps, st.LateAtEnd)
		}
		fmt.Printf("  status writes /s: %s\n", rates(p.Writes, p.Seconds))
		fmt.Printf("  kube-apiserver requests /s: %s\n", rates(p.APIRequests, p.Seconds))
		fmt.Printf("  operator requests /s (client side): %s; reconciles /s: %s\n", rates(p.ClientRequests, p.Seconds), rates(p.Reconciles, p.Seconds))
		if p.WorkloadRequests != nil {
			fmt.Printf("  workload apiserver requests /s: %s; workload probes /s: %s\n", rates(p.WorkloadRequests, p.Seconds), rates(p.WorkloadProbes, p.Seconds))
		}
		fmt.Printf("  routes removed %.0f; simulator calls %.0f (%.1f/s)\n", p.RoutesRemoved, p.SimCalls, p.SimCalls/p.Seconds)
		fmt.Printf("  OpenStack requests /s by service and operation: %s\n", rates(p.CloudRequests, p.Seconds))
		for _, n := range slices.Sorted(maps.Keys(p.Procs)) {
			ps := p.Procs[n]
			fmt.Printf("  %-18s RSS avg %.0f max %.0f MiB, CPU %.3f cores\n", n, ps.RSS.Avg, ps.RSS.Max, ps.CPU)
		}
		fmt.Printf("  operator heap in use at the end %.0f MiB\n", p.OperatorHeap)
	}
}

func counts(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func seconds(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.0f s", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// dur prints a bucket bound ("above the highest" for -1).
func dur(v float64) string {
	if v < 0 {
		return "above the highest bucket"
	}
	return strconv.FormatFloat(v, 'f', 2, 64) + " s"
}
