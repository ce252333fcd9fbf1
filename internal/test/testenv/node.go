package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Names of the environment variables that describe the node cluster (hack/node.sh).
const (
	EnvNodeKubeconfig = "VITALS_TEST_NODE_KUBECONFIG"
	EnvNodeDir        = "VITALS_TEST_NODE_DIR"
	EnvNodeScript     = "VITALS_TEST_NODE_SCRIPT"
	EnvNodeNames      = "VITALS_TEST_NODE_NAMES"
	EnvNodePauseImage = "VITALS_TEST_NODE_PAUSE_IMAGE"
)

var nodeNames = []string{EnvNodeKubeconfig, EnvNodeDir, EnvNodeScript, EnvNodeNames, EnvNodePauseImage}

// NodeCluster is the cluster with real nodes that hack/node.sh runs: its own kube-apiserver (reachable from the
// host), kube-controller-manager (node lifecycle with a 20 s grace, disruption, DaemonSets, ...),
// kube-scheduler, and two nodes, each a kubelet with containerd, runc, Debian's bridge and host-local CNI
// plugins and kube-proxy in a network and mount namespace of its own. Nothing is pulled: images are built
// locally (internal/tools/ociimage) and imported with ImportImage; pods must use imagePullPolicy Never or
// IfNotPresent.
//
// Tests share it: they work in namespaces of their own, and a test that stops a kubelet, changes a node's
// CNI configuration or re-registers a Node must not run in parallel with other node tests (test/e2e runs its
// tests one after another).
type NodeCluster struct {
	// Kubeconfig is the path of a kubeconfig with a token of group system:masters.
	Kubeconfig string
	// Dir is the cluster's state directory: DIR/<node>/ holds each node's logs (kubelet.log, containerd.log),
	// its private /etc/cni/net.d (fixed/etc/cni/net.d) and /opt/cni/bin (fixed/opt/cni/bin).
	Dir string
	// Nodes are the Node names (vitals-node-1, vitals-node-2).
	Nodes []string
	// PauseImage is the sandbox image every node has (built from internal/tools/pause).
	PauseImage string
	script     string
}

// Node returns the node cluster. It skips t (fails it when VITALS_TESTENV_REQUIRED=1) in -short runs, when the
// cluster does not run, and when the test does not run as root (nodes are entered with nsenter).
func Node(t testing.TB) *NodeCluster {
	t.Helper()
	short(t, "node cluster test")
	s := load()
	s.checkFile(t)
	v, from := s.group(EnvNodeKubeconfig, nodeNames...)
	if v[EnvNodeKubeconfig] == "" {
		unavailable(t, "node cluster not available: %s (full tier) or hack/node.sh start (%s unset)", makeHint, EnvNodeKubeconfig)
	}
	for _, n := range nodeNames {
		if v[n] == "" {
			t.Fatalf("node cluster (from %s): %s is empty", from, n)
		}
	}
	if _, err := os.Stat(v[EnvNodeKubeconfig]); err != nil {
		unavailable(t, "node cluster not available: kubeconfig %s (from %s): %v; %s", v[EnvNodeKubeconfig], from, err, makeHint)
	}
	if os.Geteuid() != 0 {
		unavailable(t, "node cluster: tests that use it run as root (nsenter, ctr)")
	}
	return &NodeCluster{
		Kubeconfig: v[EnvNodeKubeconfig], Dir: v[EnvNodeDir], Nodes: strings.Fields(v[EnvNodeNames]),
		PauseImage: v[EnvNodePauseImage], script: v[EnvNodeScript],
	}
}

