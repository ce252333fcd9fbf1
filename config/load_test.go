package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vitalsproject/vitals/internal/base/bounded"
)

// TestLoadRefusesWhatIsNotASmallFile: a config path naming a device, a named pipe, a directory or a file of
// gigabytes is a configuration error naming the file, found without reading it (the loaders read them
// whole before: /dev/zero until memory ran out, a named pipe for ever).
func TestLoadRefusesWhatIsNotASmallFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	loaders := map[string]func(string) error{
		"LoadINI":  func(p string) error { _, err := LoadINI(p); return err },
		"LoadYAML": func(p string) error { var v struct{ A int }; return LoadYAML(p, &v) },
	}
	// In this order, and stopping at the first failure: a loader without the bound fails at the
	// directory, before it is given a named pipe to hang on or /dev/zero to fill the memory with.
	for _, tc := range []struct {
		path string
		want error
	}{
		{dir, bounded.ErrNotRegular},
		{huge, bounded.ErrTooLarge},
		{fifo, bounded.ErrNotRegular},
		{"/dev/zero", bounded.ErrNotRegular},
	} {
		for _, name := range []string{"LoadINI", "LoadYAML"} {
			err := loaders[name](tc.path)
			var ce *Error
			if !errors.Is(err, tc.want) || !errors.As(err, &ce) || ce.File != tc.path || !strings.HasPrefix(err.Error(), tc.path+": read config: ") {
				t.Fatalf("%s(%s) = %v; want a config error for the file wrapping %v", name, tc.path, err, tc.want)
			}
		}
	}
}
