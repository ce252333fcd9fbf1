package checks

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
)

// GoroutinesOptions configure Goroutines.
type GoroutinesOptions struct {
	// Max goroutines allowed (must be > 0).
	Max int
	// Count returns the current number; nil means runtime.NumGoroutine (tests inject one).
	Count func() int
}

// Goroutines checks that the process runs at most Max goroutines: a steady climb is a leak.
func Goroutines(opts GoroutinesOptions) (Func, error) {
	if opts.Max <= 0 {
		return nil, fmt.Errorf("goroutines check: max %d: expected a positive number", opts.Max)
	}
	count := opts.Count
	if count == nil {
		count = runtime.NumGoroutine
	}
	return func(ctx context.Context) error {
		n := count()
		if n > opts.Max {
			return fmt.Errorf("%d goroutines (max %d)", n, opts.Max)
		}
		observe(ctx, strconv.Itoa(n)+" goroutines")
		return nil
	}, nil
}
