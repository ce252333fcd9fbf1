package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/health/checks/cniconfig"
	kubecheck "github.com/vitalsproject/vitals/health/checks/kubernetes"
	"github.com/vitalsproject/vitals/health/checks/netlink"
	"github.com/vitalsproject/vitals/internal/base/buildinfo"
	"github.com/vitalsproject/vitals/netprobe"
)

// Names of the agent's checks, components and budget (the /readyz/<name> and /livez/<name> paths).
const (
	CheckKubernetesAPI  = "kubernetes-api"
	CheckCapabilities   = "capabilities"
	CheckNetlink        = "netlink"
	CheckCNIConfig      = "cni-config"
	CheckMemory         = "memory"
	ComponentEvents     = "event-watcher"
	ComponentSocket     = "report-socket"
	ComponentConditions = "node-conditions"
	// BudgetCNIAdd counts failed CNI ADDs reported by the CNI (the socket, the Go API).
	BudgetCNIAdd = "cni-add-failures"
	// BudgetSandboxNetwork counts kubelet's sandbox network failures (Events that are evidence); it
	// never fails a probe, only the PodNetworkHealthy condition.
	BudgetSandboxNetwork = "sandbox-network-failures"
)

// EventReasonCNIAddFailed is the reason of the Warning Event recorded on the Node for each failed CNI
// ADD reported through the socket or the Go API (kubelet already records an Event for the ones it sees).
const EventReasonCNIAddFailed = "CNIAddFailed"

// Deps are the agent's collaborators. Kube may be nil: the agent then runs its local checks only
// (no API check, no Events source, no node conditions).
type Deps struct {
	Kube   *Kube
	Clock  clock.WithTicker
	Logger *slog.Logger
	// Registry receives the metrics and is served on /metrics; nil: a new one.
	Registry *prometheus.Registry
	// Listener for the health server; nil: listen on Options.BindAddress:Port.
	Listener net.Listener
	// HostDialer dials from the node's own address for the peer check's second opinion; nil: the
	// agent's own network namespace (the node's, with host networking).
	HostDialer netprobe.Dialer
	// Rand seeds the order in which the peer check walks its peers; nil: math/rand/v2.
	Rand interface{ Uint64() uint64 }
}

// Agent is a wired node agent. Build it with New, run it with Run.
type Agent struct {
	opts     Options
	deps     Deps
	log      *slog.Logger
	mgr      *health.Manager
	budget   *health.Budget
	sandbox  *health.Budget
	reporter *BudgetReporter
	socket   *SocketServer
	events   *EventSource
	pods     *PodIndex
	conds    *NodeConditions
	canary   *CanaryLink
	peers    *PeerIndex
	conn     *connectivitySet
	reports  *prometheus.CounterVec
	verdicts *prometheus.CounterVec
	memory   string

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	nodeRef     *corev1.ObjectReference

	mu   sync.Mutex
	addr net.Addr
}

