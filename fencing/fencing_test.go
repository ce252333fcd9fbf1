package fencing_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/fencing"
)

// open is a fence that allows every write for d.
func open(d time.Duration) fencing.Fence {
	return fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, cancel, nil
	})
}

func refuse(r fencing.Reason) fencing.Fence {
	return fencing.Func(func(context.Context) (context.Context, context.CancelFunc, error) {
		return nil, nil, &fencing.Error{Reason: r, Message: "refused by the test"}
	})
}

// TestEnter: a write is entered only through the fence of its context, which bounds it; without a fence,
// or with one that bounds nothing, it is refused.
func TestEnter(t *testing.T) {
	unbounded := fencing.Func(func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		ctx, cancel := context.WithCancel(ctx)
		return ctx, cancel, nil
	})
	for _, tc := range []struct {
		name   string
		ctx    func() context.Context
		reason fencing.Reason // "" : entered
	}{
		{"no fence", context.Background, fencing.ReasonNoFence},
		{"a nil fence", func() context.Context { return fencing.With(context.Background(), nil) }, fencing.ReasonNoFence},
		{"an open fence", func() context.Context { return fencing.With(context.Background(), open(time.Minute)) }, ""},
		{"a refusing fence", func() context.Context { return fencing.With(context.Background(), refuse(fencing.ReasonPaused)) }, fencing.ReasonPaused},
		{"a fence without a deadline", func() context.Context { return fencing.With(context.Background(), unbounded) }, fencing.ReasonNoFence},
		{"the inner fence decides", func() context.Context {
			return fencing.With(fencing.With(context.Background(), open(time.Minute)), refuse(fencing.ReasonShardNotHeld))
		}, fencing.ReasonShardNotHeld},
		{"a fence survives derived contexts", func() context.Context {
			ctx, cancel := context.WithCancel(fencing.With(context.Background(), open(time.Minute)))
			t.Cleanup(cancel)
			return context.WithValue(ctx, otherKey{}, 1)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel, err := fencing.Enter(tc.ctx())
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				defer cancel()
				if _, ok := ctx.Deadline(); !ok {
					t.Error("the write's context has no deadline")
				}
				return
			}
			got, ok := fencing.ReasonOf(fmt.Errorf("remove routes: %w", err))
			if !ok || got != tc.reason {
				t.Fatalf("got %v (reason %q), want a refusal %s", err, got, tc.reason)
			}
			if ctx != nil || cancel != nil {
				t.Error("a refusal returned a context")
			}
		})
	}
}

type otherKey struct{}

// TestEnterBoundsTheWrite: the write's context ends with the fence's bound, not with its parent's.
func TestEnterBoundsTheWrite(t *testing.T) {
	ctx := fencing.With(context.Background(), open(time.Millisecond))
	wctx, cancel, err := fencing.Enter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	select {
	case <-wctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the write's context outlived its fence's bound")
	}
	if !errors.Is(wctx.Err(), context.DeadlineExceeded) {
		t.Errorf("the write's context ended with %v, want its deadline", wctx.Err())
	}
}

func TestReasonOf(t *testing.T) {
	if r, ok := fencing.ReasonOf(errors.New("plain")); ok || r != "" {
		t.Errorf("a plain error has reason %q", r)
	}
	if r, ok := fencing.ReasonOf(nil); ok || r != "" {
		t.Errorf("nil has reason %q", r)
	}
	err := &fencing.Error{Reason: fencing.ReasonExpired, Message: "validity ran out at 12:00:00"}
	if got, want := err.Error(), "fenced: Expired: validity ran out at 12:00:00"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

// TestExplain: a write's error names the fence's bound only when that bound is what ended the write.
func TestExplain(t *testing.T) {
	cut := &fencing.Cut{Validity: true, After: time.Second}
	ended, cancel := context.WithTimeoutCause(context.Background(), 0, cut)
	defer cancel()
	<-ended.Done()
	live, cancelLive := context.WithCancel(context.Background())
	defer cancelLive()
	failed := errors.New("delete: connection reset")
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		cut     bool
		byValid bool
	}{
		{name: "no error", ctx: ended, err: nil},
		{name: "the write failed before its bound", ctx: live, err: failed},
		{name: "the bound ended the write", ctx: ended, err: fmt.Errorf("delete: %w", context.DeadlineExceeded), cut: true, byValid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fencing.Explain(tc.ctx, tc.err)
			var ce *fencing.CutError
			if errors.As(got, &ce) != tc.cut {
				t.Errorf("Explain = %v: a CutError %v, want %v", got, !tc.cut, tc.cut)
			}
			if tc.err != nil && !errors.Is(got, tc.err) && !errors.Is(got, context.DeadlineExceeded) {
				t.Errorf("Explain = %v lost the write's error %v", got, tc.err)
			}
			if fencing.CutByValidity(got) != tc.byValid {
				t.Errorf("CutByValidity(%v) = %v, want %v", got, !tc.byValid, tc.byValid)
			}
		})
	}
}
