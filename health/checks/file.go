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
	// MaxSkew is how far in the future a modification time may lie (clocks of a writer on
	// another host, a coarse file system); zero means FileMaxSkew. Further is unhealthy: a
	// heartbeat touched with a future time would otherwise stay fresh for ever.
	MaxSkew time.Duration
	// Now returns the current time; nil means time.Now (tests inject a fake clock's Now).
	Now func() time.Time
}

// FileMaxSkew is the default MaxSkew.
const FileMaxSkew = 5 * time.Second

// File checks that a file exists and was modified within MaxAge, and not in the future beyond
// MaxSkew.
func File(opts FileOptions) (Func, error) {
	if opts.Path == "" {
		return nil, errors.New("file check: no path")
	}
	if opts.MaxAge <= 0 {
		return nil, fmt.Errorf("file check: max age %s: expected a positive duration", opts.MaxAge)
	}
	skew := opts.MaxSkew
	if skew <= 0 {
		skew = FileMaxSkew
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
		if age < -skew {
			return fmt.Errorf("%s: modified %s in the future (at most %s of clock skew)", opts.Path, (-age).Round(time.Second), skew)
		}
		if age < 0 {
			age = 0
		}
		observe(ctx, fmt.Sprintf("%s age %s", opts.Path, age.Round(time.Millisecond)))
		return nil
	}, nil
}
