package cnireport

import (
	"strings"
	"testing"
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
