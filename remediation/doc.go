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
// Rules apply in this order, and the first that holds an action decides: exclusion, invalid policy,
// operator-wide pause, the cluster's pause, the gate, the storm rule (and its cool-down), the proof age, the
// cluster's budget, the operator's budget; then dry-run, or the action is allowed and counted.
//
// State: a cluster's window (the times of its actions) and its last storm are kept in its status
// (status.remediation), merged into memory on every pass, so that they survive restarts and fail-overs.
// The operator-wide window is the sum of the clusters' windows as this replica knows them: seeded from every
// cluster's status before the first decision, then kept in memory. Two replicas never act at once (leader
// election); a shared operator-wide window across replicas is left to a later change.
package remediation
