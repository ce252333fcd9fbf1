package checks

import (
	"context"
	"errors"
	"fmt"
)

// ProcessOptions configure Process.
type ProcessOptions struct {
	// Match selects the processes (see ProcessMatch).
	Match ProcessMatch
	// Root is the filesystem root under which /proc is read; "" means "/".
	Root string
}

// Process checks that at least one process matches, from /proc/<pid>/comm and cmdline. The
// calling process itself never counts.
func Process(opts ProcessOptions) (Func, error) {
	if opts.Match.Name == "" {
		return nil, errors.New("process check: no process name")
	}
	return func(ctx context.Context) error {
		pids, err := findProcesses(opts.Root, opts.Match)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return fmt.Errorf("no process matching %s", opts.Match)
		}
		observe(ctx, "pid "+pidList(pids))
		return nil
	}, nil
}
