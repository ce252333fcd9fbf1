package netlink

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// childEnv tells a re-executed test binary to run one probe and print its outcome.
const childEnv = "VITALS_NETLINK_CHILD_NETNS"

// TestMain lets the test binary act as the child process of the capability tests: run with childEnv set,
// it probes netlink (in the namespace named by the variable, "-" for its own) and exits.
func TestMain(m *testing.M) {
	if ns, ok := os.LookupEnv(childEnv); ok {
		if ns == "-" {
			ns = ""
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := Probe(ctx, Options{NetnsPath: ns})
		if err != nil {
			fmt.Printf("error: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("ok links=%d routes=%d\n", s.Links, s.Routes)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		prereq.Missing(t, "needs the ip command (iproute2)")
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newNetns creates a named network namespace with a veth pair and a route, removed at cleanup.
func newNetns(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	name := fmt.Sprintf("vitals-nl-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	run(t, "ip", "-n", name, "link", "add", "vt0", "type", "veth", "peer", "name", "vt1")
	run(t, "ip", "-n", name, "addr", "add", "10.250.0.1/24", "dev", "vt0")
	run(t, "ip", "-n", name, "link", "set", "vt0", "up")
	run(t, "ip", "-n", name, "link", "set", "vt1", "up")
	run(t, "ip", "-n", name, "route", "add", "10.251.0.0/16", "via", "10.250.0.2")
	return filepath.Join("/var/run/netns", name)
}

func TestProbeInCreatedNamespace(t *testing.T) {
	path := newNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Probe(ctx, Options{NetnsPath: path})
	if err != nil {
		t.Fatalf("probe in %s: %v", path, err)
	}
	// lo, vt0 and vt1; the connected route, the static route and the local/broadcast ones.
	if s.Links != 3 {
		t.Errorf("links = %d, want 3 (lo, vt0, vt1)", s.Links)
	}
	if s.Routes < 2 {
		t.Errorf("routes = %d, want at least 2", s.Routes)
	}
	check, err := Check(Options{NetnsPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(ctx); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func TestProbeErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		opts Options
		want string
	}{
		{"missing namespace", context.Background(), Options{NetnsPath: "/nonexistent/netns/x"}, "open network namespace /nonexistent/netns/x"},
		{"not a namespace", context.Background(), Options{NetnsPath: "/proc/self/status"}, "network namespace /proc/self/status"},
		{"cancelled context", cancelled, Options{}, "context canceled"},
		{"expired deadline", expired, Options{}, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Probe(tt.ctx, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestProbeWithReducedCapabilities re-executes the test binary through capsh with capabilities dropped
// from the bounding set (so from the effective set of the child, root or not).
func TestProbeWithReducedCapabilities(t *testing.T) {
	path := newNetns(t)
	capsh, err := exec.LookPath("capsh")
	if err != nil {
		prereq.Missing(t, "needs capsh (libcap2-bin)")
	}
	tests := []struct {
		name   string
		drop   string
		netns  string
		wantOK bool
		want   string
	}{
		// Reading links and routes needs no capability: the agent's liveness does not depend on NET_ADMIN.
		{"own namespace without NET_ADMIN", "cap_net_admin", "-", true, "ok links="},
		{"created namespace without NET_ADMIN", "cap_net_admin", path, true, "ok links=3"},
		// Entering another network namespace (setns) needs CAP_SYS_ADMIN.
		{"created namespace without SYS_ADMIN", "cap_sys_admin", path, false, "operation not permitted"},
		{"own namespace without SYS_ADMIN nor NET_ADMIN", "cap_sys_admin,cap_net_admin", "-", true, "ok links="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(capsh, "--drop="+tt.drop, "--", "-c", `exec "$@"`, "_", os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+tt.netns)
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.wantOK || !strings.Contains(string(out), tt.want) {
				t.Fatalf("child: err=%v output=%q; want ok=%v and output containing %q", err, out, tt.wantOK, tt.want)
			}
		})
	}
}

func TestCheckRefusesBadOptions(t *testing.T) {
	for _, o := range []Options{{NetnsPath: "var/run/netns/x"}, {SocketTimeout: -time.Second}} {
		if _, err := Check(o); err == nil {
			t.Errorf("Check(%+v) accepted", o)
		}
	}
}