// Config returns a client configuration for the node cluster's kube-apiserver; each call returns a new copy.
func (c *NodeCluster) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", c.Kubeconfig, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("kubeconfig %s: server %q: %v", c.Kubeconfig, cfg.Host, err)
	}
	if err := reachable(u.Host); err != nil {
		unavailable(t, "node cluster not available at %s (kubeconfig %s): %v; %s", cfg.Host, c.Kubeconfig, err, makeHint)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// Client returns a clientset for the node cluster.
func (c *NodeCluster) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// NodeDir returns node's state directory (logs, fixed/ with its private host paths).
func (c *NodeCluster) NodeDir(node string) string { return filepath.Join(c.Dir, node) }

// run runs hack/node.sh (the script that started the cluster) with args and returns its output.
func (c *NodeCluster) run(args ...string) (string, error) {
	cmd := exec.Command(c.script, args...)
	cmd.Env = append(os.Environ(), "VITALS_NODE_DIR="+c.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Exec runs cmd in node's network and mount namespaces (as its kubelet and containers see the machine) and
// returns its combined output; it fails t when cmd fails.
func (c *NodeCluster) Exec(t testing.TB, node string, cmd ...string) string {
	t.Helper()
	out, err := c.run(append([]string{"exec", node}, cmd...)...)
	if err != nil {
		t.Fatalf("%s: %s: %v\n%s", node, strings.Join(cmd, " "), err, out)
	}
	return out
}

var kubeletMu sync.Mutex

// StopKubelet stops node's kubelet (its containers keep running, as when a kubelet dies); the node lifecycle
// controller then marks the Node NotReady (about 20 s). The kubelet is started again when t ends if the test
// has not done it.
func (c *NodeCluster) StopKubelet(t testing.TB, node string) {
	t.Helper()
	kubeletMu.Lock()
	defer kubeletMu.Unlock()
	if out, err := c.run("kubelet-stop", node, c.Dir); err != nil {
		t.Fatalf("stop the kubelet of %s: %v\n%s", node, err, out)
	}
	t.Cleanup(func() {
		if c.kubeletRuns(node) {
			return
		}
		if out, err := c.run("kubelet-start", node, c.Dir); err != nil {
			t.Errorf("start the kubelet of %s again: %v\n%s", node, err, out)
		}
	})
}

// StartKubelet starts node's kubelet again and waits (up to 2 minutes) until the Node is Ready.
func (c *NodeCluster) StartKubelet(t testing.TB, node string) {
	t.Helper()
	c.startKubelet(t, node, "")
}

func (c *NodeCluster) startKubelet(t testing.TB, node, providerID string) {
	t.Helper()
	kubeletMu.Lock()
	defer kubeletMu.Unlock()
	cmd := exec.Command(c.script, "kubelet-start", node, c.Dir)
	cmd.Env = append(os.Environ(), "KUBELET_PROVIDER_ID="+providerID)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("start the kubelet of %s: %v\n%s", node, err, out)
	}
}

func (c *NodeCluster) kubeletRuns(node string) bool {
	b, err := os.ReadFile(filepath.Join(c.NodeDir(node), "kubelet.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && pidAlive(pid)
}

// Reregister makes node's Node anew with spec.providerID (such as openstack:///<Nova server ID>, for the
// controllers that map Nodes to servers): its kubelet is stopped, the Node deleted and created again with the
// same pod CIDR and the provider ID, and the kubelet started with --provider-id. Pods bound to the old Node
// are deleted by the pod garbage collector; DaemonSets place theirs again.
func (c *NodeCluster) Reregister(t testing.TB, node, providerID string) {
	t.Helper()
	cs := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	old, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Node %s: %v", node, err)
	}
	c.StopKubelet(t, node)
	if err := cs.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete Node %s: %v", node, err)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"kubernetes.io/hostname": node, "kubernetes.io/os": "linux"}},
		Spec:       corev1.NodeSpec{PodCIDR: old.Spec.PodCIDR, PodCIDRs: old.Spec.PodCIDRs, ProviderID: providerID},
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Node %s with provider ID %s: %v", node, providerID, err)
	}
	c.startKubelet(t, node, providerID)
}

// ImportImage imports the OCI archive (internal/tools/ociimage.WriteArchive) into every node's containerd, in
// namespace k8s.io where the kubelet finds it.
func (c *NodeCluster) ImportImage(t testing.TB, archive string) {
	t.Helper()
	for _, n := range c.Nodes {
		if out, err := c.ctr(n, "images", "import", archive); err != nil {
			t.Fatalf("import %s into %s: %v\n%s", archive, n, err, out)
		}
	}
}

// RemoveImage removes the image ref from every node's containerd.
func (c *NodeCluster) RemoveImage(ref string) error {
	var errs []string
	for _, n := range c.Nodes {
		if out, err := c.ctr(n, "images", "rm", ref); err != nil {
			errs = append(errs, fmt.Sprintf("remove image %s from %s: %v: %s", ref, n, err, strings.TrimSpace(out)))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (c *NodeCluster) ctr(node string, args ...string) (string, error) {
	sock := filepath.Join(c.NodeDir(node), "containerd", "containerd.sock")
	out, err := exec.Command("ctr", append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
	return string(out), err
}

// ContainerPID returns the host PID of the main process of a container on node, from its ID in a pod's
// status (containerd://<id> or the bare ID).
func (c *NodeCluster) ContainerPID(t testing.TB, node, containerID string) int {
	t.Helper()
	id := containerID
	if _, rest, ok := strings.Cut(containerID, "://"); ok {
		id = rest
	}
	out, err := c.ctr(node, "tasks", "ls")
	if err != nil {
		t.Fatalf("ctr tasks ls on %s: %v\n%s", node, err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("ctr tasks ls on %s: PID %q of %s", node, f[1], id)
			}
			return pid
		}
	}
	t.Fatalf("no task %s on %s:\n%s", id, node, out)
	return 0
}

// String names the cluster for messages.
func (c *NodeCluster) String() string {
	return fmt.Sprintf("node cluster %s (%s)", c.Dir, strings.Join(c.Nodes, ", "))
}

// pidAlive reports whether a process pid exists.
func pidAlive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }
