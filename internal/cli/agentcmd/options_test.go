package agentcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/vitalsproject/vitals/agent"
)

// TestOptionsFlagsOverFile: a flag given on the command line wins over kuryr.conf, which wins over
// the flag's default; [DEFAULT] reaches every section.
func TestOptionsFlagsOverFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "kuryr.conf")
	if err := os.WriteFile(conf, []byte(`[DEFAULT]
max_memory_usage = 64

[cni_health_server]
port = 9000
cg_path = /sys/fs/cgroup/kuryr

[cni_daemon]
cni_failures_count = 5

[pod_network_connectivity]
dns_server = 10.96.0.53
dns_names = kubernetes.default.svc.cluster.local
pods = 10.100.1.7:8080
canary_socket = /run/vitals/canary/canary.sock
peers_service = vitals/vitals-agent-canary
peers_sample = 20
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want func(o agent.Options) bool
	}{
		{"defaults", []string{"--node-name", "n"}, func(o agent.Options) bool {
			return o.Port == agent.DefaultPort && o.FailuresCount == agent.DefaultFailuresCount && o.MemorySource == agent.MemoryAuto
		}},
		{"file", []string{"--node-name", "n", "--config-file", conf}, func(o agent.Options) bool {
			return o.Port == 9000 && o.FailuresCount == 5 && o.MaxMemoryMiB == 64 && o.CgroupPath == "/sys/fs/cgroup/kuryr" &&
				o.MemorySource == agent.MemoryCgroup
		}},
		{"flags over file", []string{"--node-name", "n", "--config-file", conf, "--port", "8091", "--memory-source", "rss",
			"--cni-failures-count", "1"}, func(o agent.Options) bool {
			return o.Port == 8091 && o.FailuresCount == 1 && o.MaxMemoryMiB == 64 && o.MemorySource == agent.MemoryRSS
		}},
		{"connectivity: the server from a flag, the names from the file; the flags' pods replace the file's", []string{"--node-name", "n",
			"--config-file", conf, "--connectivity-dns-server", "10.96.0.10", "--connectivity-pod", "10.100.2.9:8080", "--connectivity-pod", "10.100.3.4:8080"},
			func(o agent.Options) bool {
				c := o.Connectivity
				return c.DNSServer == "10.96.0.10" && len(c.DNSNames) == 1 && len(c.Pods) == 2 && c.Pods[0] == "10.100.2.9:8080" &&
					c.Interval == agent.DefaultConnectivityInterval
			}},
		{"peers: the service and the sample from the file, the minimum and the socket's mode from flags", []string{"--node-name", "n",
			"--config-file", conf, "--connectivity-peers-min", "5", "--connectivity-canary-socket-mode", "0660"},
			func(o agent.Options) bool {
				c := o.Connectivity
				return c.Canary == "/run/vitals/canary/canary.sock" && c.PeerService == "vitals/vitals-agent-canary" && c.PeerSample == 20 &&
					c.PeerMin == 5 && c.CanaryMode == 0o660
			}},
		{"a flag equal to its default still wins", []string{"--node-name", "n", "--config-file", conf, "--port", "8090"},
			func(o agent.Options) bool { return o.Port == 8090 && o.FailuresCount == 5 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &agentFlags{opts: agent.DefaultOptions()}
			fs := command("agent", f).Flags()
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := f.options(fs)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(o) {
				t.Fatalf("got %+v", o)
			}
		})
	}
}
