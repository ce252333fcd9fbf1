package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/agent"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// fakePlugin stands for the node's real CNI plugin: it records its stdin and CNI_* environment, and
// succeeds, or fails as a plugin that ran out of addresses does when $FAKE_DIR/fail exists.
const fakePlugin = `#!/bin/sh
cat > "$FAKE_DIR/stdin.$CNI_COMMAND"
env | grep '^CNI_' | sort > "$FAKE_DIR/env.$CNI_COMMAND"
if [ -e "$FAKE_DIR/fail" ]; then
	printf '{"cniVersion":"1.0.0","code":11,"msg":"failed to allocate for range 0","details":"no IP addresses available in range set"}'
	echo "fake: out of addresses" >&2
	exit 1
fi
printf '{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],"ips":[{"address":"10.0.0.5/24","interface":0}]}'
`

const fakeResult = `{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/x"}],"ips":[{"address":"10.0.0.5/24","interface":0}]}`

// buildPlugin builds vitals-cni into dir.
func buildPlugin(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "vitals-cni")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runtime runs the plugin as a container runtime does: CNI_* in the environment, the configuration on
// stdin, the result on stdout.
type runtime struct {
	bin, cniPath, fakeDir string
}

// newRuntime builds the plugin into a new short directory (unix socket paths are limited to 108
// bytes) whose bin/ holds the fake real plugin.
func newRuntime(t *testing.T) runtime {
	t.Helper()
	dir := testenv.ShortDir(t, "vcni")
	cniPath := filepath.Join(dir, "bin")
	testenv.WriteFile(t, filepath.Join(cniPath, "fake-cni"), []byte(fakePlugin), 0o755)
	return runtime{bin: buildPlugin(t, dir), cniPath: cniPath, fakeDir: dir}
}

func (r runtime) exec(t *testing.T, command, conf string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(r.bin)
	cmd.Env = []string{
		"CNI_COMMAND=" + command, "CNI_CONTAINERID=0a1b2c", "CNI_NETNS=/var/run/netns/x", "CNI_IFNAME=eth0",
		"CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=0a1b2c",
		"CNI_PATH=/nonexistent:" + r.cniPath, "FAKE_DIR=" + r.fakeDir, "PATH=/usr/bin:/bin",
	}
	cmd.Stdin = strings.NewReader(conf)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestReporterDrivesTheBudget runs vitals-cni as a runtime would in front of a fake real plugin, with a
// node agent listening on its socket in consecutive mode (cni_failures_count 1): results pass through
// unchanged, and the agent's budget follows them, successes included.
func TestReporterDrivesTheBudget(t *testing.T) {
	rt := newRuntime(t)
	dir := rt.fakeDir
	socket := filepath.Join(dir, "run", "cni.sock")
	base := startAgent(t, dir, socket)
	conf := `{"cniVersion":"1.0.0","name":"pods","type":"vitals-cni","delegate":"fake-cni","reportSocket":"` + socket + `","ipam":{"type":"host-local","subnet":"10.0.0.0/24"}}`

	// A successful ADD: the real plugin's result, unchanged; the configuration it got is ours with
	// its type and without our keys; the environment passed through.
	out, _, code := rt.exec(t, "ADD", conf)
	if code != 0 || out != fakeResult {
		t.Fatalf("ADD: exit %d, stdout %q, want 0 and %q", code, out, fakeResult)
	}
	var got map[string]any
	if b, err := os.ReadFile(filepath.Join(dir, "stdin.ADD")); err != nil || json.Unmarshal(b, &got) != nil {
		t.Fatalf("the real plugin's stdin: %v %s", err, b)
	}
	if got["type"] != "fake-cni" || got["delegate"] != nil || got["reportSocket"] != nil || got["name"] != "pods" || got["ipam"] == nil {
		t.Errorf("the real plugin got %v", got)
	}
	if env, _ := os.ReadFile(filepath.Join(dir, "env.ADD")); !strings.Contains(string(env), "CNI_CONTAINERID=0a1b2c") || !strings.Contains(string(env), "CNI_IFNAME=eth0") {
		t.Errorf("the real plugin's environment:\n%s", env)
	}
	waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="ADD",result="success",source="socket"} 1`)

	// Two failed ADDs: one is tolerated, the second trips the budget, which names the CNI's error.
	if err := os.WriteFile(filepath.Join(dir, "fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := rt.exec(t, "ADD", conf)
	if code != 1 || !strings.Contains(out, `"code":11`) || !strings.Contains(stderr, "fake: out of addresses") {
		t.Fatalf("failed ADD: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="ADD",result="failure",source="socket"} 1`)
	if code, body := get(t, base+"/livez/"+agent.BudgetCNIAdd); code != http.StatusOK {
		t.Fatalf("budget tripped after one tolerated failure: %d %q", code, body)
	}
	rt.exec(t, "ADD", conf)
	body := waitBody(t, base+"/livez/"+agent.BudgetCNIAdd, "failure budget exhausted")
	if !strings.Contains(body, "CNI ADD failed for pod shop/web-0") || !strings.Contains(body, "no IP addresses available in range set") {
		t.Errorf("/livez/%s: %q", agent.BudgetCNIAdd, body)
	}
	// A failed DEL is counted, not spent.
	out, _, code = rt.exec(t, "DEL", conf)
	if code != 1 || !strings.Contains(out, "failed to allocate") {
		t.Fatalf("DEL: exit %d, stdout %q", code, out)
	}
	waitBody(t, base+"/metrics", `vitals_agent_cni_reports_total{op="DEL",result="failure",source="socket"} 1`)

	// The CNI recovers: one successful ADD resets the consecutive budget.
	if err := os.Remove(filepath.Join(dir, "fail")); err != nil {
		t.Fatal(err)
	}
	if _, _, code := rt.exec(t, "ADD", conf); code != 0 {
		t.Fatalf("ADD after recovery: exit %d", code)
	}
	waitBody(t, base+"/livez/"+agent.BudgetCNIAdd, "ok")

	// VERSION needs no configuration and no delegate.
	if out, _, code := rt.exec(t, "VERSION", `{"cniVersion":"1.0.0"}`); code != 0 || !strings.Contains(out, `"supportedVersions"`) {
		t.Errorf("VERSION: exit %d, stdout %q", code, out)
	}
}

