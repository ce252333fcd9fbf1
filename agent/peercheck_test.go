package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/netprobe"
)

func peerAt(i int) Peer {
	return Peer{Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 100, byte(i / 250), byte(i%250 + 1)}), 8091), Node: fmt.Sprintf("node-%d", i)}
}

// probesOf builds a pass: reached peers answer from the pod network, evidence ones only the node's
// address, unanswered ones neither, gone ones left the API during the pass.
func probesOf(reached, evidence, unanswered, gone int) []peerProbe {
	var out []peerProbe
	i := 0
	add := func(n int, pod, host error, isGone bool) {
		for range n {
			out = append(out, peerProbe{peer: peerAt(i), pod: pod, host: host, gone: isGone})
			i++
		}
	}
	add(reached, nil, nil, false)
	add(evidence, netprobe.TimedOut, nil, false)
	add(unanswered, netprobe.TimedOut, netprobe.NoRoute, false)
	add(gone, netprobe.TimedOut, netprobe.TimedOut, true)
	return out
}

// TestDecidePeers: the verdict rules. A node is judged cut off only on evidence it can prove: most
// of the ready peers answer its own address but not its pods. Stale or gone peers never make a
// verdict, and too few peers make none.
func TestDecidePeers(t *testing.T) {
	tests := []struct {
		name                          string
		reached, evidence, unans, gon int
		min                           int
		want                          peerOutcome
		reason                        string
		message                       string
	}{
		{name: "every peer answers", reached: 10, min: 3, want: peersReached},
		{name: "a few peers down: their nodes' problem", reached: 7, evidence: 1, unans: 2, min: 3, want: peersReached},
		{name: "a bare majority answers", reached: 6, evidence: 5, min: 3, want: peersReached},
		{name: "half is not a majority", reached: 5, evidence: 5, min: 3, want: peersUndecided, reason: ReasonPeersUnconfirmed},
		{name: "most answer the node but not its pods: cut off", reached: 1, evidence: 8, unans: 1, min: 3, want: peersCutOff,
			reason: "PodToPodFailing", message: "answer the node's own address but not its pods (timed out)"},
		{name: "every peer answers the node only", evidence: 3, min: 3, want: peersCutOff, reason: "PodToPodFailing"},
		{name: "stale endpoints: nothing answers either address, no verdict", unans: 10, min: 3, want: peersUndecided,
			reason: ReasonPeersUnconfirmed, message: "10 neither"},
		{name: "a zone gone at once: most answer neither", reached: 3, evidence: 1, unans: 6, min: 3, want: peersUndecided, reason: ReasonPeersUnconfirmed},
		{name: "peers that left the API during the pass do not count", reached: 2, gon: 8, min: 3, want: peersUndecided,
			reason: ReasonTooFewPeers, message: "2 sampled peers stayed ready"},
		{name: "gone peers are not evidence", evidence: 2, gon: 8, min: 3, want: peersUndecided, reason: ReasonTooFewPeers},
		{name: "what stays counts", reached: 3, gon: 7, min: 3, want: peersReached},
		{name: "the minimum is a floor for a cut-off too", evidence: 2, min: 3, want: peersUndecided, reason: ReasonTooFewPeers},
		{name: "a minimum of one trusts one peer", evidence: 1, min: 1, want: peersCutOff, reason: "PodToPodFailing"},
		{name: "nothing sampled", min: 1, want: peersUndecided, reason: ReasonTooFewPeers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := decidePeers(probesOf(tt.reached, tt.evidence, tt.unans, tt.gon), tt.min)
			if v.outcome != tt.want || v.reason != tt.reason || !strings.Contains(v.message, tt.message) {
				t.Fatalf("decidePeers = %+v, want outcome %d reason %q message containing %q", v, tt.want, tt.reason, tt.message)
			}
			if v.reached != tt.reached || v.evidence != tt.evidence || v.unanswered != tt.unans || v.gone != tt.gon {
				t.Errorf("counts = %+v", v)
			}
		})
	}
}

// TestDecidePeersMessageIsStable: the message of a cut-off node names the failures' words only, so
// that the condition is not rewritten every pass as the sample rotates.
func TestDecidePeersMessageIsStable(t *testing.T) {
	a := probesOf(0, 5, 0, 0)
	b := probesOf(0, 7, 1, 0)
	b[0].pod = netprobe.Refused
	c := probesOf(0, 7, 1, 0)
	c[3].pod = netprobe.Refused
	if m1, m2 := decidePeers(b, 3).message, decidePeers(c, 3).message; m1 != m2 || !strings.Contains(m1, "(connection refused, timed out)") {
		t.Errorf("messages %q and %q", m1, m2)
	}
	if m := decidePeers(a, 3).message; strings.Contains(m, "10.100") {
		t.Errorf("message names addresses: %q", m)
	}
}

