// Command operator-bench measures the operator at scale: for each size N it starts the OpenStack simulator
// (vitals-cloudsim) with N projects, each holding one cluster (a router with live, orphaned and foreign routes,
// nodes with ports), adds a latency to every simulated API call, creates N VitalsClusters (each with its own
// credentials Secret) in a namespace of a real kube-apiserver, runs `vitals operator` on that namespace, and
// reports whether every route pass ran within its interval, with the operator's memory and CPU.
//
//	go run ./bench/operator -kubeconfig K -vitals bin/vitals -cloudsim bin/vitals-cloudsim -sizes 100,300,1000
//
// With -replicas 1,2,4 it runs, on the same clusters, that many `vitals operator --sharding` processes, each
// behind its own TCP proxy to the kube-apiserver that counts the bytes the apiserver sends it, once with the
// shard selector sent (server-side sharding; the apiserver needs the feature gate ShardedListAndWatch) and
// once with --shard-client-side (the apiserver sends every cluster, as without the gate), and reports per
// replica: passes and their durations, RSS, CPU and apiserver bytes received.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/benchproc"
)

type options struct {
	kubeconfig, vitals, cloudsim, workDir string
	sizes                                 []int
	latency, interval, window, slack      time.Duration
	warmup                                time.Duration // longest wait for every cluster's first pass (0: two intervals + 30 s)
	cleanup                               bool          // delete the clusters at the end
	workers, routegcWorkers               int
	operatorLogLevel                      string
	replicas                              []int    // with -replicas: sharded runs, one per count
	shardModes                            []string // server (selector sent) and/or client (--shard-client-side)
	shardLease, shardRenew, shardMargin   time.Duration
	asOperator                            bool
	manifests                             string
}