// TestReporterWithoutAgent: when no agent listens, the CNI result is the real plugin's all the same;
// the failed report is said on stderr.
func TestReporterWithoutAgent(t *testing.T) {
	rt := newRuntime(t)
	dir := rt.fakeDir
	conf := `{"cniVersion":"1.0.0","name":"pods","type":"vitals-cni","delegate":"fake-cni","reportSocket":"` + filepath.Join(dir, "absent.sock") + `"}`
	out, stderr, code := rt.exec(t, "ADD", conf)
	if code != 0 || out != fakeResult || !strings.Contains(stderr, "vitals-cni: report ADD success") {
		t.Fatalf("ADD without agent: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	for _, tt := range []struct{ conf, want string }{
		{`{"type":"vitals-cni"}`, `\"delegate\": expected`},
		{`{"type":"vitals-cni","delegate":"../../bin/sh"}`, "is a path"},
		{`{"type":"vitals-cni","delegate":"absent"}`, `plugin \"absent\" not found`},
		{`not json`, "network configuration"},
		{`{"type":"vitals-cni","delegate":"fake-cni","padding":"` + strings.Repeat("x", 1<<20) + `"}`, "larger than 1048576 bytes"},
	} {
		out, _, code := rt.exec(t, "ADD", tt.conf)
		if code != 1 || !strings.Contains(out, tt.want) || !strings.Contains(out, `"code":`) {
			t.Errorf("%s: exit %d, stdout %q, want a CNI error containing %q", tt.conf, code, out, tt.want)
		}
	}
}

// startAgent runs a node agent without Kubernetes (the socket source only), consecutive mode, one
// tolerated failure, until the test ends, and returns its base URL.
func startAgent(t *testing.T, dir, socket string) string {
	t.Helper()
	cniDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(cniDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cniDir, "10-pods.conflist"), []byte(`{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"vitals-cni","delegate":"fake-cni"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := agent.DefaultOptions()
	o.NodeName, o.WatchEvents, o.NodeConditions, o.Capabilities = "", false, false, nil
	o.SocketPath, o.CNIConfDir = socket, cniDir
	o.FailureMode, o.FailuresCount = agent.ModeConsecutive, 1
	o.MemorySource = agent.MemoryRSS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(o, agent.Deps{Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()
	waitBody(t, base+"/livez/"+agent.BudgetCNIAdd, "ok")
	return base
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitBody waits (10 s at most) until url's body contains want, and returns it.
func waitBody(t *testing.T, url, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, url)
		if strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q lacks %q", url, body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInstall copies the plugin into a CNI binary directory, over an older copy.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	bin := buildPlugin(t, dir)
	dest := filepath.Join(dir, "opt-cni-bin")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dest, "vitals-cni"), []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "install", dest).CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(bin)
	got, err := os.ReadFile(filepath.Join(dest, "vitals-cni"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("installed copy differs (%v)", err)
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 1 {
		t.Errorf("install left %d files in %s", len(entries), dest)
	}
}

// TestStdlibAndReportClientOnly: a CNI plugin runs for every pod; it links nothing but the standard
// library, the report client and the version variable (itself the standard library only).
func TestStdlibAndReportClientOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/vitalsproject/vitals/cnireport" && p != "github.com/vitalsproject/vitals/cmd/vitals-cni" &&
			p != "github.com/vitalsproject/vitals/internal/base/version" {
			t.Errorf("vitals-cni links %s", p)
		}
	}
}

// TestVersionFlag: vitals-cni --version, by hand, prints its version and exits 0.
func TestVersionFlag(t *testing.T) {
	out, err := exec.Command("go", "run", ".", "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "vitals-cni ") {
		t.Errorf("vitals-cni --version: %v: %q", err, out)
	}
}