// New validates opts and wires the agent.
func New(opts Options, deps Deps) (*Agent, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if deps.Kube == nil && (opts.WatchEvents || opts.NodeConditions) {
		return nil, errors.New("agent: a Kubernetes client is required to watch events or write node conditions")
	}
	if deps.Kube == nil && opts.Connectivity.PeerService != "" {
		return nil, errors.New("agent: a Kubernetes client is required to discover the connectivity check's peers")
	}
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	if deps.Rand == nil {
		deps.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if err := buildinfo.Register(deps.Registry); err != nil {
		return nil, fmt.Errorf("agent: metrics: %w", err)
	}
	a := &Agent{opts: opts, deps: deps, log: deps.Logger}
	if c := opts.Connectivity; c.Enabled() {
		if c.Canary != "" {
			a.canary = &CanaryLink{Path: c.Canary, Mode: c.CanaryMode, Log: deps.Logger}
		}
		if c.PeerService != "" {
			ns, name := c.PeerServiceName()
			a.peers = NewPeerIndex(deps.Kube, ns, name, opts.NodeName)
		}
	}
	a.nodeRef = &corev1.ObjectReference{Kind: "Node", Name: opts.NodeName, UID: types.UID(opts.NodeName)}
	if opts.NodeConditions {
		a.conds = &NodeConditions{
			Client:          deps.Kube,
			NodeName:        opts.NodeName,
			Specs:           ConditionSpecs(opts),
			HeartbeatPeriod: opts.HeartbeatPeriod,
			Clock:           deps.Clock,
			Log:             deps.Logger,
		}
	}
	mopts := []health.Option{
		health.WithClock(deps.Clock),
		health.WithLogger(deps.Logger),
		health.WithRegisterer(deps.Registry),
		health.WithDrainDelay(opts.DrainDelay),
	}
	if a.conds != nil {
		mopts = append(mopts, health.WithListener(func(health.Transition) { a.conds.Poke() }))
	}
	a.mgr = health.NewManager(mopts...)
	if a.conds != nil {
		a.conds.Results = a.mgr.Results
	}
	if err := a.registerChecks(); err != nil {
		return nil, err
	}
	if err := a.wireSources(); err != nil {
		return nil, err
	}
	return a, nil
}

// ConditionSpecs are the node conditions the agent writes with opts: the default ones, and
// PodNetworkConnectivity when the connectivity check has targets.
func ConditionSpecs(opts Options) []ConditionSpec {
	specs := DefaultConditionSpecs()
	if opts.Connectivity.Enabled() {
		specs = append(specs, ConnectivityConditionSpec(opts.Connectivity))
	}
	return specs
}

// ConnectivityConditionSpec is the PodNetworkConnectivity condition: its changes are written at most
// once per three check intervals, so that a flapping network does not flood the API server.
func ConnectivityConditionSpec(o ConnectivityOptions) ConditionSpec {
	return ConditionSpec{
		Type:      ConditionPodNetworkConnectivity,
		Results:   []string{CheckConnectivityPod, CheckConnectivityService, CheckConnectivityDNS, CheckConnectivityPeers},
		Optional:  true,
		OKReason:  "PodNetworkReachable",
		OKMessage: "pods on other nodes, Services and the cluster DNS answer from the pod network",
		FailReasons: map[string]string{
			CheckConnectivityPod:     "PodToPodFailing",
			CheckConnectivityService: "PodToServiceFailing",
			CheckConnectivityDNS:     "ClusterDNSFailing",
			CheckConnectivityPeers:   "PodToPodFailing",
		},
		FailMessages: map[string]string{
			CheckConnectivityPod:     "no pod on another node answers",
			CheckConnectivityService: "no Service answers",
			CheckConnectivityDNS:     "the cluster DNS does not resolve",
			CheckConnectivityPeers:   "this node's pods are cut off",
		},
		FailReason:        "PodNetworkUnreachable",
		CountDegraded:     true,
		MinChangeInterval: 3 * o.Interval,
	}
}

// DefaultConditionSpecs are the node conditions the agent always writes.
func DefaultConditionSpecs() []ConditionSpec {
	return []ConditionSpec{
		{
			Type:      ConditionCNIHealthy,
			Results:   []string{CheckNetlink, CheckCNIConfig},
			OKReason:  "CNIWorking",
			OKMessage: "netlink answers and the CNI network configuration loads",
			FailReasons: map[string]string{
				CheckNetlink:   "NetlinkFailing",
				CheckCNIConfig: "CNIConfigInvalid",
			},
			FailReason: "CNIFailing",
		},
		{
			Type:      ConditionPodNetworkHealthy,
			Results:   []string{BudgetCNIAdd, BudgetSandboxNetwork},
			OKReason:  "CNIAddFailuresWithinBudget",
			OKMessage: "CNI ADD failures are within the budget",
			FailReasons: map[string]string{
				BudgetCNIAdd:         "CNIAddFailuresExceeded",
				BudgetSandboxNetwork: "SandboxNetworkFailures",
			},
			FailMessages: map[string]string{
				BudgetCNIAdd:         "the CNI is broken on this node",
				BudgetSandboxNetwork: "kubelet cannot set up pod networks on this node",
			},
			FailReason:    "CNIAddFailuresExceeded",
			CountDegraded: true,
		},
	}
}

func (a *Agent) registerChecks() error {
	o := a.opts
	timeout := min(5*time.Second, o.CheckInterval)
	var list []health.Check
	if a.deps.Kube != nil {
		readyz, err := kubecheck.Readyz(kubecheck.ReadyzOptions{Client: a.deps.Kube.REST(),
			Options: kubecheck.Options{Clock: a.deps.Clock, MinInterval: o.CheckInterval / 2}})
		if err != nil {
			return err
		}
		list = append(list, health.Check{
			Name:     CheckKubernetesAPI,
			Probes:   health.Readiness,
			Run:      readyz,
			Interval: o.CheckInterval,
			Timeout:  timeout,
		})
	}
	if len(o.Capabilities) > 0 {
		run, err := checks.Capability(checks.CapabilityOptions{Names: o.Capabilities})
		if err != nil {
			return &config.Error{Field: "capabilities", Msg: err.Error()}
		}
		list = append(list, health.Check{Name: CheckCapabilities, Probes: health.Readiness, Run: run, Interval: o.CheckInterval, Timeout: timeout})
	}
	nl, err := netlink.Check(netlink.Options{NetnsPath: o.Netns})
	if err != nil {
		return &config.Error{Field: "netns", Msg: err.Error()}
	}
	cni, err := cniconfig.Check(cniconfig.Options{Dir: o.CNIConfDir})
	if err != nil {
		return &config.Error{Field: "cni-conf-dir", Msg: err.Error()}
	}
	list = append(list,
		health.Check{
			Name:     CheckNetlink,
			Probes:   health.Liveness,
			Run:      nl,
			Interval: o.CheckInterval,
			Timeout:  timeout,
			// One slow answer from a busy kernel is no reason to restart.
			FailureThreshold: 3,
		},
		health.Check{
			Name:     CheckCNIConfig,
			Probes:   health.Liveness,
			Run:      cni,
			Interval: o.CheckInterval,
			Timeout:  timeout,
			// The CNI's own DaemonSet may write its configuration after the agent starts.
			StartPeriod:      2 * time.Minute,
			FailureThreshold: 3,
		},
	)
	src := connectivitySources{host: a.deps.HostDialer, seed: a.deps.Rand.Uint64(), log: a.log}
	if a.canary != nil {
		src.canary = a.canary
	}
	if a.peers != nil {
		src.peers = a.peers
	}
	conn, err := connectivityChecks(o.Connectivity, a.deps.Registry, src)
	if err != nil {
		return err
	}
	a.conn = conn
	list = append(list, conn.checks...)
	if a.conds != nil {
		for i := range a.conds.Specs {
			if a.conds.Specs[i].Type == ConditionPodNetworkConnectivity {
				a.conds.Specs[i].Undecided = conn.undecided
			}
		}
	}
	mem, source, err := memoryCheck(o)
	if err != nil {
		return &config.Error{Field: "max-memory-usage", Msg: err.Error()}
	}
	a.memory = source
	list = append(list, health.Check{Name: CheckMemory, Probes: health.Liveness, Run: mem, Interval: o.CheckInterval, Timeout: timeout, FailureThreshold: 3})
	if err := a.mgr.Register(list...); err != nil {
		return fmt.Errorf("register agent checks: %w", err)
	}
	b, err := a.mgr.Budget(BudgetCNIAdd, budgetOptions(o))
	if err != nil {
		return fmt.Errorf("register CNI ADD failure budget: %w", err)
	}
	a.budget = b
	if o.WatchEvents {
		sb, err := a.mgr.Budget(BudgetSandboxNetwork, sandboxBudgetOptions(o))
		if err != nil {
			return fmt.Errorf("register sandbox network failure budget: %w", err)
		}
		a.sandbox = sb
	}
	return nil
}

// budgetOptions maps the options to the CNI ADD failure budget. Kuryr's cni_failures_count counts the
// failures tolerated: the daemon turned unhealthy on the one after, so the budget trips at count+1.
func budgetOptions(o Options) health.BudgetOptions {
	bo := health.BudgetOptions{Mode: health.Consecutive, Limit: o.FailuresCount + 1, Probes: health.Liveness}
	if o.FailureMode == ModeWindow {
		bo.Mode, bo.Window = health.Window, o.FailureWindow
	}
	if !o.FailuresFailLiveness {
		bo.Severity = health.Degraded
	}
	return bo
}

// sandboxBudgetOptions: kubelet Events report failures only, never a success, so they are counted in a
// window; and anyone who can write Events can write one, so they never fail a probe (Degraded): they
// turn PodNetworkHealthy False and fail /livez/sandbox-network-failures.
func sandboxBudgetOptions(o Options) health.BudgetOptions {
	return health.BudgetOptions{Mode: health.Window, Window: o.FailureWindow, Limit: o.FailuresCount + 1,
		Probes: health.Liveness, Severity: health.Degraded}
}

// memoryCheck builds the memory check and says what it measures.
func memoryCheck(o Options) (health.Func, string, error) {
	src := checks.MemoryRSS
	switch o.MemorySource {
	case MemoryCgroup:
		src = checks.MemoryCgroup
	case MemoryAuto:
		if o.CgroupPath != "" {
			src = checks.MemoryCgroup
		} else if _, _, err := checks.MemoryCgroupDir("", 0); err == nil {
			src = checks.MemoryCgroup
		}
	}
	run, err := checks.Memory(checks.MemoryOptions{LimitMiB: o.MaxMemoryMiB, Source: src, CgroupPath: o.CgroupPath})
	if err != nil {
		return nil, "", err
	}
	return health.Func(run), string(src), nil
}

func (a *Agent) wireSources() error {
	o := a.opts
	a.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vitals_agent_cni_reports_total",
		Help: "CNI operation results received by the agent, by operation, result and source.",
	}, []string{"op", "result", "source"})
	if err := a.deps.Registry.Register(a.reports); err != nil {
		return fmt.Errorf("register agent metrics: %w", err)
	}
	a.verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vitals_agent_kube_events_total",
		Help: "kubelet sandbox failure Events about this node that were news, by verdict (counted, or why not).",
	}, []string{"verdict"})
	if err := a.deps.Registry.Register(a.verdicts); err != nil {
		return fmt.Errorf("register agent metrics: %w", err)
	}
	if a.deps.Kube != nil {
		a.broadcaster = record.NewBroadcaster()
		a.recorder = a.broadcaster.NewRecorder(a.deps.Kube.Scheme(), corev1.EventSource{Component: "vitals-agent", Host: o.NodeName})
	}
	countReport := func(r Report) {
		a.reports.WithLabelValues(string(r.Op), string(r.Result), r.Source).Add(float64(r.Count))
	}
	a.reporter = &BudgetReporter{
		Budget:   a.budget,
		Source:   "api",
		OnReport: countReport,
		OnFailure: func(r Report) {
			a.log.Warn("CNI ADD failed", "pod", r.Pod, "source", r.Source, "count", r.Count, "err", r.Error)
			if a.recorder != nil && o.NodeName != "" {
				a.recorder.Event(a.nodeRef, corev1.EventTypeWarning, EventReasonCNIAddFailed, (&AddFailureError{Report: r}).Error())
			}
		},
	}
	beat := max(o.ComponentTimeout/6, 10*time.Millisecond)
	component := func(name string) (*health.Component, error) {
		c, err := a.mgr.Component(name, health.ComponentOptions{Deadline: o.ComponentTimeout})
		if err != nil {
			return nil, fmt.Errorf("register component %s: %w", name, err)
		}
		return c, nil
	}
	if o.SocketPath != "" {
		c, err := component(ComponentSocket)
		if err != nil {
			return err
		}
		a.socket = &SocketServer{Path: o.SocketPath, Mode: o.SocketMode, Reporter: a.reporter, Heartbeat: c, BeatPeriod: beat, Log: a.log}
	}
	if o.WatchEvents {
		c, err := component(ComponentEvents)
		if err != nil {
			return err
		}
		a.pods = NewPodIndex(a.deps.Kube, o.NodeName)
		a.events = &EventSource{Client: a.deps.Kube, NodeName: o.NodeName, Pods: a.pods, Heartbeat: c, BeatPeriod: beat,
			MaxAge: o.EventMaxAge, Clock: a.deps.Clock, Log: a.log,
			Reporter: &BudgetReporter{Budget: a.sandbox, Source: "kube-events", OnReport: countReport,
				OnFailure: func(r Report) {
					a.log.Warn("pod network failure reported by kubelet", "pod", r.Pod, "count", r.Count, "err", r.Error)
				}},
			OnVerdict: func(v string) { a.verdicts.WithLabelValues(v).Inc() },
		}
	}
	if a.conds != nil {
		c, err := component(ComponentConditions)
		if err != nil {
			return err
		}
		a.conds.Heartbeat = c
		a.conds.Period = min(time.Second, beat)
		a.conds.OnTransition = func(from, to corev1.NodeCondition) {
			if from.Status == corev1.ConditionUnknown || to.Status == corev1.ConditionUnknown {
				return // starting up, not news
			}
			typ := corev1.EventTypeNormal
			if to.Status != corev1.ConditionTrue {
				typ = corev1.EventTypeWarning
			}
			if a.recorder != nil {
				a.recorder.Eventf(a.nodeRef, typ, to.Reason, "%s is %s: %s", to.Type, to.Status, to.Message)
			}
		}
	}
	return nil
}

