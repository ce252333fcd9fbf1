package e2e

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// klogTarget is where klog's logger (client-go's and controller-runtime's logs) writes in this test binary.
// klog's logger is a global without a lock, read by goroutines that outlive an operator's stop (the event
// recorder's): it is set once, in init, before any goroutine runs, and a test that captures those logs
// switches the target instead.
var klogTarget atomic.Pointer[slog.Handler]

func init() {
	var h slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	klogTarget.Store(&h)
	klog.SetLogger(logr.FromSlogHandler(switchHandler{}))
}

// switchHandler sends each record to klogTarget's handler of the moment, with the attributes and groups it
// was derived with.
type switchHandler struct {
	with []func(slog.Handler) slog.Handler
}

func (h switchHandler) target() slog.Handler {
	t := *klogTarget.Load()
	for _, w := range h.with {
		t = w(t)
	}
	return t
}

func (h switchHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.target().Enabled(ctx, l)
}

func (h switchHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

func (h switchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return switchHandler{append(slices.Clip(h.with), func(t slog.Handler) slog.Handler { return t.WithAttrs(as) })}
}

func (h switchHandler) WithGroup(name string) slog.Handler {
	return switchHandler{append(slices.Clip(h.with), func(t slog.Handler) slog.Handler { return t.WithGroup(name) })}
}
