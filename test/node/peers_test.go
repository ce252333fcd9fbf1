package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// TestChartPeersOnNodes: the agent's connectivity check with its peers discovered (agent.connectivity.peers:
// the canary DaemonSet on the pod network and its headless Service), on the real nodes: each node's agent
// finds the other node's canary and reaches it from its own canary (PodNetworkConnectivity True); a node whose
// pods' packets to the other node are dropped, while its own address still reaches it, is PodToPodFailing; the
// rule removed, reachable again.
func TestChartPeersOnNodes(t *testing.T) {
	c := testenv.Node(t)
	img := nodeImages(t, c)
	cs := c.Client(t)
	ns := namespace(t, cs)
	ctx := context.Background()

	repo := func(ref string) (string, string) { i := strings.LastIndexByte(ref, ':'); return ref[:i], ref[i+1:] }
	vRepo, vTag := repo(img.Vitals)
	aRepo, aTag := repo(img.Agent)
	values := fmt.Sprintf(`image: {repository: %s, tag: %s, pullPolicy: Never}
operator: {replicas: 1}
agent:
  enabled: true
  image: {repository: %s, tag: %s, pullPolicy: Never}
  connectivity:
    interval: 2s
    timeout: 1s
    peers: {enabled: true, sample: 1, minPeers: 1}
`, vRepo, vTag, aRepo, aTag)
	vf := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vf, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	release := "vp" + randHex(3)
	t.Cleanup(func() { removeAgentConditions(t, cs, c.Nodes) })
	start := time.Now()
	helm(t, c, "install", release, filepath.Join(repoRoot(), "deploy", "chart", "vitals"), "--namespace", ns, "-f", vf)
	t.Cleanup(func() { helm(t, c, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m") })
	waitFor(t, 4*time.Minute, "the agent and canary DaemonSets Ready on every node", func(ctx context.Context) (bool, error) {
		dss, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(dss.Items) < 2 {
			return false, err
		}
		for _, ds := range dss.Items {
			if ds.Status.DesiredNumberScheduled != int32(len(c.Nodes)) || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
				return false, nil
			}
		}
		return true, nil
	})
	for _, n := range c.Nodes {
		waitCondition(t, cs, n, "PodNetworkConnectivity", corev1.ConditionTrue, "PodNetworkReachable", 2*time.Minute)
	}
	t.Logf("agents and canaries Ready, every node's PodNetworkConnectivity True %s after install", time.Since(start).Round(100*time.Millisecond))

	// the first node's pods cut off from the other node's pods; its own address still reaches them
	cut, other := c.Nodes[0], c.Nodes[1]
	cidr := func(n string) string {
		node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return node.Spec.PodCIDR
	}
	rule := []string{"FORWARD", "-s", cidr(cut), "-d", cidr(other), "-m", "comment", "--comment", "vitals-node-test", "-j", "DROP"}
	c.Exec(t, cut, append([]string{"iptables", "-w", "-I"}, rule...)...)
	removed := false
	unblock := func() {
		if !removed {
			c.Exec(t, cut, append([]string{"iptables", "-w", "-D"}, rule...)...)
			removed = true
		}
	}
	t.Cleanup(unblock)
	blocked := time.Now()
	cond := waitCondition(t, cs, cut, "PodNetworkConnectivity", corev1.ConditionFalse, "PodToPodFailing", 3*time.Minute)
	t.Logf("%s: PodNetworkConnectivity False after %s: %s", cut, time.Since(blocked).Round(100*time.Millisecond), cond.Message)
	if !strings.Contains(cond.Message, "this node's pods are cut off") {
		t.Errorf("condition message %q: want the peers' verdict", cond.Message)
	}
	unblock()
	waitCondition(t, cs, cut, "PodNetworkConnectivity", corev1.ConditionTrue, "PodNetworkReachable", 3*time.Minute)
}
