package operator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	kclient "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/clusterapi"
	"github.com/vitalsproject/vitals/controllers/access"
	"github.com/vitalsproject/vitals/controllers/cloudheal"
	"github.com/vitalsproject/vitals/controllers/deorbit"
	"github.com/vitalsproject/vitals/controllers/enrol"
	"github.com/vitalsproject/vitals/controllers/flight"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/controllers/remediate"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/fencing"
	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/health/checks/progress"
	"github.com/vitalsproject/vitals/internal/base/bounded"
	"github.com/vitalsproject/vitals/internal/base/buildinfo"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/sharding"
	"github.com/vitalsproject/vitals/tenancy"
	"github.com/vitalsproject/vitals/workload"
)

// Operator is a wired operator, ready to Start.
type Operator struct {
	opts      Options
	mgr       manager.Manager
	health    *health.Manager
	identity  string
	cloud     *lazyCloud
	policy    *remediation.Engine
	tenancy   *tenancy.Verifier
	access    *access.Reconciler
	workload  *workload.Manager
	routegc   *routegc.Reconciler
	deorbit   *deorbit.Reconciler
	flight    *flight.Reconciler
	cloudheal *cloudheal.Reconciler
	shard     *sharding.Coordinator
	leader    *sharding.Leader

	log logr.Logger // for controller-runtime parts

	healthSrv, metricsSrv *health.Server
	elected               atomic.Bool
}

// Scheme holds the types the operator reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	// Cluster API's Cluster and CAPO's OpenStackCluster: read by the enrolment and by deorbit's interlock
	_ = clusterv1.AddToScheme(s)
	_ = infrav1.AddToScheme(s)
	return s
}

