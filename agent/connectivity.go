package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netns"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/vitalsproject/vitals/health"
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
}

// Enabled reports whether the check has any target.
func (c ConnectivityOptions) Enabled() bool {
	return len(c.Pods) > 0 || len(c.Services) > 0 || len(c.DNSNames) > 0
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
			if _, err := parseTarget(t); err != nil {
				add(kind.field, "%v", err)
			}
		}
	}
	if len(c.DNSNames) > MaxConnectivityTargets {
		add("dns-name", "expected at most %d names, got %d", MaxConnectivityTargets, len(c.DNSNames))
	}
	for _, n := range c.DNSNames {
		if err := validDNSName(n); err != nil {
			add("dns-name", "%v", err)
		}
	}
	switch {
	case len(c.DNSNames) > 0 && c.DNSServer == "":
		add("dns-server", "required with DNS names to resolve (the cluster DNS Service's ClusterIP)")
	case c.DNSServer != "":
		if _, err := parseDNSServer(c.DNSServer); err != nil {
			add("dns-server", "%v", err)
		}
	}
	if c.Netns != "" && !strings.HasPrefix(c.Netns, "/") {
		add("netns", "expected an absolute path to a network namespace, got %q", c.Netns)
	}
	if c.Interval <= 0 {
		add("interval", "expected a positive duration, got %s", c.Interval)
	}
	if c.Timeout <= 0 || c.Timeout > c.Interval {
		add("timeout", "expected a positive duration no longer than the interval (%s), got %s", c.Interval, c.Timeout)
	}
	return bad
}

// parseTarget parses ip:port (a name would need DNS, which is what the DNS target checks).
func parseTarget(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("expected ip:port (such as 10.96.0.1:443 or [fd00::1]:443), got %q", s)
	}
	return ap, nil
}

// parseDNSServer parses ip or ip:port, port 53 by default.
func parseDNSServer(s string) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil || ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("expected an IP address, optionally with a port (such as 10.96.0.10 or 10.96.0.10:53), got %q", s)
	}
	return ap, nil
}

func validDNSName(n string) error {
	fq := strings.TrimSuffix(n, ".")
	if fq == "" || len(fq) > 253 {
		return fmt.Errorf("expected a DNS name (such as kubernetes.default.svc.cluster.local), got %q", n)
	}
	for _, label := range strings.Split(fq, ".") {
		if len(label) == 0 || len(label) > 63 {
			return fmt.Errorf("expected a DNS name (such as kubernetes.default.svc.cluster.local), got %q", n)
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return fmt.Errorf("expected a DNS name (such as kubernetes.default.svc.cluster.local), got %q", n)
			}
		}
	}
	return nil
}

// connectivity runs the probes of one kind of target and keeps their metrics.
type connectivity struct {
	netns   string
	kind    string // pod, service, dns
	targets []string
	server  netip.AddrPort // dns
	// probeTimeout is shorter than the check's timeout, so that a probe that times out says so in
	// its own words rather than being cut off by the health manager.
	probeTimeout time.Duration
	probes       *prometheus.CounterVec
	up           *prometheus.GaugeVec
}

// run probes every target at once, each within probeTimeout. The check fails when every target
// fails: this node is cut off. One unreachable target among reachable ones is more likely that
// target's node's problem; it shows in the metrics, not in this node's condition.
func (c *connectivity) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.probeTimeout)
	defer cancel()
	errs := make([]error, len(c.targets))
	var wg sync.WaitGroup
	for i, t := range c.targets {
		wg.Go(func() {
			if c.kind == "dns" {
				errs[i] = resolve(ctx, c.netns, c.server, t)
			} else {
				errs[i] = connectTCP(ctx, c.netns, t)
			}
		})
	}
	wg.Wait()
	var failed []string
	for i, t := range c.targets {
		result, up := "success", 1.0
		if errs[i] != nil {
			result, up = "failure", 0
			failed = append(failed, t+": "+errs[i].Error())
		}
		c.probes.WithLabelValues(c.kind, result).Inc()
		c.up.WithLabelValues(c.kind, t).Set(up)
	}
	if len(failed) == len(c.targets) {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// connectTCP opens a TCP connection to target from the namespace and closes it.
func connectTCP(ctx context.Context, nsPath, target string) error {
	conn, err := dialIn(ctx, nsPath, "tcp", target)
	if err != nil {
		return err
	}
	_ = conn.Close()
	return nil
}

// resolve asks server for name's A record (and AAAA if there is none) over UDP from the namespace.
// Only the answer's code and record count are read: what the server says never reaches a message.
func resolve(ctx context.Context, nsPath string, server netip.AddrPort, name string) error {
	fqdn := name
	if !strings.HasSuffix(fqdn, ".") {
		fqdn += "."
	}
	var last error
	for _, typ := range []dnsmessage.Type{dnsmessage.TypeA, dnsmessage.TypeAAAA} {
		n, err := queryDNS(ctx, nsPath, server, fqdn, typ)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		last = errors.New("no address in the answer")
	}
	return last
}

// queryDNS sends one query and returns how many answers of typ came back.
func queryDNS(ctx context.Context, nsPath string, server netip.AddrPort, fqdn string, typ dnsmessage.Type) (int, error) {
	qname, err := dnsmessage.NewName(fqdn)
	if err != nil {
		return 0, errors.New("invalid name")
	}
	id := uint16(time.Now().UnixNano())
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: id, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: qname, Type: typ, Class: dnsmessage.ClassINET}},
	}
	packet, err := q.Pack()
	if err != nil {
		return 0, errors.New("invalid name")
	}
	conn, err := dialIn(ctx, nsPath, "udp", server.String())
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(packet); err != nil {
		return 0, netError(err)
	}
	buf := make([]byte, 1232)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return 0, netError(err)
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil || h.ID != id || !h.Response {
			continue // not the answer to our query: wait for it
		}
		if h.RCode != dnsmessage.RCodeSuccess {
			return 0, fmt.Errorf("the server answered %s", rcodeName(h.RCode))
		}
		if err := p.SkipAllQuestions(); err != nil {
			return 0, errors.New("malformed answer")
		}
		count := 0
		for {
			ah, err := p.AnswerHeader()
			if errors.Is(err, dnsmessage.ErrSectionDone) {
				return count, nil
			}
			if err != nil {
				return 0, errors.New("malformed answer")
			}
			if ah.Type == typ {
				count++
			}
			if err := p.SkipAnswer(); err != nil {
				return 0, errors.New("malformed answer")
			}
		}
	}
}

