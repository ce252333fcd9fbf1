package node

// The Helm chart deploy/chart/vitals installed by real Helm on the real nodes, with the operator and the agent
// from images built here: their pods turn Ready through their own probes; the agent's pod network
// connectivity check, probing from a pod's network namespace on each node (agent.connectivity.netns), sees real
// pods on both nodes and the kubernetes Service, and a node whose pod network is cut off from them; the CNI reporter
// (vitals-cni, installed by the chart's init container) chained before Debian's bridge plugin counts the
// node's real ADDs, and a failing delegate as failures; and the agent's liveness probe restarts an agent
// that is wedged (stopped with SIGSTOP); helm test (the chart's test hook) passes on them.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

const agentPort = 8090

// probeNetns is where each node has the network namespace the agent's connectivity check probes from.
const probeNetns = "/run/netns/probe"

func TestChartOnNodes(t *testing.T) {
	c := testenv.Node(t)
	img := nodeImages(t, c)
	cs := c.Client(t)
	ns := namespace(t, cs)
	ctx := context.Background()

	// peers of the connectivity check: a TCP server pod on every node
	var peers []string
	for _, n := range c.Nodes {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "peer-" + n, Labels: map[string]string{"app": "peer"}},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{
				Name: "service", Image: img.Example, ImagePullPolicy: corev1.PullNever,
				Env:            []corev1.EnvVar{{Name: "LISTEN", Value: "0.0.0.0:8080"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
			}}},
		}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		p := waitPodReady(t, cs, ns, "peer-"+n, 2*time.Minute)
		peers = append(peers, net.JoinHostPort(p.Status.PodIP, "8080"))
		// the agent probes from a network namespace on the pod network: this node's peer pod's, at
		// /run/netns/probe (the node's own /run/netns), mounted before the agent starts
		pid := c.ContainerPID(t, n, p.Status.ContainerStatuses[0].ContainerID)
		c.Exec(t, n, "sh", "-c", fmt.Sprintf("touch %[1]s && mount --bind /proc/%[2]d/ns/net %[1]s", probeNetns, pid))
		// The agent's pods, deleted by the uninstall before this runs, may still hold the mount while they
		// terminate: wait (a minute at most) for the unmount to go through, then detach it lazily.
		t.Cleanup(func() {
			c.Exec(t, n, "sh", "-c", fmt.Sprintf("for i in $(seq 60); do umount %[1]s 2>/dev/null && break; sleep 1; done; "+
				"if mountpoint -q %[1]s; then umount -l %[1]s; fi; rm -f %[1]s", probeNetns))
		})
	}

	repo := func(ref string) (string, string) { i := strings.LastIndexByte(ref, ':'); return ref[:i], ref[i+1:] }
	vRepo, vTag := repo(img.Vitals)
	aRepo, aTag := repo(img.Agent)
	values := fmt.Sprintf(`image: {repository: %s, tag: %s, pullPolicy: Never}
agent:
  enabled: true
  image: {repository: %s, tag: %s, pullPolicy: Never}
  cniReporter: {install: true}
  # a tripped CNI budget shows in the node condition only: the wedge test restarts the agent on purpose
  cniFailuresFailLiveness: false
  connectivity:
    netns: %s
    pods: [%s]
    services: [10.96.0.1:443]
    interval: 2s
    timeout: 1s
`, vRepo, vTag, aRepo, aTag, probeNetns, strings.Join(peers, ", "))
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	release := "vt" + randHex(3)
	// after the release is gone (cleanups run last first): the nodes without the agent's conditions, as before
	t.Cleanup(func() { removeAgentConditions(t, cs, c.Nodes) })
	start := time.Now()
	helm(t, c, "install", release, filepath.Join(repoRoot(), "deploy", "chart", "vitals"), "--namespace", ns, "-f", vf)
	t.Cleanup(func() { helm(t, c, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m") })
	t.Logf("helm install %s: %s", release, time.Since(start).Round(100*time.Millisecond))

	t.Run("pods turn Ready through their probes", func(t *testing.T) {
		waitFor(t, 4*time.Minute, "the operator Deployment and the agent DaemonSet Ready", func(ctx context.Context) (bool, error) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, release+"-operator", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, release+"-agent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if deploymentReady(d) && ds.Status.DesiredNumberScheduled == int32(len(c.Nodes)) &&
				ds.Status.NumberReady == ds.Status.DesiredNumberScheduled {
				return true, nil
			}
			return false, fmt.Errorf("operator %d of %d Ready, agents %d of %d; %s", d.Status.ReadyReplicas, d.Status.Replicas,
				ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, podsWaiting(ctx, cs, ns, "app.kubernetes.io/instance="+release))
		})
		t.Logf("operator and agents Ready %s after install", time.Since(start).Round(100*time.Millisecond))
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, s := range p.Status.ContainerStatuses {
				if s.RestartCount != 0 {
					t.Errorf("pod %s container %s restarted %d times; Events:\n%s", p.Name, s.Name, s.RestartCount, podEvents(cs, ns, p.Name))
				}
			}
		}
		// the agents' own probes, as the kubelet asks them, from the host
		for _, n := range c.Nodes {
			for _, path := range []string{"/ready", "/alive"} {
				if _, err := httpGet(ctx, agentURL(t, cs, n, path)); err != nil {
					t.Errorf("agent on %s: %v", n, err)
				}
			}
		}
	})

	// helm test (templates/tests/operator-test.yaml): a pod of the operator's image on a node asks the operator's
	// readiness through a Service of the test's own, and passes only on its kubernetes and informers checks.
	t.Run("helm test", func(t *testing.T) {
		out := helm(t, c, "test", release, "--namespace", ns, "--timeout", "3m")
		if !strings.Contains(out, "Phase:") || !strings.Contains(out, "Succeeded") {
			t.Errorf("helm test: no test pod succeeded:\n%s", out)
		}
		t.Logf("helm test:\n%s", out)
		// hook-succeeded: the test's pod and Service are gone again
		if p, err := cs.CoreV1().Pods(ns).Get(ctx, release+"-operator-test", metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
			t.Errorf("the test pod %s-operator-test stays after it passed", release)
		}
	})

	t.Run("connectivity check against pods on the pod network", func(t *testing.T) {
		for _, n := range c.Nodes {
			waitCondition(t, cs, n, "PodNetworkConnectivity", corev1.ConditionTrue, "PodNetworkReachable", 2*time.Minute)
		}
		// cut the first node's pod network off from every peer, as a security group that lost its rule would
		cut := c.Nodes[0]
		var ips []string
		for _, p := range peers {
			h, _, _ := net.SplitHostPort(p)
			ips = append(ips, h)
		}
		rule := []string{"OUTPUT", "-p", "tcp", "-d", strings.Join(ips, ","), "--dport", "8080", "-m", "comment", "--comment", "vitals-node-test", "-j", "DROP"}
		inProbe := []string{"nsenter", "--net=" + probeNetns, "iptables", "-w"}
		c.Exec(t, cut, append(append(inProbe, "-I"), rule...)...)
		removed := false
		unblock := func() {
			if !removed {
				c.Exec(t, cut, append(append(inProbe, "-D"), rule...)...)
				removed = true
			}
		}
		t.Cleanup(unblock)
		blocked := time.Now()
		cond := waitCondition(t, cs, cut, "PodNetworkConnectivity", corev1.ConditionFalse, "PodToPodFailing", 2*time.Minute)
		t.Logf("%s: PodNetworkConnectivity False after %s: %s", cut, time.Since(blocked).Round(100*time.Millisecond), cond.Message)
		for _, p := range peers {
			if !strings.Contains(cond.Message, p) {
				t.Errorf("condition message %q does not name the target %s", cond.Message, p)
			}
		}
		for _, n := range c.Nodes[1:] {
			if got := condition(t, cs, n, "PodNetworkConnectivity"); got == nil || got.Status != corev1.ConditionTrue {
				t.Errorf("%s, not cut off: PodNetworkConnectivity %+v", n, got)
			}
		}
		unblock()
		waitCondition(t, cs, cut, "PodNetworkConnectivity", corev1.ConditionTrue, "PodNetworkReachable", 2*time.Minute)
	})

	t.Run("CNI reporter chained before the bridge plugin", func(t *testing.T) {
		n := c.Nodes[0]
		bin := filepath.Join(c.NodeDir(n), "fixed", "opt", "cni", "bin", "vitals-cni")
		if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
			t.Fatalf("the chart's init container did not install vitals-cni into %s's /opt/cni/bin: %v", n, err)
		}
		confFile := filepath.Join(c.NodeDir(n), "fixed", "etc", "cni", "net.d", "10-bridge.conflist")
		orig, err := os.ReadFile(confFile)
		if err != nil {
			t.Fatal(err)
		}
		restored := false
		restore := func() {
			if !restored {
				writeAtomic(t, confFile, orig)
				restored = true
			}
		}
		t.Cleanup(restore)
		before := cniReports(t, cs, n)

		// the node's network configuration, its bridge entry handed to vitals-cni
		writeAtomic(t, confFile, chainReporter(t, orig, nil))
		ok := pausePod(t, cs, ns, "cni-ok", n, c.PauseImage)
		p := waitPodReady(t, cs, ns, ok, 2*time.Minute)
		node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !cidrHas(node.Spec.PodCIDR, p.Status.PodIP) {
			t.Errorf("pod %s through vitals-cni got address %q, not one of %s", ok, p.Status.PodIP, node.Spec.PodCIDR)
		}
		waitFor(t, time.Minute, "the agent counting the ADD", func(context.Context) (bool, error) {
			return cniReports(t, cs, n)["ADD/success"] > before["ADD/success"], nil
		})

		// a delegate that fails: host-local's range is one address, already taken (a node out of addresses)
		ipam := filepath.Join(c.NodeDir(n), "ipam-exhausted")
		testenv.WriteFile(t, filepath.Join(ipam, "pods", "10.99.0.10"), []byte("taken-by-the-test\neth0"), 0o644)
		writeAtomic(t, confFile, chainReporter(t, orig, map[string]any{"type": "host-local", "dataDir": ipam,
			"ranges": [][]map[string]string{{{"subnet": "10.99.0.0/24", "rangeStart": "10.99.0.10", "rangeEnd": "10.99.0.10"}}}}))
		var broken []string
		for i := range 4 { // one more than the budget's 3 failures in a row
			broken = append(broken, pausePod(t, cs, ns, "cni-broken-"+strconv.Itoa(i), n, c.PauseImage))
		}
		waitFor(t, 2*time.Minute, "the agent counting the failed ADDs", func(context.Context) (bool, error) {
			return cniReports(t, cs, n)["ADD/failure"] >= before["ADD/failure"]+4, nil
		})
		cond := waitCondition(t, cs, n, "PodNetworkHealthy", corev1.ConditionFalse, "CNIAddFailuresExceeded", time.Minute)
		t.Logf("%s: PodNetworkHealthy False: %s", n, cond.Message)
		if !strings.Contains(cond.Message, "no IP addresses available") {
			t.Errorf("condition message %q lacks the delegate's error", cond.Message)
		}

		// the delegate repaired (still behind vitals-cni): the pods get their addresses, and the successes
		// reset the budget of failures in a row (the kubelet's Events about the failures stay in their own
		// window's budget: the node condition keeps saying so for 10 minutes)
		writeAtomic(t, confFile, chainReporter(t, orig, nil))
		for _, b := range broken {
			waitPodReady(t, cs, ns, b, 3*time.Minute)
		}
		waitFor(t, time.Minute, "the agent's CNI ADD budget healthy again", func(ctx context.Context) (bool, error) {
			_, err := httpGet(ctx, agentURL(t, cs, n, "/livez/cni-add-failures"))
			return err == nil, nil
		})
		if cond := condition(t, cs, n, "PodNetworkHealthy"); cond == nil || strings.Contains(cond.Message, "cni-add-failures") {
			t.Errorf("PodNetworkHealthy still names the recovered budget: %+v", cond)
		}
		after := cniReports(t, cs, n)
		t.Logf("%s: reports counted by the agent during the test: %.0f ADD successes, %.0f ADD failures", n,
			after["ADD/success"]-before["ADD/success"], after["ADD/failure"]-before["ADD/failure"])
	})

	t.Run("liveness restarts a wedged agent", func(t *testing.T) {
		n := c.Nodes[len(c.Nodes)-1]
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/component=agent,app.kubernetes.io/instance=" + release, FieldSelector: "spec.nodeName=" + n})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("the agent pod on %s: %d pods, %v", n, len(pods.Items), err)
		}
		pod := pods.Items[0]
		before := restarts(&pod, "agent")
		var id string
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "agent" {
				id = s.ContainerID
			}
		}
		pid := c.ContainerPID(t, n, id)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		stopped := time.Now()
		waitFor(t, 3*time.Minute, "the wedged agent restarted and Ready", func(ctx context.Context) (bool, error) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return restarts(p, "agent") > before && podReady(p), nil
		})
		t.Logf("agent on %s (pid %d) stopped: restarted and Ready again after %s", n, pid, time.Since(stopped).Round(100*time.Millisecond))
		if ev := podEvents(cs, ns, pod.Name); !strings.Contains(ev, "Liveness probe failed") {
			t.Errorf("no liveness failure among the agent pod's Events:\n%s", ev)
		}
	})
}

