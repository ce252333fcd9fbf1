// Command operator-bench measures the operator at scale: for each size N it starts the OpenStack simulator
// (vitals-cloudsim) with N projects, each holding one cluster (a router with live, orphaned and foreign routes,
// nodes with ports), adds a latency to every simulated API call, creates N VitalsClusters (each with its own
// credentials Secret and, with -workload-kubeconfig, a kubeconfig Secret naming one shared workload API
// server) in a namespace of a real kube-apiserver, runs `vitals operator` on that namespace, and reports,
// per phase (the steady state once every cluster had a pass of every controller; with -change-clusters, a
// change of k clusters' routers), the passes of routegc, flight and access against their interval, the status
// writes by owner and result, the API server's requests by verb and resource, and the memory and CPU of the
// operator, the kube-apiserver, etcd, the workload API server and the simulator. The API server's and
// etcd's memory are also taken before the clusters exist and before the operator starts.
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
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/benchproc"
)

type options struct {
	kubeconfig, vitals, cloudsim, workDir string
	sizes                                 []int
	latency, interval, window, slack      time.Duration
	warmup                                time.Duration // longest wait for every cluster's first pass (0: two intervals + 30 s)
	cleanup                               bool          // delete the clusters at the end
	workers, routegcWorkers               int
	operatorLogLevel                      string
	operatorFlags                         []string
	replicas                              []int    // with -replicas: sharded runs, one per count
	shardModes                            []string // server (selector sent) and/or client (--shard-client-side)
	shardLease, shardRenew, shardMargin   time.Duration
	asOperator                            bool
	manifests                             string

	apiserverPIDFile, etcdPIDFile, etcdURL string // the kube-apiserver's and etcd's, to sample their memory
	workloadKubeconfig                     string // the shared workload API server ("": none, flight has no workload)
	workloadPIDFile, workloadEtcdPIDFile   string
	workloadNodes                          int
	orphanedRoutes                         int           // seeded per cluster
	volumes, loadBalancers                 int           // seeded per cluster (cloudheal reads them)
	settle                                 time.Duration // wait after seeding before the "seeded" memory sample
	steadyAfter                            time.Duration // wait after the warm-up before the steady window
	changeClusters                         int           // with it: orphan a route in that many clusters after the steady window
	changeWindow                           time.Duration
	scrapeEvery                            time.Duration // the operators' metrics, for the passes
}

// result is what one size (and replica count) measured.
type result struct {
	Clusters     int     `json:"clusters"`
	SetupSeconds float64 `json:"setup_seconds"`
	// Memory of the kube-apiserver, etcd and the workload API server at each stage (empty, seeded, steady,
	// change), in MiB.
	Memory []memPoint `json:"memory"`
	// FirstPass is, per controller, the time from the operators' start to every cluster's first pass
	// (0: not within the warm-up).
	FirstPass        map[string]float64 `json:"first_pass_seconds"`
	FirstPassAll     float64            `json:"first_pass_all_seconds"` // to every cluster's first pass of every controller
	FirstPassMissing int                `json:"first_pass_missing"`     // clusters without one at the end of the warm-up
	Phases           []phase            `json:"phases"`
	Replicas         int                `json:"replicas,omitempty"` // 0: one operator without --sharding
	ShardMode        string             `json:"shard_mode,omitempty"`
	PerReplica       []replicaResult    `json:"per_replica,omitempty"`
	// Of the steady phase, for the sharded tables: routegc's late passes and the window.
	Late, LateGaps, Gaps int
	WindowSeconds        float64
}

