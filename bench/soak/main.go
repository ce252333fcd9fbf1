// Command soak runs the operator with sharded replicas against the OpenStack simulator under random faults
// for a while (30 minutes by default) and checks invariants from the simulator's request log (issue 27):
//
//   - no action on a cluster by a replica that did not hold the cluster's shard range when the write
//     arrived (the range's Lease in force then was another's, released, or expired);
//   - no wrongful write: nothing written for a cluster more than the fence's bound after it was paused,
//     no DELETE for a cluster that was not being deleted, no server touched (flight is off), and at the
//     end every live, foreign and excluded route, volume, load balancer and server of the clusters that
//     live is still there;
//   - no double delete: no DELETE of an object after a DELETE of it was accepted.
//
// The faults, drawn from a seeded source: the simulator answers 500 to a run of calls of a service, or
// delays its reads by seconds; the fault proxy in front of it resets the connections of a service for a few
// seconds; a replica is stopped (SIGSTOP) for 5 to 60 seconds and continued; the kube-apiserver is
// restarted (hack/kube.sh stop, start). Meanwhile the soak adds orphaned routes, pauses and resumes
// clusters, excludes routes, and deletes clusters (deorbit) and creates new ones.
//
//	bench/soak/run.sh                      # 30 minutes; SOAK_DURATION=3m for a short one
//	go run ./bench/soak -kubeconfig K -kube-state DIR -vitals bin/vitals -duration 30m
//
// The run's log, the request log, the Lease versions and the operators' logs go to -work; the summary is the
// last line (JSON). The exit code is 1 when an invariant broke.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/benchproc"
	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/sharding"
)

type options struct {
	kubeconfig, kubeState, kubeScript, vitals, work, crds string
	duration, interval, freezeMax, restartEvery           time.Duration
	replicas, clusters, ranges                            int
	seed                                                  uint64
	lease, renew, margin, writeTimeout                    time.Duration
}

func main() {
	var o options
	// a flag set of its own: controller-runtime's client/config registers --kubeconfig on the default one
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of a kube-apiserver of the soak's own (required)")
	fs.StringVar(&o.kubeState, "kube-state", "", "its hack/kube.sh state directory: the soak restarts it (empty: no restarts)")
	fs.StringVar(&o.kubeScript, "kube-script", "hack/kube.sh", "hack/kube.sh, to restart the kube-apiserver (its ports from the environment)")
	fs.StringVar(&o.vitals, "vitals", "bin/vitals", "the vitals binary")
	fs.StringVar(&o.work, "work", "_out/soak", "directory for the logs")
	fs.StringVar(&o.crds, "crds", "deploy/crds", "the CRDs to install")
	fs.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the faults go on")
	fs.DurationVar(&o.interval, "interval", 10*time.Second, "route collector interval of every cluster")
	fs.DurationVar(&o.freezeMax, "freeze-max", 60*time.Second, "longest SIGSTOP of a replica (the shortest is 5s)")
	fs.DurationVar(&o.restartEvery, "restart-every", 6*time.Minute, "mean time between kube-apiserver restarts")
	fs.IntVar(&o.replicas, "replicas", 3, "operator replicas (--sharding)")
	fs.IntVar(&o.clusters, "clusters", 24, "VitalsClusters at any time")
	fs.IntVar(&o.ranges, "ranges", 16, "--shard-ranges")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the faults and the workload")
	fs.DurationVar(&o.lease, "shard-lease-duration", 20*time.Second, "--shard-lease-duration")
	fs.DurationVar(&o.renew, "shard-renew-interval", 5*time.Second, "--shard-renew-interval")
	fs.DurationVar(&o.margin, "shard-safety-margin", 8*time.Second, "--shard-safety-margin")
	fs.DurationVar(&o.writeTimeout, "write-timeout", 5*time.Second, "--write-timeout")
	_ = fs.Parse(os.Args[1:])
	if o.kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "soak: -kubeconfig is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if len(f.Violations) > 0 {
		os.Exit(1)
	}
}

