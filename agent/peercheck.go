package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vitalsproject/vitals/netprobe"
)

// CheckConnectivityPeers is the check of the peers discovered through the API: the canaries of other
// nodes, probed from this node's pod network.
const CheckConnectivityPeers = "pod-network-peers"

// Peer check defaults and bounds.
const (
	DefaultPeerSample = 10
	DefaultPeerMin    = 3
	// MaxPeerSample bounds the peers probed per pass (the canary's limit of probes per request).
	MaxPeerSample = 256
)

// Reasons of the peer check's verdicts, beside the condition's PodNetworkReachable and
// PodToPodFailing.
const (
	// ReasonTooFewPeers: fewer ready peers on other nodes than the minimum are known (or stayed ready
	// through the pass): no verdict.
	ReasonTooFewPeers = "TooFewPeers"
	// ReasonNoCanary: this node's canary is not linked, or did not answer: nothing was probed from the
	// pod network.
	ReasonNoCanary = "NoCanary"
	// ReasonPeerDiscoveryFailing: the EndpointSlices cannot be listed.
	ReasonPeerDiscoveryFailing = "PeerDiscoveryFailing"
	// ReasonPeersUnconfirmed: no majority either way; in particular most peers answered neither the
	// pod network nor the node's own address (gone, or this node reaches no pod: one node cannot tell).
	ReasonPeersUnconfirmed = "PeersUnconfirmed"
)

// peerSource lists the ready peers (PeerIndex).
type peerSource interface {
	HasSynced() bool
	Err() error
	Peers(self netip.Addr) []Peer
}

// peerProbe is what one pass learnt of one sampled peer.
type peerProbe struct {
	peer Peer
	// pod is the result from the pod network (the canary); host from the node's own address, probed
	// only when pod failed (nil otherwise).
	pod, host error
	// gone: the peer was no longer a ready peer by the end of the pass (deleted, not ready,
	// terminating): it says nothing about this node.
	gone bool
}

// peerOutcome is the verdict of one pass.
type peerOutcome int

const (
	peersUndecided peerOutcome = iota // no verdict: the condition says Unknown, the check passes
	peersReached                      // this node's pods reach most ready peers
	peersCutOff                       // most ready peers answer this node but not its pods
)

// peerVerdict is the verdict of one pass and what it rests on.
type peerVerdict struct {
	outcome peerOutcome
	reason  string
	message string
	// n: sampled peers still ready at the end; reached: answered from the pod network; evidence:
	// answered the node's address but not its pods; unanswered: answered neither; gone: no longer
	// ready.
	n, reached, evidence, unanswered, gone int
}

// decidePeers judges one pass. What one node can prove about its own pod network:
//
//   - only peers the API still lists as ready at the end of the pass count: a peer deleted, gone
//     NotReady or terminating meanwhile is nobody's evidence;
//   - with fewer than minPeers of them, there is no verdict;
//   - when most of them answer from the pod network, the pod network works (the few that did not are
//     more likely their own nodes' problem: each of them is one peer among many for every other node);
//   - when most of them answer the node's own address but not its pods, this node's pod traffic is
//     dropped (a missed security group update, a port without its PodCIDR in allowed_address_pairs,
//     a lost route back to the node's PodCIDR): the peers are alive and reachable from here, the pods
//     are not let through;
//   - otherwise there is no verdict: peers that answer neither may be gone behind the API's back
//     (stale EndpointSlices, a node that died moments ago), or this node may reach no pod at all; one
//     node cannot tell which, and stale targets must never turn every node False.
func decidePeers(probes []peerProbe, minPeers int) peerVerdict {
	var v peerVerdict
	var words []string
	for _, p := range probes {
		switch {
		case p.gone:
			v.gone++
		case p.pod == nil:
			v.reached++
		case p.host == nil:
			v.evidence++
			words = append(words, string(netprobe.Word(p.pod)))
		default:
			v.unanswered++
		}
	}
	v.n = v.reached + v.evidence + v.unanswered
	need := v.n/2 + 1
	switch {
	case v.n < minPeers:
		v.outcome, v.reason = peersUndecided, ReasonTooFewPeers
		v.message = fmt.Sprintf("%d sampled peers stayed ready through the pass, %d needed for a verdict", v.n, minPeers)
	case v.reached >= need:
		v.outcome = peersReached
	case v.evidence >= need:
		slices.Sort(words)
		v.outcome, v.reason = peersCutOff, "PodToPodFailing"
		// Counts and addresses change from pass to pass; the words only when the failure does.
		v.message = "most sampled ready peers answer the node's own address but not its pods (" +
			strings.Join(slices.Compact(words), ", ") + ")"
	default:
		v.outcome, v.reason = peersUndecided, ReasonPeersUnconfirmed
		v.message = fmt.Sprintf("no majority: of %d sampled ready peers %d answer from the pod network, %d only the node's own address, %d neither (gone, or this node reaches no pod)",
			v.n, v.reached, v.evidence, v.unanswered)
	}
	return v
}

// rotation chooses the peers of each pass: every agent walks its own order of the peers (by a hash of
// its seed, changed after each round), so that in k passes it probes k samples without repeats, and
// the agents of a cluster do not all probe the same peers at once.
type rotation struct {
	seed   uint64
	epoch  uint64
	offset int
}