func main() {
	var o options
	var sizes, operatorFlags string
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the kube-apiserver to create the VitalsClusters in (required)")
	flag.StringVar(&o.vitals, "vitals", "bin/vitals", "the vitals binary")
	flag.StringVar(&o.cloudsim, "cloudsim", "bin/vitals-cloudsim", "the vitals-cloudsim binary")
	flag.StringVar(&o.workDir, "work", "_out/bench-operator", "directory for logs")
	flag.StringVar(&sizes, "sizes", "100,300,1000", "numbers of VitalsClusters, one run each")
	flag.DurationVar(&o.latency, "latency", 50*time.Millisecond, "latency added to every simulated OpenStack API call")
	flag.DurationVar(&o.interval, "interval", 30*time.Second, "route collector interval of every VitalsCluster, and the operators' --access-interval and --flight-interval")
	flag.DurationVar(&o.window, "window", 60*time.Second, "how long to measure the steady state once every cluster had its first pass")
	flag.DurationVar(&o.slack, "slack", 2*time.Second, "how much later than its interval a pass may come (status write, list period) before it counts as late")
	flag.BoolVar(&o.cleanup, "cleanup", true, "delete the VitalsClusters and their namespace at the end (false: leave them to the apiserver's own end, as run.sh's private one)")
	flag.DurationVar(&o.warmup, "warmup", 0, "longest wait for every cluster's first pass of every controller before the window (0: two intervals + 30 s)")
	flag.IntVar(&o.routegcWorkers, "routegc-workers", 0, "--routegc-workers of the operator (0: its default)")
	flag.StringVar(&o.operatorLogLevel, "operator-log-level", "warn", "--log-level of the operator (its log is in the work directory)")
	flag.StringVar(&operatorFlags, "operator-flags", "", "more flags of the operator, space-separated (e.g. \"--check-interval=30s\")")
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
	flag.StringVar(&o.apiserverPIDFile, "apiserver-pid-file", "", "the kube-apiserver's PID file (hack/kube.sh's): its memory and CPU are sampled")
	flag.StringVar(&o.etcdPIDFile, "etcd-pid-file", "", "etcd's PID file: its memory and CPU are sampled")
	flag.StringVar(&o.etcdURL, "etcd-url", "", "etcd's client URL: its database size is read from its /metrics")
	flag.StringVar(&o.workloadKubeconfig, "workload-kubeconfig", "", "kubeconfig of the API server every cluster's kubeconfig Secret names as its workload cluster (\"\": none: flight has no workload cluster)")
	flag.StringVar(&o.workloadPIDFile, "workload-apiserver-pid-file", "", "the workload kube-apiserver's PID file")
	flag.StringVar(&o.workloadEtcdPIDFile, "workload-etcd-pid-file", "", "the workload etcd's PID file")
	flag.IntVar(&o.workloadNodes, "workload-nodes", 5, "Nodes of the workload cluster (as many as each seeded cluster has servers)")
	flag.IntVar(&o.volumes, "volumes", 3, "Cinder volumes of the cluster's claims seeded in each cluster's project (cloudheal reads them and their attachments)")
	flag.IntVar(&o.loadBalancers, "load-balancers", 1, "Service load balancers seeded in each cluster's project (cloudheal reads them)")
	flag.IntVar(&o.orphanedRoutes, "orphaned-routes", 1, "orphaned routes seeded in each cluster's router (the route collector removes them in its first passes)")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "wait after seeding before the memory of the API server with the clusters and no operator is taken")
	flag.DurationVar(&o.steadyAfter, "steady-after", 0, "wait after the warm-up before the steady window")
	flag.IntVar(&o.changeClusters, "change-clusters", 0, "after the steady window: orphan a route in this many clusters and measure a window of -change-window")
	flag.DurationVar(&o.changeWindow, "change-window", 0, "the window after the change (0: two intervals + 1 min: a pass that sees the orphan, one that removes it)")
	flag.DurationVar(&o.scrapeEvery, "scrape-every", 0, "how often the operators' metrics are read for their passes (0: interval / 20, 1 s to 15 s)")
	flag.Parse()
	o.sizes = positiveList("sizes", sizes)
	o.operatorFlags = strings.Fields(operatorFlags)
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
	if o.changeWindow <= 0 {
		o.changeWindow = 2*o.interval + time.Minute
	}
	if o.scrapeEvery <= 0 {
		o.scrapeEvery = min(max(o.interval/20, time.Second), 15*time.Second)
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
	b, _ := json.Marshal(results)
	fmt.Printf("\njson: %s\n", b)
}