// soak is one run.
type soak struct {
	o     options
	rng   *rand.Rand
	log   *slog.Logger
	sim   *cloudsim.Sim
	proxy *faultproxy.Cloud
	kc    client.Client
	ns    string
	space sharding.Space
	kcfg  []byte // the kubeconfig, inlined: the clusters' workload kubeconfig (deorbit)

	mu       sync.Mutex
	clusters map[string]*clusterRec // by project ID
	next     int                    // the next cluster's number
	pauses   []span
	freezes  []span
	restarts int
	faults   map[string]int
	orphans  int

	replicas []*replica
}

// replica is one operator process and the identity it names itself with.
type replica struct {
	*benchproc.Process
	identity string
}

func run(ctx context.Context, o options) (*findings, error) {
	ctrllog.SetLogger(logr.Discard())
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return nil, err
	}
	runLog, err := os.Create(filepath.Join(o.work, "soak.log"))
	if err != nil {
		return nil, err
	}
	defer runLog.Close()
	space, err := sharding.NewSpace(o.ranges)
	if err != nil {
		return nil, err
	}
	s := &soak{o: o, rng: rand.New(rand.NewPCG(o.seed, o.seed^0x5eed)), space: space,
		log:      slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, runLog), nil)),
		clusters: map[string]*clusterRec{}, faults: map[string]int{}}
	reqLogPath := filepath.Join(o.work, "requests.jsonl")
	reqLog, err := os.Create(reqLogPath)
	if err != nil {
		return nil, err
	}
	if s.sim, err = cloudsim.New(cloudsim.Options{Seed: o.seed, RequestLog: reqLog}); err != nil {
		return nil, err
	}
	if err := s.sim.Start(context.WithoutCancel(ctx), "127.0.0.1:0"); err != nil {
		return nil, err
	}
	admin := s.sim.CreateProject("admin")
	if _, err := s.sim.CreateUser("admin", "admin", true, admin); err != nil {
		return nil, err
	}
	// the proxy logs each reset it injects: to the run's log only, not the terminal
	proxyLog := slog.New(slog.NewTextHandler(runLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if s.proxy, err = faultproxy.NewCloud(s.sim.AuthURL(), faultproxy.WithLogger(proxyLog)); err != nil {
		return nil, err
	}
	if err := s.setupKube(ctx); err != nil {
		return nil, err
	}
	for range o.clusters {
		if err := s.addCluster(ctx); err != nil {
			return nil, err
		}
	}
	leasesPath := filepath.Join(o.work, "leases.jsonl")
	leases, stopLeases, err := s.watchLeases(ctx, leasesPath)
	if err != nil {
		return nil, err
	}
	for i := range o.replicas {
		p, err := s.startReplica(i)
		if err != nil {
			return nil, err
		}
		s.replicas = append(s.replicas, p)
	}
	s.log.Info("soak running", "duration", o.duration, "replicas", o.replicas, "clusters", o.clusters, "namespace", s.ns, "seed", o.seed)
	began := time.Now()
	chaosCtx, stopChaos := context.WithTimeout(ctx, o.duration)
	s.chaos(chaosCtx)
	stopChaos()
	// let the operators finish what they began (no fault left), then stop them
	s.sim.ClearFaults()
	s.proxy.Keystone().Clear()
	s.log.Info("soak settling", "after", time.Since(began).Round(time.Second))
	benchproc.Sleep(ctx, 2*o.lease)
	for _, p := range s.replicas {
		_ = p.Signal(syscall.SIGCONT)
	}
	var wg sync.WaitGroup
	for _, p := range s.replicas {
		// a replica waits a safety margin before it releases its ranges
		wg.Go(func() { p.Stop(time.Minute) })
	}
	wg.Wait()
	stopLeases()
	_ = s.proxy.Close()
	_ = s.sim.Close()
	_ = reqLog.Close()

	reqs, err := readRequests(reqLogPath)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// the bound after a pause: the fence's live read may be a second old, and a write entered just before
	// may take the write timeout to arrive; a second of slack for the API server's answer
	bound := time.Second + o.writeTimeout + time.Second
	f := check(reqs, *leases, s.pauses, s.clusters, space, o.margin, bound)
	f.Violations = append(f.Violations, endState(s.sim, s.clusters)...)
	s.report(&f, reqs, *leases, time.Since(began))
	return &f, nil
}

// setupKube installs the CRD and creates the soak's namespace.
func (s *soak) setupKube(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.o.kubeconfig)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{s.o.crds}, ErrorIfPathMissing: true,
		MaxTime: time.Minute, PollInterval: 200 * time.Millisecond}); err != nil {
		return fmt.Errorf("install the CRDs: %w", err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	if s.kc, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	s.ns = fmt.Sprintf("soak-%d", time.Now().Unix())
	if err := s.kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
		return err
	}
	raw, err := clientcmd.LoadFromFile(s.o.kubeconfig)
	if err != nil {
		return err
	}
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return err
	}
	s.kcfg, err = clientcmd.Write(*raw)
	return err
}

