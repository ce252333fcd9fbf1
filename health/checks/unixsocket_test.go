package checks

import (
	"net"
	"path/filepath"
	"strconv"
	"testing"
)

func TestUnixSocketRealProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "svc.sock")
	abstract := "@vitals-test-" + strconv.Itoa(freePort(t))
	svc := startChild(t, "vitals-sock-svc", "unix="+path+";unix="+abstract)
	startChild(t, "vitals-other", "tcp4=127.0.0.1:0")
	// A socket of this process (not the helper's) at another path.
	mine := filepath.Join(dir, "mine.sock")
	l, err := net.Listen("unix", mine)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	svcMatch := ProcessMatch{Name: "vitals-sock-svc"}
	for _, tc := range []struct {
		name    string
		opts    UnixSocketOptions
		wantErr string
		detail  string
	}{
		{"held by the service", UnixSocketOptions{Process: svcMatch, Path: path}, "", path + " pid " + strconv.Itoa(svc.pid)},
		{"abstract socket", UnixSocketOptions{Process: svcMatch, Path: abstract}, "", abstract + " pid"},
		{"any process", UnixSocketOptions{Path: path}, "", path},
		{"held by another process", UnixSocketOptions{Process: ProcessMatch{Name: "vitals-other"}, Path: path}, `process "vitals-other"`, ""},
		{"someone else's socket", UnixSocketOptions{Process: svcMatch, Path: mine}, "holds no unix socket " + mine, ""},
		{"nothing bound", UnixSocketOptions{Process: svcMatch, Path: filepath.Join(dir, "none.sock")}, "no unix socket bound to", ""},
		{"no such process", UnixSocketOptions{Process: ProcessMatch{Name: "vitals-absent"}, Path: path}, "no process matching", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := UnixSocket(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if err == nil && detail != tc.detail && !(len(detail) > len(tc.detail) && detail[:len(tc.detail)] == tc.detail) {
				t.Errorf("detail %q, want prefix %q", detail, tc.detail)
			}
		})
	}
	if _, err := UnixSocket(UnixSocketOptions{}); err == nil {
		t.Error("empty path accepted")
	}
}
