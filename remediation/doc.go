// Package remediation is the one policy every controller asks before a destructive action, and the one place
// that records what was done or held back.
//
// A controller opens a Pass for one VitalsCluster, asks the pass about each action it wants to take, acts only
// on an allowed Decision, and reports the outcome with Done. The policy owns, for every controller alike: the
// budget per cluster and per operator over a sliding window (0 means no actions), the storm rule (too many
// broken objects at once: act on none), the pause annotation and the operator-wide pause, exclusions of
// cloud-side names and IDs, dry-run, the gate (the operator's own readiness and the cluster's own checks; a
// check that has no result yet is a closed gate), the minimum age of the evidence before a removal, and the
// audit record of every decision: an Event, a metric and a status line.
package remediation