// addCluster seeds a cluster in the simulator (its own project and user) and creates its VitalsCluster with
// its credentials and kubeconfig Secrets.
func (s *soak) addCluster(ctx context.Context) error {
	s.mu.Lock()
	name := fmt.Sprintf("s%03d", s.next)
	s.next++
	s.mu.Unlock()
	sc, err := s.sim.SeedCluster(cloudsim.ClusterSeed{Project: name, Name: name, Nodes: 3, OrphanedRoutes: 1, ForeignRoutes: 1, Volumes: 2, LoadBalancers: 1})
	if err != nil {
		return err
	}
	if _, err := s.sim.CreateUser(name, "pw", false, sc.ProjectID); err != nil {
		return err
	}
	rec := &clusterRec{Name: name, Project: sc.ProjectID, Router: sc.RouterID, Volumes: sc.Volumes, LoadBalancers: sc.LoadBalancers}
	rec.Keep = append(append(rec.Keep, sc.LiveRoutes...), sc.ForeignRoutes...)
	for _, n := range sc.Nodes {
		rec.Servers = append(rec.Servers, n.ID)
	}
	clouds := fmt.Sprintf("clouds:\n  openstack:\n    auth:\n      auth_url: %s\n      username: %s\n      password: pw\n"+
		"      project_name: %s\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n",
		s.proxy.AuthURL(), name, name)
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: name + "-cloud", Namespace: s.ns}, StringData: map[string]string{"clouds.yaml": clouds}},
		{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfig", Namespace: s.ns}, Data: map[string][]byte{"kubeconfig": s.kcfg}},
	} {
		if err := retry(ctx, func() error { return s.kc.Create(ctx, sec) }); err != nil {
			return fmt.Errorf("create secret %s: %w", sec.Name, err)
		}
	}
	off := false
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: v1alpha1.ClusterSpec{
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: name + "-kubeconfig"},
			OpenStack: v1alpha1.OpenStackSpec{RouterID: sc.RouterID, NetworkID: sc.NetworkID, SubnetID: sc.SubnetID,
				CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: name + "-cloud"}},
			PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
		}}
	actions := int32(10000)
	vc.Spec.Remediation.Budget = &v1alpha1.BudgetSpec{Actions: &actions, Window: &metav1.Duration{Duration: time.Hour}}
	vc.Spec.Remediation.MinProofAge = &metav1.Duration{Duration: 2 * s.o.interval}
	vc.Spec.Remediation.MaxUnhealthy = ptr(intstr.FromString("100%"))
	vc.Spec.Controllers.RouteGC.Interval = &metav1.Duration{Duration: s.o.interval}
	vc.Spec.Controllers.RouteGC.AddressSources = []v1alpha1.AddressSource{v1alpha1.AddressSourcePorts}
	vc.Spec.Controllers.Flight.Enabled = &off
	vc.Spec.Controllers.Deorbit.GiveUpAfter = &metav1.Duration{Duration: 20 * time.Minute}
	vc.Spec.Controllers.Deorbit.UnreachableGracePeriod = &metav1.Duration{Duration: time.Minute}
	vc.Spec.Controllers.Deorbit.CloudWaitTimeout = &metav1.Duration{Duration: 2 * time.Minute}
	// deleting the cluster tears it down, once confirmed (replaceCluster)
	vc.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDeorbit
	if err := retry(ctx, func() error { return s.kc.Create(ctx, vc) }); err != nil {
		return fmt.Errorf("create VitalsCluster %s: %w", name, err)
	}
	rec.UID = vc.UID
	s.mu.Lock()
	s.clusters[rec.Project] = rec
	s.mu.Unlock()
	return nil
}

