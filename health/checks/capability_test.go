package checks

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCapabilityNamesMatchKernelNumbers(t *testing.T) {
	for name, num := range map[string]int{
		"CHOWN": unix.CAP_CHOWN, "NET_ADMIN": unix.CAP_NET_ADMIN, "NET_RAW": unix.CAP_NET_RAW,
		"SYS_ADMIN": unix.CAP_SYS_ADMIN, "SYS_RESOURCE": unix.CAP_SYS_RESOURCE, "AUDIT_READ": unix.CAP_AUDIT_READ,
		"PERFMON": unix.CAP_PERFMON, "BPF": unix.CAP_BPF, "CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
	} {
		got, err := ParseCapability("cap_" + strings.ToLower(name))
		if err != nil || got != num {
			t.Errorf("ParseCapability(%s) = %d, %v; want %d", name, got, err, num)
		}
		if CapabilityName(num) != name {
			t.Errorf("CapabilityName(%d) = %s, want %s", num, CapabilityName(num), name)
		}
	}
	if len(capabilityNames) != unix.CAP_LAST_CAP+1 {
		t.Errorf("table has %d names, kernel headers %d", len(capabilityNames), unix.CAP_LAST_CAP+1)
	}
	if _, err := ParseCapability("NET_WIZARD"); err == nil {
		t.Error("unknown name accepted")
	}
	if CapabilityName(63) != "63" {
		t.Error("unknown number not printed as a number")
	}
}

// realCapEff reads this process's effective set the way a user would check it by hand.
func realCapEff(t *testing.T) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			eff, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return eff
		}
	}
	t.Fatal("no CapEff")
	return 0
}

func TestCapabilityRealProcess(t *testing.T) {
	eff := realCapEff(t)
	var have, missing []string
	for i, n := range capabilityNames {
		if eff&(1<<uint(i)) != 0 {
			have = append(have, n)
		} else {
			missing = append(missing, n)
		}
	}
	if len(have) > 0 {
		f, err := Capability(CapabilityOptions{Names: have})
		if err != nil {
			t.Fatal(err)
		}
		detail, err := run(t, f)
		wantResult(t, err, "")
		if detail != strings.Join(have, ",") {
			t.Errorf("detail %q", detail)
		}
	}
	if len(missing) > 0 {
		// e.g. SYS_RESOURCE on a container host that withholds it.
		f, err := Capability(CapabilityOptions{Names: append(have, missing[0])})
		if err != nil {
			t.Fatal(err)
		}
		_, err = run(t, f)
		wantResult(t, err, missing[0]+" not in the effective set")
	}
	// This process, by its PID.
	f, err := Capability(CapabilityOptions{Names: have[:1], PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, f)
	wantResult(t, err, "")
}

func TestCapabilityFixture(t *testing.T) {
	status := func(eff string) string {
		return "Name:\tcni\nCapInh:\t0000000000000000\nCapEff:\t" + eff + "\nCapBnd:\t000001ffffffffff\n"
	}
	tests := []struct {
		name    string
		files   map[string]string
		names   []string
		pid     int
		wantErr string
	}{
		{"net admin present", map[string]string{"proc/self/status": status("0000000000001000")}, []string{"NET_ADMIN"}, 0, ""},
		{"all dropped", map[string]string{"proc/self/status": status("0000000000000000")}, []string{"NET_ADMIN", "NET_RAW"}, 0,
			"NET_ADMIN,NET_RAW not in the effective set (CapEff 0000000000000000)"},
		{"other pid", map[string]string{"proc/42/status": status("0000000000002000")}, []string{"net_raw"}, 42, ""},
		{"no CapEff line", map[string]string{"proc/self/status": "Name:\tx\n"}, []string{"NET_ADMIN"}, 0, "no CapEff field"},
		{"garbage", map[string]string{"proc/self/status": status("zz")}, []string{"NET_ADMIN"}, 0, "parse CapEff"},
		{"no process", map[string]string{}, []string{"NET_ADMIN"}, 7, "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			f, err := Capability(CapabilityOptions{Names: tc.names, PID: tc.pid, Root: root})
			if err != nil {
				t.Fatal(err)
			}
			_, err = run(t, f)
			wantResult(t, err, tc.wantErr)
		})
	}
}

func TestCapabilityInvalidOptions(t *testing.T) {
	for _, o := range []CapabilityOptions{{}, {Names: []string{"FLY"}}, {Names: []string{"CHOWN"}, PID: -1}} {
		if _, err := Capability(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
