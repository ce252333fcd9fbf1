package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vishvananda/netns"
	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// The test pod network: the probing pod's namespace and a peer namespace that plays the pod on another
// node, the Service ClusterIPs and the cluster DNS, joined by a veth pair. None of these addresses is
// reachable from the test's own namespace.
const (
	tnPod      = "198.18.1.2"
	tnPeer     = "198.18.1.3"
	tnService  = "198.19.0.1"
	tnDNS      = "198.19.0.10"
	tnHostile  = "evil-name.attacker.example."
	tnCNAME    = "cname-only.example."
	tnServFail = "servfail.example."
)

var netnsSeq atomic.Int64

type podNetwork struct {
	pod, peer         string // namespace names
	podPath, peerPath string
	// from holds the source address of the last connection the peer accepted.
	from *atomic.Value
}

func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		prereq.Missing(t, "needs the ip command (iproute2)")
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newPodNetwork builds the two namespaces and starts the responders in the peer: TCP on
// tnPeer:8080 (a pod) and tnService:443 (a Service), DNS on tnDNS:53.
func newPodNetwork(t *testing.T) podNetwork {
	t.Helper()
	requireNetns(t)
	n := netnsSeq.Add(1)
	pn := podNetwork{pod: fmt.Sprintf("vt-pod-%d-%d", os.Getpid(), n), peer: fmt.Sprintf("vt-peer-%d-%d", os.Getpid(), n)}
	for _, ns := range []string{pn.pod, pn.peer} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	pn.from = &atomic.Value{}
	pn.podPath, pn.peerPath = filepath.Join("/var/run/netns", pn.pod), filepath.Join("/var/run/netns", pn.peer)
	ipCmd(t, "-n", pn.pod, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", pn.peer)
	ipCmd(t, "-n", pn.pod, "addr", "add", tnPod+"/24", "dev", "eth0")
	ipCmd(t, "-n", pn.peer, "addr", "add", tnPeer+"/24", "dev", "eth0")
	ipCmd(t, "-n", pn.peer, "addr", "add", tnService+"/32", "dev", "lo")
	ipCmd(t, "-n", pn.peer, "addr", "add", tnDNS+"/32", "dev", "lo")
	ipCmd(t, "-n", pn.pod, "link", "set", "eth0", "up")
	ipCmd(t, "-n", pn.peer, "link", "set", "eth0", "up")
	ipCmd(t, "-n", pn.pod, "route", "add", "198.19.0.0/16", "via", tnPeer)

	for _, addr := range []string{tnPeer + ":8080", tnService + ":443"} {
		l := inNetns(t, pn.peerPath, func() (net.Listener, error) { return net.Listen("tcp", addr) })
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				pn.from.Store(c.RemoteAddr().(*net.TCPAddr).IP.String())
				c.Close()
			}
		}()
	}
	pc := inNetns(t, pn.peerPath, func() (net.PacketConn, error) { return net.ListenPacket("udp", tnDNS+":53") })
	t.Cleanup(func() { pc.Close() })
	go serveDNS(pc)
	return pn
}

// inNetns runs open on a thread in the namespace at path (the socket it makes stays there).
func inNetns[T any](t *testing.T, path string, open func() (T, error)) T {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := netns.GetFromPath(path)
		if err == nil {
			defer ns.Close()
			err = netns.Set(ns)
		}
		if err != nil {
			done <- result{err: err}
			return
		}
		v, err := open()
		done <- result{v, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("open a socket in %s: %v", path, r.err)
	}
	return r.v
}

// serveDNS answers kubernetes.default.svc.cluster.local with an A record, tnCNAME with a CNAME to a
// hostile name and no address, tnServFail with SERVFAIL, anything else with NXDOMAIN.
func serveDNS(pc net.PacketConn) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var q dnsmessage.Message
		if q.Unpack(buf[:n]) != nil || len(q.Questions) != 1 {
			continue
		}
		qq := q.Questions[0]
		r := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, RCode: dnsmessage.RCodeNameError}, Questions: q.Questions}
		switch qq.Name.String() {
		case "kubernetes.default.svc.cluster.local.":
			r.RCode = dnsmessage.RCodeSuccess
			if qq.Type == dnsmessage.TypeA {
				r.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
					Body: &dnsmessage.AResource{A: [4]byte{198, 19, 0, 1}}}}
			}
		case tnCNAME:
			r.RCode = dnsmessage.RCodeSuccess
			r.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: dnsmessage.TypeCNAME, Class: dnsmessage.ClassINET, TTL: 5},
				Body: &dnsmessage.CNAMEResource{CNAME: dnsmessage.MustNewName(tnHostile)}}}
		case tnServFail:
			r.RCode = dnsmessage.RCodeServerFailure
		}
		if out, err := r.Pack(); err == nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