// chaos runs the faults and the workload until ctx ends.
func (s *soak) chaos(ctx context.Context) {
	var wg sync.WaitGroup
	every := func(name string, mean time.Duration, f func(context.Context)) {
		wg.Go(func() {
			for {
				if !benchproc.Sleep(ctx, s.jitter(mean)) {
					return
				}
				f(ctx)
			}
		})
	}
	every("cloud fault", 15*time.Second, s.cloudFault)
	every("freeze", 75*time.Second, s.freeze)
	if s.o.kubeState != "" {
		every("apiserver restart", s.o.restartEvery, s.restartAPIServer)
	}
	every("orphan", 10*time.Second, s.addOrphan)
	every("pause", 40*time.Second, s.pause)
	every("exclude", 90*time.Second, s.exclude)
	every("deorbit", 90*time.Second, s.replaceCluster)
	wg.Wait()
}

// jitter is mean ±50 %.
func (s *soak) jitter(mean time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return mean/2 + time.Duration(s.rng.Int64N(int64(mean)))
}

func (s *soak) intN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rng.IntN(n)
}

var services = []struct{ name, prefix string }{
	{"network", "/networking/**"}, {"compute", "/compute/**"}, {"volume", "/volume/**"}, {"load-balancer", "/load-balancer/**"},
}

// cloudFault injects one fault: a run of 500s, slow reads, or connection resets of one service.
func (s *soak) cloudFault(ctx context.Context) {
	svc := services[s.intN(len(services))]
	switch k := s.intN(3); k {
	case 0:
		n := 3 + s.intN(10)
		if _, err := s.sim.AddFault(cloudsim.Fault{Service: svc.name, Status: 500, Times: n}); err == nil {
			s.count("500s")
			s.log.Info("fault: 500s", "service", svc.name, "calls", n)
		}
	case 1:
		d := time.Duration(2+s.intN(5)) * time.Second
		n := 5 + s.intN(20)
		if _, err := s.sim.AddFault(cloudsim.Fault{Service: svc.name, Method: "GET", Latency: cloudsim.Duration(d), Times: n}); err == nil {
			s.count("slow reads")
			s.log.Info("fault: slow reads", "service", svc.name, "latency", d, "calls", n)
		}
	default:
		name := fmt.Sprintf("reset-%d", time.Now().UnixNano())
		d := time.Duration(2+s.intN(5)) * time.Second
		if err := s.proxy.Keystone().Add(faultproxy.Rule{Name: name, Path: svc.prefix, Fault: faultproxy.Reset()}); err == nil {
			s.count("resets")
			s.log.Info("fault: connection resets", "service", svc.name, "for", d)
			benchproc.Sleep(ctx, d)
			s.proxy.Keystone().Remove(name)
		}
	}
}

// freeze stops a random replica (SIGSTOP) for 5 s to freeze-max, then continues it.
func (s *soak) freeze(ctx context.Context) {
	i := s.intN(len(s.replicas))
	d := 5*time.Second + time.Duration(s.intN(int((s.o.freezeMax-5*time.Second)/time.Second)+1))*time.Second
	p := s.replicas[i]
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return
	}
	from := time.Now()
	s.log.Info("fault: replica frozen", "replica", p.identity, "for", d)
	benchproc.Sleep(context.WithoutCancel(ctx), d) // always continued
	_ = p.Signal(syscall.SIGCONT)
	s.mu.Lock()
	s.freezes = append(s.freezes, span{Who: p.identity, From: from, To: time.Now()})
	s.mu.Unlock()
	s.count("freezes")
}

