package agentcmd

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health/checks"
	"github.com/vitalsproject/vitals/internal/base/version"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// agentFlags holds the agent's flags; options start from agent.DefaultOptions, then the
// kuryr.conf-style file, then the flags given on the command line.
type agentFlags struct {
	configFile string
	// ignored are the sections of Kuryr and oslo in the configuration file that the agent does not read.
	ignored    []string
	socketMode string
	canaryMode string
	context    string
	log        *clirun.LogFlags
	opts       agent.Options
}

// NewCommand builds the node agent's command (and its `report` subcommand) named use: "vitals-agent"
// as the root of its own binary, "agent" under `vitals`. Configuration errors are *config.Error values
// (exit 2).
func NewCommand(use string) *cobra.Command {
	return command(use, &agentFlags{opts: agent.DefaultOptions()})
}

// command builds the command with its flags bound to f.
func command(use string, f *agentFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: "Run the node agent: CNI health probes, CNI ADD failure budget, node conditions",
		Long: `Run the node agent on every node (a DaemonSet with host networking).

It serves /ready and /alive (and /readyz, /livez, /healthz, /metrics) on [cni_health_server] port:
readiness needs the Kubernetes API (and the capabilities of --capabilities); liveness needs netlink, a
loadable CNI network configuration, memory under max_memory_usage, live agent components and, unless
--cni-failures-fail-liveness=false, a CNI ADD failure budget that is not exhausted. That budget counts
the results the CNI reports on the root-only socket (the vitals-cni reporter, see the 'report'
subcommand). kubelet's FailedCreatePodSandBox Events for this node count in a budget of their own, only
when they are evidence (their pod is on this node, not running, the failure is the network's, the
Event is recent), and never fail a probe. The agent writes the node conditions CNIHealthy and
PodNetworkHealthy, and PodNetworkConnectivity when the pod network connectivity check has targets
(--connectivity-*: the canaries of other nodes, found through their Service's EndpointSlices, pods on
other nodes, Services, names through the cluster DNS, probed from the pod network through this node's
canary or from a network namespace; it never fails a probe).

Options are read from a kuryr.conf-style file ([cni_health_server] port, max_memory_usage, cg_path;
[cni_daemon] cni_failures_count; the agent's own [pod_network_connectivity]) given with --config-file,
then from flags, which win.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd, f)
		},
	}
	fs := cmd.Flags()
	o := &f.opts
	fs.StringVar(&f.configFile, "config-file", "", "kuryr.conf-style INI file to read [cni_health_server] and [cni_daemon] from")
	fs.StringVar(&o.NodeName, "node-name", o.NodeName, "this node's name (default $NODE_NAME)")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address of the health server (empty: all)")
	fs.IntVar(&o.Port, "port", o.Port, "port of the health server ([cni_health_server] port)")
	fs.Int64Var(&o.MaxMemoryMiB, "max-memory-usage", o.MaxMemoryMiB, "liveness fails above this many MiB; -1 disables ([cni_health_server] max_memory_usage)")
	fs.StringVar(&o.MemorySource, "memory-source", o.MemorySource, "what the memory check measures: auto (the memory cgroup if found, else RSS), cgroup or rss")
	fs.StringVar(&o.CgroupPath, "cg-path", o.CgroupPath, "memory cgroup directory to measure ([cni_health_server] cg_path)")
	fs.IntVar(&o.FailuresCount, "cni-failures-count", o.FailuresCount, "CNI ADD failures tolerated; one more fails liveness ([cni_daemon] cni_failures_count)")
	fs.StringVar(&o.FailureMode, "cni-failure-mode", o.FailureMode, "how reported CNI ADD failures are counted: window, or consecutive (a success resets; needs the CNI reporter, which reports successes)")
	fs.DurationVar(&o.FailureWindow, "cni-failure-window", o.FailureWindow, "window of the window mode (and of kubelet's sandbox network failures)")
	fs.BoolVar(&o.FailuresFailLiveness, "cni-failures-fail-liveness", o.FailuresFailLiveness, "a tripped CNI ADD failure budget fails the agent's liveness (false: only the node condition and /livez/cni-add-failures)")
	fs.DurationVar(&o.EventMaxAge, "event-max-age", o.EventMaxAge, "kubelet Events last seen longer ago are not evidence")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", o.CNIConfDir, "CNI network configuration directory")
	fs.StringVar(&o.SocketPath, "socket", o.SocketPath, "unix socket for CNI reports (empty: off)")
	fs.StringVar(&f.socketMode, "socket-mode", "0600", "mode of the report socket: 0600 (root only) or 0660 (and its group)")
	fs.BoolVar(&o.WatchEvents, "watch-events", o.WatchEvents, "count kubelet FailedCreatePodSandBox Events for this node")
	fs.BoolVar(&o.NodeConditions, "node-conditions", o.NodeConditions, "write the CNIHealthy and PodNetworkHealthy node conditions")
	fs.StringVar(&o.Netns, "netns", o.Netns, "network namespace path for the netlink check (empty: the agent's)")
	fs.StringSliceVar(&o.Capabilities, "capabilities", o.Capabilities, "capabilities readiness requires in the effective set (empty: none)")
	fs.DurationVar(&o.CheckInterval, "check-interval", o.CheckInterval, "interval of the checks")
	fs.DurationVar(&o.HeartbeatPeriod, "condition-heartbeat", o.HeartbeatPeriod, "period of node condition heartbeats")
	fs.DurationVar(&o.ComponentTimeout, "component-timeout", o.ComponentTimeout, "a component that has not beaten for this long is dead")
	fs.DurationVar(&o.DrainDelay, "drain-delay", o.DrainDelay, "on SIGTERM, fail readiness and keep serving this long")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig (empty: in-cluster, or $KUBECONFIG)")
	clirun.AddContextFlag(cmd, &f.context, &o.Kubeconfig)
	c := &o.Connectivity
	fs.StringVar(&c.Netns, "connectivity-netns", c.Netns, "network namespace on the pod network to probe from (empty: the agent's; entering one needs CAP_SYS_ADMIN)")
	fs.StringSliceVar(&c.Pods, "connectivity-pod", c.Pods, "ip:port of a pod on another node to connect to over TCP (repeatable)")
	fs.StringSliceVar(&c.Services, "connectivity-service", c.Services, "ClusterIP:port of a Service to connect to over TCP (repeatable)")
	fs.StringVar(&c.DNSServer, "connectivity-dns-server", c.DNSServer, "the cluster DNS Service's address (ip or ip:port)")
	fs.StringSliceVar(&c.DNSNames, "connectivity-dns-name", c.DNSNames, "a name to resolve through the cluster DNS (repeatable)")
	fs.DurationVar(&c.Interval, "connectivity-interval", c.Interval, "interval of the pod network connectivity check")
	fs.DurationVar(&c.Timeout, "connectivity-timeout", c.Timeout, "timeout of one pass of the pod network connectivity check, per kind of target")
	fs.StringVar(&c.Canary, "connectivity-canary-socket", c.Canary, "unix socket the pod network canary of this node connects to; with it (and no --connectivity-netns) every probe is made from the canary's pod (empty: off)")
	fs.StringVar(&f.canaryMode, "connectivity-canary-socket-mode", "0600", "mode of the canary socket: 0600 (root only) or 0660 (and its group)")
	fs.StringVar(&c.PeerService, "connectivity-peers-service", c.PeerService, "namespace/name of the canaries' headless Service: its EndpointSlices' ready endpoints on other nodes are the peers probed (empty: off)")
	fs.IntVar(&c.PeerSample, "connectivity-peers-sample", c.PeerSample, "peers probed per pass, rotating through all of them")
	fs.IntVar(&c.PeerMin, "connectivity-peers-min", c.PeerMin, "ready peers needed for a verdict (fewer: the condition is Unknown)")
	f.log = clirun.AddLogFlags(cmd, "json")
	clirun.CompleteFiles(cmd, "config-file", "conf", "ini")
	clirun.CompleteValues(cmd, "memory-source", agent.MemoryAuto, agent.MemoryCgroup, agent.MemoryRSS)
	clirun.CompleteDirs(cmd, "cg-path")
	clirun.CompleteValues(cmd, "cni-failure-mode", agent.ModeWindow, agent.ModeConsecutive)
	clirun.CompleteDirs(cmd, "cni-conf-dir")
	clirun.CompleteFiles(cmd, "socket")
	clirun.CompleteValues(cmd, "socket-mode", "0600", "0660")
	clirun.CompleteFiles(cmd, "netns")
	clirun.CompleteValues(cmd, "capabilities", checks.CapabilityNames()...)
	clirun.CompleteFiles(cmd, "kubeconfig")
	clirun.CompleteFiles(cmd, "connectivity-netns")
	clirun.CompleteFiles(cmd, "connectivity-canary-socket")
	clirun.CompleteValues(cmd, "connectivity-canary-socket-mode", "0600", "0660")
	cmd.AddCommand(newReportCommand(use))
	return cmd
}

// options merges the kuryr.conf-style file and the flags (flags win when given, clirun.FlagsOverFile).
func (f *agentFlags) options(fs *pflag.FlagSet) (agent.Options, error) {
	if f.configFile != "" {
		err := clirun.FlagsOverFile(fs, func() error {
			var err error
			f.ignored, err = agent.ApplyKuryrINI(f.configFile, &f.opts)
			return err
		})
		if err != nil {
			return f.opts, err
		}
	}
	mode, err := strconv.ParseUint(f.socketMode, 8, 32)
	if err != nil {
		return f.opts, &config.Error{Field: "socket-mode", Msg: fmt.Sprintf("expected an octal mode, 0600 or 0660, got %q", f.socketMode)}
	}
	f.opts.SocketMode = os.FileMode(mode)
	cmode, err := strconv.ParseUint(f.canaryMode, 8, 32)
	if err != nil {
		return f.opts, &config.Error{Field: "connectivity-canary-socket-mode", Msg: fmt.Sprintf("expected an octal mode, 0600 or 0660, got %q", f.canaryMode)}
	}
	f.opts.Connectivity.CanaryMode = os.FileMode(cmode)
	return f.opts, f.opts.Validate()
}

// Memory defaults of the agent process, unless GOGC or GOMEMLIMIT say otherwise: the agent runs
// on every node, so a MiB saved is saved on each of them (docs/benchmarks.md, "Node agent memory").
// The heap of an idle agent is a few MiB; collecting at 50% growth instead of 100% keeps it there, and
// the soft limit makes the collector work harder before the heap passes it. The CPU this costs is a
// fraction of a percent: the agent allocates little.
const (
	defaultGCPercent   = 50
	defaultMemoryLimit = 16 << 20
)

func runAgent(cmd *cobra.Command, f *agentFlags) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	o, err := f.options(cmd.Flags())
	if err != nil {
		return err
	}
	log, err := f.log.Logger(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if len(f.ignored) > 0 {
		// A kuryr.conf holds Kuryr's and oslo's sections: one line says which ones the agent skips.
		log.Warn("configuration sections the agent does not use: ignored", "file", f.configFile, "sections", f.ignored)
	}
	var deps agent.Deps
	deps.Logger = log
	if o.WatchEvents || o.NodeConditions || o.Kubeconfig != "" || o.Connectivity.PeerService != "" || f.context != "" {
		cfg, err := clirun.LoadKubeconfig(o.Kubeconfig, f.context)
		if err != nil {
			return err
		}
		cfg.UserAgent = "vitals-agent/" + version.Version
		// One agent per node: keep each one's share of the API server small.
		cfg.QPS, cfg.Burst = 5, 10
		kc, err := agent.NewKube(cfg)
		if err != nil {
			return err
		}
		deps.Kube = kc
	}
	a, err := agent.New(o, deps)
	if err != nil {
		return err
	}
	return a.Run(cmd.Context())
}
