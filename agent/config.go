package agent

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/health/checks/cniconfig"
	"github.com/vitalsproject/vitals/netprobe"
)

// Defaults, equal to Kuryr's where Kuryr has the option.
const (
	DefaultPort             = 8090 // [cni_health_server] port
	DefaultMaxMemoryMiB     = -1   // [cni_health_server] max_memory_usage: off
	DefaultFailuresCount    = 3    // [cni_daemon] cni_failures_count
	DefaultFailureWindow    = 10 * time.Minute
	DefaultCheckInterval    = 10 * time.Second
	DefaultHeartbeatPeriod  = time.Minute
	DefaultComponentTimeout = 30 * time.Second
)

// Failure budget modes.
const (
	ModeConsecutive = "consecutive"
	ModeWindow      = "window"
)

// Memory sources.
const (
	MemoryAuto   = "auto"   // the memory cgroup if one is found, else the agent's RSS
	MemoryCgroup = "cgroup" // the memory cgroup (cg_path, or found from /proc/self/cgroup)
	MemoryRSS    = "rss"    // the agent's resident set size
)

// Options configure the agent. Zero values are not defaults: start from DefaultOptions.
type Options struct {
	// NodeName is this node's name (the downward API's spec.nodeName).
	NodeName string
	// BindAddress and Port of the health server.
	BindAddress string
	Port        int
	// MaxMemoryMiB: liveness fails above it; -1 disables the check.
	MaxMemoryMiB int64
	// MemorySource: auto, cgroup or rss.
	MemorySource string
	// CgroupPath overrides the memory cgroup directory (Kuryr's cg_path).
	CgroupPath string
	// FailuresCount CNI ADD failures are tolerated; one more fails liveness (Kuryr's cni_failures_count).
	FailuresCount int
	// FailureMode: consecutive (a success resets the count) or window (FailuresCount+1 failures within
	// FailureWindow). Consecutive needs a source that reports successes too (the CNI reporter).
	FailureMode   string
	FailureWindow time.Duration
	// FailuresFailLiveness: a tripped CNI ADD failure budget fails the agent's liveness (Kuryr's CNI
	// daemon, which was the CNI, was restarted). False: it only turns PodNetworkHealthy False and fails
	// /livez/cni-add-failures, which the CNI's own DaemonSet may probe.
	FailuresFailLiveness bool
	// EventMaxAge: kubelet Events last seen longer ago are not evidence.
	EventMaxAge time.Duration
	// CNIConfDir holds the CNI network configuration.
	CNIConfDir string
	// SocketPath of the CNI report socket; "" disables it.
	SocketPath string
	// SocketMode of the socket file: 0600 (root only, the default) or 0660 (and its group).
	SocketMode os.FileMode
	// WatchEvents turns on the kubelet Events source.
	WatchEvents bool
	// NodeConditions turns on writing node conditions.
	NodeConditions bool
	// Netns runs the netlink check in this network namespace ("" is the agent's, which with host
	// networking is the node's).
	Netns string
	// Capabilities that readiness requires in the effective set.
	Capabilities []string
	// CheckInterval of the local checks.
	CheckInterval time.Duration
	// HeartbeatPeriod of the node conditions.
	HeartbeatPeriod time.Duration
	// ComponentTimeout: a component that has not beaten for this long is dead.
	ComponentTimeout time.Duration
	// DrainDelay: after SIGTERM readiness fails at once and the server keeps answering this long.
	DrainDelay time.Duration
	// Kubeconfig path; "" means in-cluster configuration (or $KUBECONFIG).
	Kubeconfig string
	// Connectivity configures the pod network connectivity check (off without targets).
	Connectivity ConnectivityOptions
}

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		NodeName:             os.Getenv("NODE_NAME"),
		Port:                 DefaultPort,
		MaxMemoryMiB:         DefaultMaxMemoryMiB,
		MemorySource:         MemoryAuto,
		FailuresCount:        DefaultFailuresCount,
		FailureMode:          ModeWindow,
		FailureWindow:        DefaultFailureWindow,
		FailuresFailLiveness: true,
		EventMaxAge:          DefaultEventMaxAge,
		CNIConfDir:           cniconfig.DefaultDir,
		SocketPath:           DefaultSocketPath,
		SocketMode:           0o600,
		WatchEvents:          true,
		NodeConditions:       true,
		Capabilities:         []string{"NET_ADMIN"},
		CheckInterval:        DefaultCheckInterval,
		HeartbeatPeriod:      DefaultHeartbeatPeriod,
		ComponentTimeout:     DefaultComponentTimeout,
		Connectivity: ConnectivityOptions{Interval: DefaultConnectivityInterval, Timeout: DefaultConnectivityTimeout,
			CanaryMode: 0o600, PeerSample: DefaultPeerSample, PeerMin: DefaultPeerMin},
	}
}