// restartAPIServer stops the kube-apiserver (and etcd) and starts it again 5 to 15 s later.
func (s *soak) restartAPIServer(ctx context.Context) {
	down := time.Duration(5+s.intN(11)) * time.Second
	s.log.Info("fault: kube-apiserver restart", "down", down)
	if out, err := exec.Command(s.o.kubeScript, "stop", s.o.kubeState).CombinedOutput(); err != nil {
		s.log.Warn("kube-apiserver stop failed", "err", err, "output", string(out))
	}
	benchproc.Sleep(context.WithoutCancel(ctx), down)
	if out, err := exec.Command(s.o.kubeScript, "start", s.o.kubeState).CombinedOutput(); err != nil {
		s.log.Error("kube-apiserver start failed", "err", err, "output", string(out))
	}
	s.mu.Lock()
	s.restarts++
	s.mu.Unlock()
	s.count("apiserver restarts")
}

// live is a random cluster not being deleted ("" when none).
func (s *soak) live() *clusterRec {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs []*clusterRec
	for _, c := range s.clusters {
		if c.Deleted.IsZero() {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	slices.SortFunc(cs, func(a, b *clusterRec) int { return strings.Compare(a.Name, b.Name) })
	return cs[s.rng.IntN(len(cs))]
}

// addOrphan adds a route whose nexthop no port holds to a random cluster's router: routegc removes it
// after its proof age.
func (s *soak) addOrphan(context.Context) {
	c := s.live()
	if c == nil {
		return
	}
	routes, _, ok := s.sim.Router(c.Router)
	if !ok || len(routes) >= 20 {
		return
	}
	k := 100 + s.intN(150)
	rt := cloudsim.Route{Destination: fmt.Sprintf("198.19.%d.0/24", k), NextHop: fmt.Sprintf("10.180.0.%d", k)}
	if slices.Contains(routes, rt) {
		return
	}
	if err := s.sim.SetRoutes(c.Router, append(routes, rt)); err == nil {
		s.mu.Lock()
		s.orphans++
		s.mu.Unlock()
	}
}

// pause pauses a random cluster for 20-60 s.
func (s *soak) pause(ctx context.Context) {
	c := s.live()
	if c == nil {
		return
	}
	if err := s.annotate(ctx, c, v1alpha1.AnnotationPaused, "true"); err != nil {
		return
	}
	from := time.Now()
	s.mu.Lock()
	i := len(s.pauses)
	s.pauses = append(s.pauses, span{Who: c.Name, From: from})
	s.mu.Unlock()
	s.count("pauses")
	benchproc.Sleep(context.WithoutCancel(ctx), time.Duration(20+s.intN(41))*time.Second)
	// the pause holds until the annotation is gone: a failed removal is retried, and the span ends after it
	for {
		if err := s.annotate(context.Background(), c, v1alpha1.AnnotationPaused, ""); err == nil {
			break
		}
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	s.pauses[i].To = time.Now()
	s.mu.Unlock()
}

// exclude adds an orphaned route to a random cluster and excludes it: it must never be removed while the
// cluster lives.
func (s *soak) exclude(ctx context.Context) {
	c := s.live()
	if c == nil {
		return
	}
	k := 250 + s.intN(5)
	rt := cloudsim.Route{Destination: fmt.Sprintf("198.19.%d.0/24", k), NextHop: fmt.Sprintf("10.180.0.%d", k)}
	s.mu.Lock()
	excluded := append(slices.Clone(c.Excluded), rt.Destination)
	s.mu.Unlock()
	if err := s.annotate(ctx, c, v1alpha1.AnnotationExclude, strings.Join(excluded, ",")); err != nil {
		return
	}
	s.mu.Lock()
	c.Excluded = excluded
	s.mu.Unlock()
	benchproc.Sleep(ctx, 3*time.Second) // past the fences' live reads before the route exists
	routes, _, ok := s.sim.Router(c.Router)
	if !ok || slices.Contains(routes, rt) {
		return
	}
	if err := s.sim.SetRoutes(c.Router, append(routes, rt)); err == nil {
		s.mu.Lock()
		c.Keep = append(c.Keep, rt)
		s.mu.Unlock()
		s.count("exclusions")
	}
}

// replaceCluster deletes a random cluster (deorbit cleans its cloud up) and creates a new one.
func (s *soak) replaceCluster(ctx context.Context) {
	c := s.live()
	if c == nil {
		return
	}
	s.mu.Lock()
	paused := slices.ContainsFunc(s.pauses, func(p span) bool { return p.Who == c.Name && p.To.IsZero() })
	s.mu.Unlock()
	if paused {
		return
	}
	// the interlock: the deletion is confirmed for this cluster (its UID), as an operator of the platform does
	if err := s.annotate(ctx, c, v1alpha1.AnnotationConfirmDeorbit, string(c.UID)); err != nil {
		return
	}
	at := time.Now()
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: s.ns}}
	if err := s.kc.Delete(ctx, vc); err != nil {
		return
	}
	s.mu.Lock()
	c.Deleted = at
	s.mu.Unlock()
	s.count("clusters deleted")
	if err := s.addCluster(ctx); err != nil {
		s.log.Warn("create a cluster", "err", err)
	}
}

// annotate sets (value "" removes) an annotation of c.
func (s *soak) annotate(ctx context.Context, c *clusterRec, key, value string) error {
	v := any(value)
	if value == "" {
		v = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: s.ns}}
	return s.kc.Patch(ctx, vc, client.RawPatch("application/merge-patch+json", patch))
}

