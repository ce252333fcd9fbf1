// Package remediation is the one policy every controller asks before a destructive action, and the one place
// that records what was done or held back.
//
// A controller opens a Pass for one VitalsCluster, asks the pass about each action it wants to take, acts only
// on an allowed Decision, and reports the outcome with Done. The policy owns, for every controller alike: the
// budget per cluster and per operator over a sliding window (0 means no actions), the storm rule (too many
// broken objects at once: act on none, then cool down), the pause annotation and the operator-wide pause,
// exclusions of cloud-side names and IDs, dry-run, the gate (the operator's own readiness and the cluster's
// own checks; a check that has no result yet is a closed gate), the minimum age of the evidence before a
// removal, and the audit record of every decision: an Event, a metric and a status line.
//
// Rules apply in this order, and the first that holds an action decides: exclusion, the shard (with several
// active replicas, a cluster of a hash range this replica does not hold, or no longer holds safely), invalid policy,
// operator-wide pause, the cluster's pause, the gate; then by the action's Class (safe actions pass): the storm
// rule (and its cool-down), the outage freeze (the cluster's checks failed, or the controller saw an outage,
// within spec.remediation.outageFreeze), the pool rule (one disruptive step in flight per pool), the quorum;
// then the proof age, the cluster's budget, the operator's budget (safe actions spend none); then dry-run, or
// the action is allowed and counted. Pass.Outage tells a controller when its unhealthy timers may start.
//
// Decisions are made when a controller asks; the writes that carry them out are fenced when they are sent
// (package fencing). Pass.Fence makes the fence of an allowed action's write: it re-checks the operator-wide
// pause and dry-run, the cluster read live from the API server (its UID, pause, the action's exclusion,
// dry-run; one read per cluster serves the writes of the next LiveMaxAge, single-flight), and last this
// replica's fenced validity (Options.Validity: the shard range's, the leader's), and bounds the write by it
// and by the write timeout. StatusFence fences a cluster's status and finalizer writes by the validity only.
// A write refused at its fence reaches Done as a *fencing.Error and is recorded as a hold with its reason.
//
// State: a cluster's window (the times of its actions) and its last storm are kept in its status
// (status.remediation), merged into memory on every pass, so that they survive restarts and fail-overs.
// The operator-wide window is the sum of the clusters' windows as this replica knows them: seeded from every
// cluster's status before the first decision, then kept in memory. With one active replica (leader
// election) that is the whole budget. With several (package sharding), each acts on the clusters of the
// hash ranges it holds and spends only its share of the operator-wide budget, by its share of the ranges,
// counted over those ranges' clusters whoever acted on them: the shares add up to the budget at most, and a
// range's history moves with it (the window is seeded again from the statuses when the held ranges change).
package remediation