// TestRotation: a pass probes at most the sample; in ceil(n/k) passes every peer is probed once;
// agents with other seeds walk other orders; with no more peers than the sample, all are probed.
func TestRotation(t *testing.T) {
	var peers []Peer
	for i := range 25 {
		peers = append(peers, peerAt(i))
	}
	tests := []struct {
		name   string
		peers  []Peer
		k      int
		passes int
	}{
		{"all fit", peers[:5], 10, 3},
		{"exactly the sample", peers[:10], 10, 2},
		{"a round of three passes", peers, 10, 3},
		{"one at a time", peers[:7], 1, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rotation{seed: 42}
			seen := map[netip.AddrPort]int{}
			for range tt.passes {
				got := r.next(tt.peers, tt.k)
				if len(got) != min(tt.k, len(tt.peers)) {
					t.Fatalf("sample of %d, want %d", len(got), min(tt.k, len(tt.peers)))
				}
				for _, p := range got {
					seen[p.Addr]++
				}
			}
			for _, p := range tt.peers {
				if seen[p.Addr] == 0 {
					t.Errorf("%s never probed in %d passes", p.Addr, tt.passes)
				}
			}
			if tt.k < len(tt.peers) && tt.passes*tt.k <= len(tt.peers) {
				for a, n := range seen {
					if n > 1 {
						t.Errorf("%s probed %d times within one round", a, n)
					}
				}
			}
		})
	}
	a, b := rotation{seed: 1}, rotation{seed: 2}
	if slices.Equal(a.next(peers, 5), b.next(peers, 5)) {
		t.Error("two seeds chose the same first sample")
	}
	c, d := rotation{seed: 7}, rotation{seed: 7}
	if !slices.Equal(c.next(peers, 5), d.next(peers, 5)) {
		t.Error("one seed chose two samples")
	}
}

func slice(name string, typ discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vitals",
		Labels: map[string]string{discoveryv1.LabelServiceName: "canary"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		AddressType: typ, Ports: ports, Endpoints: eps}
}

func probePort(name string, port int32) discoveryv1.EndpointPort {
	p := discoveryv1.EndpointPort{Port: &port, Protocol: new(corev1.ProtocolTCP)}
	if name != "" {
		p.Name = &name
	}
	return p
}

// endpoint is an endpoint on node; ready and terminating nil leave the condition unset.
func endpoint(addr, node string, ready, terminating *bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready, Terminating: terminating},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "canary-x"}}
	if node != "" {
		e.NodeName = &node
	}
	return e
}

