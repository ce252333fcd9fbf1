package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// FileOptions configure File.
type FileOptions struct {
	// Path of the file a service touches as it works (a heartbeat file).
	Path string
	// MaxAge: the file must have been modified within it (must be > 0).
	MaxAge time.Duration
	// Now returns the current time; nil means time.Now (tests inject a fake clock's Now).
	Now func() time.Time
}

// File checks that a file exists and was modified within MaxAge.
func File(opts FileOptions) (Func, error) {
	if opts.Path == "" {
		return nil, errors.New("file check: no path")
	}
	if opts.MaxAge <= 0 {
		return nil, fmt.Errorf("file check: max age %s: expected a positive duration", opts.MaxAge)
	}
	now := nowFunc(opts.Now)
	return func(ctx context.Context) error {
		fi, err := os.Stat(opts.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s: no such file", opts.Path)
			}
			return fmt.Errorf("stat %s: %w", opts.Path, err)
		}
		age := now().Sub(fi.ModTime())
		if age > opts.MaxAge {
			return fmt.Errorf("%s: modified %s ago (max %s)", opts.Path, age.Round(time.Second), opts.MaxAge)
		}
		if age < 0 {
			age = 0
		}
		observe(ctx, fmt.Sprintf("%s age %s", opts.Path, age.Round(time.Millisecond)))
		return nil
	}, nil
}
