package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

var (
	agentBinOnce sync.Once
	agentBin     string
	agentBinErr  error
)

// agentBinary builds cmd/vitals-agent once per test binary.
func agentBinary(t *testing.T) string {
	t.Helper()
	agentBinOnce.Do(func() {
		root := opRepoRoot()
		dir, err := os.MkdirTemp("", "vitals-agent-e2e-bin")
		if err != nil {
			agentBinErr = err
			return
		}
		agentBin = filepath.Join(dir, "vitals-agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "./cmd/vitals-agent")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			agentBinErr = fmt.Errorf("go build ./cmd/vitals-agent: %v\n%s", err, out)
		}
	})
	if agentBinErr != nil {
		t.Fatal(agentBinErr)
	}
	return agentBin
}

func agentTempDir(t *testing.T) string {
	t.Helper()
	return testenv.ShortDir(t, "vagent")
}

func TestAgentBadKuryrConfigExitsTwo(t *testing.T) {
	bin := agentBinary(t)
	dir := agentTempDir(t)
	conf := filepath.Join(dir, "kuryr.conf")
	os.WriteFile(conf, []byte("[cni_daemon]\ncni_failures_count = 3\n\n[cni_health_server]\nport = eighty\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad kuryr.conf", []string{"--config-file", conf, "--node-name", "n"}, conf + ":5: cni_health_server.port: expected a port number"},
		{"missing kuryr.conf", []string{"--config-file", filepath.Join(dir, "absent.conf"), "--node-name", "n"}, "absent.conf: read config"},
		{"bad flag value", []string{"--node-name", "n", "--cni-failure-mode", "sometimes"}, "cni-failure-mode: expected consecutive or window"},
		{"no node name", nil, "node-name: required"},
		{"report without result", []string{"report", "--socket", filepath.Join(dir, "s.sock")}, `result: missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = append(os.Environ(), "NODE_NAME=")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want status 2; stderr: %s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

// agentProcess is a running `vitals-agent`.
type agentProcess struct {
	base   string
	socket string
	stderr *lockedBuffer
	cmd    *exec.Cmd
	once   sync.Once
}

// stop sends sig and waits (at most 20 s) for the agent to exit: it must exit 0 and remove its socket.
func (p *agentProcess) stop(t *testing.T, sig os.Signal) {
	t.Helper()
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(sig)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent exited with %v after %s; log:\n%s", err, sig, p.stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("agent did not stop on %s; log:\n%s", sig, p.stderr.String())
		}
		if _, err := os.Lstat(p.socket); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("agent left its socket behind: %v", err)
		}
	})
}

// startAgentProcess runs `vitals-agent` for node against the shared kube-apiserver, through capsh with
// the given capabilities dropped when drop is not empty.
func startAgentProcess(t *testing.T, node, drop string, extra ...string) *agentProcess {
	t.Helper()
	bin := agentBinary(t)
	kubeconfig := testenv.KubeconfigPath(t)
	dir := agentTempDir(t)
	cniDir := filepath.Join(dir, "net.d")
	os.MkdirAll(cniDir, 0o755)
	os.WriteFile(filepath.Join(cniDir, "10-bridge.conflist"), []byte(`{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"},{"type":"portmap"}]}`), 0o644)
	kuryrConf := filepath.Join(dir, "kuryr.conf")
	port := freePort(t)
	os.WriteFile(kuryrConf, []byte(fmt.Sprintf("[cni_health_server]\nport = %d\nmax_memory_usage = 512\n\n[cni_daemon]\ncni_failures_count = 1\n", port)), 0o644)
	p := &agentProcess{base: fmt.Sprintf("http://127.0.0.1:%d", port), socket: filepath.Join(dir, "cni.sock"), stderr: &lockedBuffer{}}
	args := append([]string{"--config-file", kuryrConf, "--kubeconfig", kubeconfig, "--node-name", node,
		"--bind-address", "127.0.0.1", "--socket", p.socket, "--cni-conf-dir", cniDir, "--memory-source", "rss",
		"--check-interval", "1s", "--log-format", "text"}, extra...)
	var cmd *exec.Cmd
	if drop != "" {
		capsh, err := exec.LookPath("capsh")
		if err != nil {
			prereq.Missing(t, "needs capsh (libcap2-bin)")
		}
		cmd = exec.Command(capsh, append([]string{"--drop=" + drop, "--", "-c", `exec "$@"`, "_", bin}, args...)...)
	} else {
		cmd = exec.Command(bin, args...)
	}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	t.Cleanup(func() { p.stop(t, os.Interrupt) })
	return p
}

func (p *agentProcess) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (p *agentProcess) waitStatus(t *testing.T, path string, want int) string {
	t.Helper()
	var body string
	opEventually(t, 60*time.Second, fmt.Sprintf("%s answers %d", path, want), func() (bool, string) {
		code, b := p.get(t, path)
		body = b
		return code == want, fmt.Sprintf("%d %q; agent log:\n%s", code, b, p.stderr.String())
	})
	return body
}

func agentCreateNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func agentCondition(t *testing.T, c kubernetes.Interface, node string, typ corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == typ {
			return cond
		}
	}
	return corev1.NodeCondition{}
}

// TestAgentBinaryCapabilitiesAndReports runs the real `vitals-agent` twice: with every capability, and
// through capsh without NET_ADMIN. Readiness follows NET_ADMIN; liveness does not (netlink needs no
// capability). Reports sent with `vitals-agent report` exhaust the budget (cni_failures_count = 1 from
// kuryr.conf) and turn the node condition False.
func TestAgentBinaryCapabilitiesAndReports(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root to hold and drop NET_ADMIN")
	}
	c, err := kubernetes.NewForConfig(testenv.Kube(t))
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	full, reduced := "agent-bin-full-"+suffix, "agent-bin-nonetadmin-"+suffix
	agentCreateNode(t, c, full)
	agentCreateNode(t, c, reduced)

	// The reports below include successes, as the CNI reporter sends: consecutive mode.
	withAll := startAgentProcess(t, full, "", "--capabilities", "NET_ADMIN", "--cni-failure-mode", "consecutive")
	without := startAgentProcess(t, reduced, "cap_net_admin", "--capabilities", "NET_ADMIN", "--cni-failure-mode", "consecutive")

	withAll.waitStatus(t, "/ready", http.StatusOK)
	withAll.waitStatus(t, "/alive", http.StatusOK)
	without.waitStatus(t, "/alive", http.StatusOK)
	// 500 also answers "no result yet" until the check has run once: wait for its reason.
	var body string
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body = without.get(t, "/readyz/capabilities")
		if !strings.Contains(body, "no result yet") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(body, "NET_ADMIN not in") || !strings.Contains(body, "effective set") {
		t.Errorf("/readyz/capabilities without NET_ADMIN: %q", body)
	}
	if code, _ := without.get(t, "/ready"); code != http.StatusInternalServerError {
		t.Errorf("/ready without NET_ADMIN = %d", code)
	}
	if code, body := without.get(t, "/livez/netlink"); code != http.StatusOK {
		t.Errorf("/livez/netlink without NET_ADMIN = %d %q", code, body)
	}

	// cni_failures_count = 1: one failure is tolerated, the second exhausts the budget.
	bin := agentBinary(t)
	report := func(p *agentProcess, result, pod string) {
		t.Helper()
		out, err := exec.Command(bin, "report", "--socket", p.socket, "--op", "ADD", "--result", result,
			"--pod", pod, "--error", "failed to allocate for range 0").CombinedOutput()
		if err != nil {
			t.Fatalf("vitals-agent report: %v\n%s", err, out)
		}
	}
	report(withAll, "failure", "default/a")
	if code, _ := withAll.get(t, "/alive"); code != http.StatusOK {
		t.Fatalf("/alive = %d after one tolerated failure", code)
	}
	report(withAll, "failure", "default/b")
	withAll.waitStatus(t, "/alive", http.StatusInternalServerError)
	deadline := time.Now().Add(60 * time.Second)
	for agentCondition(t, c, full, "PodNetworkHealthy").Status != corev1.ConditionFalse {
		if time.Now().After(deadline) {
			t.Fatalf("PodNetworkHealthy never turned False: %+v", agentCondition(t, c, full, "PodNetworkHealthy"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	report(withAll, "success", "default/c")
	withAll.waitStatus(t, "/alive", http.StatusOK)

	// The other node is untouched by this node's failures.
	if cond := agentCondition(t, c, reduced, "PodNetworkHealthy"); cond.Status == corev1.ConditionFalse {
		t.Errorf("the other node's condition changed: %+v", cond)
	}
}

// TestAgentBinaryBoundsForgedCounts: a user allowed only to write Events in its namespace patches the
// count of a kubelet-like sandbox failure Event (about a pod that is pending on the node, so the Event
// passes every consistency check) to 2^31-1. The real agent counts a bounded step, not two billion;
// its event watcher keeps beating; liveness holds (Events never fail it); and SIGTERM stops it at once.
func TestAgentBinaryBoundsForgedCounts(t *testing.T) {
	admin := testenv.Kube(t)
	c, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1e9)
	node, ns := "agent-bin-count-"+suffix, "agent-bin-forger-"+suffix
	agentCreateNode(t, c, node)
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forgerCfg := testenv.KubeUser(t, admin, ns, "forger", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	forger, err := kubernetes.NewForConfig(forgerCfg)
	if err != nil {
		t.Fatal(err)
	}

	p := startAgentProcess(t, node, "", "--capabilities=", "--component-timeout", "3s")
	p.waitStatus(t, "/alive", http.StatusOK)

	// Events created before the agent's first list are history; create one until it is counted.
	series := `vitals_agent_cni_reports_total{op="ADD",result="failure",source="kube-events"}`
	var ev *corev1.Event
	for deadline := time.Now().Add(60 * time.Second); p.metric(t, series) < 1; {
		if time.Now().After(deadline) {
			t.Fatalf("no kubelet-like Event counted; agent log:\n%s", p.stderr.String())
		}
		now := metav1.Now()
		ev, err = forger.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "web.", Namespace: ns},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", UID: pod.UID, APIVersion: "v1"},
			Reason:         "FailedCreatePodSandBox",
			Message:        `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "x": plugin type="bridge" failed (add): forged`,
			Source:         corev1.EventSource{Component: "kubelet", Host: node},
			FirstTimestamp: now, LastTimestamp: now, Count: 1, Type: corev1.EventTypeWarning,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for wait := time.Now().Add(2 * time.Second); p.metric(t, series) < 1 && time.Now().Before(wait); {
			time.Sleep(50 * time.Millisecond)
		}
	}
	before := p.metric(t, series)
	patch := fmt.Sprintf(`{"count":2147483647,"lastTimestamp":%q}`, time.Now().UTC().Format(time.RFC3339))
	if _, err := forger.CoreV1().Events(ns).Patch(ctx, ev.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got := p.waitMetric(t, series, func(v int) bool { return v > before })
	if got-before > 10 {
		t.Errorf("a count patched to 2^31-1 counted %d occurrences, want at most 10 (MaxEventDelta)", got-before)
	}
	// The watcher beats on (its deadline is 3s), and liveness holds.
	time.Sleep(4 * time.Second)
	for _, path := range []string{"/livez/event-watcher", "/alive"} {
		if code, body := p.get(t, path); code != http.StatusOK {
			t.Errorf("%s = %d %q after the count patch", path, code, body)
		}
	}
	start := time.Now()
	p.stop(t, syscall.SIGTERM)
	t.Logf("stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// metric is the value of the metric line named by series (0 when absent).
func (p *agentProcess) metric(t *testing.T, series string) int {
	t.Helper()
	_, body := p.get(t, "/metrics")
	for _, l := range strings.Split(body, "\n") {
		if rest, found := strings.CutPrefix(l, series+" "); found {
			v, _ := strconv.Atoi(strings.TrimSpace(rest))
			return v
		}
	}
	return 0
}

// waitMetric waits (60 s at most) until the value of the metric line named by series satisfies ok,
// and returns it.
func (p *agentProcess) waitMetric(t *testing.T, series string, ok func(int) bool) int {
	t.Helper()
	var v int
	opEventually(t, 60*time.Second, "metric "+series, func() (bool, string) {
		v = p.metric(t, series)
		return ok(v), fmt.Sprintf("%s = %d; agent log:\n%s", series, v, p.stderr.String())
	})
	return v
}
