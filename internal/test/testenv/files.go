package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// ShortDir returns a new directory under the system's temporary directory, removed when the test ends.
// Its path is short, unlike t.TempDir's, which holds the test's name: a unix socket's path is limited
// to 108 bytes.
func ShortDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// WriteFile writes data to path with mode, making its parent directories first.
func WriteFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}
