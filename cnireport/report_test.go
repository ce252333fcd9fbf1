package cnireport

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateAndNormalize(t *testing.T) {
	tests := []struct {
		name    string
		r       Report
		wantErr string
		count   int
	}{
		{"minimal", Report{Op: "add", Result: "FAILURE"}, "", 1},
		{"count kept", Report{Op: OpDel, Result: Success, Pod: "ns/p", Count: 7}, "", 7},
		{"count bounded", Report{Op: OpAdd, Result: Failure, Count: 1 << 31}, "", MaxCount},
		{"negative count", Report{Op: OpAdd, Result: Failure, Count: -1}, "count: -1", 0},
		{"no op", Report{Result: Success}, "op: missing", 0},
		{"bad op", Report{Op: "RESIZE", Result: Success}, `op: "RESIZE"`, 0},
		{"no result", Report{Op: OpAdd}, "result: missing", 0},
		{"bad pod", Report{Op: OpAdd, Result: Success, Pod: "a/b/c"}, `pod: "a/b/c"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := tt.r.Normalize()
			if n.Count != tt.count || n.Op != Op(strings.ToUpper(string(tt.r.Op))) || n.Result != Outcome(strings.ToLower(string(tt.r.Result))) {
				t.Errorf("Normalize = %+v", n)
			}
		})
	}
}

// TestSendBoundsTheAnswer: whatever listens on the socket cannot make the reporter (a CNI plugin, run for
// every pod) read more than MaxLine bytes of answer per report.
func TestSendBoundsTheAnswer(t *testing.T) {
	path := filepath.Join(shortDir(t), "agent.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(io.Discard, c) // the report, up to the client's CloseWrite
		_, _ = c.Write([]byte(`{"ok":true,"error":"` + strings.Repeat("x", 4<<20) + `"}` + "\n"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = Send(ctx, path, Report{Op: OpAdd, Result: Success})
	if err == nil || !strings.Contains(err.Error(), "answers longer than 65536 bytes for 1 reports") {
		t.Fatalf("Send = %v; want the 4 MiB answer refused", err)
	}
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cnireport")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
