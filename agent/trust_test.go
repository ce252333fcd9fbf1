package agent

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// attackerText is what a forger writes into its Events; it must never reach a node condition.
const attackerText = "ATTACKER-CONTROLLED-TEXT"

// TestForgedSandboxEventsAreNotEvidence: a user allowed only to write Events in its own namespace
// (token authentication, RBAC on the real kube-apiserver) forges kubelet's FailedCreatePodSandBox
// Events about a node, far more than the failure budget allows. The node's agent keeps its liveness,
// counts none of them, and writes no condition with the forger's text. Events that are evidence (their
// pod is on the node and not running) do turn PodNetworkHealthy False, still without failing liveness
// and without the Event's text.
func TestForgedSandboxEventsAreNotEvidence(t *testing.T) {
	admin := testenv.Kube(t)
	c := kubeClient(t)
	node := uniqueName("agent-forged")
	createNode(t, c, node)
	ns := uniqueName("agent-forger")
	createNamespace(t, c, ns)
	victimNS := uniqueName("agent-victim")
	createNamespace(t, c, victimNS)
	forgerCfg := testenv.KubeUser(t, admin, ns, "forger", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}})
	forger, err := kubernetes.NewForConfig(forgerCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The forger's rights are what the test says: Events of its namespace, nothing else.
	if _, err := forger.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("forger lists pods: %v, want forbidden", err)
	}
	if _, err := forger.CoreV1().Events(victimNS).Create(ctx, sandboxEvent(victimNS, "web-0", node, "kubelet", 1), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("forger writes Events in another namespace: %v, want forbidden", err)
	}
	// An Event names pods of its own namespace only: the apiserver refuses one about another's pod.
	cross := sandboxEvent(victimNS, "web-0", node, "kubelet", 1)
	cross.Namespace = ns
	if _, err := forger.CoreV1().Events(ns).Create(ctx, cross, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("forger's Event about a pod of another namespace: %v, want invalid", err)
	}

	// Pods of the forger's namespace (created by someone else): one running on the node, one on another
	// node, one pending on the node (which real kubelet Events will name).
	running := createPod(t, c, ns, "running", node)
	setPodRunning(t, c, running)
	createPod(t, c, ns, "elsewhere", node+"-other")
	pending := createPod(t, c, ns, "pending", node)

	a, base, _ := startAgent(t, node, nil)

	forge := func(pod string, mutate func(*corev1.Event)) {
		t.Helper()
		e := sandboxEvent(ns, pod, node, "kubelet", 1)
		e.Message = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "x": plugin type="bridge" failed (add): ` + attackerText
		if mutate != nil {
			mutate(e)
		}
		if _, err := forger.CoreV1().Events(ns).Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatalf("forge event: %v", err)
		}
	}
	// The source is live (past its first list, which takes existing Events as history) and the pod
	// index synced once an Event about the running pod gets its verdict.
	waitForWithin(t, 60*time.Second, "the Events source to judge", func() bool {
		forge("running", nil)
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if verdicts(t, base)[VerdictPodRunning] > 0 {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	})
	// FailuresCount is 1: two counted failures would trip the budget. Each forgery below is five.
	for i := range 5 {
		forge("no-such-pod-"+strconv.Itoa(i), nil)                                                               // no such pod
		forge("running", nil)                                                                                    // its sandbox exists
		forge("elsewhere", nil)                                                                                  // not on this node
		forge("pending", func(e *corev1.Event) { e.InvolvedObject.UID = "forged-uid" })                          // not that pod
		forge("pending", func(e *corev1.Event) { e.LastTimestamp = metav1.NewTime(time.Now().Add(-time.Hour)) }) // history: ignored
		forge("pending", func(e *corev1.Event) { e.LastTimestamp = metav1.NewTime(time.Now().Add(time.Hour)) })  // from the future
		forge("pending", func(e *corev1.Event) { e.Message = "failed to pull image: " + attackerText })          // not the network
	}
	want := map[string]int{VerdictNoPod: 10, VerdictPodRunning: 5, VerdictUIDChanged: 5, VerdictStale: 5, VerdictNotNetwork: 5}
	// Events whose pod is unknown wait PodWait (5s) for it before their verdict.
	waitForWithin(t, 60*time.Second, "verdicts on the forged events", func() bool {
		got := verdicts(t, base)
		for v, n := range want {
			if got[v] < n {
				return false
			}
		}
		return true
	})
	if got := verdicts(t, base); got[VerdictCounted] != 0 {
		t.Fatalf("forged events counted: %v", got)
	}
	if code, body := httpGet(t, base+"/alive"); code != http.StatusOK {
		t.Fatalf("/alive = %d %q after forged events", code, body)
	}
	if code, body := httpGet(t, base+"/livez/"+BudgetSandboxNetwork); code != http.StatusOK {
		t.Fatalf("/livez/%s = %d %q after forged events", BudgetSandboxNetwork, code, body)
	}
	cond := waitCondition(t, c, node, ConditionPodNetworkHealthy, corev1.ConditionTrue)
	if strings.Contains(cond.Message, attackerText) {
		t.Fatalf("PodNetworkHealthy carries the forger's text: %+v", cond)
	}

	// Events that are evidence: the pod is pending on this node. Two trip the (degraded) budget:
	// PodNetworkHealthy turns False, liveness stays OK, and the message does not quote the Event.
	forge("pending", func(e *corev1.Event) { e.InvolvedObject.UID = pending.UID })
	forge("pending", func(e *corev1.Event) { e.InvolvedObject.UID = pending.UID })
	cond = waitCondition(t, c, node, ConditionPodNetworkHealthy, corev1.ConditionFalse)
	if cond.Reason != "SandboxNetworkFailures" || strings.Contains(cond.Message, attackerText) || !strings.Contains(cond.Message, ns+"/pending") {
		t.Errorf("PodNetworkHealthy = %+v", cond)
	}
	if code, body := httpGet(t, base+"/alive"); code != http.StatusOK {
		t.Errorf("/alive = %d %q: Events alone must not fail liveness", code, body)
	}
	if code, _ := httpGet(t, base+"/livez/"+BudgetSandboxNetwork); code != http.StatusInternalServerError {
		t.Errorf("/livez/%s = %d, want 500 (the budget is spent)", BudgetSandboxNetwork, code)
	}
	if a.Budget().Count() != 0 {
		t.Errorf("the CNI's own budget counted kubelet Events: %d", a.Budget().Count())
	}
}

// startAgent runs an agent for node against the shared kube-apiserver until the test ends (one
// tolerated failure, no capability required, then mutate's changes) and returns it with its base URL
// and options.
func startAgent(t *testing.T, node string, mutate func(*Options)) (*Agent, string, Options) {
	t.Helper()
	return startAgentWith(t, node, mutate, Deps{})
}

// startAgentWith is startAgent with deps (its Kube and Listener are the test's).
func startAgentWith(t *testing.T, node string, mutate func(*Options), deps Deps) (*Agent, string, Options) {
	t.Helper()
	dir := testenv.ShortDir(t, "vagent")
	cniDir := filepath.Join(dir, "net.d")
	testenv.WriteFile(t, filepath.Join(cniDir, "10-kuryr.conf"), []byte(kuryr), 0o644)
	o := DefaultOptions()
	o.NodeName = node
	o.SocketPath = filepath.Join(dir, "cni.sock")
	o.CNIConfDir = cniDir
	o.FailuresCount = 1
	o.Capabilities = nil
	o.CheckInterval = time.Second
	o.ComponentTimeout = 3 * time.Second
	o.MemorySource = MemoryRSS
	if mutate != nil {
		mutate(&o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deps.Kube, deps.Listener = agentKube(t), ln
	a, err := New(o, deps)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	})
	base := "http://" + ln.Addr().String()
	waitStatus(t, base+"/alive", http.StatusOK)
	return a, base, o
}

var verdictLine = regexp.MustCompile(`(?m)^vitals_agent_kube_events_total\{verdict="([a-z-]+)"\} (\d+)$`)

// verdicts reads vitals_agent_kube_events_total from the agent's /metrics.
func verdicts(t *testing.T, base string) map[string]int {
	t.Helper()
	_, body := httpGet(t, base+"/metrics")
	out := map[string]int{}
	for _, m := range verdictLine.FindAllStringSubmatch(body, -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}
