package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/vitalsproject/vitals/health"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// kubeClient connects to the shared test kube-apiserver with client-go's clientset (the tests' own
// reads and writes).
func kubeClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(testenv.Kube(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agentKube is the agent's own client of the shared test kube-apiserver.
func agentKube(t *testing.T) *Kube {
	t.Helper()
	k, err := NewKube(testenv.Kube(t))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// createPod creates a Pod bound to node (no kubelet runs it: it stays Pending), deleted at cleanup.
func createPod(t *testing.T, c kubernetes.Interface, ns, name, node string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}},
			AutomountServiceAccountToken: new(false)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	t.Cleanup(func() {
		_ = c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	})
	return p
}

// setPodRunning writes the status kubelet would once the pod's sandbox and container run.
func setPodRunning(t *testing.T, c kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "registry.invalid/app:1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if _, err := c.CoreV1().Pods(p.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update pod status: %v", err)
	}
}

// startPods runs a pod index of node until the test ends and waits for its first list.
func startPods(t *testing.T, k *Kube, node string) *PodIndex {
	t.Helper()
	p := NewPodIndex(k, node)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "pod index synced", p.HasSynced)
	return p
}

// uniqueName returns a DNS-1123 name unique to this test run.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e12)
}

// createNode creates a Node object (no kubelet behind it), deleted at cleanup.
func createNode(t *testing.T, c kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return n
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// sandboxEvent is the Event kubelet (core/v1 recorder) records when a CNI ADD fails.
func sandboxEvent(ns, pod, node, component string, count int32) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: pod + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, APIVersion: "v1"},
		Reason:         SandboxFailureReason,
		Message:        `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "abc": plugin type="kuryr-cni" failed (add): no IP available`,
		Source:         corev1.EventSource{Component: component, Host: node},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          count,
		Type:           corev1.EventTypeWarning,
	}
}

type collected struct {
	mu      sync.Mutex
	reports []Report
}

func (c *collected) Report(_ context.Context, r Report) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reports = append(c.reports, r)
	return nil
}

func (c *collected) get() []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Report(nil), c.reports...)
}