// stopTimeout bounds the wait for the agent's parts after the drain.
const stopTimeout = 10 * time.Second

// Manager returns the agent's health manager (to add checks before Run).
func (a *Agent) Manager() *health.Manager { return a.mgr }

// Reporter returns the Reporter that feeds the CNI ADD failure budget: the Go API for daemons that embed
// the agent.
func (a *Agent) Reporter() Reporter { return a.reporter }

// Budget returns the CNI ADD failure budget.
func (a *Agent) Budget() *health.Budget { return a.budget }

// Conditions returns the node condition writer (nil when off).
func (a *Agent) Conditions() *NodeConditions { return a.conds }

// MemorySource says what the memory check measures (rss or cgroup).
func (a *Agent) MemorySource() string { return a.memory }

// Addr is the health server's address once Run listens (nil before).
func (a *Agent) Addr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

// Run serves until ctx is done, then drains: readiness fails at once, liveness and the server hold for
// the drain delay, then everything stops. It returns an error if a part cannot start.
func (a *Agent) Run(ctx context.Context) error {
	srv, err := health.NewServer(health.ServerOptions{
		Name:            "agent",
		Addr:            net.JoinHostPort(a.opts.BindAddress, strconv.Itoa(a.opts.Port)),
		Listener:        a.deps.Listener,
		Manager:         a.mgr,
		Probes:          health.HandlerOptions{Port: a.opts.Port},
		Metrics:         a.deps.Registry,
		Logger:          a.log,
		ShutdownTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.addr = srv.Addr()
	a.mu.Unlock()
	if a.socket != nil {
		if err := a.socket.Listen(); err != nil {
			srv.Close()
			return err
		}
	}
	if a.canary != nil {
		if err := a.canary.Listen(); err != nil {
			srv.Close()
			return err
		}
	}
	if a.broadcaster != nil {
		a.broadcaster.StartRecordingToSink(eventSink{a.deps.Kube})
		defer a.broadcaster.Shutdown()
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	a.mgr.Start(runCtx)
	defer a.mgr.Stop()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Start(ctx) }()
	var wg sync.WaitGroup
	if a.socket != nil {
		wg.Go(func() {
			if err := a.socket.Serve(runCtx); err != nil {
				a.log.Error("CNI report socket stopped", "err", err)
			}
		})
	}
	if a.events != nil {
		wg.Go(func() { a.pods.Run(runCtx) })
		wg.Go(func() { _ = a.events.Run(runCtx) })
	}
	if a.conds != nil {
		wg.Go(func() { _ = a.conds.Run(runCtx) })
	}
	if a.canary != nil {
		wg.Go(func() {
			if err := a.canary.Serve(runCtx); err != nil {
				a.log.Error("canary socket stopped", "err", err)
			}
		})
	}
	if a.peers != nil {
		wg.Go(func() { a.peers.Run(runCtx) })
	}
	a.log.Info("node agent started", "node", a.opts.NodeName, "addr", srv.Addr().String(), "socket", a.opts.SocketPath,
		"memory", a.memory, "failure_mode", a.opts.FailureMode, "failures_count", a.opts.FailuresCount)

	// The server drains when ctx ends (or fails); the sources stop after it.
	runErr := <-serveErr
	cancel()
	// Every part stops on cancel; should one not, the process still exits: SIGTERM is honoured.
	stopped := make(chan struct{})
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-a.deps.Clock.After(stopTimeout):
		a.log.Error("node agent parts did not stop; exiting anyway", "timeout", stopTimeout)
	}
	a.log.Info("node agent stopped")
	return runErr
}
