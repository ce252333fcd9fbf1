package flight

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/pass"
	"github.com/vitalsproject/vitals/nodes"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/remediation"
)

// VerbDeleteServer is the verb of deleting a server.
const VerbDeleteServer = "DeleteServer"

// ErroredServers deletes the cluster's servers in vm_state error: Nova will not bring them back, and
// the cluster's machine management creates a replacement. When a server was first seen errored is kept
// in status.flight.errored; it is the evidence of the removal, so the remediation policy's minimum
// proof age holds the delete back until the server has stayed errored that long. A server in ERROR may
// still run (a failed live migration leaves it so), so its delete gets the node repair's guards
// (repairs.nodes): never an excluded server, a control-plane node unless controlPlane is on (and then
// within etcd's quorum), a Cluster API, Gardener or Magnum server, nor one no manager replaces
// (delete, replacement.metadataKey); one at a time per node pool.
type ErroredServers struct{}

// Name implements Repair.
func (ErroredServers) Name() string { return "erroredServers" }

// Condition implements Repair.
func (ErroredServers) Conditions() []string { return []string{v1alpha1.ConditionServersHealthy} }

// Enabled implements Repair.
func (ErroredServers) Enabled(c *v1alpha1.VitalsCluster) bool {
	return c.Spec.Controllers.Flight.Repairs.ErroredServers.IsEnabled()
}

// Detect implements Repair.
func (ErroredServers) Detect(in *pass.Input[*State]) pass.Finding[*State] {
	snap, s := in.Read.Snapshot, in.Read.Settings.Repairs.Nodes.Settings()
	f := &erroredFinding{errored: Errored(snap.Servers, in.Read.Prev.Errored, in.Now), servers: len(snap.Servers), s: s, cases: map[string]*nodeCase{}}
	listed := map[string]bool{}
	for _, sv := range snap.Servers {
		listed[sv.ID] = true
		if strings.EqualFold(sv.VMState, "error") {
			f.cases[sv.ID] = newCase(sv, snap.ServerNode[sv.ID], snap.Duplicates[sv.ID], s, in.Cluster, nil)
		}
	}
	// A server whose Node flight cordoned for its delete that left vm_state error instead: its Node is uncordoned.
	for _, p := range in.Read.Prev.Errored {
		if _, still := f.cases[p.Server]; !still && p.Cordoned && listed[p.Server] {
			if n := snap.ServerNode[p.Server]; n != nil && n.Spec.Unschedulable {
				f.uncordon = append(f.uncordon, &nodeCase{server: openstack.Server{ID: p.Server}, node: n})
			}
		}
	}
	return f
}

// erroredHold is why c's errored server is not deleted ("" when it may be): the node repair's guards
// (guard) and its rule for deletes (noDelete).
func erroredHold(c *nodeCase, s v1alpha1.NodeSettings) string {
	if why := c.guard(s); why != "" {
		return why
	}
	if stop := c.noDelete(s); stop != "" {
		return stop + ": " + stopMessage(stop, s)
	}
	return ""
}

// drain cordons and drains c's Node before the delete a (one round per pass), the cordon recorded first in
// the sighting (f.errored[i]); ok once the Node is drained, or is unreachable (its pods cannot leave: the delete
// is forced); else why the delete waits.
func (f *erroredFinding) drain(ctx context.Context, env *pass.Env[*State], c *nodeCase, del remediation.Action, i int) (string, bool) {
	wc := env.Workload.Client()
	pods, err := nodes.NodePods(ctx, wc, c.node.Name)
	if err != nil {
		return "draining node " + c.node.Name + " before the delete: " + err.Error(), false
	}
	res, evict := nodes.Waiting(pods)
	if evict || !c.node.Spec.Unschedulable {
		da := nodeAction(c, VerbDrainNode, remediation.Disruptive)
		da.Pool, da.Quorum, da.Removal, da.Evidence = del.Pool, del.Quorum, true, del.Evidence
		outcome, d, err := env.Act(ctx, da, func(ctx context.Context) error {
			w := nodes.Want{Server: c.server.ID, Node: c.node.Name, ServerState: errored}
			if _, err := nodes.Recheck(ctx, wc, env.Cloud, w); err != nil {
				return err
			}
			if !c.node.Spec.Unschedulable && !f.errored[i].Cordoned {
				if err := env.WriteAhead(ctx, func(st *v1alpha1.ClusterStatus) {
					if st.Flight == nil {
						st.Flight = &v1alpha1.FlightStatus{}
					}
					rec := f.errored[i]
					rec.Cordoned = true
					if j := slices.IndexFunc(st.Flight.Errored, func(x v1alpha1.ServerSighting) bool { return x.Server == rec.Server }); j >= 0 {
						st.Flight.Errored[j] = rec
					} else {
						st.Flight.Errored = append(st.Flight.Errored, rec)
					}
				}); err != nil {
					return err
				}
				f.errored[i].Cordoned = true
			}
			if err := nodes.Cordon(ctx, wc, c.node, true); err != nil {
				return err
			}
			res, err = nodes.Drain(ctx, wc, c.node.Name)
			return err
		})
		switch outcome {
		case pass.OutcomeDone:
		case pass.OutcomeFailed:
			return "draining node " + c.node.Name + " before the delete: " + err.Error(), false
		default:
			return "draining node " + c.node.Name + " before the delete: " + d.Reason, false
		}
	}
	if res.Done() || nodes.Unreachable(c.node) {
		return "", true
	}
	msg := fmt.Sprintf("draining node %s before the delete: %d pods left", c.node.Name, len(res.Left))
	if len(res.Blocked) > 0 {
		msg += " (" + strings.Join(res.Blocked, "; ") + ")"
	}
	return msg, false
}

