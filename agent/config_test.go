package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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
		{
			name: "the connectivity check's own section",
			ini: `[pod_network_connectivity]
netns = /var/run/netns/probe
pods = 10.100.1.7:8080, 10.100.2.9:8080
services = 10.96.0.1:443
dns_server = 10.96.0.10
dns_names = kubernetes.default.svc.cluster.local
interval = 20
timeout = 2.5
`,
			check: func(t *testing.T, o Options) {
				c := o.Connectivity
				o.NodeName = "node-1"
				if c.Netns != "/var/run/netns/probe" || len(c.Pods) != 2 || c.Pods[1] != "10.100.2.9:8080" || c.Services[0] != "10.96.0.1:443" ||
					c.DNSServer != "10.96.0.10" || c.DNSNames[0] != "kubernetes.default.svc.cluster.local" ||
					c.Interval != 20*time.Second || c.Timeout != 2500*time.Millisecond || o.Validate() != nil {
					t.Errorf("connectivity = %+v (%v)", c, o.Validate())
				}
			},
		},
		{name: "connectivity: a name as a target", ini: "[pod_network_connectivity]\n\npods = 10.1.1.1:80, web:80\n", wantErr: `:3: pod_network_connectivity.pods: expected ip:port (such as 10.96.0.1:443 or [fd00::1]:443), got "web:80"`},
		{name: "connectivity: a bad DNS server", ini: "[pod_network_connectivity]\ndns_server = kube-dns\n", wantErr: ":2: pod_network_connectivity.dns_server: expected an IP address"},
		{name: "connectivity: a bad name", ini: "[pod_network_connectivity]\ndns_names = a..b\n", wantErr: ":2: pod_network_connectivity.dns_names: expected a DNS name"},
		{name: "connectivity: a zero interval", ini: "[pod_network_connectivity]\ninterval = 0\n", wantErr: ":2: pod_network_connectivity.interval: expected a positive number of seconds"},
		{name: "connectivity: a relative netns", ini: "[pod_network_connectivity]\nnetns = probe\n", wantErr: ":2: pod_network_connectivity.netns: expected an absolute path"},
		{name: "connectivity: a service without its namespace", ini: "[pod_network_connectivity]\npeers_service = canary\n", wantErr: ":2: pod_network_connectivity.peers_service: expected namespace/name"},
		{name: "connectivity: a sample over the limit", ini: "[pod_network_connectivity]\npeers_sample = 1000\n", wantErr: ":2: pod_network_connectivity.peers_sample:"},
		{name: "connectivity: a relative canary socket", ini: "[pod_network_connectivity]\ncanary_socket = c.sock\n", wantErr: ":2: pod_network_connectivity.canary_socket: expected an absolute path"},
		{name: "connectivity: a typo", ini: "[pod_network_connectivity]\npod = 10.1.1.1:80\n", wantErr: ":2: pod_network_connectivity.pod: unknown option"},
		{name: "a misspelt section of the agent's", ini: "[cni_daemon]\n\n[pod_network_conectivity]\npods = 10.1.1.1:80\n", wantErr: ":3: [pod_network_conectivity]: unknown section, within 2 edits of [pod_network_connectivity]"},
		{name: "a misspelt section of Kuryr's that the agent reads", ini: "[cni_health_servre]\nport = 8091\n", wantErr: ":1: [cni_health_servre]: unknown section, within 2 edits of [cni_health_server]"},
		{name: "a section of nobody's", ini: "[cni_daemon]\n[probes]\npods = 10.1.1.1:80\n", wantErr: ":2: [probes]: unknown section (sections read: [pod_network_connectivity], [cni_daemon], [cni_health_server]"},
		{name: "a section of the operator's", ini: "[operator]\ndry_run = true\n", wantErr: ":1: [operator]: unknown section"},
		{
			name:  "Kuryr's and oslo's sections are ignored",
			ini:   "[DEFAULT]\ndebug = true\n[kubernetes]\napi_root = https://10.0.0.1:6443\n[neutron]\nauth_url = https://keystone.example:5000/v3\n[vif_pool]\nports_pool_max = 10\n[cni_daemon]\n",
			check: func(t *testing.T, o Options) {},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kuryr.conf")
			if err := os.WriteFile(path, []byte(tt.ini), 0o644); err != nil {
				t.Fatal(err)
			}
			o := DefaultOptions()
			_, err := ApplyKuryrINI(path, &o)
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

// TestApplyKuryrINIIgnored: the sections of Kuryr and oslo the agent does not read are returned, in file order,
// for its one warning line; those it reads are not.
func TestApplyKuryrINIIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kuryr.conf")
	ini := "[DEFAULT]\ndebug = true\n[cni_daemon]\ncni_failures_count = 4\n[binding]\nlink_iface = eth0\n[cni_health_server]\nport = 8091\n[os_vif_ovs]\novs_vsctl_timeout = 5\n"
	if err := os.WriteFile(path, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	ignored, err := ApplyKuryrINI(path, &o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"[DEFAULT]", "[binding]", "[os_vif_ovs]"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored %v, want %v", ignored, want)
	}
	if o.FailuresCount != 4 || o.Port != 8091 {
		t.Errorf("options = %+v", o)
	}
}