// replicaResult is what one replica of a sharded run measured.
type replicaResult struct {
	Passes        float64 `json:"passes"`
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

// result is what one size measured.
type result struct {
	Clusters         int             `json:"clusters"`
	SetupSeconds     float64         `json:"setup_seconds"`
	FirstPassAll     float64         `json:"first_pass_all_seconds"` // operator start to every cluster's first pass
	FirstPassMissing int             `json:"first_pass_missing"`     // clusters without a pass two intervals after the start
	WindowSeconds    float64         `json:"window_seconds"`
	Passes           float64         `json:"passes"`          // passes counted in the window
	ExpectedPasses   float64         `json:"expected_passes"` // clusters × window / interval
	PassErrors       float64         `json:"pass_errors"`
	PassP50          float64         `json:"pass_p50_seconds"`
	PassP99          float64         `json:"pass_p99_seconds"`
	PassMaxBucket    float64         `json:"pass_max_bucket_seconds"` // upper bound of the highest non-empty bucket
	Late             int             `json:"late"`                    // clusters whose last pass is older than interval+slack at the end
	Gaps             int             `json:"gaps"`                    // times between two passes of one cluster, seen in its status
	GapP50           float64         `json:"gap_p50_seconds"`
	GapP99           float64         `json:"gap_p99_seconds"`
	GapMax           float64         `json:"gap_max_seconds"`
	LateGaps         int             `json:"late_gaps"` // gaps longer than interval+slack
	MaxAgeSeconds    float64         `json:"max_last_pass_age_seconds"`
	RSSMiBAvg        float64         `json:"rss_mib_avg"`
	RSSMiBMax        float64         `json:"rss_mib_max"`
	HeapInUseMiB     float64         `json:"heap_inuse_mib_end"`
	CPUCoresAvg      float64         `json:"cpu_cores_avg"`
	LoadAvgDuring    string          `json:"load_avg_during"`
	SimCPUCoresAvg   float64         `json:"sim_cpu_cores_avg"`
	APIReqsInWindow  float64         `json:"sim_api_calls_in_window"`
	Replicas         int             `json:"replicas,omitempty"` // 0: one operator without --sharding
	ShardMode        string          `json:"shard_mode,omitempty"`
	PerReplica       []replicaResult `json:"per_replica,omitempty"` // with replicas, the fields above sum them (RSS, heap, CPU, passes)
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the kube-apiserver to create the VitalsClusters in (required)")
	flag.StringVar(&o.vitals, "vitals", "bin/vitals", "the vitals binary")
	flag.StringVar(&o.cloudsim, "cloudsim", "bin/vitals-cloudsim", "the vitals-cloudsim binary")
	flag.StringVar(&o.workDir, "work", "_out/bench-operator", "directory for logs")
	flag.StringVar(&sizes, "sizes", "100,300,1000", "numbers of VitalsClusters, one run each")
	flag.DurationVar(&o.latency, "latency", 50*time.Millisecond, "latency added to every simulated OpenStack API call")
	flag.DurationVar(&o.interval, "interval", 30*time.Second, "route collector interval of every VitalsCluster, and the operators' --access-interval and --flight-interval")
	flag.DurationVar(&o.window, "window", 60*time.Second, "how long to measure once every cluster had its first pass")
	flag.DurationVar(&o.slack, "slack", 2*time.Second, "how much later than its interval a pass may come (status write, list period) before it counts as late")
	flag.BoolVar(&o.cleanup, "cleanup", true, "delete the VitalsClusters and their namespace at the end (false: leave them to the apiserver's own end, as run.sh's private one)")
	flag.DurationVar(&o.warmup, "warmup", 0, "longest wait for every cluster's first pass before the window (0: two intervals + 30 s)")
	flag.IntVar(&o.routegcWorkers, "routegc-workers", 0, "--routegc-workers of the operator (0: its default)")
	flag.StringVar(&o.operatorLogLevel, "operator-log-level", "warn", "--log-level of the operator (its log is in the work directory)")
	flag.IntVar(&o.workers, "create-workers", 8, "parallel creations of Secrets and VitalsClusters")
	var replicas, modes string
	flag.StringVar(&replicas, "replicas", "", "with it: numbers of `vitals operator --sharding` replicas, one run each on the same clusters (each replica behind its own byte-counting proxy to the kube-apiserver)")
	flag.StringVar(&modes, "shard-modes", "server,client", "with -replicas: server (the replicas send the shard selector) and/or client (--shard-client-side: the API server sends every cluster)")
	flag.DurationVar(&o.shardLease, "shard-lease-duration", 10*time.Second, "--shard-lease-duration of the replicas")
	flag.DurationVar(&o.shardRenew, "shard-renew-interval", 2*time.Second, "--shard-renew-interval of the replicas")
	flag.DurationVar(&o.shardMargin, "shard-safety-margin", 3*time.Second, "--shard-safety-margin of the replicas")
	flag.BoolVar(&o.asOperator, "as-operator", true, "with -replicas: the replicas act as the operator's ServiceAccount (impersonated), with the chart's FlowSchema for its Leases, "+
		"as the chart installs them (false: as the kubeconfig's system:masters user, whom API Priority and Fairness exempts)")
	flag.StringVar(&o.manifests, "manifests", "deploy/manifests/operator.yaml", "the chart rendered with its defaults (its FlowSchema, with -as-operator)")
	flag.Parse()
	o.sizes = positiveList("sizes", sizes)
	if replicas != "" {
		o.replicas = positiveList("replicas", replicas)
		for _, m := range strings.Split(modes, ",") {
			if m = strings.TrimSpace(m); m != "server" && m != "client" {
				fmt.Fprintf(os.Stderr, "operator-bench: -shard-modes: %q is neither server nor client\n", m)
				os.Exit(2)
			}
			o.shardModes = append(o.shardModes, strings.TrimSpace(m))
		}
	}
	if o.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "operator-bench: -kubeconfig is required")
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signalContext()
	defer stop()
	var results []result
	for _, n := range o.sizes {
		rs, err := run(ctx, o, n)
		if err != nil {
			fmt.Fprintf(os.Stderr, "operator-bench: %d clusters: %v\n", n, err)
			os.Exit(1)
		}
		results = append(results, rs...)
	}
	fmt.Println()
	if len(o.replicas) > 0 {
		printSharded(results)
		return
	}
	fmt.Println("| clusters | passes in window (expected) | pass duration p50 / p99 / max bucket | time between passes p50 / p99 / max | late passes | RSS avg / max | heap in use | operator CPU | simulator CPU |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Printf("| %d | %.0f (%.0f) | %.2f / %.2f / %.2f s | %.1f / %.1f / %.1f s | %d of %d | %.1f / %.1f MiB | %.1f MiB | %.3f cores | %.3f cores |\n",
			r.Clusters, r.Passes, r.ExpectedPasses, r.PassP50, r.PassP99, r.PassMaxBucket, r.GapP50, r.GapP99, r.GapMax,
			r.LateGaps, r.Gaps, r.RSSMiBAvg, r.RSSMiBMax, r.HeapInUseMiB, r.CPUCoresAvg, r.SimCPUCoresAvg)
	}
	b, _ := json.Marshal(jsonSafe(results...))
	fmt.Printf("\njson: %s\n", b)
}

