package netprobe

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestDependencies keeps the package small: the standard library and the DNS message parser only,
// because the canary (cmd/vitals-canary) links it on every node.
func TestDependencies(t *testing.T) {
	for _, pkg := range []string{".", "../canary", "../cmd/vitals-canary"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if !strings.HasPrefix(p, "github.com/vitalsproject/vitals/") && p != "golang.org/x/net/dns/dnsmessage" {
				t.Errorf("%s depends on %s: the canary must stay the standard library and netprobe", pkg, p)
			}
		}
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"timed out", "timed out"},
		{"connection refused", "connection refused"},
		{"the server answered NXDOMAIN", "the server answered NXDOMAIN"},
		{"the server answered rcode 23", "the server answered rcode 23"},
		{"the server answered evil.attacker.example", "failed"},
		{"dial tcp 10.0.0.1:80: i/o timeout", "failed"},
		{"", "failed"},
		{"Timed Out", "failed"},
	}
	for _, tt := range tests {
		if got := Canonical(tt.in); string(got) != tt.want {
			t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWord(t *testing.T) {
	tests := []struct {
		err  error
		want Failure
	}{
		{context.DeadlineExceeded, TimedOut},
		{os.ErrDeadlineExceeded, TimedOut},
		{context.Canceled, Canceled},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, Refused},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, NoRoute},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ENETUNREACH)}, NoRoute},
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("socket", syscall.EPERM)}, NotPermitted},
		{NetnsOpenFailed, NetnsOpenFailed},
		{Failure("a remote's text"), Failed},
		{errors.New("something else"), Failed},
	}
	for _, tt := range tests {
		if got := Word(tt.err); got != tt.want {
			t.Errorf("Word(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestProbeValidate(t *testing.T) {
	tests := []struct {
		p    Probe
		want string // "" valid
	}{
		{Probe{TCP: "10.0.0.1:8091"}, ""},
		{Probe{TCP: "[fd00::1]:8091"}, ""},
		{Probe{DNS: "kubernetes.default.svc.cluster.local", Server: "10.96.0.10:53"}, ""},
		{Probe{TCP: "web:80"}, "expected ip:port"},
		{Probe{TCP: "10.0.0.1:0"}, "expected ip:port"},
		{Probe{DNS: "a..b", Server: "10.96.0.10:53"}, "expected a DNS name"},
		{Probe{DNS: "a.b", Server: "10.96.0.10"}, "expected the DNS server as ip:port"},
		{Probe{TCP: "10.0.0.1:1", DNS: "a.b", Server: "10.96.0.10:53"}, "either tcp, or dns"},
		{Probe{}, "either tcp, or dns"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: Validate() = %v, want %q", tt.p, err, tt.want)
		}
	}
}

// TestTCP against real listeners on loopback.
func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	d := &net.Dialer{}
	errs := RunAll(context.Background(), d, []Probe{{TCP: ln.Addr().String()}, {TCP: closedAddr}})
	if errs[0] != nil || errs[1] != Refused {
		t.Errorf("RunAll = %v", errs)
	}
}
