package fencing

import (
	"context"
	"errors"
	"time"
)

// DefaultWriteTimeout bounds one write when nothing shorter does: less than the default safety margins of
// sharding (8s) and of leader election (lease duration 20s - renew deadline 12s = 8s).
const DefaultWriteTimeout = 5 * time.Second

// Reason says why a fence refused a write.
type Reason string

// Reasons of a refusal. Those the remediation policy also holds actions for have its names.
const (
	// ReasonNoFence: the write's context carries no fence (a write path that forgot it).
	ReasonNoFence Reason = "NoFence"
	// ReasonShardNotHeld: this replica does not hold the object's shard range (or leadership) any more.
	ReasonShardNotHeld Reason = "ShardNotHeld"
	// ReasonExpired: the replica's fenced validity ran out (its renewals failed or it was frozen).
	ReasonExpired Reason = "Expired"
	// ReasonPaused: the cluster's pause annotation is set.
	ReasonPaused Reason = "Paused"
	// ReasonOperatorPaused: the operator-wide pause is set.
	ReasonOperatorPaused Reason = "OperatorPaused"
	// ReasonExcluded: the exclusion annotation names the object.
	ReasonExcluded Reason = "Excluded"
	// ReasonDryRun: a dry-run setting is on.
	ReasonDryRun Reason = "DryRun"
	// ReasonClusterGone: the cluster is gone, or is another cluster of the same name now.
	ReasonClusterGone Reason = "ClusterGone"
	// ReasonInterlock: a teardown's interlock no longer holds (the cluster's deletion policy is no longer
	// Deorbit, or the confirmation that proved the cluster going was withdrawn).
	ReasonInterlock Reason = "Interlock"
	// ReasonFrozen: an outage was seen since the action was allowed (a write of the same pass found its API
	// unreachable, or a cluster check failed): disruptive and destructive writes wait out the outage freeze.
	ReasonFrozen Reason = "Frozen"
	// ReasonUnverified: the fence could not read what it checks (the API server did not answer): nothing is
	// proven either way, so nothing is written.
	ReasonUnverified Reason = "Unverified"
)

// Error is a refused write.
type Error struct {
	Reason  Reason
	Message string
}

func (e *Error) Error() string { return "fenced: " + string(e.Reason) + ": " + e.Message }

// ReasonOf is the reason of a refusal in err's chain ("" and false when err is not one).
func ReasonOf(err error) (Reason, bool) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Reason, true
	}
	return "", false
}

// Fence guards the writes of a context.
type Fence interface {
	// Enter re-checks, immediately before a write is sent, what the fence guards, and returns ctx bounded
	// by how long the write may take: the replica's fenced validity left and the per-write timeout,
	// whichever ends first. A refusal is an *Error. The returned context must have a deadline.
	Enter(ctx context.Context) (context.Context, context.CancelFunc, error)
}

// Func adapts a function to a Fence.
type Func func(ctx context.Context) (context.Context, context.CancelFunc, error)

// Enter calls f.
func (f Func) Enter(ctx context.Context) (context.Context, context.CancelFunc, error) { return f(ctx) }

type key struct{}

// With returns ctx carrying f: the writes sent with the context (or one derived from it) are guarded by
// f. A fence attached later, on a derived context, replaces it for that context.
func With(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// Enter runs the fence of ctx immediately before a write is sent and returns the write's context, bounded
// by the fence, and its cancel (call it once the write returned). Without a fence, or with one that
// bounds nothing, the write is refused (an *Error): every write is guarded or none is sent.
func Enter(ctx context.Context) (context.Context, context.CancelFunc, error) {
	f, _ := ctx.Value(key{}).(Fence)
	if f == nil {
		return nil, nil, &Error{Reason: ReasonNoFence, Message: "the write's context carries no fence (fencing.With): refused, as every unguarded write is"}
	}
	wctx, cancel, err := f.Enter(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := wctx.Deadline(); !ok {
		cancel()
		return nil, nil, &Error{Reason: ReasonNoFence, Message: "the write's fence set no deadline: refused"}
	}
	return wctx, cancel, nil
}

// Cut is the cause of a write's context that its fence's bound ended (Fence.Enter's deadline): the replica's
// fenced validity ran out before the write returned (Validity), or the per-write timeout passed. A write cut
// by the validity says nothing of its API (the replica's own lease was about to end, as when a renewal is
// late on a loaded machine), so it is no sign of an outage; one cut by the write timeout is an API that did
// not answer in time.
type Cut struct {
	Validity bool
	After    time.Duration
}

func (c *Cut) Error() string {
	if c.Validity {
		return "the write was cut short after " + c.After.String() + ", when the replica's fenced validity ran out"
	}
	return "the write was cut short by its timeout (" + c.After.String() + ")"
}

// CutError is a write's error when its fence's bound ended it: both the write's error and the Cut are in its
// chain (errors.Is and errors.As see either).
type CutError struct {
	Err error
	Cut *Cut
}

func (e *CutError) Error() string   { return e.Err.Error() + " (" + e.Cut.Error() + ")" }
func (e *CutError) Unwrap() []error { return []error{e.Err, e.Cut} }

// Explain returns err, the error of a write sent with wctx (the context Enter returned), naming the fence's
// bound when that is what ended it (a *CutError). Every write path that calls Enter returns its write's error
// through it.
func Explain(wctx context.Context, err error) error {
	if err == nil || wctx.Err() == nil {
		return err
	}
	var c *Cut
	if errors.As(context.Cause(wctx), &c) {
		return &CutError{Err: err, Cut: c}
	}
	return err
}

// CutByValidity reports whether err is a write that the replica's fenced validity cut short.
func CutByValidity(err error) bool {
	var c *Cut
	return errors.As(err, &c) && c.Validity
}
