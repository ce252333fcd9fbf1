package bounded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Sizes for the kinds of file Vitals reads. A Kubernetes Secret or ConfigMap holds at most 1 MiB, so a file
// mounted from one is never larger than ConfigSize.
const (
	// ConfigSize bounds a configuration, credentials or state file (YAML, INI, clouds.yaml, a kubeconfig).
	ConfigSize int64 = 1 << 20
	// CertSize bounds a PEM bundle of certificates (a distribution's whole CA bundle is about 220 KiB).
	CertSize int64 = 4 << 20
	// Timeout bounds reading one file: a local file is read in microseconds; only a hung filesystem takes longer.
	Timeout = 10 * time.Second
)

var (
	// ErrNotRegular is wrapped by the error for a path that is not a regular file (a device, a named pipe, a
	// socket, a directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error for a file larger than the limit.
	ErrTooLarge = errors.New("too large")
	// ErrTimeout is wrapped by the error for a read that did not finish in time.
	ErrTimeout = errors.New("not read in time")
)

// ReadFile reads the regular file at path, of at most limit bytes, within ctx (and within Timeout when ctx
// has no deadline). The path may be a symbolic link to a regular file. Anything else is refused before it is
// opened, a file larger than limit is refused without reading it, and a file that grows past limit while it is
// read is refused too. Errors name the path and say what was expected.
//
// A read that blocks (a hung network filesystem) is left behind in a goroutine when the time is up: Go cannot
// interrupt it, but the caller gets its answer.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Timeout)
		defer cancel()
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	read := read
	go func() {
		data, err := read(path, limit)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w: %v", path, ErrTimeout, context.Cause(ctx))
	}
}

// read is readFile; tests replace it with a read that blocks.
var read = readFile

func readFile(path string, limit int64) ([]byte, error) {
	// Stat before opening: opening a device can have effects of its own (a watchdog, a tape).
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, fi, limit); err != nil {
		return nil, err
	}
	// Non-blocking: a regular file swapped for a named pipe between the stat and the open must not hang the open.
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, fi, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: grew past %s while read (expected at most %s)", path, ErrTooLarge, Size(limit), Size(limit))
	}
	return data, nil
}

func check(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s; expected a file)", path, ErrNotRegular, kind(fi.Mode()))
	}
	if fi.Size() > limit {
		return fmt.Errorf("%s: %w: %s (expected at most %s)", path, ErrTooLarge, Size(fi.Size()), Size(limit))
	}
	return nil
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "mode " + m.Type().String()
}

// Size formats n bytes for an error: "1 MiB", "3.5 GiB", "912 bytes".
func Size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + [...]string{"KiB", "MiB", "GiB", "TiB"}[i]
}

// Check stats path and returns the error ReadFile would for it without reading it: for a file that another
// library reads itself (a kubeconfig's certificates, gophercloud's CA bundle). A missing path is an error
// wrapping fs.ErrNotExist, for the caller to ignore when the file is optional.
func Check(path string, limit int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return check(path, fi, limit)
}
