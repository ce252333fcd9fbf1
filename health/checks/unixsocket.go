package checks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// UnixSocketOptions configure UnixSocket.
type UnixSocketOptions struct {
	// Process that must hold the socket; an empty Name accepts any process.
	Process ProcessMatch
	// Path the socket is bound to, as /proc/net/unix shows it ("@name" for an abstract socket).
	Path string
	// Root is the filesystem root under which /proc is read; "" means "/".
	Root string
}

// UnixSocket checks that a process holds a unix socket bound to Path (a server listening there,
// or a connection it accepted), from /proc/net/unix and /proc/<pid>/fd.
func UnixSocket(opts UnixSocketOptions) (Func, error) {
	if opts.Path == "" {
		return nil, errors.New("unix socket check: no path")
	}
	return func(ctx context.Context) error {
		inodes, err := readUnixSockets(opts.Root, opts.Path)
		if err != nil {
			return err
		}
		if len(inodes) == 0 {
			return fmt.Errorf("no unix socket bound to %s", opts.Path)
		}
		if opts.Process.Name == "" {
			observe(ctx, opts.Path)
			return nil
		}
		held, pids, note, err := heldSockets(opts.Root, opts.Process)
		if err != nil {
			return err
		}
		for ino := range inodes {
			if pid, ok := held[ino]; ok {
				observe(ctx, opts.Path+" pid "+strconv.Itoa(pid))
				return nil
			}
		}
		return fmt.Errorf("process %s (pid %s) holds no unix socket %s%s", opts.Process, pidList(pids), opts.Path, note)
	}, nil
}
