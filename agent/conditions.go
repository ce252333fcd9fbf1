package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/internal/base/backoff"
)

// Node condition types the agent sets.
const (
	// ConditionCNIHealthy is True when the node's CNI plumbing works: netlink answers and the CNI
	// configuration directory holds a loadable network configuration.
	ConditionCNIHealthy corev1.NodeConditionType = "CNIHealthy"
	// ConditionPodNetworkHealthy is True when pods get their network: the CNI ADD failure budget is not
	// exhausted.
	ConditionPodNetworkHealthy corev1.NodeConditionType = "PodNetworkHealthy"
	// ConditionPodNetworkConnectivity is True when, from the pod network, pods on other nodes, Services
	// and the cluster DNS answer (the connectivity check; written only when it has targets).
	ConditionPodNetworkConnectivity corev1.NodeConditionType = "PodNetworkConnectivity"
)

// maxConditionMessage bounds a condition's message (the API accepts more; people read less).
const maxConditionMessage = 1024

// ConditionSpec maps health results to one node condition. The condition is True when every result it
// covers passes, False when one fails (with that result's reason), Unknown while one has no result yet.
// A degraded result (one that never fails a probe) that fails is ignored, unless CountDegraded is set.
type ConditionSpec struct {
	Type corev1.NodeConditionType
	// Results are the names of the checks, components or budgets the condition covers.
	Results []string
	// OKReason and OKMessage describe the True state.
	OKReason, OKMessage string
	// FailReasons gives the reason per failing result; FailReason is the fallback.
	FailReasons map[string]string
	FailReason  string
	// FailMessages, per result, says what its failure means; it leads the message.
	FailMessages map[string]string
	// CountDegraded: a failing degraded result turns the condition False too (the condition is then
	// where that failure shows).
	CountDegraded bool
	// Optional: results that are not registered are left out (rather than keeping the condition
	// Unknown); a condition with none of its results registered is Unknown.
	Optional bool
	// MinChangeInterval: once the condition changed, a further change of its status, reason or message
	// waits this long (the heartbeat still refreshes it). Zero: changes are written at once.
	MinChangeInterval time.Duration
	// Undecided, when set, says why a passing result has no verdict (a check that found too little
	// to judge): while nothing fails, the condition is then Unknown with that reason, and the result's
	// name and message.
	Undecided func(result string) (reason, message string, ok bool)
}

// NodeClient reads a Node and patches its status (*Kube is one).
type NodeClient interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	PatchNodeStatus(ctx context.Context, name string, patch []byte) error
}

// NodeConditions keeps the node's conditions in line with the health results: it patches them when
// they change and refreshes lastHeartbeatTime every HeartbeatPeriod. It writes with a strategic merge
// patch of status.conditions (merged by type), so it never overwrites conditions that kubelet or
// others set, and needs no read-modify-write retry on conflicts. After a failed read or write it waits
// out a jittered exponential backoff (Backoff) before the next attempt.
type NodeConditions struct {
	Client   NodeClient
	NodeName string
	Specs    []ConditionSpec
	// Results returns the current health results (Manager.Results).
	Results func() []health.Result
	// Period between comparisons of the results with what was written; default 1s. Poke compares at once.
	Period time.Duration
	// HeartbeatPeriod between writes when nothing changes; default 1 minute.
	HeartbeatPeriod time.Duration
	// StartGrace: for this long after Run starts, conditions are not written while one of them would be
	// Unknown (checks without a first result), so that a restart does not flap them. Default 30s.
	StartGrace time.Duration
	// Heartbeat beats on every pass, whether or not the API server answers.
	Heartbeat Beater
	// Backoff after a failed read or write of the Node; default DefaultAPIBackoff.
	Backoff wait.Backoff
	// Rand draws the backoff's jitter (nil: math/rand).
	Rand  backoff.Rand
	Clock clock.WithTicker
	Log   *slog.Logger
	// OnTransition is called when a condition changes status (not on the first write). It must not block.
	OnTransition func(from, to corev1.NodeCondition)

	poke chan struct{}
	once sync.Once

	mu        sync.Mutex
	written   map[corev1.NodeConditionType]corev1.NodeCondition
	changedAt map[corev1.NodeConditionType]time.Time // when each condition's content was last written changed
	lastWrite time.Time
	startedAt time.Time
	dirty     bool
}

