package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/config"
)

func TestApplyKuryrINI(t *testing.T) {
	tests := []struct {
		name    string
		ini     string
		check   func(t *testing.T, o Options)
		wantErr string
	}{
		{
			name: "kuryr.conf with the agent's options among Kuryr's own",
			ini: `[DEFAULT]
debug = true

[cni_daemon]
daemon_enabled = true
bind_address = 127.0.0.1:5036
cni_failures_count = 5

[cni_health_server]
port = 8091
max_memory_usage = 256
cg_path = /sys/fs/cgroup/memory/system.slice/kuryr-cni.service

[kubernetes]
api_root = https://10.0.0.1:6443
`,
			check: func(t *testing.T, o Options) {
				if o.Port != 8091 || o.MaxMemoryMiB != 256 || o.FailuresCount != 5 ||
					o.CgroupPath != "/sys/fs/cgroup/memory/system.slice/kuryr-cni.service" || o.MemorySource != MemoryCgroup {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{
			name: "absent options keep the defaults",
			ini:  "[cni_health_server]\n",
			check: func(t *testing.T, o Options) {
				if o.Port != DefaultPort || o.MaxMemoryMiB != -1 || o.FailuresCount != 3 || o.MemorySource != MemoryAuto {
					t.Errorf("options = %+v", o)
				}
			},
		},
		{name: "bad port", ini: "[cni_health_server]\n\nport = http\n", wantErr: ":3: cni_health_server.port: expected a port number"},
		{name: "bad memory", ini: "[cni_health_server]\nmax_memory_usage = 0\n", wantErr: ":2: cni_health_server.max_memory_usage: expected a number of MiB above 0"},
		{name: "relative cg_path", ini: "[cni_health_server]\ncg_path = memory/kuryr\n", wantErr: ":2: cni_health_server.cg_path: expected an absolute path"},
		{name: "bad failures count", ini: "[cni_daemon]\ncni_failures_count = -2\n", wantErr: ":2: cni_daemon.cni_failures_count: expected an integer from 0"},
		{name: "syntax error", ini: "[cni_daemon\n", wantErr: ":1: invalid section header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kuryr.conf")
			if err := os.WriteFile(path, []byte(tt.ini), 0o644); err != nil {
				t.Fatal(err)
			}
			o := DefaultOptions()
			err := ApplyKuryrINI(path, &o)
			if tt.wantErr != "" {
				var cerr *config.Error
				if err == nil || !errors.As(err, &cerr) || !strings.Contains(err.Error(), path+tt.wantErr) {
					t.Fatalf("err = %v, want a *config.Error containing %q", err, path+tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *Options)
		want   string
	}{
		{"defaults with a node", func(o *Options) {}, ""},
		{"no node name", func(o *Options) { o.NodeName = "" }, "node-name: required"},
		{"no node name is fine without kube sources", func(o *Options) { o.NodeName, o.WatchEvents, o.NodeConditions = "", false, false }, ""},
		{"port", func(o *Options) { o.Port = 70000 }, "port: expected a port number"},
		{"memory", func(o *Options) { o.MaxMemoryMiB = -5 }, "max-memory-usage"},
		{"memory source", func(o *Options) { o.MemorySource = "swap" }, "memory-source: expected auto, cgroup or rss"},
		{"mode", func(o *Options) { o.FailureMode = "sliding" }, "cni-failure-mode: expected consecutive or window"},
		{"window", func(o *Options) { o.FailureMode, o.FailureWindow = ModeWindow, 0 }, "cni-failure-window"},
		{"socket too long", func(o *Options) { o.SocketPath = "/" + strings.Repeat("s", 120) }, "socket: unix socket paths"},
		{"interval", func(o *Options) { o.CheckInterval = 0 }, "check-interval"},
		{"heartbeat", func(o *Options) { o.HeartbeatPeriod = -time.Second }, "condition-heartbeat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			o.NodeName = "node-1"
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var cerr *config.Error
			if err == nil || !errors.As(err, &cerr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a *config.Error containing %q", err, tt.want)
			}
		})
	}
}