// TestConnectivityInNetworkNamespaces probes from a real network namespace to responders in another:
// each case breaks the network in its own way and names what each check says.
func TestConnectivityInNetworkNamespaces(t *testing.T) {
	requireNetns(t)
	const ok = ""
	tests := []struct {
		name     string
		opts     func(pn podNetwork) ConnectivityOptions
		breakNet func(t *testing.T, pn podNetwork)
		// want: per check, "" when it passes, else a part of its error.
		want map[string]string
	}{
		{
			name: "everything answers from the pod network",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":8080"}, Services: []string{tnService + ":443"},
					DNSServer: tnDNS, DNSNames: []string{"kubernetes.default.svc.cluster.local"}}
			},
			want: map[string]string{CheckConnectivityPod: ok, CheckConnectivityService: ok, CheckConnectivityDNS: ok},
		},
		{
			name: "replies dropped on the way back (a missed security group update)",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":8080"}, Services: []string{tnService + ":443"},
					DNSServer: tnDNS, DNSNames: []string{"kubernetes.default.svc.cluster.local"}}
			},
			breakNet: func(t *testing.T, pn podNetwork) { ipCmd(t, "-n", pn.peer, "route", "add", "blackhole", tnPod+"/32") },
			want: map[string]string{
				CheckConnectivityPod:     tnPeer + ":8080: timed out",
				CheckConnectivityService: tnService + ":443: timed out",
				CheckConnectivityDNS:     "kubernetes.default.svc.cluster.local: timed out",
			},
		},
		{
			name: "no route to the Service range",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":8080"}, Services: []string{tnService + ":443"}}
			},
			breakNet: func(t *testing.T, pn podNetwork) { ipCmd(t, "-n", pn.pod, "route", "del", "198.19.0.0/16") },
			want:     map[string]string{CheckConnectivityPod: ok, CheckConnectivityService: tnService + ":443: no route"},
		},
		{
			name: "nothing listens on the pod's port",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":9999"}}
			},
			want: map[string]string{CheckConnectivityPod: tnPeer + ":9999: connection refused"},
		},
		{
			name: "one pod of two answers: the other one's node is the suspect, not this one",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":9999", tnPeer + ":8080"}}
			},
			want: map[string]string{CheckConnectivityPod: ok},
		},
		{
			name: "DNS answers NXDOMAIN and SERVFAIL",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, DNSServer: tnDNS + ":53", DNSNames: []string{"missing.default.svc.cluster.local", tnServFail}}
			},
			want: map[string]string{CheckConnectivityDNS: "missing.default.svc.cluster.local: the server answered NXDOMAIN; servfail.example.: the server answered SERVFAIL"},
		},
		{
			name: "an answer without an address: the server's names never reach the message",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: pn.podPath, DNSServer: tnDNS, DNSNames: []string{tnCNAME}}
			},
			want: map[string]string{CheckConnectivityDNS: tnCNAME + ": no address in the answer"},
		},
		{
			name: "a namespace that does not exist",
			opts: func(pn podNetwork) ConnectivityOptions {
				return ConnectivityOptions{Netns: "/var/run/netns/vitals-absent", Pods: []string{tnPeer + ":8080"}}
			},
			want: map[string]string{CheckConnectivityPod: tnPeer + ":8080: cannot open the network namespace"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pn := newPodNetwork(t)
			if tt.breakNet != nil {
				tt.breakNet(t, pn)
			}
			o := tt.opts(pn)
			o.Interval, o.Timeout = 10*time.Second, 2*time.Second
			if bad := o.validate(); len(bad) > 0 {
				t.Fatalf("options: %v", bad)
			}
			reg := prometheus.NewRegistry()
			set, err := connectivityChecks(o, reg, connectivitySources{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range set.checks {
				if c.Probes != health.Liveness || c.Severity != health.Degraded {
					t.Errorf("%s: probes %v severity %v: it must never fail a probe", c.Name, c.Probes, c.Severity)
				}
				ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
				err := c.Run(ctx)
				cancel()
				got[c.Name] = ok
				if err != nil {
					got[c.Name] = err.Error()
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("checks = %v, want %v", got, tt.want)
			}
			for name, want := range tt.want {
				g, present := got[name]
				switch {
				case !present:
					t.Errorf("%s: not registered", name)
				case want == ok && g != ok:
					t.Errorf("%s failed: %s", name, g)
				case want != ok && (g == ok || !strings.Contains(g, want)):
					t.Errorf("%s = %q, want it to contain %q", name, g, want)
				}
				if strings.Contains(g, "evil") || strings.Contains(g, "attacker") {
					t.Errorf("%s carries the DNS server's text: %q", name, g)
				}
			}
			if want, ok := tt.want[CheckConnectivityPod]; ok && want == "" && o.Netns == pn.podPath {
				waitFor(t, "the peer to see a connection from the pod's address "+tnPod, func() bool {
					from, _ := pn.from.Load().(string)
					return from == tnPod
				})
			}
			// Every target has its gauge.
			ups := gaugeValues(t, reg, "vitals_agent_connectivity_target_up")
			if n := len(o.Pods) + len(o.Services) + len(o.DNSNames); len(ups) != n {
				t.Errorf("target gauges = %v, want %d", ups, n)
			}
		})
	}
}

func gaugeValues(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labelString(m.GetLabel())] = m.GetGauge().GetValue()
		}
	}
	return out
}