// errored is the delete's nodes.Want.ServerState: the server is still in vm_state error.
func errored(sv *openstack.Server) string {
	if !strings.EqualFold(sv.VMState, "error") {
		return "is in vm_state " + sv.VMState + " now, no longer error"
	}
	return ""
}

// Errored returns the servers in vm_state error, each with when it was first seen so (from seen, else
// now), in the order of servers.
func Errored(servers []openstack.Server, seen []v1alpha1.ServerSighting, now time.Time) []v1alpha1.ServerSighting {
	first, cordoned := map[string]metav1.Time{}, map[string]bool{}
	for _, s := range seen {
		first[s.Server], cordoned[s.Server] = s.FirstSeen, s.Cordoned
	}
	var out []v1alpha1.ServerSighting
	for _, sv := range servers {
		if !strings.EqualFold(sv.VMState, "error") {
			continue
		}
		t, ok := first[sv.ID]
		if !ok {
			t = metav1.NewTime(now)
		}
		out = append(out, v1alpha1.ServerSighting{Server: sv.ID, Name: sv.Name, FirstSeen: t, Cordoned: cordoned[sv.ID]})
	}
	return out
}

// erroredFinding is what ErroredServers found.
type erroredFinding struct {
	errored []v1alpha1.ServerSighting
	servers int
	// s are the node repair's settings; cases the errored servers as the node repair sees them, by ID.
	s     v1alpha1.NodeSettings
	cases map[string]*nodeCase
	// uncordon are the Nodes flight cordoned for a delete whose server left vm_state error.
	uncordon []*nodeCase
}

func (f *erroredFinding) Unhealthy() []string {
	ids := make([]string, len(f.errored))
	for i, s := range f.errored {
		ids[i] = s.Server
	}
	return ids
}

func (f *erroredFinding) Repair(ctx context.Context, env *pass.Env[*State]) []pass.Report {
	// The sightings stay until the server is gone: Nova deletes asynchronously, and a failed delete
	// keeps its evidence for the next pass.
	env.Read.Status.Errored = f.errored
	for _, c := range f.uncordon {
		if outcome, _, _ := env.Act(ctx, nodeAction(c, VerbUncordonNode, remediation.Safe), func(ctx context.Context) error {
			return nodes.Cordon(ctx, env.Workload.Client(), c.node, false)
		}); outcome != pass.OutcomeDone {
			// kept, so that the next pass tries again
			env.Read.Status.Errored = append(env.Read.Status.Errored, v1alpha1.ServerSighting{Server: c.server.ID, Cordoned: true, FirstSeen: metav1.NewTime(env.Now)})
		}
	}
	if len(f.errored) == 0 {
		return []pass.Report{{Status: metav1.ConditionTrue, Reason: "NoErroredServers", Message: fmt.Sprintf("none of the cluster's %d servers is in vm_state error", f.servers)}}
	}
	var deleted, failed, held, kept []string
	for i, s := range f.errored {
		c := f.cases[s.Server]
		if why := erroredHold(c, f.s); why != "" {
			kept = append(kept, s.Server+" ("+why+")")
			continue
		}
		var q *remediation.Quorum
		if c.controlPlane {
			qq, err := etcdQuorum(ctx, env, c)
			if err != nil {
				failed = append(failed, s.Server+": read etcd's members: "+err.Error())
				continue
			}
			q = &qq
		}
		a := remediation.Action{Verb: VerbDeleteServer, Kind: "server", ID: s.Server, Name: s.Name, Evidence: s.FirstSeen.Time, Removal: true, Pool: c.pool, Quorum: q}
		if c.node != nil {
			// Cordoned and drained first (such a server may still run pods); the delete waits for the drain,
			// forced only on an unreachable node.
			if why, ok := f.drain(ctx, env, c, a, i); !ok {
				if why != "" {
					held = append(held, s.Server+" ("+why+")")
				}
				continue
			}
		}
		outcome, d, err := env.Act(ctx, a, func(ctx context.Context) error {
			// Read again: the server still in error, its Node (if any) still naming it, neither excluded.
			w := nodes.Want{Server: s.Server, ServerState: errored}
			if c.node != nil {
				w.Node = c.node.Name
			}
			if _, err := nodes.Recheck(ctx, env.Workload.Client(), env.Cloud, w); err != nil {
				return fmt.Errorf("delete not sent: %w", err)
			}
			return env.Cloud.DeleteServer(ctx, s.Server)
		})
		switch outcome {
		case pass.OutcomeDone:
			deleted = append(deleted, s.Server)
		case pass.OutcomeFailed:
			failed = append(failed, s.Server+": "+err.Error())
		default:
			held = append(held, s.Server+" ("+d.Reason+")")
		}
	}
	reason := "ErroredServers"
	switch {
	case len(failed) > 0:
		reason = "RepairFailed"
	case len(held) == 0 && len(kept) == 0:
		reason = "ErroredServersDeleted"
	}
	// Deleted servers are still errored until Nova has removed them: the condition stays False.
	return []pass.Report{{Status: metav1.ConditionFalse, Reason: reason,
		Message: fmt.Sprintf("%d of %d servers in vm_state error; delete asked for %d [%s], failed %d [%s], held back %d [%s], left alone %d [%s]",
			len(f.errored), f.servers, len(deleted), strings.Join(deleted, ", "), len(failed), strings.Join(failed, "; "), len(held), strings.Join(held, "; "),
			len(kept), strings.Join(kept, "; "))}}
}