func deploymentReady(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == want && d.Status.UpdatedReplicas == want
}

// agentURL is the agent's health server on node n: the node's InternalIP (the chart binds it there), which the
// host reaches.
func agentURL(t *testing.T, cs kubernetes.Interface, n, path string) string {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return "http://" + net.JoinHostPort(a.Address, strconv.Itoa(agentPort)) + path
		}
	}
	t.Fatalf("node %s has no InternalIP", n)
	return ""
}

// cniReports returns the agent's vitals_agent_cni_reports_total on node n by "op/result" (sources added up).
func cniReports(t *testing.T, cs kubernetes.Interface, n string) map[string]float64 {
	t.Helper()
	body, err := httpGet(context.Background(), agentURL(t, cs, n, "/metrics"))
	if err != nil {
		t.Fatalf("agent metrics on %s: %v", n, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "vitals_agent_cni_reports_total{") {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(l, "vitals_agent_cni_reports_total{"), "} ")
		var op, result string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "op":
				op = v
			case "result":
				result = v
			}
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("agent metrics on %s: %q: %v", n, l, err)
		}
		out[op+"/"+result] += f
	}
	return out
}

// chainReporter returns the node's CNI configuration with its first plugin (the bridge) handed to vitals-cni
// as the delegate, and with ipam replaced when given.
func chainReporter(t *testing.T, conf []byte, ipam map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		t.Fatalf("the node's CNI configuration: %v", err)
	}
	plugins, _ := m["plugins"].([]any)
	first, _ := plugins[0].(map[string]any)
	if first["type"] != "bridge" {
		t.Fatalf("the node's first CNI plugin is %v, not bridge", first["type"])
	}
	first["delegate"], first["type"] = "bridge", "vitals-cni"
	if ipam != nil {
		first["ipam"] = ipam
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeAtomic replaces file with data at once (containerd reloads the CNI configuration when it changes).
func writeAtomic(t *testing.T, file string, data []byte) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // containerd's watch of the directory picks the change up
}