// positiveList parses the comma-separated positive numbers of flag name, or exits with 2.
func positiveList(name, v string) []int {
	var out []int
	for _, f := range strings.Split(v, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n <= 0 {
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

// run seeds n clusters and measures the operator (or each replica set) on them.
func run(ctx context.Context, o options, n int) ([]result, error) {
	res := result{Clusters: n}
	dir := filepath.Join(o.workDir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c, cfg, err := kubeClient(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	api, err := newAPIServer(cfg)
	if err != nil {
		return nil, err
	}
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	smp := startSampler(sctx, 2*time.Second)
	smp.watch("kube-apiserver", readPIDFile(o.apiserverPIDFile))
	smp.watch("etcd", readPIDFile(o.etcdPIDFile))
	smp.watch("workload-apiserver", readPIDFile(o.workloadPIDFile))
	smp.watch("workload-etcd", readPIDFile(o.workloadEtcdPIDFile))
	env := &env{o: o, n: n, api: api, smp: smp}
	var wl *workload
	if o.workloadKubeconfig != "" {
		if wl, err = setupWorkload(ctx, o.workloadKubeconfig, o.workloadNodes); err != nil {
			return nil, err
		}
		env.wl = wl
	}
	res.Memory = append(res.Memory, env.memory(ctx, "empty: the CRD, no VitalsCluster"))
	t0 := time.Now()

	// The cloud: one project per cluster, seeded over the simulator's admin API.
	simPort, err := freePort()
	if err != nil {
		return nil, err
	}
	env.simURL = fmt.Sprintf("http://127.0.0.1:%d", simPort)
	sim, err := benchproc.Start(dir, "cloudsim", o.cloudsim, nil, "--listen", fmt.Sprintf("127.0.0.1:%d", simPort),
		"--seed", "1", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	defer sim.Stop(15 * time.Second)
	env.sim = sim
	smp.watch("simulator", sim.PID())
	if err := waitHTTP(ctx, env.simURL+"/_sim/healthz", 30*time.Second); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	env.routers = make([]string, n)
	if err := parallel(ctx, o.workers, n, func(i int) error {
		name := clusterName(i)
		if err := postJSON(ctx, env.simURL+"/_sim/seed", map[string]any{"projects": []any{map[string]any{
			"name": name, "users": []any{map[string]any{"name": name, "password": "pw"}}}}}, nil); err != nil {
			return fmt.Errorf("seed project %s: %w", name, err)
		}
		var sc struct {
			RouterID string `json:"router_id"`
		}
		if err := postJSON(ctx, env.simURL+"/_sim/clusters", map[string]any{"project": name, "name": name, "nodes": 5,
			"orphaned_routes": o.orphanedRoutes, "foreign_routes": 1, "volumes": o.volumes, "load_balancers": o.loadBalancers}, &sc); err != nil {
			return fmt.Errorf("seed cluster %s: %w", name, err)
		}
		env.routers[i] = sc.RouterID
		return nil
	}); err != nil {
		return nil, err
	}
	if err := patchJSON(ctx, env.simURL+"/_sim/knobs", map[string]string{"request_latency": o.latency.String()}); err != nil {
		return nil, fmt.Errorf("set the simulator's latency: %w", err)
	}

	// The VitalsClusters, each with a credentials Secret of its own project and a kubeconfig Secret.
	env.ns = fmt.Sprintf("vitals-scale-%d-%d", n, time.Now().Unix())
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: env.ns}}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", env.ns, err)
	}
	if len(o.replicas) > 0 && o.asOperator {
		if err := asOperator(ctx, c, env.ns, o.manifests); err != nil {
			return nil, err
		}
	}
	if err := parallel(ctx, o.workers, n, func(i int) error {
		return createCluster(ctx, c, env, i)
	}); err != nil {
		return nil, err
	}
	res.SetupSeconds = time.Since(t0).Seconds()
	fmt.Printf("%d clusters seeded in %.0f s; load %s\n", n, res.SetupSeconds, benchproc.LoadAvg())
	if !benchproc.Sleep(ctx, o.settle) {
		return nil, ctx.Err()
	}
	res.Memory = append(res.Memory, env.memory(ctx, "seeded: the clusters and their Secrets, no operator"))
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	env.pw = watchPasses(wctx, o.scrapeEvery)

	// Leave nothing behind: once the operators are gone, drop the finalizers they set, then the namespace.
	defer func() {
		if !o.cleanup {
			return
		}
		var list v1alpha1.VitalsClusterList
		if err := c.List(context.Background(), &list, client.InNamespace(env.ns)); err != nil {
			fmt.Fprintf(os.Stderr, "operator-bench: list VitalsClusters of %s: %v\n", env.ns, err)
			return
		}
		cleanup(context.Background(), o, c, env.ns, list)
	}()
	if len(o.replicas) == 0 {
		r, err := measure(ctx, env, dir, 0, "")
		if err != nil {
			return nil, err
		}
		r.SetupSeconds, r.Memory = res.SetupSeconds, append(slices.Clone(res.Memory), r.Memory...)
		printResult(r, o)
		return []result{r}, nil
	}
	var results []result
	for _, reps := range o.replicas {
		for _, mode := range o.shardModes {
			if reps == 1 && mode == "client" && slices.Contains(o.shardModes, "server") {
				continue // one replica holds every range: the selector selects everything
			}
			r, err := measure(ctx, env, filepath.Join(dir, fmt.Sprintf("r%d-%s", reps, mode)), reps, mode)
			if err != nil {
				return nil, err
			}
			r.SetupSeconds, r.Memory = res.SetupSeconds, append(slices.Clone(res.Memory), r.Memory...)
			printResult(r, o)
			b, _ := json.Marshal(r)
			fmt.Printf("json %d replicas %s: %s\n", reps, mode, b) // per replica, before the next run
			shardedHeader()
			shardedRows(r)
			results = append(results, r)
		}
	}
	return results, nil
}

// createCluster creates cluster i's credentials Secret, its kubeconfig Secret (with a workload) and the
// VitalsCluster.
func createCluster(ctx context.Context, c client.Client, e *env, i int) error {
	name := clusterName(i)
	clouds := fmt.Sprintf("clouds:\n  openstack:\n    auth:\n      auth_url: %s/v3\n      username: %s\n      password: pw\n"+
		"      project_name: %s\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n",
		e.simURL, name, name)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-cloud", Namespace: e.ns},
		StringData: map[string]string{"clouds.yaml": clouds}}
	if err := c.Create(ctx, sec); err != nil {
		return fmt.Errorf("create secret %s: %w", sec.Name, err)
	}
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{RouterID: e.routers[i],
				CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: name + "-cloud"}},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
		}}
	if e.wl != nil {
		kc := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: e.ns},
			Data: map[string][]byte{"kubeconfig": e.wl.kubeconfig}}
		if err := c.Create(ctx, kc); err != nil {
			return fmt.Errorf("create secret %s: %w", kc.Name, err)
		}
		vc.Spec.KubeconfigSecretRef = &v1alpha1.SecretKeyRef{Name: kc.Name}
	}
	vc.Spec.Controllers.RouteGC.Interval = &metav1.Duration{Duration: e.o.interval}
	vc.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	vc.Spec.Controllers.CloudHeal.Interval = &metav1.Duration{Duration: e.o.interval}
	if err := c.Create(ctx, vc); err != nil {
		return fmt.Errorf("create VitalsCluster %s: %w", name, err)
	}
	return nil
}
