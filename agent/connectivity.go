package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/netprobe"
)

// Names of the pod network connectivity checks (the /livez/<name> paths). Each is registered only when
// it has targets.
const (
	CheckConnectivityPod     = "pod-network-pod"
	CheckConnectivityService = "pod-network-service"
	CheckConnectivityDNS     = "pod-network-dns"
)

// Connectivity defaults.
const (
	DefaultConnectivityInterval = 30 * time.Second
	DefaultConnectivityTimeout  = 3 * time.Second
	// MaxConnectivityTargets bounds the targets of one kind (each is a metric label and a dial per pass).
	MaxConnectivityTargets = 16
)

// ConnectivityOptions configure the pod network connectivity check: from a network namespace on the
// pod network, TCP connections to pods on other nodes and to Service ClusterIPs, and DNS queries to the
// cluster DNS server. The check is off while it has no target.
type ConnectivityOptions struct {
	// Netns is the network namespace to probe from (a bind-mount such as /var/run/netns/probe, or
	// /proc/<pid>/ns/net of a pod's process); "" is the agent's own, which with host networking is the
	// node's (a weaker check: packets leave with the node's address, not a pod's). Entering one needs
	// CAP_SYS_ADMIN.
	Netns string
	// Pods are ip:port of pods on other nodes that accept TCP connections (pod-to-pod).
	Pods []string
	// Services are ClusterIP:port of Services (pod-to-service).
	Services []string
	// DNSServer is the cluster DNS Service's address, ip or ip:port (port 53 by default).
	DNSServer string
	// DNSNames are resolved (A or AAAA records) through DNSServer.
	DNSNames []string
	// Interval between passes and Timeout of one pass (each kind of target has its own).
	Interval, Timeout time.Duration
	// Canary is the unix socket the pod network canary of this node connects to (package canary); ""
	// is none. With it, and without Netns, every probe is made from the canary's pod: no namespace
	// needs to be made or entered by hand.
	Canary string
	// CanaryMode of the socket file: 0600 (root's only) or 0660 (and its group: the chart's canary
	// runs as a non-root user of group 0).
	CanaryMode os.FileMode
	// PeerService is namespace/name of the headless Service that selects the canaries: the ready
	// endpoints of its EndpointSlices on other nodes are the peers of the pod-network-peers check. It
	// needs Canary or Netns (probing peers from the node's own address would prove nothing about its
	// pods).
	PeerService string
	// PeerSample peers are probed per pass, rotating through all of them; PeerMin ready peers at least
	// are needed for a verdict.
	PeerSample, PeerMin int
}

// Enabled reports whether the check has any target, configured or discovered.
func (c ConnectivityOptions) Enabled() bool {
	return len(c.Pods) > 0 || len(c.Services) > 0 || len(c.DNSNames) > 0 || c.PeerService != ""
}

// PeerServiceName splits PeerService into its namespace and name.
func (c ConnectivityOptions) PeerServiceName() (namespace, name string) {
	namespace, name, _ = strings.Cut(c.PeerService, "/")
	return namespace, name
}