func labelString(ls []*dto.LabelPair) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

func TestConnectivityOptionsValidate(t *testing.T) {
	base := func() Options {
		o := DefaultOptions()
		o.NodeName = "n1"
		return o
	}
	tests := []struct {
		name string
		set  func(o *ConnectivityOptions)
		want string // "" valid
	}{
		{"off by default", func(*ConnectivityOptions) {}, ""},
		{"targets", func(c *ConnectivityOptions) {
			c.Pods, c.Services, c.DNSServer, c.DNSNames = []string{"10.100.1.7:8080", "[fd00::7]:8080"}, []string{"10.96.0.1:443"}, "10.96.0.10", []string{"kubernetes.default.svc.cluster.local."}
		}, ""},
		{"a name as a pod target", func(c *ConnectivityOptions) { c.Pods = []string{"web.default:80"} }, `connectivity-pod: expected ip:port`},
		{"no port", func(c *ConnectivityOptions) { c.Services = []string{"10.96.0.1"} }, `connectivity-service: expected ip:port`},
		{"names without a server", func(c *ConnectivityOptions) { c.DNSNames = []string{"kubernetes.default"} }, "connectivity-dns-server: required"},
		{"a bad server", func(c *ConnectivityOptions) { c.DNSServer, c.DNSNames = "kube-dns", []string{"a.b"} }, "connectivity-dns-server: expected an IP address"},
		{"a bad name", func(c *ConnectivityOptions) { c.DNSServer, c.DNSNames = "10.96.0.10", []string{"a..b"} }, "connectivity-dns-name: expected a DNS name"},
		{"relative netns", func(c *ConnectivityOptions) { c.Netns = "probe" }, "connectivity-netns: expected an absolute path"},
		{"timeout over interval", func(c *ConnectivityOptions) { c.Interval, c.Timeout = time.Second, 2*time.Second }, "connectivity-timeout: expected a positive duration no longer than the interval"},
		{"peers through the canary", func(c *ConnectivityOptions) {
			c.Canary, c.PeerService = "/run/vitals/canary/canary.sock", "vitals/vitals-agent-canary"
		}, ""},
		{"peers from a namespace", func(c *ConnectivityOptions) { c.Netns, c.PeerService = "/var/run/netns/probe", "vitals/canary" }, ""},
		{"peers from the node's own address", func(c *ConnectivityOptions) { c.PeerService = "vitals/canary" },
			"connectivity-peers-service: needs --connectivity-canary-socket"},
		{"a service without its namespace", func(c *ConnectivityOptions) { c.Canary, c.PeerService = "/run/c.sock", "canary" },
			"connectivity-peers-service: expected namespace/name"},
		{"a service name that is no name", func(c *ConnectivityOptions) { c.Canary, c.PeerService = "/run/c.sock", "vitals/Canary_1" },
			"connectivity-peers-service: expected namespace/name"},
		{"a relative canary socket", func(c *ConnectivityOptions) { c.Canary = "canary.sock" }, "connectivity-canary-socket: expected an absolute path"},
		{"a loose canary socket", func(c *ConnectivityOptions) { c.Canary, c.CanaryMode = "/run/c.sock", 0o666 }, "connectivity-canary-socket-mode: expected 0600 or 0660"},
		{"a sample over the canary's limit", func(c *ConnectivityOptions) {
			c.Canary, c.PeerService, c.PeerSample = "/run/c.sock", "vitals/canary", MaxPeerSample+1
		}, "connectivity-peers-sample: expected 1 to 256"},
		{"a minimum over the sample", func(c *ConnectivityOptions) {
			c.Canary, c.PeerService, c.PeerSample, c.PeerMin = "/run/c.sock", "vitals/canary", 5, 6
		}, "connectivity-peers-min: expected 1 to the sample (5), got 6"},
		{"too many targets", func(c *ConnectivityOptions) {
			for i := range MaxConnectivityTargets + 1 {
				c.Pods = append(c.Pods, fmt.Sprintf("10.0.0.%d:80", i+1))
			}
		}, "connectivity-pod: expected at most 16 targets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.set(&o.Connectivity)
			err := o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestConnectivityConditionAgainstKubeAPIServer runs the whole agent with the check probing from a
// real namespace: broken replies turn PodNetworkConnectivity False on the real Node, and the agent's
// liveness holds (the network's fault is not the agent's).
func TestConnectivityConditionAgainstKubeAPIServer(t *testing.T) {
	requireNetns(t)
	c := kubeClient(t)
	node := uniqueName("agent-connectivity")
	createNode(t, c, node)
	pn := newPodNetwork(t)

	_, base, _ := startAgent(t, node, func(o *Options) {
		o.Connectivity = ConnectivityOptions{Netns: pn.podPath, Pods: []string{tnPeer + ":8080"}, Services: []string{tnService + ":443"},
			DNSServer: tnDNS, DNSNames: []string{"kubernetes.default.svc.cluster.local"},
			Interval: time.Second, Timeout: 500 * time.Millisecond}
	})
	cond := waitCondition(t, c, node, ConditionPodNetworkConnectivity, corev1.ConditionTrue)
	if cond.Reason != "PodNetworkReachable" {
		t.Errorf("PodNetworkConnectivity = %+v", cond)
	}
	ipCmd(t, "-n", pn.peer, "route", "add", "blackhole", tnPod+"/32")
	waitFor(t, "PodNetworkConnectivity False for pod-to-pod", func() bool {
		cond, _ = nodeCondition(t, c, node, ConditionPodNetworkConnectivity)
		return cond.Status == corev1.ConditionFalse && cond.Reason == "PodToPodFailing"
	})
	if !strings.Contains(cond.Message, "no pod on another node answers: "+CheckConnectivityPod+": "+tnPeer+":8080: timed out") {
		t.Errorf("PodNetworkConnectivity = %+v", cond)
	}
	if code, body := httpGet(t, base+"/alive"); code != http.StatusOK {
		t.Errorf("/alive = %d while only the pod network fails:\n%s", code, body)
	}
	if code, _ := httpGet(t, base+"/livez/"+CheckConnectivityPod); code != http.StatusInternalServerError {
		t.Errorf("/livez/%s = %d, want 500", CheckConnectivityPod, code)
	}
	ipCmd(t, "-n", pn.peer, "route", "del", "blackhole", tnPod+"/32")
	waitCondition(t, c, node, ConditionPodNetworkConnectivity, corev1.ConditionTrue)
	if _, body := httpGet(t, base+"/metrics"); !strings.Contains(body, `vitals_agent_connectivity_probes_total{kind="pod",result="failure"}`) {
		t.Errorf("metrics lack the probe counter:\n%s", grepLines(body, "connectivity"))
	}
}