// Poke asks for a comparison now (for example from a health.Listener). It never blocks.
func (n *NodeConditions) Poke() {
	n.init()
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

func (n *NodeConditions) init() {
	n.once.Do(func() { n.poke = make(chan struct{}, 1) })
}

// Run keeps the conditions until ctx is done.
func (n *NodeConditions) Run(ctx context.Context) error {
	if n.Client == nil || n.NodeName == "" || n.Results == nil {
		return errors.New("node conditions: Client, NodeName and Results are required")
	}
	n.init()
	clk := n.clock()
	period := n.Period
	if period <= 0 {
		period = time.Second
	}
	t := clk.NewTicker(period)
	defer t.Stop()
	n.mu.Lock()
	n.written = map[corev1.NodeConditionType]corev1.NodeCondition{}
	n.changedAt = map[corev1.NodeConditionType]time.Time{}
	n.dirty = true
	n.mu.Unlock()
	n.mu.Lock()
	n.startedAt = clk.Now()
	n.mu.Unlock()
	adopted := false
	retry := newRetrier(n.Backoff, n.Rand)
	for {
		if n.Heartbeat != nil {
			n.Heartbeat.Beat()
		}
		if now := clk.Now(); retry.due(now) {
			ok := adopted
			if !adopted {
				ok = n.adopt(ctx)
				adopted = ok
			}
			if ok {
				ok = n.sync(ctx)
			}
			if ok {
				retry.ok()
			} else {
				retry.fail(now)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		case <-n.poke:
		}
	}
}

// adopt reads the node's current conditions of our types, so that a restart keeps their transition
// times.
func (n *NodeConditions) adopt(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	node, err := n.Client.GetNode(rctx, n.NodeName)
	if err != nil {
		n.log().Warn("read node conditions failed", "node", n.NodeName, "err", err)
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range node.Status.Conditions {
		for _, s := range n.Specs {
			if c.Type == s.Type {
				n.written[c.Type] = c
			}
		}
	}
	return true
}

// Desired computes the conditions from results, with transition times taken from prev when the
// status did not change.
func Desired(specs []ConditionSpec, results []health.Result, prev map[corev1.NodeConditionType]corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	byName := make(map[string]health.Result, len(results))
	for _, r := range results {
		byName[r.Name] = r
	}
	out := make([]corev1.NodeCondition, 0, len(specs))
	for _, s := range specs {
		c := corev1.NodeCondition{Type: s.Type, Status: corev1.ConditionTrue, Reason: s.OKReason, Message: s.OKMessage}
		var failing, pending, undecided []string
		var firstFailing, undecidedReason string
		present := 0
		for _, name := range s.Results {
			r, ok := byName[name]
			if ok {
				present++
			} else if s.Optional {
				continue
			}
			switch {
			case !ok || r.Status == health.StatusUnknown:
				pending = append(pending, name)
			case r.Status == health.StatusFailed && (r.Severity == health.Critical || s.CountDegraded):
				if firstFailing == "" {
					firstFailing = name
				}
				msg := name + " failed"
				if r.Err != nil {
					msg = name + ": " + r.Err.Error()
				}
				if m, ok := s.FailMessages[name]; ok {
					msg = m + ": " + msg
				}
				failing = append(failing, msg)
			case r.Status == health.StatusOK && s.Undecided != nil:
				if reason, msg, ok := s.Undecided(name); ok {
					if undecidedReason == "" {
						undecidedReason = reason
					}
					undecided = append(undecided, name+": "+msg)
				}
			}
		}
		if present == 0 && s.Optional {
			pending = s.Results
		}
		switch {
		case len(failing) > 0:
			c.Status = corev1.ConditionFalse
			c.Reason = s.FailReason
			if r, ok := s.FailReasons[firstFailing]; ok {
				c.Reason = r
			}
			c.Message = strings.Join(failing, "; ")
		case len(pending) > 0:
			c.Status = corev1.ConditionUnknown
			c.Reason = "NoResultYet"
			c.Message = "waiting for the first result of " + strings.Join(pending, ", ")
		case len(undecided) > 0:
			c.Status = corev1.ConditionUnknown
			c.Reason = undecidedReason
			c.Message = "no verdict: " + strings.Join(undecided, "; ")
		}
		if len(c.Message) > maxConditionMessage {
			c.Message = c.Message[:maxConditionMessage-3] + "..."
		}
		c.LastTransitionTime = metav1.NewTime(now)
		if p, ok := prev[s.Type]; ok && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
			c.LastTransitionTime = p.LastTransitionTime
		}
		c.LastHeartbeatTime = metav1.NewTime(now)
		out = append(out, c)
	}
	return out
}

// sync writes the conditions if they changed or the heartbeat is due; false when the write failed.
func (n *NodeConditions) sync(ctx context.Context) bool {
	now := n.clock().Now()
	hb := n.HeartbeatPeriod
	if hb <= 0 {
		hb = time.Minute
	}
	n.mu.Lock()
	desired := Desired(n.Specs, n.Results(), n.written, now)
	n.hold(desired, now)
	changed := n.dirty
	var transitions [][2]corev1.NodeCondition
	for _, c := range desired {
		p, ok := n.written[c.Type]
		if !ok || p.Status != c.Status || p.Reason != c.Reason || p.Message != c.Message {
			changed = true
		}
		if ok && p.Status != c.Status {
			transitions = append(transitions, [2]corev1.NodeCondition{p, c})
		}
	}
	due := now.Sub(n.lastWrite) >= hb
	grace := n.StartGrace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	inGrace := now.Sub(n.startedAt) < grace
	n.mu.Unlock()
	if !changed && !due {
		return true
	}
	if inGrace {
		for _, c := range desired {
			if c.Status == corev1.ConditionUnknown {
				return true
			}
		}
	}
	if err := n.patch(ctx, desired); err != nil {
		n.log().Warn("patch node conditions failed", "node", n.NodeName, "err", err)
		n.mu.Lock()
		n.dirty = true
		n.mu.Unlock()
		return false
	}
	n.mu.Lock()
	for _, c := range desired {
		if p, ok := n.written[c.Type]; ok && !sameCondition(p, c) {
			n.changedAt[c.Type] = now
		}
		n.written[c.Type] = c
	}
	n.lastWrite = now
	n.dirty = false
	n.mu.Unlock()
	for _, tr := range transitions {
		n.log().Info("node condition changed", "node", n.NodeName, "type", tr[1].Type, "from", tr[0].Status,
			"to", tr[1].Status, "reason", tr[1].Reason)
		if n.OnTransition != nil {
			n.OnTransition(tr[0], tr[1])
		}
	}
	return true
}

// hold keeps, in desired, the written content of conditions whose MinChangeInterval has not passed
// since their last change (only their heartbeat moves). n.mu is held.
func (n *NodeConditions) hold(desired []corev1.NodeCondition, now time.Time) {
	for i, c := range desired {
		s := n.Specs[i]
		p, ok := n.written[c.Type]
		if s.MinChangeInterval <= 0 || !ok || sameCondition(p, c) {
			continue
		}
		if at, ok := n.changedAt[c.Type]; ok && now.Sub(at) < s.MinChangeInterval {
			p.LastHeartbeatTime = c.LastHeartbeatTime
			desired[i] = p
		}
	}
}

// sameCondition: same status, reason and message.
func sameCondition(a, b corev1.NodeCondition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

func (n *NodeConditions) patch(ctx context.Context, conds []corev1.NodeCondition) error {
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return fmt.Errorf("encode node conditions patch: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.Client.PatchNodeStatus(pctx, n.NodeName, body); err != nil {
		return fmt.Errorf("patch status of node %s: %w", n.NodeName, err)
	}
	return nil
}

// Written returns the conditions as last written.
func (n *NodeConditions) Written() []corev1.NodeCondition {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]corev1.NodeCondition, 0, len(n.written))
	for _, s := range n.Specs {
		if c, ok := n.written[s.Type]; ok {
			out = append(out, c)
		}
	}
	return out
}

func (n *NodeConditions) clock() clock.WithTicker {
	if n.Clock != nil {
		return n.Clock
	}
	return clock.RealClock{}
}

func (n *NodeConditions) log() *slog.Logger {
	if n.Log != nil {
		return n.Log
	}
	return slog.Default()
}
