package canary

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/netprobe"
)

func TestRequestValidate(t *testing.T) {
	many := make([]netprobe.Probe, MaxProbes+1)
	for i := range many {
		many[i] = netprobe.Probe{TCP: "10.0.0.1:1"}
	}
	tests := []struct {
		name string
		r    Request
		want string
	}{
		{"valid", Request{ID: 1, TimeoutMS: 1000, Probes: []netprobe.Probe{{TCP: "10.0.0.1:8091"}}}, ""},
		{"no probes", Request{ID: 1, TimeoutMS: 1000}, "expected 1 to 256 probes"},
		{"too many probes", Request{ID: 1, TimeoutMS: 1000, Probes: many}, "expected 1 to 256 probes, got 257"},
		{"no timeout", Request{ID: 1, Probes: many[:1]}, "expected a timeout"},
		{"timeout too long", Request{ID: 1, TimeoutMS: 31000, Probes: many[:1]}, "expected a timeout"},
		{"a name to dial", Request{ID: 1, TimeoutMS: 1000, Probes: []netprobe.Probe{{TCP: "kube-dns:53"}}}, "probe 0: expected ip:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestResponseErrors: what a canary says is read as fixed words; a refusal or a wrong count is
// "the canary did not answer".
func TestResponseErrors(t *testing.T) {
	errs, err := Response{Results: []string{"", "timed out", "<script>pwned</script>", "the server answered SERVFAIL"}}.Errors(4)
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[1] != netprobe.TimedOut || errs[2] != netprobe.Failed || errs[3].Error() != "the server answered SERVFAIL" {
		t.Errorf("Errors = %v", errs)
	}
	if _, err := (Response{Error: Busy}).Errors(1); err != netprobe.CanaryUnavailable {
		t.Errorf("a refusal: %v", err)
	}
	if _, err := (Response{Results: []string{""}}).Errors(2); err != netprobe.CanaryUnavailable {
		t.Errorf("a short answer: %v", err)
	}
}

// TestLinkServesRequests plays the agent's end on a real unix socket: the canary says hello, runs
// requests from its dialer, refuses invalid ones, and connects again after the agent goes.
func TestLinkServesRequests(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "c.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Serve(ctx, target)
	done := make(chan struct{})
	go func() {
		Link(ctx, Options{Socket: sock, Hello: Hello{Pod: "vitals/canary-x", PodIP: "10.1.0.5"}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
		close(done)
	}()
	for round := range 2 {
		conn, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewScanner(conn)
		r.Buffer(nil, MaxLine)
		if !r.Scan() {
			t.Fatalf("round %d: no hello: %v", round, r.Err())
		}
		var h Hello
		if err := json.Unmarshal(r.Bytes(), &h); err != nil || h.Version != Version || h.Pod != "vitals/canary-x" || h.PodIP != "10.1.0.5" {
			t.Fatalf("hello %s: %v", r.Bytes(), err)
		}
		send := func(v any) {
			b, _ := json.Marshal(v)
			if _, err := conn.Write(append(b, '\n')); err != nil {
				t.Fatal(err)
			}
		}
		read := func() Response {
			if !r.Scan() {
				t.Fatalf("no response: %v", r.Err())
			}
			var resp Response
			if err := json.Unmarshal(r.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			return resp
		}
		closed, _ := net.Listen("tcp", "127.0.0.1:0")
		closedAddr := closed.Addr().String()
		closed.Close()
		send(Request{ID: 7, TimeoutMS: 2000, Probes: []netprobe.Probe{{TCP: target.Addr().String()}, {TCP: closedAddr}}})
		if resp := read(); resp.ID != 7 || len(resp.Results) != 2 || resp.Results[0] != "" || resp.Results[1] != "connection refused" {
			t.Errorf("round %d: response %+v", round, resp)
		}
		send(Request{ID: 8, TimeoutMS: 2000})
		if resp := read(); resp.ID != 8 || resp.Error != Invalid {
			t.Errorf("round %d: an empty request answered %+v", round, resp)
		}
		if _, err := conn.Write([]byte("not json\n")); err != nil {
			t.Fatal(err)
		}
		if resp := read(); resp.Error != Invalid {
			t.Errorf("round %d: garbage answered %+v", round, resp)
		}
		conn.Close() // the agent restarts: the canary connects again
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Link did not return")
	}
}