func (s *soak) count(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[what]++
}

// watchLeases lists the range Leases every 250 ms and records every version it sees (a watch can lose
// versions across an apiserver restart; renewals come every few seconds).
func (s *soak) watchLeases(ctx context.Context, path string) (*[]leaseObs, func(), error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	var obs []leaseObs
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	enc := json.NewEncoder(out)
	go func() {
		defer close(done)
		defer out.Close()
		for benchproc.Sleep(ctx, 250*time.Millisecond) {
			var list coordinationv1.LeaseList
			lctx, lcancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.kc.List(lctx, &list, client.InNamespace(s.ns), client.MatchingLabels{sharding.LabelRole: "range"})
			lcancel()
			if err != nil {
				continue
			}
			for _, l := range list.Items {
				key := l.Name + "/" + l.ResourceVersion
				if seen[key] {
					continue
				}
				seen[key] = true
				i, err := strconv.Atoi(l.Labels[sharding.LabelRange])
				if err != nil || l.Spec.RenewTime == nil {
					continue
				}
				o := leaseObs{Range: i, Renew: l.Spec.RenewTime.Time, Version: l.ResourceVersion, Duration: s.o.lease}
				if l.Spec.HolderIdentity != nil {
					o.Holder = *l.Spec.HolderIdentity
				}
				if l.Spec.AcquireTime != nil {
					o.Acquire = l.Spec.AcquireTime.Time
				}
				if l.Spec.LeaseDurationSeconds != nil {
					o.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
				}
				obs = append(obs, o)
				_ = enc.Encode(o)
			}
		}
	}()
	return &obs, func() { cancel(); <-done }, nil
}