// validate returns the problems as (field, message) pairs; field is the flag's name without
// "connectivity-".
func (c ConnectivityOptions) validate() [][2]string {
	var bad [][2]string
	add := func(field, format string, args ...any) {
		bad = append(bad, [2]string{field, fmt.Sprintf(format, args...)})
	}
	for _, kind := range []struct {
		field   string
		targets []string
	}{{"pod", c.Pods}, {"service", c.Services}} {
		if len(kind.targets) > MaxConnectivityTargets {
			add(kind.field, "expected at most %d targets, got %d", MaxConnectivityTargets, len(kind.targets))
		}
		for _, t := range kind.targets {
			if _, err := netprobe.ParseTarget(t); err != nil {
				add(kind.field, "%v", err)
			}
		}
	}
	if len(c.DNSNames) > MaxConnectivityTargets {
		add("dns-name", "expected at most %d names, got %d", MaxConnectivityTargets, len(c.DNSNames))
	}
	for _, n := range c.DNSNames {
		if err := netprobe.ValidDNSName(n); err != nil {
			add("dns-name", "%v", err)
		}
	}
	switch {
	case len(c.DNSNames) > 0 && c.DNSServer == "":
		add("dns-server", "required with DNS names to resolve (the cluster DNS Service's ClusterIP)")
	case c.DNSServer != "":
		if _, err := netprobe.ParseDNSServer(c.DNSServer); err != nil {
			add("dns-server", "%v", err)
		}
	}
	if c.Netns != "" && !strings.HasPrefix(c.Netns, "/") {
		add("netns", "expected an absolute path to a network namespace, got %q", c.Netns)
	}
	if c.Canary != "" && !strings.HasPrefix(c.Canary, "/") {
		add("canary-socket", "expected an absolute path to a unix socket, got %q", c.Canary)
	} else if len(c.Canary) > 107 {
		add("canary-socket", "unix socket paths are limited to 107 bytes, got %d", len(c.Canary))
	}
	if c.Canary != "" && c.CanaryMode != 0o600 && c.CanaryMode != 0o660 {
		add("canary-socket-mode", "expected 0600 or 0660, got %#o", c.CanaryMode)
	}
	if c.PeerService != "" {
		ns, name := c.PeerServiceName()
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 || !strings.Contains(c.PeerService, "/") {
			add("peers-service", "expected namespace/name of the canaries' headless Service, got %q", c.PeerService)
		} else if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			add("peers-service", "expected namespace/name of the canaries' headless Service, got %q", c.PeerService)
		}
		if c.Canary == "" && c.Netns == "" {
			add("peers-service", "needs --connectivity-canary-socket (or --connectivity-netns): probed from the node's own address, peers would prove nothing about its pods")
		}
		if c.PeerSample < 1 || c.PeerSample > MaxPeerSample {
			add("peers-sample", "expected 1 to %d peers per pass, got %d", MaxPeerSample, c.PeerSample)
		}
		if c.PeerMin < 1 || c.PeerMin > c.PeerSample {
			add("peers-min", "expected 1 to the sample (%d), got %d", c.PeerSample, c.PeerMin)
		}
	}
	if c.Interval <= 0 {
		add("interval", "expected a positive duration, got %s", c.Interval)
	}
	if c.Timeout <= 0 || c.Timeout > c.Interval {
		add("timeout", "expected a positive duration no longer than the interval (%s), got %s", c.Interval, c.Timeout)
	}
	return bad
}

// verdictState is what a connectivity check's last pass could not decide: a check without a
// verdict passes (it has no evidence against the node) and its condition says Unknown, with why.
type verdictState struct {
	p atomic.Pointer[[2]string]
}

func (s *verdictState) undecided(reason, message string) { s.p.Store(&[2]string{reason, message}) }
func (s *verdictState) decided()                         { s.p.Store(nil) }

// get returns the reason and message of the last pass without a verdict.
func (s *verdictState) get() (reason, message string, ok bool) {
	if v := s.p.Load(); v != nil {
		return v[0], v[1], true
	}
	return "", "", false
}

// connectivity runs the probes of one kind of configured target and keeps their metrics.
type connectivity struct {
	kind    string // pod, service, dns
	targets []string
	probes  []netprobe.Probe
	src     prober
	// probeTimeout is shorter than the check's timeout, so that a probe that times out says so in
	// its own words rather than being cut off by the health manager.
	probeTimeout time.Duration
	probeCount   *prometheus.CounterVec
	up           *prometheus.GaugeVec
	state        *verdictState
}