// KuryrKeys are the kuryr.conf options the agent reads, by section. Other options of those sections are
// Kuryr's own and are ignored; so are Kuryr's and oslo's other sections (config.KuryrSections), while any other
// section is an error (ApplyKuryrINI).
var KuryrKeys = map[string][]string{
	"cni_health_server": {"port", "max_memory_usage", "cg_path"},
	"cni_daemon":        {"cni_failures_count"},
}

// ConnectivitySection is the agent's own section of the file, for the pod network connectivity check.
// Unlike Kuryr's sections, its keys are all the agent's: an unknown one is an error.
const ConnectivitySection = "pod_network_connectivity"

// connectivityKeys are the options of ConnectivitySection.
var connectivityKeys = []string{"netns", "pods", "services", "dns_server", "dns_names", "interval", "timeout",
	"canary_socket", "peers_service", "peers_sample", "peers_min"}

// INISections are the sections of the configuration file the agent reads: its own and Kuryr's of KuryrKeys.
func INISections() []string {
	return append([]string{ConnectivitySection}, slices.Sorted(maps.Keys(KuryrKeys))...)
}

// ApplyKuryrINI reads a kuryr.conf-style file and sets the options it holds:
//
//	[cni_health_server]
//	port = 8090              -> Port
//	max_memory_usage = -1    -> MaxMemoryMiB (MiB; -1 off)
//	cg_path = /sys/fs/...    -> CgroupPath (and MemorySource cgroup)
//	[cni_daemon]
//	cni_failures_count = 3   -> FailuresCount
//
// Malformed values are returned as config.Errors naming the file, line and option, and so is a section that
// is neither the agent's nor Kuryr's or oslo's (config.KuryrSections), or that looks like a misspelt section of
// the agent's ([pod_network_conectivity]: its checks would be dropped). ignored are the sections of Kuryr and
// oslo the file holds that the agent does not read, as "[section]", for one warning line.
func ApplyKuryrINI(path string, o *Options) (ignored []string, err error) {
	f, err := config.LoadINI(path)
	if err != nil {
		return nil, err
	}
	ignored = f.CheckSections(INISections(), config.KuryrSections)
	hs := f.Section("cni_health_server")
	o.Port = hs.Port("port", o.Port)
	if hs.Has("max_memory_usage") {
		v := hs.Int("max_memory_usage", int(o.MaxMemoryMiB))
		if v < -1 || v == 0 {
			hs.Errorf("max_memory_usage", "expected a number of MiB above 0, or -1 to disable the check, got %d", v)
		} else {
			o.MaxMemoryMiB = int64(v)
		}
	}
	if hs.Has("cg_path") {
		p := hs.String("cg_path", "")
		if p != "" && !strings.HasPrefix(p, "/") {
			hs.Errorf("cg_path", "expected an absolute path to a memory cgroup directory, got %q", p)
		} else if p != "" {
			o.CgroupPath = p
			o.MemorySource = MemoryCgroup
		}
	}
	d := f.Section("cni_daemon")
	if d.Has("cni_failures_count") {
		o.FailuresCount = d.IntRange("cni_failures_count", o.FailuresCount, 0, 1_000_000)
	}
	applyConnectivityINI(f.Section(ConnectivitySection), &o.Connectivity)
	return ignored, f.Err()
}

