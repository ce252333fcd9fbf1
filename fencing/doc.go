// Package fencing guards every write the operator sends, at the moment it is sent.
//
// A decision to act (the remediation policy's Ask) and the write that carries it out are apart in time: a
// replica frozen in between (a GC pause, a VM freeze, CPU starvation, SIGSTOP) may resume after another replica
// took its clusters over, or after the cluster was paused. So the write itself carries a guard, a Fence, in its
// context:
//
//   - With(ctx, f) attaches f to ctx: whoever decided (the remediation pass for an action, a status writer for
//     a status or finalizer write) builds the fence and puts it in the context of the write.
//   - Enter(ctx) is called by every write wrapper immediately before a write is sent (tenancy's scoped cloud,
//     the workload cluster's client, the operator's own client, all through Client for Kubernetes). It runs the
//     fence, which re-checks what it guards (the shard range still held, the pauses, the exclusions, dry-run,
//     as the fence defines), and returns the write's context bounded by the replica's fenced validity for
//     the object and by a per-write timeout: a write can never outlive the time this replica may act.
//   - A context without a fence is refused: a write path that forgot its fence fails closed, with an *Error
//     whose Reason is ReasonNoFence, instead of writing unguarded.
//
// A refusal is an *Error with a Reason (ShardNotHeld, Expired, Paused, OperatorPaused, Excluded, DryRun,
// ClusterGone, Interlock, Unverified, NoFence) that callers tell apart with errors.As or ReasonOf; the remediation policy
// records it as it records a hold (an Event, a metric, a status line), never as a failure.
//
// The per-write timeout (DefaultWriteTimeout unless configured) must be shorter than the safety margin that
// separates the end of a replica's fenced validity from the earliest moment another replica may take over:
// a write allowed just before the validity ends then ends, one way or the other, before anyone else acts.
// The operator refuses a configuration that breaks this at startup (docs/operator.md, "Fencing").
package fencing
