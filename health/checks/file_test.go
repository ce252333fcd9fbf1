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
		{"clock behind the file within the skew", path, mtime.Add(-5 * time.Second), ""},
		{"modified in the future", path, mtime.Add(-time.Hour), path + ": modified 1h0m0s in the future (at most 5s of clock skew)"},
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

// A heartbeat file touched with a modification time a year ahead (touch -d) is unhealthy under
// the real clock, not fresh for ever; one a second ahead is within the skew.
func TestFileFutureModificationRealClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heartbeat")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := File(FileOptions{Path: path, MaxAge: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ahead   time.Duration
		wantErr string
	}{
		{365 * 24 * time.Hour, "in the future (at most 5s of clock skew)"},
		{time.Second, ""},
	} {
		m := time.Now().Add(tc.ahead)
		if err := os.Chtimes(path, m, m); err != nil {
			t.Fatal(err)
		}
		_, err = run(t, f)
		wantResult(t, err, tc.wantErr)
	}
}
