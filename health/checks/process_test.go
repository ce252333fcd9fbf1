package checks

import (
	"strconv"
	"testing"
)

func TestProcessRealProcesses(t *testing.T) {
	short := startChild(t, "vitals-proc", "", "-marker=zq81x")
	long := startChild(t, "vitals-process-with-long-name", "")
	for _, tc := range []struct {
		name    string
		match   ProcessMatch
		wantErr string
		detail  string
	}{
		{"by comm", ProcessMatch{Name: "vitals-proc"}, "", "pid " + strconv.Itoa(short.pid)},
		{"long name cut by the kernel", ProcessMatch{Name: "vitals-process-with-long-name"}, "", "pid " + strconv.Itoa(long.pid)},
		{"cmdline substring when asked", ProcessMatch{Name: "marker=zq81x", Cmdline: true}, "", "pid " + strconv.Itoa(short.pid)},
		{"cmdline substring not by default", ProcessMatch{Name: "marker=zq81x"}, `no process matching "marker=zq81x"`, ""},
		{"absent", ProcessMatch{Name: "vitals-absent"}, `no process matching "vitals-absent"`, ""},
		// This process's own command line names the pattern, but the caller never counts.
		{"not the caller itself", ProcessMatch{Name: "TestProcessRealProcesses-never", Cmdline: true}, "no process matching", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Process(ProcessOptions{Match: tc.match})
			if err != nil {
				t.Fatal(err)
			}
			detail, err := run(t, f)
			wantResult(t, err, tc.wantErr)
			if detail != tc.detail {
				t.Errorf("detail %q, want %q", detail, tc.detail)
			}
		})
	}
	if _, err := Process(ProcessOptions{}); err == nil {
		t.Error("empty name accepted")
	}
}

func TestProcessMatchRules(t *testing.T) {
	for _, tc := range []struct {
		match   ProcessMatch
		comm    string
		cmdline string
		want    bool
	}{
		{ProcessMatch{Name: "nova-conductor"}, "nova-conductor", "/usr/bin/python3\x00/usr/bin/nova-conductor\x00", true},
		{ProcessMatch{Name: "nova-conductor"}, "python3", "/usr/bin/python3\x00/usr/bin/nova-conductor\x00--config-file\x00", true},
		{ProcessMatch{Name: "nova-conductor"}, "sleep", "sleep\x00nova-conductor\x00", false},
		{ProcessMatch{Name: "haproxy"}, "haproxy-wrapper", "/usr/sbin/haproxy\x00-f\x00", true},
		{ProcessMatch{Name: "neutron-openvswitch-agent"}, "neutron-openvsw", "", true},
		{ProcessMatch{Name: "rabbit", Cmdline: true}, "beam.smp", "/usr/lib/erlang/beam.smp\x00-sname\x00rabbit@host\x00", true},
		{ProcessMatch{Name: "rabbit"}, "beam.smp", "/usr/lib/erlang/beam.smp\x00-sname\x00rabbit@host\x00", false},
		{ProcessMatch{Name: "x"}, "y", "", false},
	} {
		if got := tc.match.match(tc.comm, []byte(tc.cmdline)); got != tc.want {
			t.Errorf("%+v on comm %q cmdline %q = %v, want %v", tc.match, tc.comm, tc.cmdline, got, tc.want)
		}
	}
}