// TestPeerIndexPeers: which endpoints are peers. Only ready endpoints of other nodes, at the
// canary's port; this node's and its canary's address never.
func TestPeerIndexPeers(t *testing.T) {
	yes, no := new(true), new(false)
	named := []discoveryv1.EndpointPort{probePort("metrics", 9090), probePort(PeerPortName, 8091)}
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		self   string
		want   []string
	}{
		{"ready endpoints of other nodes", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4, named,
			endpoint("10.1.0.5", "n2", yes, nil), endpoint("10.1.0.4", "n3", yes, no))}, "", []string{"10.1.0.4:8091", "10.1.0.5:8091"}},
		{"not ready, terminating and this node's are left out", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4, named,
			endpoint("10.1.0.5", "n2", no, nil), endpoint("10.1.0.6", "n3", yes, yes), endpoint("10.1.0.7", "n1", yes, nil),
			endpoint("10.1.0.8", "n4", yes, nil))}, "", []string{"10.1.0.8:8091"}},
		{"a nil ready condition is ready, as the API says", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4, named,
			endpoint("10.1.0.5", "n2", nil, nil))}, "", []string{"10.1.0.5:8091"}},
		{"this node's canary by address when the node is not named", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4, named,
			endpoint("10.1.0.5", "", yes, nil), endpoint("10.1.0.9", "", yes, nil))}, "10.1.0.5", []string{"10.1.0.9:8091"}},
		{"the only TCP port without a name", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv6,
			[]discoveryv1.EndpointPort{probePort("", 8091)}, endpoint("fd00::5", "n2", yes, nil))}, "", []string{"[fd00::5]:8091"}},
		{"two ports, none named probe: which one is unknown", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4,
			[]discoveryv1.EndpointPort{probePort("a", 1), probePort("b", 2)}, endpoint("10.1.0.5", "n2", yes, nil))}, "", nil},
		{"FQDN slices are not addresses", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeFQDN, named,
			endpoint("canary.example", "n2", yes, nil))}, "", nil},
		{"an address in two slices is one peer", []*discoveryv1.EndpointSlice{
			slice("a", discoveryv1.AddressTypeIPv4, named, endpoint("10.1.0.5", "n2", yes, nil)),
			slice("b", discoveryv1.AddressTypeIPv4, named, endpoint("10.1.0.5", "n2", yes, nil), endpoint("10.1.0.3", "n3", yes, nil))},
			"", []string{"10.1.0.3:8091", "10.1.0.5:8091"}},
		{"a malformed address is skipped", []*discoveryv1.EndpointSlice{slice("a", discoveryv1.AddressTypeIPv4, named,
			endpoint("10.1.0", "n2", yes, nil))}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &PeerIndex{store: cache.NewStore(cache.MetaNamespaceKeyFunc), node: "n1"}
			for _, s := range tt.slices {
				obj, _ := stripEndpointSlice(s)
				if err := p.store.Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			var self netip.Addr
			if tt.self != "" {
				self = netip.MustParseAddr(tt.self)
			}
			var got []string
			for _, peer := range p.Peers(self) {
				got = append(got, peer.Addr.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Peers = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStripEndpointSlice keeps what Peers reads and nothing else.
func TestStripEndpointSlice(t *testing.T) {
	s := slice("a", discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{probePort(PeerPortName, 8091)},
		discoveryv1.Endpoint{Addresses: []string{"10.1.0.5", "10.1.0.6"}, NodeName: new("n2"), Hostname: new("h"),
			Zone: new("z"), Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "p"}})
	s.Annotations = map[string]string{"a": strings.Repeat("x", 1000)}
	obj, _ := stripEndpointSlice(s)
	got := obj.(*discoveryv1.EndpointSlice)
	ep := got.Endpoints[0]
	if len(got.Labels) != 0 || len(got.Annotations) != 0 || len(got.ManagedFields) != 0 || len(ep.Addresses) != 1 || ep.TargetRef != nil ||
		ep.Hostname != nil || ep.Zone != nil || ep.Conditions.Serving != nil || *ep.NodeName != "n2" || !*ep.Conditions.Ready || got.Name != "a" {
		t.Errorf("stripped slice keeps %+v", got)
	}
}

// fakePeers is a peerSource whose peers can change while a pass runs (after the pod probes).
type fakePeers struct {
	mu     sync.Mutex
	synced bool
	err    error
	peers  []Peer
	after  []Peer // from the second call of Peers on, when set
	calls  int
}

func (f *fakePeers) HasSynced() bool { return f.synced }
func (f *fakePeers) Err() error      { return f.err }
func (f *fakePeers) Peers(netip.Addr) []Peer {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls > 1 && f.after != nil {
		return slices.Clone(f.after)
	}
	return slices.Clone(f.peers)
}

// fakeProber answers each TCP target with the error set for it (nil: success), or err for the call.
type fakeProber struct {
	results map[string]error
	err     error
	asked   [][]netprobe.Probe
}

func (f *fakeProber) probe(_ context.Context, probes []netprobe.Probe) ([]error, error) {
	f.asked = append(f.asked, probes)
	if f.err != nil {
		return nil, f.err
	}
	out := make([]error, len(probes))
	for i, p := range probes {
		out[i] = f.results[p.TCP]
	}
	return out, nil
}

// fakeDialer succeeds for addresses in ok, else answers with a timeout.
type fakeDialer struct {
	mu    sync.Mutex
	ok    map[string]bool
	asked []string
}

func (f *fakeDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, address)
	if f.ok[address] {
		a, b := net.Pipe()
		_ = b.Close()
		return a, nil
	}
	return nil, netprobe.TimedOut
}

// TestPeerCheckPass runs passes of the check with fake peers, canary and host path.
func TestPeerCheckPass(t *testing.T) {
	var peers []Peer
	for i := range 6 {
		peers = append(peers, peerAt(i))
	}
	addrs := func(ps []Peer) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Addr.String())
		}
		return out
	}
	all := func(err error) map[string]error {
		m := map[string]error{}
		for _, a := range addrs(peers) {
			m[a] = err
		}
		return m
	}
	allOK := map[string]bool{}
	for _, a := range addrs(peers) {
		allOK[a] = true
	}
	tests := []struct {
		name     string
		source   *fakePeers
		pod      *fakeProber
		host     map[string]bool
		wantErr  string // "" passes
		reason   string // undecided reason, "" decided
		hostAsks int
	}{
		{name: "not listed yet", source: &fakePeers{}, pod: &fakeProber{}, reason: ReasonTooFewPeers},
		{name: "the list is forbidden", source: &fakePeers{err: errors.New("forbidden (x)")}, pod: &fakeProber{}, reason: ReasonPeerDiscoveryFailing},
		{name: "too few known", source: &fakePeers{synced: true, peers: peers[:2]}, pod: &fakeProber{}, reason: ReasonTooFewPeers},
		{name: "no canary", source: &fakePeers{synced: true, peers: peers}, pod: &fakeProber{err: netprobe.NoCanary}, reason: ReasonNoCanary},
		{name: "every peer answers: the node's address is not asked", source: &fakePeers{synced: true, peers: peers},
			pod: &fakeProber{results: all(nil)}, host: allOK},
		{name: "pods cut off, the node reaches the peers", source: &fakePeers{synced: true, peers: peers},
			pod: &fakeProber{results: all(netprobe.TimedOut)}, host: allOK, wantErr: "not its pods (timed out)", hostAsks: 6},
		{name: "peers stale: neither answers", source: &fakePeers{synced: true, peers: peers},
			pod: &fakeProber{results: all(netprobe.TimedOut)}, host: map[string]bool{}, reason: ReasonPeersUnconfirmed, hostAsks: 6},
		{name: "peers deleted during the pass", source: &fakePeers{synced: true, peers: peers, after: peers[4:]},
			pod: &fakeProber{results: all(netprobe.TimedOut)}, host: allOK, reason: ReasonTooFewPeers, hostAsks: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			set, err := connectivityChecks(ConnectivityOptions{PeerService: "vitals/canary", Netns: "/x", PeerSample: 10, PeerMin: 3,
				Interval: 10 * time.Second, Timeout: time.Second}, reg, connectivitySources{peers: tt.source})
			if err != nil {
				t.Fatal(err)
			}
			if len(set.checks) != 1 || set.checks[0].Name != CheckConnectivityPeers || set.checks[0].Severity != health.Degraded {
				t.Fatalf("checks = %+v", set.checks)
			}
			// The same check, with the fakes for its pod and host paths.
			hd := &fakeDialer{ok: tt.host}
			pc := &peerCheck{source: tt.source, pod: tt.pod, host: hd, sample: 10, min: 3, probeTimeout: time.Second,
				state: set.states[CheckConnectivityPeers], log: slog.New(slog.DiscardHandler),
				metrics: peerMetrics{probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "p"}, []string{"kind", "result"}),
					peers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g"}, []string{"state"})}}
			err = pc.run(context.Background())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("run = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("run = %v, want %q", err, tt.wantErr)
			}
			reason, msg, undecided := set.undecided(CheckConnectivityPeers)
			if reason != tt.reason || undecided != (tt.reason != "") {
				t.Errorf("undecided = %q %q %v, want %q", reason, msg, undecided, tt.reason)
			}
			if len(hd.asked) != tt.hostAsks {
				t.Errorf("the node's own address was asked about %d peers, want %d", len(hd.asked), tt.hostAsks)
			}
		})
	}
}