func TestEventSourceAgainstKubeAPIServer(t *testing.T) {
	c := kubeClient(t)
	k := agentKube(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node := uniqueName("agent-events")
	other := node + "-other"
	ns := uniqueName("agent-events")
	createNamespace(t, c, ns)
	events := c.CoreV1().Events(ns)
	for _, p := range []string{"old-pod", "web-1", "web-3", "web-4", "marker"} {
		createPod(t, c, ns, p, node)
	}
	createPod(t, c, ns, "web-2", other)
	pods := startPods(t, k, node)
	waitFor(t, "pods in the index", func() bool { _, ok := pods.Pod(ns, "marker"); return ok })

	// History: an Event that exists before the source starts is not reported.
	old, err := events.Create(ctx, sandboxEvent(ns, "old-pod", node, "kubelet", 5), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create event: %v", err)
	}

	got := &collected{}
	synced := make(chan struct{}, 10)
	var vmu sync.Mutex
	verdicts := map[string]int{}
	src := &EventSource{Client: k, NodeName: node, Pods: pods, Reporter: got, BeatPeriod: 50 * time.Millisecond,
		Synced:    func() { synced <- struct{}{} },
		OnVerdict: func(v string) { vmu.Lock(); verdicts[v]++; vmu.Unlock() }}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("event source never listed")
	}

	// New failures on this node, and noise that must be ignored.
	if _, err := events.Create(ctx, sandboxEvent(ns, "web-1", node, "kubelet", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Create(ctx, sandboxEvent(ns, "web-2", other, "kubelet", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := events.Create(ctx, sandboxEvent(ns, "web-3", node, "someone-else", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	notSandbox := sandboxEvent(ns, "web-4", node, "kubelet", 1)
	notSandbox.Reason = "BackOff"
	if _, err := events.Create(ctx, notSandbox, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The old Event happens twice more: kubelet bumps its count.
	old.Count = 7
	old.LastTimestamp = metav1.Now()
	if old, err = events.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two reports", func() bool { return len(got.get()) >= 2 })

	// Writing the same count again (an unrelated update) reports nothing.
	old.Message += " (again)"
	if _, err := events.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A marker event after it: once it is reported, the previous update has been seen.
	if _, err := events.Create(ctx, sandboxEvent(ns, "marker", node, "kubelet", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "marker report", func() bool {
		for _, r := range got.get() {
			if r.Pod == ns+"/marker" {
				return true
			}
		}
		return false
	})
	reps := got.get()
	want := map[string]int{ns + "/web-1": 1, ns + "/old-pod": 2, ns + "/marker": 1}
	if len(reps) != len(want) {
		t.Fatalf("reports = %+v, want one per pod of %v", reps, want)
	}
	for _, r := range reps {
		if want[r.Pod] != r.Count || r.Op != OpAdd || r.Result != Failure || r.Source != "kube-events" {
			t.Errorf("report %+v, want count %d", r, want[r.Pod])
		}
		// The Event's message is its writer's text: it is not passed on.
		if strings.Contains(r.Error, "no IP available") || !strings.Contains(r.Error, "(Event "+ns+"/") {
			t.Errorf("report error %q", r.Error)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	vmu.Lock()
	defer vmu.Unlock()
	if verdicts[VerdictCounted] != 3 {
		t.Errorf("verdicts = %v, want 3 counted", verdicts)
	}
}

// staticResults is a settable health result list.
type staticResults struct {
	mu sync.Mutex
	rs []health.Result
}

func (s *staticResults) set(rs ...health.Result) { s.mu.Lock(); s.rs = rs; s.mu.Unlock() }
func (s *staticResults) get() []health.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]health.Result(nil), s.rs...)
}

func okResult(name string) health.Result {
	return health.Result{Name: name, Status: health.StatusOK}
}

func failResult(name, msg string) health.Result {
	return health.Result{Name: name, Status: health.StatusFailed, Err: fmt.Errorf("%s", msg)}
}

func nodeCondition(t *testing.T, c kubernetes.Interface, node string, typ corev1.NodeConditionType) (corev1.NodeCondition, bool) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == typ {
			return cond, true
		}
	}
	return corev1.NodeCondition{}, false
}

func TestNodeConditionsAgainstKubeAPIServer(t *testing.T) {
	c := kubeClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	node := uniqueName("agent-conditions")
	createNode(t, c, node)

	// Someone else (kubelet) owns the Ready condition; it must survive our writes.
	n, err := c.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	res := &staticResults{}
	res.set(okResult(CheckNetlink), okResult(CheckCNIConfig), okResult(BudgetCNIAdd), okResult(BudgetSandboxNetwork))
	hb := &tally{}
	var trMu sync.Mutex
	var transitions []string
	nc := &NodeConditions{Client: agentKube(t), NodeName: node, Specs: DefaultConditionSpecs(), Results: res.get,
		Period: time.Second, HeartbeatPeriod: time.Minute, Heartbeat: hb, Clock: clk,
		OnTransition: func(from, to corev1.NodeCondition) {
			trMu.Lock()
			transitions = append(transitions, fmt.Sprintf("%s:%s->%s", to.Type, from.Status, to.Status))
			trMu.Unlock()
		}}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- nc.Run(runCtx) }()

	waitFor(t, "conditions written", func() bool {
		cond, ok := nodeCondition(t, c, node, ConditionPodNetworkHealthy)
		return ok && cond.Status == corev1.ConditionTrue
	})
	cni, _ := nodeCondition(t, c, node, ConditionCNIHealthy)
	if cni.Status != corev1.ConditionTrue || cni.Reason != "CNIWorking" || !cni.LastTransitionTime.Time.Equal(t0) || !cni.LastHeartbeatTime.Time.Equal(t0) {
		t.Errorf("CNIHealthy = %+v", cni)
	}

	// The budget trips: PodNetworkHealthy turns False at the next comparison, CNIHealthy keeps its
	// transition time.
	t1 := t0.Add(5 * time.Second)
	clk.SetTime(t1)
	res.set(okResult(CheckNetlink), okResult(CheckCNIConfig),
		failResult(BudgetCNIAdd, "failure budget exhausted: 4 consecutive failures (limit 4), last: CNI ADD failed for pod a/b"), okResult(BudgetSandboxNetwork))
	nc.Poke()
	waitFor(t, "PodNetworkHealthy False", func() bool {
		cond, _ := nodeCondition(t, c, node, ConditionPodNetworkHealthy)
		return cond.Status == corev1.ConditionFalse
	})
	pn, _ := nodeCondition(t, c, node, ConditionPodNetworkHealthy)
	if pn.Reason != "CNIAddFailuresExceeded" || !strings.Contains(pn.Message, "4 consecutive failures") || !pn.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("PodNetworkHealthy = %+v", pn)
	}
	cni, _ = nodeCondition(t, c, node, ConditionCNIHealthy)
	if !cni.LastTransitionTime.Time.Equal(t0) || !cni.LastHeartbeatTime.Time.Equal(t1) {
		t.Errorf("CNIHealthy after an unrelated change = %+v", cni)
	}

	// Nothing changes: no write until the heartbeat period has passed, then lastHeartbeatTime moves.
	t2 := t1.Add(30 * time.Second)
	clk.Step(30 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if cni, _ = nodeCondition(t, c, node, ConditionCNIHealthy); !cni.LastHeartbeatTime.Time.Equal(t1) {
		t.Errorf("heartbeat written before its period: %+v (at %s)", cni, t2)
	}
	t3 := t1.Add(time.Minute)
	clk.SetTime(t3)
	clk.Step(0)
	nc.Poke()
	waitFor(t, "heartbeat", func() bool {
		cond, _ := nodeCondition(t, c, node, ConditionCNIHealthy)
		return cond.LastHeartbeatTime.Time.Equal(t3)
	})

	// kubelet's condition is untouched.
	ready, ok := nodeCondition(t, c, node, corev1.NodeReady)
	if !ok || ready.Reason != "KubeletReady" {
		t.Errorf("Ready condition lost or changed: %+v", ready)
	}
	stop()
	<-done
	trMu.Lock()
	if len(transitions) != 1 || transitions[0] != "PodNetworkHealthy:True->False" {
		t.Errorf("transitions = %v", transitions)
	}
	trMu.Unlock()
	if _, _, beats, _ := hb.snapshot(); beats == 0 {
		t.Error("no heartbeat")
	}

	// A restarted agent adopts the transition times of unchanged conditions.
	clk.SetTime(t3.Add(time.Hour))
	nc2 := &NodeConditions{Client: agentKube(t), NodeName: node, Specs: DefaultConditionSpecs(), Results: res.get, Clock: clk, Period: time.Second}
	runCtx2, stop2 := context.WithCancel(ctx)
	done2 := make(chan error, 1)
	go func() { done2 <- nc2.Run(runCtx2) }()
	waitFor(t, "rewrite after restart", func() bool {
		cond, _ := nodeCondition(t, c, node, ConditionCNIHealthy)
		return cond.LastHeartbeatTime.Time.Equal(t3.Add(time.Hour))
	})
	cni, _ = nodeCondition(t, c, node, ConditionCNIHealthy)
	pn, _ = nodeCondition(t, c, node, ConditionPodNetworkHealthy)
	if !cni.LastTransitionTime.Time.Equal(t0) || !pn.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("transition times not adopted: CNIHealthy %s, PodNetworkHealthy %s", cni.LastTransitionTime, pn.LastTransitionTime)
	}
	stop2()
	<-done2
}