// New wires the operator: it binds the health and metrics ports and builds the manager, the
// controllers and the health profile. Nothing runs until Start.
func New(opts Options) (*Operator, error) {
	opts.defaults()
	if opts.RestConfig == nil {
		return nil, errors.New("operator: no Kubernetes configuration")
	}
	if opts.Sharding != nil && opts.LeaderElect {
		return nil, errors.New("operator: sharding and leader election exclude each other: with sharding every replica acts, on its own clusters")
	}
	if err := opts.checkFencing(); err != nil {
		return nil, err
	}
	if opts.RuntimeExtensionPort > 0 && !opts.CAPIEnrol {
		return nil, errExtensionWithoutEnrol
	}
	// client-go's request metrics name this server; every other (a workload cluster's, from a tenant's
	// Secret) is labelled "other"
	if err := workload.KeepHostLabel(opts.RestConfig); err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	if opts.RestConfig.QPS == 0 && opts.RestConfig.RateLimiter == nil {
		// client-go's default (5 requests/s) would hold every pass of every controller: each writes its
		// cluster's status and reads its Secret (docs/benchmarks.md, "Operator at scale").
		opts.RestConfig = rest.CopyConfig(opts.RestConfig)
		opts.RestConfig.QPS, opts.RestConfig.Burst = DefaultKubeQPS, DefaultKubeBurst
	}
	o := &Operator{opts: opts}
	o.identity = opts.Identity
	if o.identity == "" {
		host, _ := os.Hostname()
		var b [6]byte
		_, _ = rand.Read(b[:])
		o.identity = host + "_" + hex.EncodeToString(b[:])
	}
	log := logr.FromSlogHandler(opts.Logger.Handler())
	cs, err := kclient.NewForConfig(opts.RestConfig)
	if err != nil {
		return nil, fmt.Errorf("operator: kubernetes client: %w", err)
	}
	leNS := opts.LeaderElectionNamespace
	if leNS == "" {
		leNS = inClusterNamespace()
	}
	o.opts.LeaderElectionNamespace = leNS
	mo := ctrl.Options{
		Scheme: Scheme(),
		// The health server drains first (readiness fails, liveness holds for the drain delay), then
		// the controllers stop: leave room for both.
		GracefulShutdownTimeout:       ptr(opts.DrainDelay + opts.ShutdownTimeout + 30*time.Second),
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		PprofBindAddress:              opts.PprofAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       leNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.opts.LeaseDuration,
		RenewDeadline:                 &o.opts.RenewDeadline,
		RetryPeriod:                   &o.opts.RetryPeriod,
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
		// every write of the controllers (status, finalizers) goes through the fence of its context
		NewClient: fencedClient,
	}
	if opts.Namespace != "" {
		mo.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	}
	mo.Cache.DefaultTransform = stripUnread
	if opts.Sharding != nil {
		if err := o.setupSharding(&mo.Cache); err != nil {
			return nil, err
		}
	}
	if opts.LeaderElect {
		lock, err := resourcelock.New(resourcelock.LeasesResourceLock, leNS, opts.LeaderElectionID,
			cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.identity})
		if err != nil {
			return nil, fmt.Errorf("operator: leader election lock: %w", err)
		}
		// the leader acts until its last renewal's send time + the renew deadline (fencing)
		o.leader, err = sharding.NewLeader(lock, o.opts.LeaseDuration, o.opts.LeaseDuration-o.opts.RenewDeadline, opts.Clock)
		if err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		mo.LeaderElectionResourceLockInterface = o.leader
	}
	mgr, err := ctrl.NewManager(opts.RestConfig, mo)
	if err != nil {
		return nil, fmt.Errorf("operator: manager: %w", err)
	}
	o.mgr = mgr

	hopts := []health.Option{health.WithClock(opts.Clock), health.WithLogger(opts.Logger),
		health.WithRegisterer(opts.Registry), health.WithDrainDelay(opts.DrainDelay)}
	if opts.KubernetesHealthMetricNames {
		hopts = append(hopts, health.WithKubernetesMetricNames())
	}
	o.health = health.NewManager(hopts...)
	if err := buildinfo.Register(opts.Registry); err != nil {
		return nil, fmt.Errorf("operator: metrics: %w", err)
	}
	if !opts.NoClusterMetrics {
		active := func() bool { return !opts.LeaderElect || o.shard != nil || o.elected.Load() }
		if err := opts.Registry.Register(newClusterCollector(mgr.GetCache(), active, opts.Logger)); err != nil {
			return nil, fmt.Errorf("operator: metrics: %w", err)
		}
	}
	if opts.Cloud != nil {
		o.cloud = newLazyCloud(*opts.Cloud, opts.Connect, opts.Clock, CloudRetryBackoff(opts.CheckInterval), nil)
	}
	o.log = log
	if err := o.healthProfile(cs); err != nil {
		return nil, err
	}
	if o.shard != nil {
		if err := o.startSharding(); err != nil {
			return nil, err
		}
	}

	if o.policy, err = o.remediationPolicy(cs); err != nil {
		return nil, err
	}
	if err := o.setupControllers(); err != nil {
		return nil, err
	}

	if err := o.servers(); err != nil {
		return nil, err
	}
	return o, nil
}

// ClustersListMaxAge is how long one cluster-wide list of the VitalsClusters serves the pod-CIDR overlap rule
// of every pass (tenancy.Options.ClustersMaxAge).
const ClustersListMaxAge = 5 * time.Second

