package checks

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPortRealSockets(t *testing.T) {
	spec := "tcp4=127.0.0.1:0;udp4=127.0.0.1:0"
	if hasIPv6(t) {
		spec += ";tcp6=[::1]:0;udp6=[::1]:0"
	}
	// A listener in this process for the helper to connect to.
	server, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	serverPort := portOf(t, server.Addr().String())
	spec += ";dial=" + server.Addr().String()
	svc := startChild(t, "vitals-fake-svc", spec)
	other := startChild(t, "vitals-other", "tcp4=127.0.0.1:0")
	free := freePort(t)
	p := func(i int) int { return portOf(t, svc.addrs[i]) }
	svcMatch := ProcessMatch{Name: "vitals-fake-svc"}

	type tc struct {
		name    string
		opts    PortOptions
		wantErr string
		detail  string
	}
	tests := []tc{
		{name: "tcp4 listen", opts: PortOptions{Process: svcMatch, Ports: []int{p(0)}, Listen: true},
			detail: "tcp 127.0.0.1:" + strconv.Itoa(p(0)) + " pid " + strconv.Itoa(svc.pid)},
		{name: "udp4 bound", opts: PortOptions{Process: svcMatch, Ports: []int{p(1)}, Listen: true, Protocols: []string{"udp"}},
			detail: "udp 127.0.0.1:" + strconv.Itoa(p(1))},
		{name: "udp port not looked at with tcp only", opts: PortOptions{Process: svcMatch, Ports: []int{p(1)}, Listen: true, Protocols: []string{"tcp"}},
			wantErr: "holds no listening socket on port " + strconv.Itoa(p(1))},
		{name: "any of several ports", opts: PortOptions{Process: svcMatch, Ports: []int{free, p(0)}, Listen: true}},
		{name: "free port", opts: PortOptions{Process: svcMatch, Ports: []int{free}, Listen: true},
			wantErr: `process "vitals-fake-svc" (pid ` + strconv.Itoa(svc.pid) + ") holds no listening socket on port " + strconv.Itoa(free)},
		{name: "free port, any process", opts: PortOptions{Ports: []int{free}, Listen: true},
			wantErr: "no listening socket on port " + strconv.Itoa(free)},
		{name: "another process's port", opts: PortOptions{Process: svcMatch, Ports: []int{portOf(t, other.addrs[0])}, Listen: true},
			wantErr: "holds no listening socket"},
		{name: "another process's port, any process", opts: PortOptions{Ports: []int{portOf(t, other.addrs[0])}, Listen: true}},
		{name: "no such process", opts: PortOptions{Process: ProcessMatch{Name: "vitals-absent"}, Ports: []int{p(0)}},
			wantErr: `no process matching "vitals-absent"`},
		{name: "connected to a remote port", opts: PortOptions{Process: svcMatch, Ports: []int{serverPort}},
			detail: "->127.0.0.1:" + strconv.Itoa(serverPort) + " pid"},
		{name: "a remote port is not a listener", opts: PortOptions{Process: svcMatch, Ports: []int{serverPort}, Listen: true},
			wantErr: "holds no listening socket"},
		{name: "port form accepts listeners too", opts: PortOptions{Process: svcMatch, Ports: []int{p(0)}}},
	}
	if len(svc.addrs) > 3 {
		tests = append(tests,
			tc{name: "tcp6 listen", opts: PortOptions{Process: svcMatch, Ports: []int{p(2)}, Listen: true, Protocols: []string{"tcp"}},
				detail: "tcp6 [::1]:" + strconv.Itoa(p(2))},
			tc{name: "udp6 bound", opts: PortOptions{Process: svcMatch, Ports: []int{p(3)}, Listen: true, Protocols: []string{"udp"}},
				detail: "udp6 [::1]:" + strconv.Itoa(p(3))},
		)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Port(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q, want it to contain %q", detail, tc.detail)
			}
		})
	}
}

func TestParseHexAddrPort(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0035":                         "0.0.0.0:53",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"0000000000000000FFFF00000100007F:0016": "[::ffff:127.0.0.1]:22",
		"B80D0120000000000000000001000000:01BB": "[2001:db8::1]:443",
	} {
		got, err := parseHexAddrPort(in)
		if err != nil || got.String() != want {
			t.Errorf("parseHexAddrPort(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:XYZ", "01007F:0016", "zz00007F:0016"} {
		if _, err := parseHexAddrPort(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestPortFixture shows what a running machine cannot: a socket of a process whose fds we may
// not read, and a missing tcp6 table (IPv6 disabled in the kernel).
func TestPortFixture(t *testing.T) {
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	root := writeTree(t, map[string]string{
		"proc/net/tcp": header +
			"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0 100 0 0 10 0\n" +
			"   1: 0100007F:1F91 0100007F:D431 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0\n",
		"proc/net/udp":     header,
		"proc/net/udp6":    header,
		"proc/100/comm":    "nova-conductor\n",
		"proc/100/cmdline": "/usr/bin/python3\x00/usr/bin/nova-conductor\x00",
		"proc/200/comm":    "other\n",
	})
	if err := os.MkdirAll(filepath.Join(root, "proc/100/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("socket:[1111]", filepath.Join(root, "proc/100/fd/3")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(root, "proc/100/fd/0")); err != nil {
		t.Fatal(err)
	}
	nova := ProcessMatch{Name: "nova-conductor"}
	for _, tc := range []struct {
		name    string
		opts    PortOptions
		wantErr string
	}{
		{"listening, no tcp6 table", PortOptions{Process: nova, Ports: []int{8080}, Listen: true}, ""},
		{"time-wait socket belongs to nobody", PortOptions{Ports: []int{8081}}, "no socket on port 8081"},
		{"other process", PortOptions{Process: ProcessMatch{Name: "other"}, Ports: []int{8080}}, "holds no socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Root = root
			f, err := Port(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
		})
	}
}

func TestPortInvalidOptions(t *testing.T) {
	for _, o := range []PortOptions{{}, {Ports: []int{0}}, {Ports: []int{70000}}, {Ports: []int{1}, Protocols: []string{"sctp"}}} {
		if _, err := Port(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