// positiveList parses the comma-separated positive numbers of flag name, or exits with 2.
func positiveList(name, v string) []int {
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "operator-bench: -%s: %q is not a positive number\n", name, f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func printResult(r result, o options) {
	fmt.Printf("%d clusters: setup %.0fs, first passes %.0fs after the operator started (%d clusters without one); window %.0fs: "+
		"%.0f passes (expected %.0f at one per %s), %.0f failed; pass p50 %.2fs p99 %.2fs (max bucket %.2fs); "+
		"time between passes p50 %.1fs p99 %.1fs max %.1fs, %d of %d longer than the interval; %d clusters late at the end (oldest last pass %.1fs ago); operator RSS avg %.1f MiB max %.1f MiB, heap %.1f MiB, "+
		"CPU %.3f cores; simulator CPU %.3f cores, %.0f API calls; load %s\n",
		r.Clusters, r.SetupSeconds, r.FirstPassAll, r.FirstPassMissing, r.WindowSeconds, r.Passes, r.ExpectedPasses, o.interval, r.PassErrors,
		r.PassP50, r.PassP99, r.PassMaxBucket, r.GapP50, r.GapP99, r.GapMax, r.LateGaps, r.Gaps, r.Late, r.MaxAgeSeconds, r.RSSMiBAvg, r.RSSMiBMax, r.HeapInUseMiB,
		r.CPUCoresAvg, r.SimCPUCoresAvg, r.APIReqsInWindow, r.LoadAvgDuring)
}

func run(ctx context.Context, o options, n int) ([]result, error) {
	res := result{Clusters: n}
	dir := filepath.Join(o.workDir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	t0 := time.Now()

	// The cloud: one project per cluster, seeded over the simulator's admin API.
	simPort, err := freePort()
	if err != nil {
		return nil, err
	}
	simURL := fmt.Sprintf("http://127.0.0.1:%d", simPort)
	sim, err := benchproc.Start(dir, "cloudsim", o.cloudsim, nil, "--listen", fmt.Sprintf("127.0.0.1:%d", simPort),
		"--seed", "1", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	defer sim.Stop(15 * time.Second)
	if err := waitHTTP(ctx, simURL+"/_sim/healthz", 30*time.Second); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	routers := make([]string, n)
	if err := parallel(ctx, o.workers, n, func(i int) error {
		name := clusterName(i)
		if err := postJSON(ctx, simURL+"/_sim/seed", map[string]any{"projects": []any{map[string]any{
			"name": name, "users": []any{map[string]any{"name": name, "password": "pw"}}}}}, nil); err != nil {
			return fmt.Errorf("seed project %s: %w", name, err)
		}
		var sc struct {
			RouterID string `json:"router_id"`
		}
		if err := postJSON(ctx, simURL+"/_sim/clusters", map[string]any{"project": name, "name": name, "nodes": 5,
			"orphaned_routes": 1, "foreign_routes": 1}, &sc); err != nil {
			return fmt.Errorf("seed cluster %s: %w", name, err)
		}
		routers[i] = sc.RouterID
		return nil
	}); err != nil {
		return nil, err
	}
	if err := patchJSON(ctx, simURL+"/_sim/knobs", map[string]string{"request_latency": o.latency.String()}); err != nil {
		return nil, fmt.Errorf("set the simulator's latency: %w", err)
	}

	// The VitalsClusters, each with a credentials Secret of its own project.
	c, err := kubeClient(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	ns := fmt.Sprintf("vitals-scale-%d-%d", n, time.Now().Unix())
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if len(o.replicas) > 0 && o.asOperator {
		if err := asOperator(ctx, c, ns, o.manifests); err != nil {
			return nil, err
		}
	}
	if err := parallel(ctx, o.workers, n, func(i int) error {
		name := clusterName(i)
		clouds := fmt.Sprintf("clouds:\n  openstack:\n    auth:\n      auth_url: %s/v3\n      username: %s\n      password: pw\n"+
			"      project_name: %s\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n",
			simURL, name, name)
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-cloud", Namespace: ns},
			StringData: map[string]string{"clouds.yaml": clouds}}
		if err := c.Create(ctx, sec); err != nil {
			return fmt.Errorf("create secret %s: %w", name, err)
		}
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.ClusterSpec{
				OpenStack: v1alpha1.OpenStackSpec{RouterID: routers[i],
					CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: name + "-cloud"}},
				PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			}}
		vc.Spec.Controllers.RouteGC.Interval = &metav1.Duration{Duration: o.interval}
		vc.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
		if err := c.Create(ctx, vc); err != nil {
			return fmt.Errorf("create VitalsCluster %s: %w", name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	res.SetupSeconds = time.Since(t0).Seconds()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	pw := watchPasses(wctx)

	// Leave nothing behind: once the operators are gone, drop the finalizers they set, then the namespace.
	defer func() {
		if !o.cleanup {
			return
		}
		var list v1alpha1.VitalsClusterList
		if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			fmt.Fprintf(os.Stderr, "operator-bench: list VitalsClusters of %s: %v\n", ns, err)
			return
		}
		cleanup(context.Background(), o, c, ns, list)
	}()
	var results []result
	if len(o.replicas) == 0 {
		r, err := measure(ctx, o, c, pw, n, ns, simURL, sim, dir, 0, "")
		if err != nil {
			return nil, err
		}
		r.SetupSeconds = res.SetupSeconds
		printResult(r, o)
		return []result{r}, nil
	}
	for _, reps := range o.replicas {
		for _, mode := range o.shardModes {
			if reps == 1 && mode == "client" && slices.Contains(o.shardModes, "server") {
				continue // one replica holds every range: the selector selects everything
			}
			r, err := measure(ctx, o, c, pw, n, ns, simURL, sim, filepath.Join(dir, fmt.Sprintf("r%d-%s", reps, mode)), reps, mode)
			if err != nil {
				return nil, err
			}
			r.SetupSeconds = res.SetupSeconds
			printResult(r, o)
			b, _ := json.Marshal(jsonSafe(r)[0])
			fmt.Printf("json %d replicas %s: %s\n", reps, mode, b) // per replica, before the next run
			shardedHeader()
			shardedRows(r)
			results = append(results, r)
		}
	}
	return results, nil
}

// replica is one operator process and its proxy to the kube-apiserver.
type replica struct {
	op         *benchproc.Process
	proxy      *countingProxy
	metricsURL string
	rss        []float64
	cpu0       float64
	bytes0     int64
}

// measure runs reps operators with --sharding (0: one without) on the VitalsClusters of ns, waits for every
// cluster's first pass, then measures a window.
func measure(ctx context.Context, o options, c client.Client, pw *passWatch, n int, ns, simURL string, sim *benchproc.Process, dir string, reps int, mode string) (result, error) {
	res := result{Clusters: n, Replicas: reps, ShardMode: mode}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	env := []string{"OS_AUTH_URL=" + simURL + "/v3", "OS_USERNAME=admin", "OS_PASSWORD=admin", "OS_PROJECT_NAME=admin",
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=RegionOne"}
	opStart := time.Now()
	var rs []*replica
	defer func() {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Add(1)
			go func() { defer wg.Done(); r.op.Stop(15 * time.Second); r.proxy.close() }()
		}
		wg.Wait()
	}()
	for i := range max(reps, 1) {
		ports, err := benchproc.FreePorts(2)
		if err != nil {
			return res, err
		}
		kubeconfig := o.kubeconfig
		r := &replica{metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])}
		pw.add(r.metricsURL)
		args := []string{"operator", "--namespace", ns,
			"--health-bind-address", "127.0.0.1", "--health-port", strconv.Itoa(ports[0]),
			"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--routegc-interval", o.interval.String(),
			"--access-interval", o.interval.String(), "--flight-interval", o.interval.String(),
			"--log-level", o.operatorLogLevel}
		if reps == 0 {
			args = append(args, "--leader-elect=false")
		} else {
			// Each replica behind its own proxy, which counts the bytes the kube-apiserver sends it.
			as := ""
			if o.asOperator {
				as = ns
			}
			if r.proxy, kubeconfig, err = proxiedKubeconfig(o.kubeconfig, filepath.Join(dir, fmt.Sprintf("kubeconfig-%d", i)), as); err != nil {
				return res, err
			}
			args = append(args, "--sharding", "--leader-election-namespace", ns,
				"--leader-election-id", fmt.Sprintf("bench-r%d-%s", reps, mode),
				"--shard-lease-duration", o.shardLease.String(), "--shard-renew-interval", o.shardRenew.String(),
				"--shard-safety-margin", o.shardMargin.String())
			if mode == "client" {
				args = append(args, "--shard-client-side")
			}
		}
		args = append(args, "--kubeconfig", kubeconfig)
		op, err := benchproc.Start(dir, fmt.Sprintf("operator-%d", i), o.vitals, env, append(args, workersFlag(o.routegcWorkers)...)...)
		if err != nil {
			if r.proxy != nil {
				r.proxy.close()
			}
			return res, err
		}
		r.op = op
		rs = append(rs, r)
	}

	// Warm-up: until every cluster had a first pass of these operators (at most two intervals).
	warmup := o.warmup
	if warmup <= 0 {
		warmup = 2*o.interval + 30*time.Second
	}
	deadline := opStart.Add(warmup)
	for {
		passed := len(pw.since(opStart))
		if passed >= n {
			break
		}
		if time.Now().After(deadline) {
			// Not all within two intervals: that is a result too (late passes), measure on.
			res.FirstPassMissing = n - passed
			break
		}
		for _, r := range rs {
			if r.op.Exited() {
				return res, fmt.Errorf("operator exited; log %s", r.op.LogPath)
			}
		}
		time.Sleep(time.Second)
	}
	res.FirstPassAll = time.Since(opStart).Seconds()

	// The window: RSS and CPU sampled every second, pass counts and durations from the metrics.
	m0 := make([]metrics, len(rs))
	for i, r := range rs {
		var err error
		if m0[i], err = scrape(ctx, r.metricsURL); err != nil {
			return res, err
		}
		r.cpu0, r.bytes0 = procCPU(r.op.PID()), r.proxy.received()
	}
	sim0, _ := getJSONMap(ctx, simURL+"/_sim/stats")
	simCPU0, w0 := procCPU(sim.PID()), time.Now()
	for time.Since(w0) < o.window {
		for _, r := range rs {
			if v := procRSS(r.op.PID()); v > 0 {
				r.rss = append(r.rss, v)
			}
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	seen := pw.since(opStart) // cluster -> the end times of its passes, as its replica's metrics show them
	var gaps []float64
	for _, ts := range seen {
		for i := 1; i < len(ts); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]).Seconds())
		}
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		res.GapP50, res.GapP99, res.GapMax = gaps[len(gaps)/2], gaps[len(gaps)*99/100], gaps[len(gaps)-1]
		for _, g := range gaps {
			if g > o.interval.Seconds()+o.slack.Seconds() {
				res.LateGaps++
			}
		}
	}
	res.Gaps = len(gaps)
	elapsed := time.Since(w0).Seconds()
	simCPU1 := procCPU(sim.PID())
	sim1, _ := getJSONMap(ctx, simURL+"/_sim/stats")
	res.LoadAvgDuring = loadAvg()
	res.WindowSeconds = elapsed
	res.SimCPUCoresAvg = (simCPU1 - simCPU0) / elapsed
	res.APIReqsInWindow = sim1["Requests"] - sim0["Requests"]
	var all histogram
	var m1all, m0all metrics
	for i, r := range rs {
		m1, err := scrape(ctx, r.metricsURL)
		if err != nil {
			return res, err
		}
		rr := replicaResult{CPUCoresAvg: (procCPU(r.op.PID()) - r.cpu0) / elapsed,
			APIBytesTotal: r.proxy.received(), APIBytesWin: r.proxy.received() - r.bytes0,
			RangesHeld: m1.value("vitals_shard_ranges_held", nil), HeapMiB: m1.value("go_memstats_heap_inuse_bytes", nil) / (1 << 20)}
		for _, v := range r.rss {
			rr.RSSMiBAvg += v
			rr.RSSMiBMax = max(rr.RSSMiBMax, v)
		}
		if len(r.rss) > 0 {
			rr.RSSMiBAvg /= float64(len(r.rss))
		}
		rr.Passes = m1.sum("vitals_routegc_passes_total", nil) - m0[i].sum("vitals_routegc_passes_total", nil)
		rr.Clusters = m1.distinct("vitals_routegc_passes_total", "vitalscluster")
		rr.Requests = m1.deltaBy(m0[i], "rest_client_requests_total", "method")
		rr.Reconciles = m1.deltaBy(m0[i], "controller_runtime_reconcile_total", "controller")
		h := m1.histogramDelta(m0[i], "vitals_routegc_pass_duration_seconds")
		rr.PassP50, rr.PassP99 = h.quantile(0.5), h.quantile(0.99)
		res.PerReplica = append(res.PerReplica, rr)
		res.Passes += rr.Passes
		res.PassErrors += rr.Passes - (m1.sum("vitals_routegc_passes_total", map[string]string{"result": "ok"}) -
			m0[i].sum("vitals_routegc_passes_total", map[string]string{"result": "ok"}))
		res.CPUCoresAvg += rr.CPUCoresAvg
		res.RSSMiBAvg += rr.RSSMiBAvg
		res.RSSMiBMax += rr.RSSMiBMax
		res.HeapInUseMiB += m1.value("go_memstats_heap_inuse_bytes", nil) / (1 << 20)
		m1all, m0all = mergeMetrics(m1all, m1), mergeMetrics(m0all, m0[i])
	}
	all = m1all.histogramDelta(m0all, "vitals_routegc_pass_duration_seconds")
	res.ExpectedPasses = float64(n) * elapsed / o.interval.Seconds()
	res.PassP50, res.PassP99, res.PassMaxBucket = all.quantile(0.5), all.quantile(0.99), all.maxBucket()

	// At the end, every cluster's last pass must be younger than its interval (with a slack for the pass
	// itself and the status write).
	end := time.Now()
	last := pw.last()
	for i := range n {
		age := o.interval * 10
		if t, ok := last[clusterName(i)]; ok {
			age = end.Sub(t)
		}
		res.MaxAgeSeconds = max(res.MaxAgeSeconds, age.Seconds())
		if age > o.interval+o.slack {
			res.Late++
		}
	}
	return res, nil
}