// applyConnectivityINI reads the connectivity check's section:
//
//	[pod_network_connectivity]
//	netns = /var/run/netns/probe               -> Netns
//	pods = 10.100.1.7:8080, 10.100.2.9:8080    -> Pods
//	services = 10.96.0.1:443                   -> Services
//	dns_server = 10.96.0.10                    -> DNSServer
//	dns_names = kubernetes.default.svc.cluster.local -> DNSNames
//	interval = 30                              -> Interval (seconds)
//	timeout = 3                                -> Timeout (seconds)
//	canary_socket = /run/vitals/canary/canary.sock -> Canary
//	peers_service = vitals/vitals-agent-canary -> PeerService
//	peers_sample = 10                          -> PeerSample
//	peers_min = 3                              -> PeerMin
//
// Each value is checked where it stands, so that an error names its line; checks across options
// (a DNS server for the names, a timeout within the interval) are Validate's, after the flags.
func applyConnectivityINI(s *config.Section, c *ConnectivityOptions) {
	s.CheckKnown(connectivityKeys...)
	if s.Has("netns") {
		c.Netns = s.String("netns", c.Netns)
		if !strings.HasPrefix(c.Netns, "/") {
			s.Errorf("netns", "expected an absolute path to a network namespace, got %q", c.Netns)
		}
	}
	for _, key := range []string{"pods", "services"} {
		for _, t := range s.List(key, nil) {
			if _, err := netprobe.ParseTarget(t); err != nil {
				s.Errorf(key, "%v", err)
			}
		}
	}
	c.Pods = s.List("pods", c.Pods)
	c.Services = s.List("services", c.Services)
	if s.Has("dns_server") {
		c.DNSServer = s.String("dns_server", c.DNSServer)
		if _, err := netprobe.ParseDNSServer(c.DNSServer); err != nil {
			s.Errorf("dns_server", "%v", err)
		}
	}
	c.DNSNames = s.List("dns_names", c.DNSNames)
	if s.Has("canary_socket") {
		c.Canary = s.String("canary_socket", c.Canary)
		if !strings.HasPrefix(c.Canary, "/") {
			s.Errorf("canary_socket", "expected an absolute path to a unix socket, got %q", c.Canary)
		}
	}
	if s.Has("peers_service") {
		c.PeerService = s.String("peers_service", c.PeerService)
		if ns, name, ok := strings.Cut(c.PeerService, "/"); !ok || ns == "" || name == "" {
			s.Errorf("peers_service", "expected namespace/name of the canaries' headless Service, got %q", c.PeerService)
		}
	}
	if s.Has("peers_sample") {
		c.PeerSample = s.IntRange("peers_sample", c.PeerSample, 1, MaxPeerSample)
	}
	if s.Has("peers_min") {
		c.PeerMin = s.IntRange("peers_min", c.PeerMin, 1, MaxPeerSample)
	}
	for _, n := range c.DNSNames {
		if err := netprobe.ValidDNSName(n); err != nil {
			s.Errorf("dns_names", "%v", err)
		}
	}
	for _, o := range []struct {
		key string
		d   *time.Duration
	}{{"interval", &c.Interval}, {"timeout", &c.Timeout}} {
		key, d := o.key, o.d
		switch v := s.Seconds(key, -1); {
		case v == 0:
			s.Errorf(key, "expected a positive number of seconds, got %q", s.String(key, ""))
		case v > 0:
			*d = v
		}
	}
}

// Validate checks the options; problems are *config.Error values naming the flag.
func (o Options) Validate() error {
	var errs config.Errors
	bad := func(field, format string, args ...any) {
		errs = append(errs, &config.Error{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if o.NodeName == "" && (o.WatchEvents || o.NodeConditions) {
		bad("node-name", "required to watch kubelet events and write node conditions (set --node-name or NODE_NAME from the downward API's spec.nodeName)")
	}
	if o.Port < 1 || o.Port > 65535 {
		bad("port", "expected a port number (1-65535), got %d", o.Port)
	}
	if o.MaxMemoryMiB < -1 || o.MaxMemoryMiB == 0 {
		bad("max-memory-usage", "expected a number of MiB above 0, or -1 to disable the check, got %d", o.MaxMemoryMiB)
	}
	switch o.MemorySource {
	case MemoryAuto, MemoryRSS, MemoryCgroup:
	default:
		bad("memory-source", "expected auto, cgroup or rss, got %q", o.MemorySource)
	}
	if o.CgroupPath != "" && !strings.HasPrefix(o.CgroupPath, "/") {
		bad("cg-path", "expected an absolute path, got %q", o.CgroupPath)
	}
	if o.FailuresCount < 0 {
		bad("cni-failures-count", "expected 0 or more, got %d", o.FailuresCount)
	}
	switch o.FailureMode {
	case ModeConsecutive:
	case ModeWindow:
		if o.FailureWindow <= 0 {
			bad("cni-failure-window", "expected a positive duration in window mode, got %s", o.FailureWindow)
		}
	default:
		bad("cni-failure-mode", "expected consecutive or window, got %q", o.FailureMode)
	}
	if o.CNIConfDir == "" {
		bad("cni-conf-dir", "expected a directory")
	}
	if o.SocketPath != "" && len(o.SocketPath) > 107 {
		bad("socket", "unix socket paths are limited to 107 bytes, got %d", len(o.SocketPath))
	}
	if o.SocketMode != 0o600 && o.SocketMode != 0o660 {
		bad("socket-mode", "expected 0600 or 0660 (the socket spends the failure budget: root only), got %#o", o.SocketMode)
	}
	if o.EventMaxAge <= 0 {
		bad("event-max-age", "expected a positive duration, got %s", o.EventMaxAge)
	}
	if o.CheckInterval <= 0 {
		bad("check-interval", "expected a positive duration, got %s", o.CheckInterval)
	}
	if o.HeartbeatPeriod <= 0 {
		bad("condition-heartbeat", "expected a positive duration, got %s", o.HeartbeatPeriod)
	}
	if o.ComponentTimeout <= 0 {
		bad("component-timeout", "expected a positive duration, got %s", o.ComponentTimeout)
	}
	if o.DrainDelay < 0 {
		bad("drain-delay", "expected 0 or a positive duration, got %s", o.DrainDelay)
	}
	for _, b := range o.Connectivity.validate() {
		bad("connectivity-"+b[0], "%s", b[1])
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
