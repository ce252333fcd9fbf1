package operator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"
	kclient "k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/routegc"
	"github.com/vitalsproject/vitals/health"
)

// Operator is a wired operator, ready to Start.
type Operator struct {
	opts     Options
	mgr      manager.Manager
	health   *health.Manager
	identity string
	cloud    *lazyCloud
	routegc  *routegc.Reconciler

	log logr.Logger // for controller-runtime parts

	healthLn, metricsLn net.Listener
	elected             atomic.Bool
}

// Scheme holds the types the operator reads and writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	return s
}

// New wires the operator: it binds the health and metrics ports and builds the manager, the
// controllers and the health profile. Nothing runs until Start.
func New(opts Options) (*Operator, error) {
	opts.defaults()
	if opts.RestConfig == nil {
		return nil, errors.New("operator: no Kubernetes configuration")
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
		Scheme:                        Scheme(),
		Logger:                        log,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionID,
		LeaderElectionNamespace:       leNS,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.opts.LeaseDuration,
		RenewDeadline:                 &o.opts.RenewDeadline,
		RetryPeriod:                   &o.opts.RetryPeriod,
		Controller:                    config.Controller{SkipNameValidation: ptr(true)},
	}
	if opts.Namespace != "" {
		mo.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}}}
	}
	if opts.LeaderElect {
		lock, err := resourcelock.New(resourcelock.LeasesResourceLock, leNS, opts.LeaderElectionID,
			cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: o.identity})
		if err != nil {
			return nil, fmt.Errorf("operator: leader election lock: %w", err)
		}
		mo.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := ctrl.NewManager(opts.RestConfig, mo)
	if err != nil {
		return nil, fmt.Errorf("operator: manager: %w", err)
	}
	o.mgr = mgr

	o.health = health.NewManager(health.WithClock(opts.Clock), health.WithLogger(opts.Logger),
		health.WithRegisterer(opts.Registry), health.WithKubernetesMetricNames())
	if opts.Cloud != nil {
		o.cloud = &lazyCloud{auth: *opts.Cloud, connect: opts.Connect, clock: opts.Clock, retry: opts.CheckInterval}
	}
	o.log = log
	observer, err := o.healthProfile(cs)
	if err != nil {
		return nil, err
	}

	o.routegc = &routegc.Reconciler{
		Client:          mgr.GetClient(),
		Tenancy:         &clusterClouds{reader: mgr.GetAPIReader(), def: o.cloud, connect: opts.Connect},
		Gate:            routegc.GateFunc(o.gateOpen),
		Recorder:        mgr.GetEventRecorder("vitals-" + routegc.Name),
		Clock:           opts.Clock,
		Metrics:         routegc.NewMetrics(opts.Registry),
		Progress:        observer,
		DefaultInterval: opts.RouteGCInterval,
		DefaultBudget:   opts.RouteGCBudget,
	}
	if err := o.routegc.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("operator: set up %s: %w", routegc.Name, err)
	}

	if err := o.listen(); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Operator) listen() error {
	var err error
	if o.opts.HealthAddr != "0" {
		if o.healthLn, err = net.Listen("tcp", o.opts.HealthAddr); err != nil {
			return fmt.Errorf("operator: health server on %s: %w", o.opts.HealthAddr, err)
		}
	}
	if o.opts.MetricsAddr != "0" {
		if o.metricsLn, err = net.Listen("tcp", o.opts.MetricsAddr); err != nil {
			if o.healthLn != nil {
				o.healthLn.Close()
			}
			return fmt.Errorf("operator: metrics server on %s: %w", o.opts.MetricsAddr, err)
		}
	}
	return nil
}

// HealthAddr is the bound address of the health server ("" when off).
func (o *Operator) HealthAddr() string { return addrOf(o.healthLn) }

// MetricsAddr is the bound address of the metrics server ("" when off).
func (o *Operator) MetricsAddr() string { return addrOf(o.metricsLn) }

// Identity is this replica's identity in the leader election Lease.
func (o *Operator) Identity() string { return o.identity }

// Health is the operator's health manager.
func (o *Operator) Health() *health.Manager { return o.health }

// Manager is the controller-runtime manager.
func (o *Operator) Manager() manager.Manager { return o.mgr }

// Elected reports whether this replica leads (always true without leader election, once started).
func (o *Operator) Elected() bool { return o.elected.Load() }

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// Start runs the operator until ctx ends or leadership is lost. On ctx's end readiness fails at
// once (drain) while the manager stops.
func (o *Operator) Start(ctx context.Context) error {
	log := o.opts.Logger
	o.health.Start(ctx)
	defer o.health.Stop()
	servers := []*http.Server{}
	serve := func(ln net.Listener, h http.Handler, what string) {
		if ln == nil {
			return
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, srv)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("server failed", "server", what, "err", err)
			}
		}()
		log.Info("serving", "server", what, "addr", ln.Addr().String())
	}
	port := 0
	if a, ok := addrOfTCP(o.healthLn); ok {
		port = a
	}
	serve(o.healthLn, o.health.Handler(health.HandlerOptions{Port: port}), "health")
	serve(o.metricsLn, promhttp.HandlerFor(prometheus.Gatherers{ctrlmetrics.Registry, o.opts.Registry}, promhttp.HandlerOpts{}), "metrics")
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	go func() {
		select {
		case <-o.mgr.Elected():
			o.elected.Store(true)
			log.Info("leading", "identity", o.identity)
		case <-ctx.Done():
		}
	}()
	go func() {
		<-ctx.Done()
		o.health.Drain()
	}()
	log.Info("operator starting", "identity", o.identity, "leaderElection", o.opts.LeaderElect,
		"lease", o.opts.LeaderElectionNamespace+"/"+o.opts.LeaderElectionID)
	if err := o.mgr.Start(ctx); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	return nil
}

func addrOfTCP(l net.Listener) (int, bool) {
	if l == nil {
		return 0, false
	}
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, false
	}
	return a.Port, true
}

func inClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}

func ptr[T any](v T) *T { return &v }
