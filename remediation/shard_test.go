package remediation

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
)

// shard holds the UIDs in held, of total ranges (one UID per range here).
type shard struct {
	held  map[types.UID]bool
	total int
	gen   uint64
}

func (s *shard) Holds(uid types.UID) bool { return s.held[uid] }
func (s *shard) Why(uid types.UID) string { return "range of " + string(uid) + " not held" }
func (s *shard) Share() (int, int)        { return len(s.held), s.total }
func (s *shard) Generation() uint64       { return s.gen }

// TestShard: a replica acts only on the clusters of its ranges, and spends only its share of the
// operator-wide budget, counted over its ranges' clusters whoever acted on them.
func TestShard(t *testing.T) {
	ask := func(t *testing.T, v *env, uid types.UID, history int) Decision {
		t.Helper()
		c := newCluster(func(c *v1alpha1.VitalsCluster) {
			c.Name, c.UID = "c-"+string(uid), uid
			if history > 0 {
				st := &v1alpha1.RemediationStatus{}
				for k := range history {
					st.ActionTimes = append(st.ActionTimes, metav1.NewTime(v.clock.Now().Add(-time.Duration(k+1)*time.Minute)))
				}
				c.Status.Remediation = st
			}
		})
		v.checks.Set(types.NamespacedName{Namespace: c.Namespace, Name: c.Name}, CheckCloud, nil)
		p := v.e.Begin(context.Background(), c, "routegc", []string{CheckCloud}, Scope{})
		a := Action{Verb: "RemoveRoute", Kind: "route", ID: fmt.Sprintf("r%d", time.Now().UnixNano())}
		d := p.Ask(context.Background(), a)
		if d.Outcome == Allowed {
			p.Done(context.Background(), a, nil)
		}
		return d
	}
	for _, tc := range []struct {
		name string
		held []types.UID
		// asks: the UIDs asked for in order, with the number of past actions in their status
		asks    []types.UID
		history map[types.UID]int
		want    []string // the reasons, in order
	}{
		{name: "a cluster of another replica's range is held back", held: []types.UID{"a"},
			asks: []types.UID{"b", "a"}, want: []string{ReasonShardNotHeld, ReasonAllowed}},
		// limits: 8 actions over 4 ranges; holding 1 range gives 2
		{name: "one range of four: a quarter of the budget", held: []types.UID{"a"},
			asks: []types.UID{"a", "a", "a"}, want: []string{ReasonAllowed, ReasonAllowed, ReasonOperatorBudget}},
		{name: "two ranges of four: half of it, over both", held: []types.UID{"a", "b"},
			asks: []types.UID{"a", "b", "a", "b", "a"}, want: []string{ReasonAllowed, ReasonAllowed, ReasonAllowed, ReasonAllowed, ReasonOperatorBudget}},
		{name: "a range's past actions move with it", held: []types.UID{"a"}, history: map[types.UID]int{"a": 2},
			asks: []types.UID{"a"}, want: []string{ReasonOperatorBudget}},
		{name: "actions on ranges not held do not count", held: []types.UID{"a"}, history: map[types.UID]int{"b": 2},
			asks: []types.UID{"b", "a", "a"}, want: []string{ReasonShardNotHeld, ReasonAllowed, ReasonAllowed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limits := DefaultLimits()
			limits.Actions = 8
			v := newEnv(t, &limits)
			sh := &shard{held: map[types.UID]bool{}, total: 4}
			for _, u := range tc.held {
				sh.held[u] = true
			}
			v.e.shard = sh
			for k, u := range tc.asks {
				h := 0
				if k == 0 || tc.asks[k-1] != u {
					h = tc.history[u]
				}
				if d := ask(t, v, u, h); d.Reason != tc.want[k] {
					t.Fatalf("ask %d (cluster %s): %s (%s), want %s", k, u, d.Reason, d.Message, tc.want[k])
				}
			}
		})
	}
}
