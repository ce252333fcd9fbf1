package checks

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFileModifiedWithin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "heartbeat")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		now     time.Time
		wantErr string
	}{
		{"fresh", path, mtime.Add(30 * time.Second), ""},
		{"exactly at the limit", path, mtime.Add(time.Minute), ""},
		{"stale", path, mtime.Add(90 * time.Second), path + ": modified 1m30s ago (max 1m0s)"},
		{"clock behind the file", path, mtime.Add(-time.Second), ""},
		{"missing", filepath.Join(dir, "none"), mtime, "none: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := File(FileOptions{Path: tc.path, MaxAge: time.Minute, Now: func() time.Time { return tc.now }})
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
		})
	}
	// The real clock, on a file written just now.
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := File(FileOptions{Path: path, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, f)
	wantResult(t, err, "")
	for _, o := range []FileOptions{{}, {Path: path}, {Path: path, MaxAge: -time.Second}} {
		if _, err := File(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