// next returns at most k of peers (all of them when there are no more).
func (r *rotation) next(peers []Peer, k int) []Peer {
	if k >= len(peers) {
		return slices.Clone(peers)
	}
	type keyed struct {
		key uint64
		p   Peer
	}
	order := make([]keyed, len(peers))
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], r.seed)
	binary.LittleEndian.PutUint64(buf[8:], r.epoch)
	for i, p := range peers {
		h := fnv.New64a()
		_, _ = h.Write(buf[:])
		_, _ = h.Write([]byte(p.Addr.String()))
		order[i] = keyed{h.Sum64(), p}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].key < order[j].key })
	start := r.offset % len(order)
	out := make([]Peer, 0, k)
	for i := range k {
		out = append(out, order[(start+i)%len(order)].p)
	}
	r.offset = start + k
	if r.offset >= len(order) {
		r.epoch++
		r.offset = 0
	}
	return out
}

// peerMetrics are the peer check's metrics: the probe counter shared with the other kinds (kind
// "peer"), and the counts of the last pass (no per-peer series: peers come and go with their pods).
type peerMetrics struct {
	probes *prometheus.CounterVec
	peers  *prometheus.GaugeVec
}

// peerCheck probes a rotating sample of the ready peers from the pod network (the canary) and, for
// those that do not answer, from the node's own address, and judges with decidePeers.
type peerCheck struct {
	source peerSource
	// pod runs probes from the pod network; self is this node's canary's address, left out.
	pod  prober
	self func() netip.Addr
	// host dials from the node's own address (the agent's namespace).
	host         netprobe.Dialer
	sample, min  int
	rot          rotation
	probeTimeout time.Duration
	metrics      peerMetrics
	state        *verdictState
	log          *slog.Logger
}

// run is one pass. It fails only on the evidence decidePeers asks for; without a verdict it passes and
// says why in the condition (Unknown).
func (c *peerCheck) run(ctx context.Context) error {
	for _, state := range []string{"sampled", "reached", "pod_only_failed", "unanswered", "gone"} {
		c.metrics.peers.WithLabelValues(state).Set(0) // a pass without a verdict leaves none of the last
	}
	if !c.source.HasSynced() {
		if err := c.source.Err(); err != nil {
			c.state.undecided(ReasonPeerDiscoveryFailing, "cannot list the peers' EndpointSlices: "+err.Error())
		} else {
			c.state.undecided(ReasonTooFewPeers, "the peers' EndpointSlices are not listed yet")
		}
		return nil
	}
	var self netip.Addr
	if c.self != nil {
		self = c.self()
	}
	peers := c.source.Peers(self)
	c.metrics.peers.WithLabelValues("known").Set(float64(len(peers)))
	if len(peers) < c.min {
		c.state.undecided(ReasonTooFewPeers, fmt.Sprintf("%d ready peers on other nodes are known, %d needed for a verdict", len(peers), c.min))
		return nil
	}
	sample := c.rot.next(peers, c.sample)
	probes := make([]netprobe.Probe, len(sample))
	for i, p := range sample {
		probes[i] = netprobe.Probe{TCP: p.Addr.String()}
	}
	// Half the time for the pod network, the rest for the node's own address where it failed.
	start := time.Now()
	podCtx, cancel := context.WithTimeout(ctx, c.probeTimeout/2)
	errs, err := c.pod.probe(podCtx, probes)
	cancel()
	if err != nil {
		c.state.undecided(ReasonNoCanary, "nothing was probed from the pod network: "+netprobe.Word(err).Error())
		return nil
	}
	results := make([]peerProbe, len(sample))
	var failed []int
	for i, p := range sample {
		results[i] = peerProbe{peer: p, pod: errs[i]}
		r := "success"
		if errs[i] != nil {
			r = "failure"
			failed = append(failed, i)
		}
		c.metrics.probes.WithLabelValues("peer", r).Inc()
	}
	if len(failed) > 0 {
		hostCtx, cancel := context.WithTimeout(ctx, max(c.probeTimeout-time.Since(start), time.Millisecond))
		hp := make([]netprobe.Probe, len(failed))
		for j, i := range failed {
			hp[j] = probes[i]
		}
		herrs := netprobe.RunAll(hostCtx, c.host, hp)
		cancel()
		for j, i := range failed {
			results[i].host = herrs[j]
		}
	}
	// Peers that went away during the pass say nothing about this node.
	still := c.source.Peers(self)
	for i := range results {
		_, found := slices.BinarySearchFunc(still, results[i].peer.Addr, func(p Peer, a netip.AddrPort) int { return p.Addr.Compare(a) })
		results[i].gone = !found
	}
	v := decidePeers(results, c.min)
	for state, n := range map[string]int{"sampled": len(sample), "reached": v.reached, "pod_only_failed": v.evidence,
		"unanswered": v.unanswered, "gone": v.gone} {
		c.metrics.peers.WithLabelValues(state).Set(float64(n))
	}
	c.log.Debug("peer connectivity pass", "check", CheckConnectivityPeers, "known", len(peers), "sampled", len(sample),
		"reached", v.reached, "podOnlyFailed", v.evidence, "unanswered", v.unanswered, "gone", v.gone, "reason", v.reason)
	switch v.outcome {
	case peersReached:
		c.state.decided()
		return nil
	case peersCutOff:
		c.state.decided()
		return errors.New(v.message)
	}
	c.state.undecided(v.reason, v.message)
	return nil
}