// pausePod creates a pod of the pause image on node n and returns its name.
func pausePod(t *testing.T, cs kubernetes.Interface, ns, name, n, image string) string {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: n, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "pause", Image: image, ImagePullPolicy: corev1.PullNever}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// condition returns node n's condition of type typ, or nil.
func condition(t *testing.T, cs kubernetes.Interface, n, typ string) *corev1.NodeCondition {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range node.Status.Conditions {
		if string(node.Status.Conditions[i].Type) == typ {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// waitCondition waits until node n's condition typ has status and reason, and returns it.
func waitCondition(t *testing.T, cs kubernetes.Interface, n, typ string, status corev1.ConditionStatus, reason string, timeout time.Duration) *corev1.NodeCondition {
	t.Helper()
	var got *corev1.NodeCondition
	waitFor(t, timeout, fmt.Sprintf("%s: %s %s (%s)", n, typ, status, reason), func(ctx context.Context) (bool, error) {
		got = condition(t, cs, n, typ)
		return got != nil && got.Status == status && got.Reason == reason, nil
	})
	return got
}

// removeAgentConditions removes the node agent's conditions from the nodes' status, which outlive the agent.
func removeAgentConditions(t *testing.T, cs kubernetes.Interface, nodes []string) {
	t.Helper()
	agentTypes := map[corev1.NodeConditionType]bool{"CNIHealthy": true, "PodNetworkHealthy": true, "PodNetworkConnectivity": true}
	for _, n := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			kept := node.Status.Conditions[:0]
			for _, c := range node.Status.Conditions {
				if !agentTypes[c.Type] {
					kept = append(kept, c)
				}
			}
			node.Status.Conditions = kept
			_, err = cs.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Errorf("remove the agent's conditions from %s: %v", n, err)
		}
	}
}
