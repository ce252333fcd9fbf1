package remediation

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/fencing"
)

// Action is one destructive change a controller wants to make in the cloud or the workload cluster.
type Action struct {
	// Verb in CamelCase, e.g. RemoveRoute, DeleteVolume, DeleteLoadBalancer, RebootServer, DeleteServer,
	// DeleteSecurityGroupRule.
	Verb string
	// Kind of the object: route, volume, loadbalancer, server, securitygrouprule, port, pvc, service ...
	Kind string
	// ID of the object (for a route: "destination@nexthop").
	ID string
	// Name of the object, if it has one (for a route: its destination); exclusions match the ID or
	// the name.
	Name string
	// Evidence is when the condition that justifies the action was first seen. A removal is allowed only
	// once Evidence is at least the cluster's minimum proof age old; zero means the action needs no proof
	// age (e.g. a delete asked for by the cluster's own deletion).
	Evidence time.Time
	// Removal marks actions that take something away (routes, servers, volumes); with Evidence set they
	// are subject to the minimum proof age. Status lines say Removed or WouldRemove for them, Done or
	// WouldDo for the others.
	Removal bool
	// Teardown marks a delete asked for by the cluster's own deletion (deorbit). The cluster's and the
	// operator-wide budgets neither hold nor count it: a cluster with 200 volumes must not wait 20 hours
	// on a budget of 10 actions per hour, and tearing one cluster down must not spend the actions other
	// clusters need. Nor do the storm rule and the outage freeze hold it (see classRule): a cluster being
	// deleted loses its workload API by design. Exclusions, pauses, the gate, dry-run and the audit apply as
	// to every action; the controller proves each resource the cluster's before it asks.
	Teardown bool
	// Class of the action (default Destructive): the storm rule, the outage freeze, the pool rule and the
	// budgets hold actions by class (see Class).
	Class Class
	// Pool groups the objects of which one disruptive or destructive step at a time may be in flight (a
	// node pool); empty: no pool rule.
	Pool string
	// Quorum, when the action takes down a member of a group that needs a majority (etcd).
	Quorum *Quorum
	// Continuation marks the next write of a step the policy allowed in an earlier pass (a drain's next
	// round, the reboot the drain was for): every rule holds it as before, but it does not count against
	// the budgets again.
	Continuation bool
}

// Object is how an action is named in Events and status lines: "kind id", with the name in
// parentheses when the ID does not already start with it.
func (a Action) Object() string {
	if a.Name != "" && a.Name != a.ID && !strings.HasPrefix(a.ID, a.Name+"@") {
		return a.Kind + " " + a.ID + " (" + a.Name + ")"
	}
	return a.Kind + " " + a.ID
}

// Outcome of a decision.
type Outcome string

const (
	// Allowed: act now, then call Done.
	Allowed Outcome = "Allowed"
	// DryRun: would be allowed; report only (already recorded).
	DryRun Outcome = "DryRun"
	// Held: a rule holds the action back (already recorded); Reason says which.
	Held Outcome = "Held"
)

// Reasons a decision holds an action back.
const (
	ReasonShardNotHeld   = "ShardNotHeld"
	ReasonPaused         = "Paused"
	ReasonOperatorPaused = "OperatorPaused"
	ReasonExcluded       = "Excluded"
	ReasonBudget         = "BudgetExhausted"
	ReasonOperatorBudget = "OperatorBudgetExhausted"
	ReasonStorm          = "Storm"
	ReasonGateClosed     = "GateClosed"
	ReasonProofPending   = "ProofPending"
	ReasonInvalidPolicy  = "InvalidPolicy"
	ReasonDryRun         = "DryRun"
	ReasonAllowed        = "Allowed"
)

// Decision answers one Ask.
type Decision struct {
	Outcome Outcome
	// Reason in CamelCase (one of the Reason constants).
	Reason string
	// Message for humans.
	Message string
	// RetryAt is when the decision may change (budget window, proof age, storm cool-down); zero: unknown.
	RetryAt time.Time
}

// Scope tells the policy about one pass: the objects the controller looked at, for the storm rule, and
// the controller's own dry-run setting.
type Scope struct {
	// Unhealthy objects the controller would act on, of Total objects of that kind in the cluster
	// (for routegc: orphaned routes of the routes inside the pod CIDRs). Total 0: the pass tells
	// nothing about a storm (a storm seen before still cools down).
	Unhealthy, Total int
	// DryRun is the controller's own dry-run (e.g. spec.controllers.routegc.dryRun); the cluster's
	// and the operator's apply on top.
	DryRun bool
	// Interlock, when set, is re-checked by the fence of every write of the pass on the cluster as the API
	// server has it then (after the pause, before the exclusions): a non-empty answer refuses the write
	// (fencing.ReasonInterlock) with it as the message. Deorbit's teardown passes the proof that the cluster
	// is going, so that a deletion policy set back to Orphan, or a confirmation withdrawn, holds the next
	// write.
	Interlock func(live *v1alpha1.VitalsCluster) string
	// InFlight names, by pool, the objects with a disruptive step in flight when the pass began (their
	// next step is theirs; another object of the pool waits).
	InFlight map[string][]string
	// Outage, when the controller's read saw one (e.g. most node Leases stale at once): disruptive and
	// destructive actions are frozen (spec.remediation.outageFreeze), and the timers restart.
	Outage string
}

// Pass is one controller's pass over one cluster: it asks, acts, and reports, and gives the status lines
// and the policy's status to write with the pass's status update.
type Pass interface {
	// Ask decides on one action. A Held or DryRun decision is recorded at once; an Allowed one reserves
	// budget and must be followed by Done.
	Ask(ctx context.Context, a Action) Decision
	// Fence is the fence of the write (or writes) that carry out allowed actions: put it in the write's
	// context (fencing.With) and send the write through a fenced client (tenancy's scoped cloud, the
	// workload cluster's client). It re-checks at the write what may have changed since Ask: the shard range
	// (the write ends with its validity), the pauses, the exclusions of actions and dry-run, on the cluster
	// read live, and for disruptive and destructive actions the outage freeze (an outage seen since Ask). A
	// refusal reaches Done as the write's error (a *fencing.Error) and is recorded as a hold.
	Fence(actions ...Action) fencing.Fence
	// Done records the outcome of an allowed action (err nil: done; a *fencing.Error: held at the write; an
	// error that shows the API unreachable: failed, and an outage this pass saw).
	Done(ctx context.Context, a Action, err error)
	// Lines are the status lines of this pass, newest last.
	Lines() []v1alpha1.Action
	// Apply writes the policy's state (RemediationStatus, the RemediationAllowed condition) into st.
	Apply(st *v1alpha1.ClusterStatus)
	// Outage is the cluster's last outage as this pass sees it: a controller starts no unhealthy timer
	// before Outage().Last.
	Outage() Outage
}

// Policy opens passes, and fences the writes of a cluster's status and finalizers.
type Policy interface {
	Fencer
	// Begin opens a pass of controller over c. needs names the cluster checks (see Checks) that must pass
	// for the gate to open, besides the operator's own; scope feeds the storm rule.
	Begin(ctx context.Context, c *v1alpha1.VitalsCluster, controller string, needs []string, scope Scope) Pass
	// Forget drops the gauges and checks of a cluster that is gone. Its past actions still count
	// against the operator-wide budget (and against a cluster of the same name created again) until
	// they leave the window: deleting a cluster never buys actions.
	Forget(cluster types.NamespacedName)
}