// startReplica starts `vitals operator --sharding` i and finds its identity in its log.
func (s *soak) startReplica(i int) (*replica, error) {
	env := []string{"OS_AUTH_URL=" + s.proxy.AuthURL(), "OS_USERNAME=admin", "OS_PASSWORD=admin", "OS_PROJECT_NAME=admin",
		"OS_USER_DOMAIN_NAME=Default", "OS_PROJECT_DOMAIN_NAME=Default", "OS_REGION_NAME=RegionOne"}
	ports, err := benchproc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	proc, err := benchproc.Start(s.o.work, fmt.Sprintf("operator-%d", i), s.o.vitals, env, "operator", "--kubeconfig", s.o.kubeconfig,
		"--namespace", s.ns, "--sharding", "--leader-election-namespace", s.ns, "--leader-election-id", "soak",
		"--shard-ranges", strconv.Itoa(s.o.ranges), "--shard-lease-duration", s.o.lease.String(),
		"--shard-renew-interval", s.o.renew.String(), "--shard-safety-margin", s.o.margin.String(), "--write-timeout", s.o.writeTimeout.String(),
		"--health-bind-address", "127.0.0.1", "--health-port", strconv.Itoa(ports[0]), "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--routegc-interval", s.o.interval.String(), "--access-interval", "30s", "--allow-loopback-workload",
		"--remediation-budget", "1000000", "--log-format", "json", "--log-level", "info")
	if err != nil {
		return nil, err
	}
	p := &replica{Process: proc}
	deadline := time.Now().Add(time.Minute)
	for p.identity == "" {
		if time.Now().After(deadline) || p.Exited() {
			return nil, fmt.Errorf("replica %d: no identity in %s", i, p.LogPath)
		}
		p.identity = identityIn(p.LogPath)
		time.Sleep(100 * time.Millisecond)
	}
	s.log.Info("replica started", "replica", i, "identity", p.identity, "pid", p.PID())
	return p, nil
}

// identityIn finds the identity in an operator's JSON log ("operator starting").
func identityIn(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		var l struct {
			Msg      string `json:"msg"`
			Identity string `json:"identity"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "operator starting" {
			return l.Identity
		}
	}
	return ""
}

func readRequests(path string) ([]cloudsim.Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []cloudsim.Request
	dec := json.NewDecoder(f)
	for {
		var r cloudsim.Request
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("request log %s: %w", path, err)
		}
		out = append(out, r)
	}
}

// report prints the run and the findings; the last line is the summary in JSON.
func (s *soak) report(f *findings, reqs []cloudsim.Request, leases []leaseObs, took time.Duration) {
	takeovers := 0
	last := map[int]string{}
	for _, o := range leases {
		if h, ok := last[o.Range]; ok && o.Holder != "" && o.Holder != h {
			takeovers++
		}
		if o.Holder != "" {
			last[o.Range] = o.Holder
		}
	}
	var frozen time.Duration
	longest := time.Duration(0)
	for _, fz := range s.freezes {
		d := fz.To.Sub(fz.From)
		frozen += d
		longest = max(longest, d)
	}
	deleted, gone := 0, 0
	for _, c := range s.clusters {
		if c.Deleted.IsZero() {
			continue
		}
		deleted++
		var vc v1alpha1.VitalsCluster
		if err := s.kc.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: c.Name}, &vc); err != nil {
			gone++ // deorbit released it (or the API server is gone: then it says so below)
		}
	}
	for _, v := range f.Violations {
		fmt.Printf("VIOLATION %s: %s\n", v.Kind, v.Detail)
	}
	sum := map[string]any{
		"took_seconds": took.Seconds(), "requests": len(reqs), "writes": f.Writes, "deletes": f.Deletes,
		"faulted_writes": f.FaultedWrites, "late_by_fence": f.LateByFence, "writes_by_replica": f.ByReplica,
		"writes_by_kind": f.ByKind, "faults": s.faults, "freezes_total_seconds": frozen.Seconds(),
		"longest_freeze_seconds": longest.Seconds(), "lease_versions": len(leases), "takeovers": takeovers,
		"orphans_added": s.orphans, "clusters_deleted": deleted, "clusters_released": gone,
		"violations": len(f.Violations), "load_avg": benchproc.LoadAvg(),
	}
	b, _ := json.Marshal(sum)
	fmt.Printf("soak: %s\n", b)
}

// retry runs f until it succeeds or ctx ends, a second apart (the apiserver may be restarting).
func retry(ctx context.Context, f func() error) error {
	var err error
	for range 60 {
		if err = f(); err == nil {
			return nil
		}
		if !benchproc.Sleep(ctx, time.Second) {
			return err
		}
	}
	return err
}

func ptr[T any](v T) *T { return &v }
