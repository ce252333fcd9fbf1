package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const kuryrConf = `# kuryr.conf
[DEFAULT]
debug = true
region = RegionOne

[kubernetes]
api_root = https://127.0.0.1:6443
pod_vif_driver: nested-vlan
enabled_handlers = vif,
    lb, kuryrport

[neutron]
auth_type = password
password = "s3cret"

[health_server]
port = 8082

[cni_health_server]
port = 8090
max_memory_usage = -1
cg_path = /sys/fs/cgroup/memory/system.slice/kuryr-cni.service

[cni_daemon]
cni_failures_count = 3
daemon_enabled = yes
vif_annotation_timeout = 60
docker_mode = off
; repeated keys keep every value
netns_proc_dir = /proc
netns_proc_dir = /host_proc
`

func TestINIValues(t *testing.T) {
	f, err := ParseINI("kuryr.conf", []byte(kuryrConf))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Sections(); !reflect.DeepEqual(got, []string{"DEFAULT", "kubernetes", "neutron", "health_server", "cni_health_server", "cni_daemon"}) {
		t.Errorf("sections %v", got)
	}
	k := f.Section("kubernetes")
	cni := f.Section("cni_health_server")
	d := f.Section("cni_daemon")
	tests := []struct {
		name      string
		got, want any
	}{
		{"string", k.String("api_root", ""), "https://127.0.0.1:6443"},
		{"colon separator", k.String("pod_vif_driver", ""), "nested-vlan"},
		{"continuation list", k.List("enabled_handlers", nil), []string{"vif", "lb", "kuryrport"}},
		{"quotes stripped", f.Section("neutron").String("password", ""), "s3cret"},
		{"DEFAULT inherited", k.Bool("debug", false), true},
		{"port", f.Section("health_server").Port("port", 1), 8082},
		{"cni port", cni.Port("port", 1), 8090},
		{"negative int", cni.Int("max_memory_usage", 0), -1},
		{"path", cni.String("cg_path", ""), "/sys/fs/cgroup/memory/system.slice/kuryr-cni.service"},
		{"int", d.Int("cni_failures_count", 0), 3},
		{"dash equals underscore", d.Int("cni-failures-count", 0), 3},
		{"bool yes", d.Bool("daemon_enabled", false), true},
		{"bool off", d.Bool("docker_mode", true), false},
		{"seconds", d.Seconds("vif_annotation_timeout", 0), 60 * time.Second},
		{"multi", d.Strings("netns_proc_dir", nil), []string{"/proc", "/host_proc"}},
		{"last of multi", d.String("netns_proc_dir", ""), "/host_proc"},
		{"absent default", d.Int("nope", 42), 42},
		{"absent section", f.Section("nope").Port("port", 8091), 8091},
		{"absent section inherits DEFAULT", f.Section("nope").String("region", ""), "RegionOne"},
		{"line", cni.Line("max_memory_usage"), 21},
		{"has", cni.Has("cg_path"), true},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
	if err := f.Err(); err != nil {
		t.Errorf("Err() = %v", err)
	}
}

func TestINIGetterErrors(t *testing.T) {
	in := `[cni_health_server]
port = 70000
max_memory_usage = lots
[cni_daemon]
cni_failures_count = 2.5
daemon_enabled = maybe
timeout = soon
prot = 1
`
	f, err := ParseINI("k.conf", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section("cni_health_server")
	if got := s.Port("port", 8090); got != 8090 {
		t.Errorf("bad port returns default, got %d", got)
	}
	s.Int("max_memory_usage", -1)
	d := f.Section("cni_daemon")
	d.IntRange("cni_failures_count", 1, 1, 100)
	d.Bool("daemon_enabled", true)
	d.Seconds("timeout", time.Second)
	d.CheckKnown("cni_failures_count", "daemon_enabled", "timeout")
	err = f.Err()
	want := []string{
		`k.conf:2: cni_health_server.port: expected a port number (1-65535), got a value of 5 bytes (not shown)`,
		`k.conf:3: cni_health_server.max_memory_usage: expected an integer, got a value of 4 bytes (not shown)`,
		`k.conf:5: cni_daemon.cni_failures_count: expected an integer from 1 to 100, got a value of 3 bytes (not shown)`,
		`k.conf:6: cni_daemon.daemon_enabled: expected a boolean (true or false), got a value of 5 bytes (not shown)`,
		`k.conf:7: cni_daemon.timeout: expected a number of seconds`,
		`k.conf:8: cni_daemon.prot: unknown option (expected one of: cni_failures_count, daemon_enabled, timeout)`,
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != len(want) {
		t.Fatalf("got %v", err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("error %d:\n got %s\nwant %s", i, es[i], w)
		}
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Errorf("errors.As *Error: %v", ce)
	}
}

func TestINISyntaxErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"key before section", "port = 1\n", "x.conf:1: option before any [section] header"},
		{"no separator", "[a]\njunk\n", `x.conf:2: invalid line (a value of 4 bytes (not shown)): expected "key = value" or "[section]"`},
		{"bad header", "[a]\n[b\n", `x.conf:2: invalid section header (a value of 2 bytes (not shown))`},
		{"empty key", "[a]\n= 3\n", `x.conf:2: invalid line`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseINI("x.conf", []byte(tt.in))
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLoadINI(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kuryr.conf")
	if err := os.WriteFile(p, []byte(kuryrConf), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadINI(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.File() != p || !f.HasSection("cni_daemon") || f.HasSection("nope") {
		t.Error("file/sections")
	}
	if _, err := LoadINI(p + ".missing"); err == nil {
		t.Error("missing file: no error")
	}
}

func FuzzParseINI(f *testing.F) {
	f.Add(kuryrConf)
	f.Add("[a]\nk = v\n  cont\n")
	f.Fuzz(func(t *testing.T, in string) {
		ini, err := ParseINI("fuzz.conf", []byte(in))
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error", err)
			}
			return
		}
		for _, name := range ini.Sections() {
			s := ini.Section(name)
			for _, k := range s.Keys() {
				s.Int(k, 0)
				s.Bool(k, false)
				s.Seconds(k, 0)
				s.List(k, nil)
				s.Port(k, 1)
			}
		}
		_ = ini.Err()
	})
}