// rcodeName names the codes a server answers with; others by number.
func rcodeName(c dnsmessage.RCode) string {
	switch c {
	case dnsmessage.RCodeFormatError:
		return "FORMERR"
	case dnsmessage.RCodeServerFailure:
		return "SERVFAIL"
	case dnsmessage.RCodeNameError:
		return "NXDOMAIN"
	case dnsmessage.RCodeNotImplemented:
		return "NOTIMP"
	case dnsmessage.RCodeRefused:
		return "REFUSED"
	}
	return "rcode " + strconv.Itoa(int(c))
}

// dialIn dials address from the network namespace at nsPath ("" for the calling process's). The
// socket is created on a thread switched into that namespace and stays bound to it; the thread is
// never handed back to other goroutines (its goroutine ends locked, and Go then ends the thread).
func dialIn(ctx context.Context, nsPath, network, address string) (net.Conn, error) {
	var d net.Dialer
	if nsPath == "" {
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			return nil, netError(err)
		}
		return c, nil
	}
	type dialed struct {
		conn net.Conn
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		ns, err := netns.GetFromPath(nsPath)
		if err != nil {
			done <- dialed{err: errors.New("cannot open the network namespace")}
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			done <- dialed{err: errors.New("cannot enter the network namespace")}
			return
		}
		c, err := d.DialContext(ctx, network, address)
		if err != nil {
			err = netError(err)
		}
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
		return nil, netError(ctx.Err())
	}
}

// netError says what went wrong in a few fixed words, so that a condition's message only changes
// when the failure does (and carries no text from the network).
func netError(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return errors.New("timed out")
	case errors.Is(err, context.Canceled):
		return errors.New("canceled")
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return errors.New("no route")
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return errors.New("not permitted")
	}
	return errors.New("failed")
}

// connectivityChecks builds the checks of the targets o names, and registers their metrics.
func connectivityChecks(o ConnectivityOptions, reg prometheus.Registerer) ([]health.Check, error) {
	if !o.Enabled() {
		return nil, nil
	}
	probes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vitals_agent_connectivity_probes_total",
		Help: "Pod network connectivity probes by kind of target (pod, service, dns) and result.",
	}, []string{"kind", "result"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vitals_agent_connectivity_target_up",
		Help: "1 when the last probe of a pod network connectivity target succeeded, else 0.",
	}, []string{"kind", "target"})
	for _, c := range []prometheus.Collector{probes, up} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register connectivity metrics: %w", err)
		}
	}
	server, _ := parseDNSServer(o.DNSServer)
	var list []health.Check
	add := func(name, kind string, targets []string) {
		if len(targets) == 0 {
			return
		}
		c := &connectivity{netns: o.Netns, kind: kind, targets: targets, server: server, probes: probes, up: up,
			probeTimeout: o.Timeout * 4 / 5}
		list = append(list, health.Check{
			Name:     name,
			Probes:   health.Liveness,
			Severity: health.Degraded, // the network's problem, not the agent's: never restart the agent
			Run:      c.run,
			Interval: o.Interval,
			Timeout:  o.Timeout,
			// Hysteresis: a lost packet does not flip the condition.
			FailureThreshold: 3,
			SuccessThreshold: 2,
		})
	}
	add(CheckConnectivityPod, "pod", o.Pods)
	add(CheckConnectivityService, "service", o.Services)
	add(CheckConnectivityDNS, "dns", o.DNSNames)
	return list, nil
}