// run probes every target at once, each within probeTimeout. The check fails when every target
// fails: this node is cut off. One unreachable target among reachable ones is more likely that
// target's node's problem; it shows in the metrics, not in this node's condition. Without a canary
// to probe from, there is no verdict.
func (c *connectivity) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.probeTimeout)
	defer cancel()
	errs, err := c.src.probe(ctx, c.probes)
	if err != nil {
		c.state.undecided(ReasonNoCanary, "nothing was probed from the pod network: "+netprobe.Word(err).Error())
		return nil
	}
	c.state.decided()
	var failed []string
	for i, t := range c.targets {
		result, up := "success", 1.0
		if errs[i] != nil {
			result, up = "failure", 0
			failed = append(failed, t+": "+netprobe.Word(errs[i]).Error())
		}
		c.probeCount.WithLabelValues(c.kind, result).Inc()
		c.up.WithLabelValues(c.kind, t).Set(up)
	}
	if len(failed) == len(c.targets) {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// netnsDialer dials from the network namespace at path ("" for the calling process's). The socket is
// created on a thread switched into that namespace and stays bound to it; the thread is never handed
// back to other goroutines (its goroutine ends locked, and Go then ends the thread).
type netnsDialer struct{ path string }

func (n netnsDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	if n.path == "" {
		return d.DialContext(ctx, network, address)
	}
	type dialed struct {
		conn net.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		ns, err := netns.GetFromPath(n.path)
		if err != nil {
			done <- dialed{err: netprobe.NetnsOpenFailed}
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			done <- dialed{err: netprobe.NetnsEnterFailed}
			return
		}
		c, err := d.DialContext(ctx, network, address)
		done <- dialed{c, err}
	}()
	select {
	case r := <-done:
		return r.conn, r.err
	case <-ctx.Done():
		// The dial ends with ctx too; a connection made in between is closed unused.
		go func() {
			if r := <-done; r.conn != nil {
				_ = r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// connectivitySources are where the connectivity checks probe from and what they probe.
type connectivitySources struct {
	// canary, when set, runs the probes from the pod network (unless Netns is set).
	canary *CanaryLink
	// peers lists the discovered peers (nil without PeerService).
	peers peerSource
	// host dials from the node's own address; nil: the agent's namespace.
	host netprobe.Dialer
	// seed orders the peers' rotation.
	seed uint64
	log  *slog.Logger
}

// connectivitySet is the connectivity checks and what their last passes left undecided.
type connectivitySet struct {
	checks []health.Check
	states map[string]*verdictState
}

// undecided says why the check name has no verdict (ConditionSpec.Undecided).
func (s *connectivitySet) undecided(name string) (reason, message string, ok bool) {
	if st, found := s.states[name]; found {
		return st.get()
	}
	return "", "", false
}

// connectivityChecks builds the checks of the targets o names and of the peers, and registers their
// metrics.
func connectivityChecks(o ConnectivityOptions, reg prometheus.Registerer, src connectivitySources) (*connectivitySet, error) {
	set := &connectivitySet{states: map[string]*verdictState{}}
	if !o.Enabled() {
		return set, nil
	}
	probes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vitals_agent_connectivity_probes_total",
		Help: "Pod network connectivity probes by kind of target (pod, service, dns, peer) and result.",
	}, []string{"kind", "result"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vitals_agent_connectivity_target_up",
		Help: "1 when the last probe of a configured pod network connectivity target succeeded, else 0.",
	}, []string{"kind", "target"})
	collectors := []prometheus.Collector{probes, up}
	var peers *prometheus.GaugeVec
	if o.PeerService != "" {
		peers = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vitals_agent_connectivity_peers",
			Help: "Peers of the last pass of pod-network-peers: known (ready, on other nodes), sampled, reached (from the pod network), pod_only_failed (answered the node's address only), unanswered, gone (no longer ready at the end).",
		}, []string{"state"})
		collectors = append(collectors, peers)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register connectivity metrics: %w", err)
		}
	}
	var pod prober = dialProber{netnsDialer{o.Netns}}
	if o.Netns == "" && src.canary != nil {
		pod = src.canary
	}
	server, _ := netprobe.ParseDNSServer(o.DNSServer)
	check := func(name string, run health.Func) health.Check {
		return health.Check{
			Name:     name,
			Probes:   health.Liveness,
			Severity: health.Degraded, // the network's problem, not the agent's: never restart the agent
			Run:      run,
			Interval: o.Interval,
			Timeout:  o.Timeout,
			// Hysteresis: a lost packet does not flip the condition.
			FailureThreshold: 3,
			SuccessThreshold: 2,
		}
	}
	add := func(name, kind string, targets []string) {
		if len(targets) == 0 {
			return
		}
		c := &connectivity{kind: kind, targets: targets, src: pod, probeCount: probes, up: up,
			probeTimeout: o.Timeout * 4 / 5, state: &verdictState{}}
		for _, t := range targets {
			if kind == "dns" {
				c.probes = append(c.probes, netprobe.Probe{DNS: t, Server: server.String()})
			} else {
				c.probes = append(c.probes, netprobe.Probe{TCP: t})
			}
		}
		set.states[name] = c.state
		set.checks = append(set.checks, check(name, c.run))
	}
	add(CheckConnectivityPod, "pod", o.Pods)
	add(CheckConnectivityService, "service", o.Services)
	add(CheckConnectivityDNS, "dns", o.DNSNames)
	if o.PeerService != "" {
		if src.peers == nil {
			return nil, errors.New("connectivity: peers to discover but no peer source")
		}
		host := src.host
		if host == nil {
			host = &net.Dialer{}
		}
		log := src.log
		if log == nil {
			log = slog.Default()
		}
		pc := &peerCheck{source: src.peers, pod: pod, host: host, sample: o.PeerSample, min: o.PeerMin,
			rot: rotation{seed: src.seed}, probeTimeout: o.Timeout * 4 / 5, state: &verdictState{}, log: log,
			metrics: peerMetrics{probes: probes, peers: peers}}
		if pod == prober(src.canary) {
			pc.self = func() netip.Addr {
				h, ok := src.canary.Canary()
				if !ok {
					return netip.Addr{}
				}
				a, _ := netip.ParseAddr(h.PodIP)
				return a.Unmap()
			}
		}
		set.states[CheckConnectivityPeers] = pc.state
		set.checks = append(set.checks, check(CheckConnectivityPeers, pc.run))
	}
	return set, nil
}
