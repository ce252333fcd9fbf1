package bounded

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := write("small", "checks: []\n")
	exact := write("exact", strings.Repeat("x", 64))
	over := write("over", strings.Repeat("x", 65))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 30); err != nil { // 8 GiB of holes: refused by its size, never read
		t.Fatal(err)
	}
	f.Close()
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path string
		want       string // data, when no error
		err        error
		msg        string
	}{
		{name: "regular file", path: small, want: "checks: []\n"},
		{name: "at the limit", path: exact, want: strings.Repeat("x", 64)},
		{name: "symbolic link to a file", path: link, want: "checks: []\n"},
		{name: "over the limit", path: over, err: ErrTooLarge, msg: "65 bytes (expected at most 64 bytes)"},
		{name: "sparse 8 GiB", path: sparse, err: ErrTooLarge, msg: "8 GiB"},
		{name: "/dev/zero", path: "/dev/zero", err: ErrNotRegular, msg: "a character device"},
		{name: "/dev/urandom", path: "/dev/urandom", err: ErrNotRegular, msg: "a character device"},
		{name: "link to /dev/zero", path: zeroLink, err: ErrNotRegular, msg: "a character device"},
		{name: "named pipe without a writer", path: fifo, err: ErrNotRegular, msg: "a named pipe"},
		{name: "directory", path: dir, err: ErrNotRegular, msg: "a directory"},
		{name: "unix socket", path: sock, err: ErrNotRegular, msg: "a socket"},
		{name: "missing", path: filepath.Join(dir, "missing"), err: os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadFile(context.Background(), tc.path, 64)
			if tc.err == nil {
				if err != nil || string(data) != tc.want {
					t.Fatalf("ReadFile = %q, %v; want %q", data, err, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("ReadFile error = %v; want %v naming %s and saying %q", err, tc.err, tc.path, tc.msg)
			}
		})
	}
}

func TestReadFileGivesUpWhenTheReadBlocks(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	read = func(string, int64) ([]byte, error) { <-release; return nil, nil } // a hung filesystem
	defer func() { read = readFile }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ReadFile(ctx, "/mnt/hung/config", 64)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "/mnt/hung/config") {
		t.Fatalf("ReadFile error = %v; want %v naming the path", err, ErrTimeout)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 1 << 20: "1 MiB", 8 << 30: "8 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q; want %q", n, got, want)
		}
	}
}

func TestReadCloser(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		tooLarge   bool
	}{
		{"under", "abc", false},
		{"at the limit", "abcd", false},
		{"over", "abcde", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := ReadCloser(io.NopCloser(strings.NewReader(tc.body)), 4, "response of GET /x")
			data, err := io.ReadAll(rc)
			if tc.tooLarge {
				if !errors.Is(err, ErrTooLarge) || err.Error() != "response of GET /x: too large: more than 4 bytes" {
					t.Fatalf("ReadAll = %q, %v; want too large", data, err)
				}
				return
			}
			if err != nil || string(data) != tc.body {
				t.Fatalf("ReadAll = %q, %v; want %q", data, err, tc.body)
			}
		})
	}
	// An endless body ends at the limit.
	data, err := io.ReadAll(ReadCloser(io.NopCloser(zeros{}), 1<<20, "endless"))
	if !errors.Is(err, ErrTooLarge) || len(data) != 1<<20 {
		t.Fatalf("endless body: %d bytes, %v", len(data), err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestCheck(t *testing.T) {
	if err := Check("/dev/zero", 64); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Check(/dev/zero) = %v", err)
	}
	if err := Check(filepath.Join(t.TempDir(), "missing"), 64); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Check(missing) = %v", err)
	}
}
