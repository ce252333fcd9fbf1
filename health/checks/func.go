package checks

import (
	"context"
	"path/filepath"
	"time"
)

// Func is the body of a check: nil means healthy. It is the unnamed func(context.Context) error, so a
// Func is assignable to health.Func (health.Check's Run) as it is; this package does not import health.
type Func = func(ctx context.Context) error

// Observation receives what a check saw when it passed (e.g. "200" for an HTTP check), for
// callers that print a one-line summary such as the container healthcheck. A check writes it only
// when the context carries one (see WithObservation).
type Observation struct {
	// Detail is a short, single-line description of the successful result.
	Detail string
}

type observationKey struct{}

// WithObservation returns a context through which the check run with it reports its success
// detail into o.
func WithObservation(ctx context.Context, o *Observation) context.Context {
	return context.WithValue(ctx, observationKey{}, o)
}

// observe stores a success detail when the caller asked for one.
func observe(ctx context.Context, detail string) {
	if o, ok := ctx.Value(observationKey{}).(*Observation); ok && o != nil {
		o.Detail = detail
	}
}

// rooted joins a filesystem root ("" or "/" for the real one) and an absolute path.
func rooted(root, path string) string {
	if root == "" || root == "/" {
		return path
	}
	return filepath.Join(root, path)
}

// nowFunc returns now, or time.Now when now is nil.
func nowFunc(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}