// TestConnectivityConditionUndecided: a check without a verdict makes the condition Unknown with its
// reason, unless another one fails.
func TestConnectivityConditionUndecided(t *testing.T) {
	spec := ConnectivityConditionSpec(ConnectivityOptions{Interval: 10 * time.Second})
	state := &verdictState{}
	set := &connectivitySet{states: map[string]*verdictState{CheckConnectivityPeers: state}}
	spec.Undecided = set.undecided
	now := time.Now()
	peersOK := okResult(CheckConnectivityPeers)
	tests := []struct {
		name      string
		undecided bool
		results   []health.Result
		status    corev1.ConditionStatus
		reason    string
	}{
		{"decided and passing", false, []health.Result{peersOK}, corev1.ConditionTrue, "PodNetworkReachable"},
		{"no verdict", true, []health.Result{peersOK}, corev1.ConditionUnknown, ReasonTooFewPeers},
		{"a failing check beats no verdict", true, []health.Result{peersOK, failResult(CheckConnectivityDNS, "timed out")}, corev1.ConditionFalse, "ClusterDNSFailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state.decided()
			if tt.undecided {
				state.undecided(ReasonTooFewPeers, "1 ready peers on other nodes are known, 3 needed for a verdict")
			}
			for i := range tt.results {
				tt.results[i].Severity = health.Degraded
			}
			c := Desired([]ConditionSpec{spec}, tt.results, nil, now)[0]
			if c.Status != tt.status || c.Reason != tt.reason {
				t.Fatalf("condition = %+v", c)
			}
			if tt.status == corev1.ConditionUnknown && !strings.Contains(c.Message, "no verdict: pod-network-peers: 1 ready peers") {
				t.Errorf("message %q", c.Message)
			}
		})
	}
}