// mergeMetrics appends the samples of b to a copy of a.
func mergeMetrics(a, b metrics) metrics {
	out := metrics{}
	for k, v := range a {
		out[k] = append(out[k], v...)
	}
	for k, v := range b {
		out[k] = append(out[k], v...)
	}
	return out
}

// cleanup drops the finalizers the operators set on the VitalsClusters of ns, then deletes ns.
func cleanup(ctx context.Context, o options, c client.Client, ns string, list v1alpha1.VitalsClusterList) {
	if err := parallel(ctx, o.workers, len(list.Items), func(i int) error {
		vc := &list.Items[i]
		if len(vc.Finalizers) == 0 {
			return nil
		}
		patch := client.MergeFrom(vc.DeepCopy())
		vc.Finalizers = nil
		return client.IgnoreNotFound(c.Patch(ctx, vc, patch))
	}); err != nil {
		fmt.Fprintf(os.Stderr, "operator-bench: drop finalizers in %s: %v\n", ns, err)
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		fmt.Fprintf(os.Stderr, "operator-bench: delete namespace %s: %v\n", ns, err)
	}
}

// workersFlag passes -routegc-workers on to the operator when it is set.
func workersFlag(n int) []string {
	if n <= 0 {
		return nil
	}
	return []string{"--routegc-workers=" + strconv.Itoa(n)}
}

