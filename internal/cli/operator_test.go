package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/operator"
	"github.com/vitalsproject/vitals/remediation"
	"github.com/vitalsproject/vitals/tenancy"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const testKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`

func TestOperatorOptionsFromINIAndFlags(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	ini := writeFile(t, "operator.conf", `[kubernetes]
kubeconfig = `+kc+`
namespace = team-a

[neutron]
auth_type = password
auth_url = http://keystone.example:5000/v3
username = vitals
password = secret
project_name = k8s
user_domain_name = Default
project_domain_name = Default

[health_server]
port = 9082

[operator]
leader_elect = false
routegc_interval = 30
routegc_budget = 5
allow_local_workload = true
workload_qps = 7
cloud_qps = 30
`)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, o operatorOptionsView)
	}{
		{"file only", []string{"--config", ini}, func(t *testing.T, o operatorOptionsView) {
			if o.health != ":9082" || o.ns != "team-a" || o.leader || o.interval != 30*time.Second || o.budget != 5 {
				t.Errorf("got %+v", o)
			}
			if o.authURL != "http://keystone.example:5000/v3" {
				t.Errorf("auth from [neutron]: %q", o.authURL)
			}
		}},
		{"flags win", []string{"--config", ini, "--health-port", "7000", "--namespace", "b", "--leader-elect", "--routegc-budget", "3"}, func(t *testing.T, o operatorOptionsView) {
			if o.health != ":7000" || o.ns != "b" || !o.leader || o.budget != 3 || o.interval != 30*time.Second {
				t.Errorf("got %+v", o)
			}
		}},
		{"defaults", []string{"--kubeconfig", kc}, func(t *testing.T, o operatorOptionsView) {
			if o.health != ":8082" || !o.leader || o.interval != time.Minute || o.budget != 10 || o.authURL != "" {
				t.Errorf("got %+v", o)
			}
			if o.local || o.insecure || o.qps != 20 || o.burst != 40 {
				t.Errorf("workload access defaults: got %+v", o)
			}
			if o.cloudQPS != 10 || o.cloudBurst != 20 {
				t.Errorf("cloud limits: got %g and %d, want 10 and 20", o.cloudQPS, o.cloudBurst)
			}
			if o.limits != remediation.DefaultLimits() || o.pauseCM != "vitals-remediation" {
				t.Errorf("remediation %+v, pause ConfigMap %q; want the defaults", o.limits, o.pauseCM)
			}
		}},
		{"workload access from the file and flags", []string{"--config", ini, "--allow-insecure-workload", "--workload-burst", "9"}, func(t *testing.T, o operatorOptionsView) {
			if !o.local || !o.insecure || o.qps != 7 || o.burst != 9 {
				t.Errorf("got %+v", o)
			}
		}},
		{"cloud limits from the file and flags", []string{"--config", ini, "--cloud-burst", "100"}, func(t *testing.T, o operatorOptionsView) {
			if o.cloudQPS != 30 || o.cloudBurst != 100 {
				t.Errorf("cloud limits: got %g and %d, want 30 and 100", o.cloudQPS, o.cloudBurst)
			}
		}},
		{"flag turns local access off again", []string{"--config", ini, "--allow-local-workload=false"}, func(t *testing.T, o operatorOptionsView) {
			if o.local {
				t.Errorf("got %+v", o)
			}
		}},
		{"budgets of 0 mean none, never the default", []string{"--kubeconfig", kc, "--routegc-budget", "0", "--remediation-budget", "0"}, func(t *testing.T, o operatorOptionsView) {
			if o.budget != 0 || o.limits.Actions != 0 {
				t.Errorf("routegc budget %d, remediation budget %d; want 0 and 0", o.budget, o.limits.Actions)
			}
		}},
		{"remediation from the file", []string{"--config", writeFile(t, "r.conf", "[kubernetes]\nkubeconfig = "+kc+
			"\n[operator]\nroutegc_budget = 0\nremediation_budget = 0\nremediation_window = 7200\nremediation_storm_cooldown = 0\nremediation_paused = true\ndry_run = yes\npause_configmap = hold\n")},
			func(t *testing.T, o operatorOptionsView) {
				want := remediation.Limits{Actions: 0, Window: 2 * time.Hour, StormCooldown: 0, Paused: true, DryRun: true}
				if o.budget != 0 || o.limits != want || o.pauseCM != "hold" {
					t.Errorf("routegc budget %d, limits %+v, pause ConfigMap %q; want 0, %+v, hold", o.budget, o.limits, o.pauseCM, want)
				}
			}},
		{"remediation flags", []string{"--kubeconfig", kc, "--remediation-budget", "7", "--remediation-window", "10m", "--dry-run", "--remediation-paused"}, func(t *testing.T, o operatorOptionsView) {
			if o.limits.Actions != 7 || o.limits.Window != 10*time.Minute || !o.limits.DryRun || !o.limits.Paused {
				t.Errorf("limits %+v", o.limits)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := flagsOf(t, tc.args)
			o, err := f.options(fs, &bytes.Buffer{}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			v := operatorOptionsView{health: o.HealthAddr, ns: o.Namespace, leader: o.LeaderElect, interval: o.RouteGCInterval, budget: *o.RouteGCBudget,
				local: o.AllowLocalWorkload, insecure: o.AllowInsecureWorkload, qps: o.WorkloadQPS, burst: o.WorkloadBurst, cloudQPS: o.CloudQPS, cloudBurst: o.CloudBurst,
				limits: *o.Remediation, pauseCM: o.PauseConfigMap}
			if o.Cloud != nil {
				v.authURL = o.Cloud.Options.IdentityEndpoint
			}
			tc.check(t, v)
		})
	}
}

type operatorOptionsView struct {
	health, ns string
	leader     bool
	interval   time.Duration
	budget     int
	authURL    string
	local      bool
	insecure   bool
	qps        float32
	burst      int
	cloudQPS   float64
	cloudBurst int
	limits     remediation.Limits
	pauseCM    string
}

// flagsOf parses args into a fresh operatorFlags through the command's own flag set.
func flagsOf(t *testing.T, args []string) (*operatorFlags, *pflag.FlagSet) {
	t.Helper()
	f := &operatorFlags{}
	fs := operatorCommand(f).Flags()
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f, fs
}

// TestOperatorEnrolDeletionPolicy: the enrolment makes Deorbit VitalsClusters unless told Orphan (health alone).
func TestOperatorEnrolDeletionPolicy(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	for _, tc := range []struct {
		args []string
		want v1alpha1.DeletionPolicy
	}{
		{[]string{"--capi-enrol"}, v1alpha1.DeletionPolicyDeorbit},
		{[]string{"--capi-enrol", "--capi-enrol-deletion-policy", "Orphan"}, v1alpha1.DeletionPolicyOrphan},
		{[]string{"--capi-enrol", "--capi-enrol-deletion-policy=Deorbit"}, v1alpha1.DeletionPolicyDeorbit},
	} {
		f, fs := flagsOf(t, append([]string{"--kubeconfig", kc}, tc.args...))
		o, err := f.options(fs, &bytes.Buffer{}, func(string) string { return "" })
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if o.CAPIEnrolDeletionPolicy != tc.want || !o.CAPIEnrol {
			t.Errorf("%v: enrolment %v, deletion policy %q; want %q", tc.args, o.CAPIEnrol, o.CAPIEnrolDeletionPolicy, tc.want)
		}
	}
}

func TestOperatorTrustOptions(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	ini := writeFile(t, "operator.conf", "[operator]\ntrust_namespaces = infra, platform\npod_cidr_limit_v4 = 16\naccess_interval = 30\naccess_workers = 20\n")
	tests := []struct {
		name                string
		args                []string
		namespaces, authURL []string
		limit4, limit6      int
		interval            time.Duration
		workers             int
	}{
		{"defaults: no namespace trusted", []string{"--kubeconfig", kc}, nil, nil, 12, 44, time.Minute, 10},
		{"file", []string{"--kubeconfig", kc, "--config", ini}, []string{"infra", "platform"}, nil, 16, 44, 30 * time.Second, 20},
		{"flags win", []string{"--kubeconfig", kc, "--config", ini, "--trust-namespace", "ops", "--trusted-auth-url", "https://keystone.example:5000/v3", "--pod-cidr-limit-v6", "48", "--access-workers", "30"},
			[]string{"ops"}, []string{"https://keystone.example:5000/v3"}, 16, 48, 30 * time.Second, 30},
		// 0 is no limit (the chart's podCIDRLimit.v4: 0), never the default.
		{"0: no limit", []string{"--kubeconfig", kc, "--pod-cidr-limit-v4", "0", "--pod-cidr-limit-v6", "0"}, nil, nil,
			tenancy.NoPodPrefixLimit, tenancy.NoPodPrefixLimit, time.Minute, 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := flagsOf(t, tc.args)
			o, err := f.options(fs, &bytes.Buffer{}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.TrustedNamespaces, tc.namespaces) || !slices.Equal(o.TrustedAuthURLs, tc.authURL) ||
				o.MaxPodPrefix4 != tc.limit4 || o.MaxPodPrefix6 != tc.limit6 || o.AccessInterval != tc.interval || o.AccessWorkers != tc.workers {
				t.Errorf("trust %v, auth URLs %v, limits /%d /%d, interval %s, workers %d", o.TrustedNamespaces, o.TrustedAuthURLs, o.MaxPodPrefix4, o.MaxPodPrefix6, o.AccessInterval, o.AccessWorkers)
			}
		})
	}
}

// TestINISectionsNoNearMiss: no section of Kuryr's or oslo's that the operator and the agent tolerate is within
// config.NearMiss edits of one they read, so that a misspelling of a section they read is always an error.
func TestINISectionsNoNearMiss(t *testing.T) {
	for reader, read := range map[string][]string{"operator": operatorINISections(), "agent": agent.INISections()} {
		f, err := config.ParseINI("kuryr.conf", []byte("["+strings.Join(config.KuryrSections, "]\n[")+"]\n"))
		if err != nil {
			t.Fatal(err)
		}
		f.CheckSections(read, config.KuryrSections)
		if err := f.Err(); err != nil {
			t.Errorf("%s: Kuryr's sections resemble one it reads: %v", reader, err)
		}
	}
}

func TestOperatorBadConfigExits2(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	tests := []struct {
		name, ini string
		args      []string
		want      []string
	}{
		{"bad port", "[health_server]\nport = 99999\n", nil, []string{"operator.conf:2", "health_server.port", "port number"}},
		{"typo", "[health_server]\nprot = 8082\n", nil, []string{"operator.conf:2", "health_server.prot", "unknown option"}},
		{"typo in [operator]", "[operator]\nroutegc_budgte = 3\n", nil, []string{"operator.conf:2", "operator.routegc_budgte", "unknown option"}},
		{"misspelt [operator]", "[kubernetes]\n[operater]\ndry_run = true\n", nil, []string{"operator.conf:2", "[operater]", "unknown section, within 2 edits of [operator]"}},
		{"misspelt [health_server]", "[helth_server]\nport = 8082\n", nil, []string{"operator.conf:1", "[helth_server]", "of [health_server]"}},
		{"misspelt [neutron]", "[nuetron]\nauth_url = http://keystone.example:5000/v3\n", nil, []string{"operator.conf:1", "[nuetron]", "of [neutron]"}},
		{"unknown section", "[operator]\ndry_run = true\n[remediation]\nbudget = 3\n", nil, []string{"operator.conf:3", "[remediation]", "unknown section (sections read: [operator], [kubernetes], [health_server], [neutron], [keystone_authtoken]"}},
		{"the agent's section", "[pod_network_connectivity]\npods = 10.0.0.1:80\n", nil, []string{"operator.conf:1", "[pod_network_connectivity]", "unknown section"}},
		{"api_root not a URL", "[kubernetes]\napi_root = 10.0.0.1:6443\n", nil, []string{"operator.conf:2", "kubernetes.api_root", "URL of the Kubernetes API"}},
		{"bad interval", "[operator]\nroutegc_interval = soon\n", nil, []string{"operator.conf:2", "operator.routegc_interval"}},
		{"bad log level", "", []string{"--log-level", "loud"}, []string{"--log-level"}},
		{"bad workload qps", "[operator]\nworkload_qps = 0\n", nil, []string{"operator.conf:2", "operator.workload_qps"}},
		{"bad workload burst flag", "", []string{"--workload-burst", "0"}, []string{"--workload-qps/--workload-burst"}},
		{"bad kube-api burst flag", "", []string{"--kube-api-burst", "0"}, []string{"--kube-api-qps/--kube-api-burst"}},
		{"bad kube_api_qps", "[operator]\nkube_api_qps = 0\n", nil, []string{"operator.conf:2", "operator.kube_api_qps"}},
		{"bad teardown burst flag", "", []string{"--workload-teardown-burst", "0"}, []string{"--workload-teardown-qps/--workload-teardown-burst"}},
		{"bad teardown qps", "[operator]\nworkload_teardown_qps = 0\n", nil, []string{"operator.conf:2", "operator.workload_teardown_qps"}},
		{"extension cert dir without a port", "", []string{"--runtime-extension-cert-dir", "/tmp"}, []string{"--runtime-extension-cert-dir", "needs --runtime-extension-port"}},
		{"extension port without a cert dir", "", []string{"--runtime-extension-port", "9443"}, []string{"--runtime-extension-cert-dir", "tls.crt and tls.key"}},
		{"extension cert dir without the files", "", []string{"--runtime-extension-port", "9443", "--runtime-extension-cert-dir", "/nonexistent-vitals"}, []string{"--runtime-extension-cert-dir", "expected tls.crt"}},
		{"extension port out of range", "", []string{"--runtime-extension-port", "70000", "--runtime-extension-cert-dir", "/tmp"}, []string{"--runtime-extension-port", "1-65535"}},
		{"extension without the enrolment", "", []string{"--runtime-extension-port", "9443", "--runtime-extension-cert-dir", "EXTDIR"}, []string{"--runtime-extension-port", "needs --capi-enrol"}},
		{"enrolment deletion policy misspelt", "", []string{"--capi-enrol", "--capi-enrol-deletion-policy", "orphan"}, []string{"--capi-enrol-deletion-policy", "expected Deorbit or Orphan"}},
		{"enrolment deletion policy without the enrolment", "", []string{"--capi-enrol-deletion-policy", "Orphan"}, []string{"--capi-enrol-deletion-policy", "needs --capi-enrol"}},
		{"bad cloud qps", "[operator]\ncloud_qps = 0\n", nil, []string{"operator.conf:2", "operator.cloud_qps"}},
		{"bad cloud burst flag", "", []string{"--cloud-burst", "0"}, []string{"--cloud-qps/--cloud-burst"}},
		{"negative routegc budget", "", []string{"--routegc-budget", "-1"}, []string{"--routegc-budget", "0 (no removals)"}},
		{"negative remediation budget", "", []string{"--remediation-budget", "-5"}, []string{"--remediation-budget"}},
		{"zero window", "", []string{"--remediation-window", "0s"}, []string{"--remediation-window"}},
		{"remediation budget in the file", "[operator]\nremediation_budget = lots\n", nil, []string{"operator.conf:2", "operator.remediation_budget"}},
		{"pod CIDR limit out of range", "", []string{"--pod-cidr-limit-v4", "40"}, []string{"--pod-cidr-limit-v4", "0 (no limit) to 32"}},
		{"pod CIDR limit in the file", "[operator]\npod_cidr_limit_v6 = 200\n", nil, []string{"operator.conf:2", "operator.pod_cidr_limit_v6"}},
		{"not a namespace", "[operator]\ntrust_namespaces = Team_A\n", nil, []string{"--trust-namespace", "Team_A"}},
		{"not an auth URL", "", []string{"--trusted-auth-url", "keystone:5000"}, []string{"--trusted-auth-url", "http(s) URL"}},
		{"sharding with leader election", "", []string{"--sharding", "--leader-elect=true"}, []string{"--sharding", "--leader-elect"}},
		{"shard ranges not a power of two", "", []string{"--sharding", "--shard-ranges", "12"}, []string{"--shard-ranges", "power of two"}},
		{"shard ranges in the file", "[operator]\nsharding = true\nshard_ranges = 4096\n", nil, []string{"operator.conf:3", "operator.shard_ranges"}},
		{"shard margin too wide", "", []string{"--sharding", "--shard-safety-margin", "16s"}, []string{"--shard-lease-duration", "safety-margin"}},
		{"write timeout beyond the shard margin", "", []string{"--sharding", "--write-timeout", "8s"}, []string{"--write-timeout", "shorter than --shard-safety-margin (8s)"}},
		{"write timeout beyond the leader's margin", "", []string{"--write-timeout", "10s"}, []string{"--write-timeout", "the leader's safety margin", "= 8s"}},
		{"write timeout in the file", "[operator]\nsharding = true\nshard_safety_margin = 6\nwrite_timeout = 6\n", nil, []string{"--write-timeout", "(6s)"}},
		{"negative write timeout", "", []string{"--write-timeout", "-1s"}, []string{"--write-timeout", "positive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"operator", "--kubeconfig", kc}
			if tc.ini != "" {
				args = append(args, "--config", writeFile(t, "operator.conf", tc.ini))
			}
			for _, a := range tc.args {
				if a == "EXTDIR" { // a directory with the extension's tls.crt and tls.key
					a = filepath.Dir(writeFile(t, "tls.crt", "crt"))
					if err := os.WriteFile(filepath.Join(a, "tls.key"), []byte("key"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				args = append(args, a)
			}
			var out, errb bytes.Buffer
			if code := Main(args, &out, &errb); code != ExitConfig {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitConfig, errb.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q lacks %q", errb.String(), w)
				}
			}
		})
	}
}

// TestOperatorINIDefaultSection: options in [DEFAULT] reach every section, the auth section
// included (issue 11: "neutron.auth_url: missing"), and a flag still wins over the file.
func TestOperatorINIDefaultSection(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	ini := writeFile(t, "operator.conf", `[DEFAULT]
auth_url = http://keystone.example:5000/v3
drain_delay = 7