// setupControllers builds the tenancy verifier and the workload access every controller shares, then the
// controllers on them: access (each cluster's proof, finalizer, cloud check and workload access), routegc,
// flight, cloudheal, deorbit, and the summary of their conditions (Ready).
func (o *Operator) setupControllers() error {
	opts := o.opts
	to := tenancy.Options{
		Secrets: o.mgr.GetAPIReader(), // single GETs: the operator never lists or watches Secrets
		// the overlap rule is across clusters: the API server, never this replica's shard cache; one list
		// serves every pass for ClustersListMaxAge
		Clusters:          o.mgr.GetAPIReader(),
		ClustersMaxAge:    ClustersListMaxAge,
		Connect:           tenantConnect(opts.Registry, opts.Logger, opts.CloudQPS, opts.CloudBurst, "vitals-operator/"+o.identity),
		TrustedNamespaces: opts.TrustedNamespaces,
		TrustedAuthURLs:   opts.TrustedAuthURLs,
		Limits:            tenancy.Limits{MaxPodPrefix4: opts.MaxPodPrefix4, MaxPodPrefix6: opts.MaxPodPrefix6},
		Logger:            opts.Logger,
	}
	if o.cloud != nil {
		to.Operator = o.cloud.connection
		to.TrustedAuthURLs = append(slices.Clone(to.TrustedAuthURLs), o.cloud.auth.Options.IdentityEndpoint)
	}
	to.SecretMaxAge, to.Clock = opts.AccessInterval, opts.Clock
	o.tenancy = tenancy.NewVerifier(to)
	wm, changes, err := o.setupWorkload(o.policy.Checks())
	if err != nil {
		return err
	}
	o.workload = wm
	mgr := o.mgr
	deps := &pass.Deps{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(), // a status write that conflicted, a deorbit step: read from the API server
		Tenancy:   o.tenancy,
		Workload:  wm,
		Policy:    o.policy,
		Fencer:    o.policy, // every status and finalizer write through the replica's fence
		Checks:    o.policy.Checks(),
		Recorder:  func(name string) events.EventRecorder { return mgr.GetEventRecorder("vitals-" + name) },
		Clock:     opts.Clock,
		Writer:    &pass.Writer{Client: mgr.GetClient(), Clock: opts.Clock, Metrics: pass.NewWriterMetrics(opts.Registry)},
		Observer:  observer{o},
	}
	ctx := context.Background()
	workers := func(n int) controller.Options {
		return controller.Options{MaxConcurrentReconciles: n, RateLimiter: requeueLimiter(nil)}
	}
	if o.access, err = access.New(deps, access.Options{Interval: opts.AccessInterval, WorkloadChanges: changes,
		Deorbit: true, Metrics: pass.NewMetrics(access.Name, opts.Registry),
		ExpiryWarning: opts.CredentialsExpiryWarning, Credentials: access.NewCredentialMetrics(opts.Registry)}); err != nil { // the deorbit controller owns the finalizer of a deleted cluster
		return fmt.Errorf("operator: %w", err)
	}
	if err := o.access.SetupWithManager(ctx, mgr, workers(opts.AccessWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if o.routegc, err = routegc.New(deps, routegc.Options{Defaults: v1alpha1.ControllerDefaults{Interval: opts.RouteGCInterval, Budget: opts.RouteGCBudget},
		Metrics: routegc.NewMetrics(opts.Registry), PassMetrics: pass.NewMetrics(routegc.Name, opts.Registry), Timeout: min(pass.DefaultTimeout, opts.PassTimeout/2)}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if err := o.routegc.SetupWithManager(ctx, mgr, workers(opts.RouteGCWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if o.flight, err = flight.New(deps, flight.Options{Defaults: v1alpha1.ControllerDefaults{Interval: opts.FlightInterval, Budget: opts.FlightBudget},
		Metrics: flight.NewMetrics(opts.Registry), PassMetrics: pass.NewMetrics(flight.Name, opts.Registry), Timeout: min(pass.DefaultTimeout, opts.PassTimeout/2)}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if err := o.flight.SetupWithManager(ctx, mgr, workers(opts.FlightWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if o.cloudheal, err = cloudheal.New(deps, cloudheal.Options{Metrics: cloudheal.NewMetrics(opts.Registry), PassMetrics: pass.NewMetrics(cloudheal.Name, opts.Registry),
		Timeout: min(pass.DefaultTimeout, opts.PassTimeout/2)}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if err := o.cloudheal.SetupWithManager(ctx, mgr, workers(opts.CloudHealWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if o.deorbit, err = deorbit.New(deps, deorbit.Options{Metrics: deorbit.NewMetrics(opts.Registry), Workers: opts.DeorbitParallelDeletes,
		Namespace: opts.Namespace}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if err := o.deorbit.SetupWithManager(ctx, mgr, workers(opts.DeorbitWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if opts.CAPIEnrol {
		en, err := enrol.New(deps, enrol.Options{Namespaces: opts.CAPIEnrolNamespaces, DeletionPolicy: opts.CAPIEnrolDeletionPolicy})
		if err != nil {
			return fmt.Errorf("operator: %w", err)
		}
		if err := en.SetupWithManager(ctx, mgr, workers(1)); err != nil {
			return fmt.Errorf("operator: %w", err)
		}
	}
	if opts.CAPIRemediate {
		rm, err := remediate.New(deps, remediate.Options{Metrics: remediate.NewMetrics(opts.Registry), Timeout: min(remediate.DefaultTimeout, opts.PassTimeout/2)})
		if err != nil {
			return fmt.Errorf("operator: %w", err)
		}
		if err := rm.SetupWithManager(ctx, mgr, workers(1)); err != nil {
			return fmt.Errorf("operator: %w", err)
		}
	}
	if opts.RuntimeExtensionPort > 0 {
		srv, err := clusterapi.NewExtensionServer(&clusterapi.Extension{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(), Clock: opts.Clock},
			server.Options{Port: opts.RuntimeExtensionPort, CertDir: opts.RuntimeExtensionCertDir})
		if err != nil {
			return fmt.Errorf("operator: %w", err)
		}
		if err := mgr.Add(srv); err != nil {
			return fmt.Errorf("operator: add the runtime extension server: %w", err)
		}
	}
	summary, err := pass.NewSummary(deps, o.parts())
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if err := summary.SetupWithManager(ctx, mgr, workers(opts.AccessWorkers)); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	return nil
}

// parts are the controllers the Ready summary reads, with the conditions each must be able to report.
func (o *Operator) parts() []pass.Part {
	return []pass.Part{
		{Name: routegc.Name, Conditions: o.routegc.Conditions(), Enabled: func(c *v1alpha1.VitalsCluster) bool {
			return c.Spec.Controllers.RouteGC.Enabled == nil || *c.Spec.Controllers.RouteGC.Enabled
		}},
		{Name: flight.Name, Conditions: o.flight.Conditions(), Enabled: func(c *v1alpha1.VitalsCluster) bool {
			return c.Spec.Controllers.Flight.Enabled == nil || *c.Spec.Controllers.Flight.Enabled
		}},
		{Name: cloudheal.Name, Conditions: o.cloudheal.Conditions(), Enabled: func(c *v1alpha1.VitalsCluster) bool {
			return c.Spec.Controllers.CloudHeal.Enabled == nil || *c.Spec.Controllers.CloudHeal.Enabled
		}},
	}
}

// observer builds each controller's liveness from its progress: the check "controller.<name>" watches its
// work queue and its reconciles.
type observer struct{ o *Operator }

func (ob observer) Observe(name string, opts controller.Options) (controller.Options, func(reconcile.Reconciler) reconcile.Reconciler, error) {
	o := ob.o
	p := progress.New(name, progress.Options{HungAfter: o.opts.PassTimeout, StallAfter: o.opts.ComponentDeadline, Log: o.log,
		Clock: o.opts.Clock, RateLimiter: requeueLimiter(nil)})
	c := health.Check{Name: "controller." + name, Probes: health.Liveness, Run: p.Check,
		Interval: o.opts.CheckInterval, Timeout: o.opts.CheckTimeout}
	if err := o.health.Register(c); err != nil {
		return opts, nil, fmt.Errorf("health check of controller %s: %w", name, err)
	}
	return p.Observe(opts), p.Reconciler, nil
}

// servers binds the health and metrics servers and adds them to the manager as runnables that do
// not need leader election: every replica answers its probes and is scraped.
func (o *Operator) servers() error {
	var err error
	if o.opts.HealthAddr != "0" {
		o.healthSrv, err = health.NewServer(health.ServerOptions{Name: "health", Addr: o.opts.HealthAddr,
			Manager: o.health, Logger: o.opts.Logger, ShutdownTimeout: o.opts.ShutdownTimeout})
		if err != nil {
			return fmt.Errorf("operator: %w", err)
		}
	}
	if o.opts.MetricsAddr != "0" {
		o.metricsSrv, err = health.NewServer(health.ServerOptions{Name: "metrics", Addr: o.opts.MetricsAddr,
			Metrics: prometheus.Gatherers{ctrlmetrics.Registry, o.opts.Registry}, Logger: o.opts.Logger,
			ShutdownTimeout: o.opts.ShutdownTimeout})
		if err != nil {
			o.closeServers()
			return fmt.Errorf("operator: %w", err)
		}
	}
	for _, s := range []*health.Server{o.healthSrv, o.metricsSrv} {
		if s == nil {
			continue
		}
		if err := o.mgr.Add(s); err != nil {
			o.closeServers()
			return fmt.Errorf("operator: add the %s server: %w", s.Name(), err)
		}
	}
	return nil
}

func (o *Operator) closeServers() {
	for _, s := range []*health.Server{o.healthSrv, o.metricsSrv} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// HealthAddr is the bound address of the health server ("" when off).
func (o *Operator) HealthAddr() string { return addrOf(o.healthSrv) }

// MetricsAddr is the bound address of the metrics server ("" when off).
func (o *Operator) MetricsAddr() string { return addrOf(o.metricsSrv) }

// Identity is this replica's identity in the leader election Lease.
func (o *Operator) Identity() string { return o.identity }

// Health is the operator's health manager.
func (o *Operator) Health() *health.Manager { return o.health }

// Policy is the remediation policy every controller asks.
func (o *Operator) Policy() *remediation.Engine { return o.policy }

// Manager is the controller-runtime manager.
func (o *Operator) Manager() manager.Manager { return o.mgr }

// Elected reports whether this replica leads (always true without leader election, once started).
func (o *Operator) Elected() bool { return o.elected.Load() }

func addrOf(s *health.Server) string {
	if s == nil {
		return ""
	}
	return s.Addr().String()
}

// Start runs the operator until ctx ends or leadership is lost. On ctx's end the health server
// drains (readiness fails at once, liveness holds for the drain delay) before the controllers stop;
// the checks run until the manager has stopped.
func (o *Operator) Start(ctx context.Context) error {
	log := o.opts.Logger
	o.health.Start(context.WithoutCancel(ctx))
	defer o.health.Stop()
	if o.cloud != nil {
		defer o.cloud.stop()
	}
	go func() {
		select {
		case <-o.mgr.Elected():
			o.elected.Store(true)
			log.Info("leading", "identity", o.identity)
		case <-ctx.Done():
		}
	}()
	log.Info("operator starting", "identity", o.identity, "leaderElection", o.opts.LeaderElect,
		"sharding", o.shard != nil, "lease", o.opts.LeaderElectionNamespace+"/"+o.opts.LeaderElectionID)
	if err := o.mgr.Start(ctx); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	return nil
}

// fencedClient is the manager's client (reads from the cache as controller-runtime's own) with every
// write entered through the fence of its context (package fencing).
func fencedClient(cfg *rest.Config, co client.Options) (client.Client, error) {
	c, err := client.NewWithWatch(cfg, co)
	if err != nil {
		return nil, err
	}
	return fencing.Client(c), nil
}

func inClusterNamespace() string {
	b, err := bounded.ReadFile(context.Background(), "/var/run/secrets/kubernetes.io/serviceaccount/namespace", 4<<10)
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

func ptr[T any](v T) *T { return &v }