func clusterName(i int) string { return fmt.Sprintf("scale-%04d", i) }

func kubeClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, f func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// procRSS is a process's resident set in MiB (0 when unknown).
func procRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// procCPU is a process's user+system CPU time in seconds.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func freePort() (int, error) {
	ps, err := benchproc.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering after %s: %w", url, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func doJSON(ctx context.Context, method, url string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, body)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

func postJSON(ctx context.Context, url string, in, out any) error {
	return doJSON(ctx, http.MethodPost, url, in, out)
}

func patchJSON(ctx context.Context, url string, in any) error {
	return doJSON(ctx, http.MethodPatch, url, in, nil)
}

func getJSONMap(ctx context.Context, url string) (map[string]float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// metrics is a Prometheus text exposition: samples by name, each with its labels.
type metrics map[string][]sample

type sample struct {
	labels map[string]string
	value  float64
}

func scrape(ctx context.Context, url string) (metrics, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		labels := map[string]string{}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			name, rest = line[:i], line[j+1:]
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, _ := strings.Cut(kv, "=")
				labels[k] = strings.Trim(v, `"`)
			}
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		m[name] = append(m[name], sample{labels: labels, value: v})
	}
	return m, sc.Err()
}

func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func (m metrics) match(name string, want map[string]string) []sample {
	var out []sample
	for _, s := range m[name] {
		ok := true
		for k, v := range want {
			if s.labels[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func (m metrics) sum(name string, want map[string]string) float64 {
	t := 0.0
	for _, s := range m.match(name, want) {
		t += s.value
	}
	return t
}

// deltaBy sums the samples of name by the value of label, less those of before.
func (m metrics) deltaBy(before metrics, name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, smp := range m[name] {
		out[smp.labels[label]] += smp.value
	}
	for _, smp := range before[name] {
		out[smp.labels[label]] -= smp.value
	}
	return out
}

// distinct counts the values of label among the samples of name.
func (m metrics) distinct(name, label string) int {
	vs := map[string]bool{}
	for _, s := range m[name] {
		vs[s.labels[label]] = true
	}
	return len(vs)
}

func (m metrics) value(name string, want map[string]string) float64 { return m.sum(name, want) }

// histogram is cumulative bucket counts by upper bound.
type histogram struct {
	bounds []float64
	counts []float64
}

// histogramDelta sums the buckets of every series of name (all results) and subtracts those of before.
func (m metrics) histogramDelta(before metrics, name string) histogram {
	byBound := map[float64]float64{}
	for _, s := range m[name+"_bucket"] {
		b, _ := strconv.ParseFloat(s.labels["le"], 64)
		byBound[b] += s.value
	}
	for _, s := range before[name+"_bucket"] {
		b, _ := strconv.ParseFloat(s.labels["le"], 64)
		byBound[b] -= s.value
	}
	var h histogram
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// quantile is the upper bound of the bucket holding quantile q.
func (h histogram) quantile(q float64) float64 {
	if len(h.counts) == 0 || h.counts[len(h.counts)-1] == 0 {
		return 0
	}
	total := h.counts[len(h.counts)-1]
	for i, c := range h.counts {
		if c >= q*total {
			return h.bounds[i]
		}
	}
	return h.bounds[len(h.bounds)-1]
}

// maxBucket is the upper bound of the lowest bucket holding every observation.
func (h histogram) maxBucket() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	total := h.counts[len(h.counts)-1]
	for i, c := range h.counts {
		if c >= total {
			return h.bounds[i]
		}
	}
	return h.bounds[len(h.bounds)-1]
}

// countingProxy forwards TCP connections to the kube-apiserver as they are (TLS end to end) and counts the
// bytes the apiserver sends: everything one replica receives from it, TLS records included.
type countingProxy struct {
	l     net.Listener
	bytes atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startCountingProxy(upstream string) (*countingProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{l: l}
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", upstream)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(countingWriter{down, &p.bytes}, up)
				_ = down.Close()
			}()
		}
	}()
	return p, nil
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// received is the bytes the apiserver sent through p so far (0 without a proxy).
func (p *countingProxy) received() int64 {
	if p == nil {
		return 0
	}
	return p.bytes.Load()
}

func (p *countingProxy) close() {
	if p == nil {
		return
	}
	_ = p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxiedKubeconfig starts a counting proxy to the server of kubeconfig and writes a copy of kubeconfig,
// pointing at the proxy, to path (the apiserver's certificate names 127.0.0.1, which the proxy also is),
// acting as the operator's ServiceAccount in asOperatorIn unless that is empty.
func proxiedKubeconfig(kubeconfig, path, asOperatorIn string) (*countingProxy, string, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	if asOperatorIn != "" {
		impersonate(cfg, asOperatorIn)
	}
	var p *countingProxy
	for _, cl := range cfg.Clusters {
		u, err := url.Parse(cl.Server)
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig %s: server %q: %w", kubeconfig, cl.Server, err)
		}
		if p == nil {
			if p, err = startCountingProxy(u.Host); err != nil {
				return nil, "", err
			}
		}
		u.Host = p.l.Addr().String()
		cl.Server = u.String()
	}
	if p == nil {
		return nil, "", fmt.Errorf("kubeconfig %s names no cluster", kubeconfig)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		p.close()
		return nil, "", err
	}
	return p, path, nil
}

// printSharded prints one row per replica of each sharded run.
func printSharded(results []result) {
	shardedHeader()
	for _, r := range results {
		shardedRows(r)
	}
	b, _ := json.Marshal(jsonSafe(results...))
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

// jsonSafe replaces the pass durations above the highest bucket (+Inf, which JSON cannot hold) by -1.
func jsonSafe(rs ...result) []result {
	finite := func(v *float64) {
		if math.IsInf(*v, 0) {
			*v = -1
		}
	}
	out := make([]result, len(rs))
	for i, r := range rs {
		finite(&r.PassP50)
		finite(&r.PassP99)
		finite(&r.PassMaxBucket)
		r.PerReplica = slices.Clone(r.PerReplica)
		for k := range r.PerReplica {
			finite(&r.PerReplica[k].PassP50)
			finite(&r.PerReplica[k].PassP99)
		}
		out[i] = r
	}
	return out
}