[kubernetes]
kubeconfig = `+kc+`

[neutron]
username = vitals
password = secret
project_name = k8s

[health_server]
port = 9082
`)
	tests := []struct {
		name  string
		args  []string
		drain time.Duration
	}{
		{"file", []string{"--config", ini}, 7 * time.Second},
		{"flag over file", []string{"--config", ini, "--drain-delay", "2s"}, 2 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := flagsOf(t, tc.args)
			o, err := f.options(fs, &bytes.Buffer{}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if o.Cloud == nil || o.Cloud.Options.IdentityEndpoint != "http://keystone.example:5000/v3" || o.Cloud.Options.Username != "vitals" {
				t.Fatalf("cloud %+v", o.Cloud)
			}
			if o.DrainDelay != tc.drain || o.HealthAddr != ":9082" {
				t.Fatalf("drain delay %s, health %s", o.DrainDelay, o.HealthAddr)
			}
		})
	}
}

// TestOperatorAcceptsKuryrConf: a whole kuryr.conf (testdata/kuryr.conf: every section Kuryr ships) is a
// valid operator configuration. The options the operator uses take effect; Kuryr's others are ignored,
// all named in one warning line; a wrong value of an option the operator uses is still refused with the
// file and line.
func TestOperatorAcceptsKuryrConf(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kuryr.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := writeFile(t, "kuryr.conf", string(data))
	f, fs := flagsOf(t, []string{"--config", conf, "--log-format", "json"})
	var stderr bytes.Buffer
	o, err := f.options(fs, &stderr, func(string) string { return "" })
	if err != nil {
		t.Fatalf("kuryr.conf refused: %v", err)
	}
	if o.RestConfig.Host != "https://10.0.0.1:6443" || o.RestConfig.BearerTokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		o.RestConfig.TLSClientConfig.CAFile != "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt" {
		t.Errorf("Kubernetes API from [kubernetes]: host %q token file %q CA %q", o.RestConfig.Host, o.RestConfig.BearerTokenFile, o.RestConfig.TLSClientConfig.CAFile)
	}
	if o.HealthAddr != ":8082" {
		t.Errorf("health address %q, want :8082 from [health_server]", o.HealthAddr)
	}
	if o.Cloud == nil || o.Cloud.Options.IdentityEndpoint != "https://keystone.example:5000/v3" || o.Cloud.Options.Username != "kuryr" || o.Cloud.Region != "RegionOne" {
		t.Errorf("credentials from [neutron]: %+v", o.Cloud)
	}
	// One warning, naming Kuryr's [kubernetes] options and the sections the operator does not read.
	var warnings []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["level"] == "WARN" && strings.Contains(rec["msg"].(string), "does not use") {
			warnings = append(warnings, rec)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("%d warnings about ignored options, want 1:\n%s", len(warnings), stderr.String())
	}
	var ignored []string
	for _, v := range warnings[0]["options"].([]any) {
		ignored = append(ignored, v.(string))
	}
	for _, want := range []string{"kubernetes.enabled_handlers", "kubernetes.pod_vif_driver", "kubernetes.ssl_verify_server_crt",
		"[DEFAULT]", "[binding]", "[cni_daemon]", "[cni_health_server]", "[octavia_defaults]", "[vif_pool]", "[neutron_defaults]"} {
		if !slices.Contains(ignored, want) {
			t.Errorf("warning does not name %s: %v", want, ignored)
		}
	}
	for _, used := range []string{"kubernetes.api_root", "kubernetes.token_file", "[neutron]", "[health_server]", "[kubernetes]"} {
		if slices.Contains(ignored, used) {
			t.Errorf("warning names %s, which the operator uses", used)
		}
	}
	if warnings[0]["file"] != conf {
		t.Errorf("warning names file %v, want %s", warnings[0]["file"], conf)
	}

	// Wrong values of the options the operator uses: refused, with the line.
	lineOf := func(text, prefix string) int {
		for i, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, prefix) {
				return i + 1
			}
		}
		t.Fatalf("testdata/kuryr.conf has no line %q", prefix)
		return 0
	}
	text := string(data)
	for _, tc := range []struct{ from, to, field string }{
		{"port = 8082", "port = eighty-two", "health_server.port"},
		{"api_root = https://10.0.0.1:6443", "api_root = 10.0.0.1:6443", "kubernetes.api_root"},
		{"auth_url = https://keystone.example:5000/v3", "auth_url = keystone.example", "neutron.auth_url"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			bad := writeFile(t, "kuryr.conf", strings.Replace(text, tc.from, tc.to, 1))
			var out, errb bytes.Buffer
			if code := Main([]string{"operator", "--config", bad}, &out, &errb); code != ExitConfig {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitConfig, errb.String())
			}
			want := fmt.Sprintf("%s:%d: %s", bad, lineOf(text, tc.from), tc.field)
			if !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q lacks %q", errb.String(), want)
			}
		})
	}
}

func TestOperatorShardingOptions(t *testing.T) {
	kc := writeFile(t, "kubeconfig", testKubeconfig)
	ini := writeFile(t, "operator.conf", "[operator]\nsharding = true\nshard_ranges = 32\nshard_lease_duration = 30\n")
	tests := []struct {
		name   string
		args   []string
		want   *operator.Sharding
		leader bool
	}{
		{"off by default", []string{"--kubeconfig", kc}, nil, true},
		{"flag: leader election off", []string{"--kubeconfig", kc, "--sharding"},
			&operator.Sharding{Ranges: 16, LeaseDuration: 20 * time.Second, RenewInterval: 5 * time.Second, SafetyMargin: 8 * time.Second}, false},
		{"file, and a flag wins", []string{"--kubeconfig", kc, "--config", ini, "--shard-client-side"},
			&operator.Sharding{Ranges: 32, ClientSide: true, LeaseDuration: 30 * time.Second, RenewInterval: 5 * time.Second, SafetyMargin: 8 * time.Second}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := flagsOf(t, tc.args)
			o, err := f.options(fs, &bytes.Buffer{}, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			if (o.Sharding == nil) != (tc.want == nil) || (o.Sharding != nil && *o.Sharding != *tc.want) || o.LeaderElect != tc.leader {
				t.Errorf("sharding %+v, leader election %v; want %+v, %v", o.Sharding, o.LeaderElect, tc.want, tc.leader)
			}
		})
	}
}
