package node

// Helpers: Vitals' images built once per test binary and imported into every node, namespaces, pods, and
// polling.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/tools/ociimage"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// images are the references of Vitals' images in the nodes' containerd.
type images struct {
	// Vitals is the release image of deploy/Dockerfile: /vitals (entrypoint, command operator), /healthcheck
	// and the CA bundle, user 65532.
	Vitals string
	// Agent is deploy/agent/Dockerfile's: /vitals-agent (entrypoint), /vitals-cni and /vitals-canary.
	Agent string
	// Example is deploy/healthcheck/Dockerfile's: /service (an HTTP server with /health on $LISTEN, default
	// 127.0.0.1:8080), /healthcheck, /openstack/healthcheck (a link to it, TripleO's path) and
	// /etc/healthcheck.yaml, user 65534.
	Example string
}

var (
	imagesOnce sync.Once
	built      images
	imagesErr  error
	imagesDir  string
	imported   bool
	// removeImages removes the imported images from the nodes (TestMain, at the end)
	removeImages = func() {}
)

// nodeImages builds Vitals' static binaries and their images once per test binary and imports them into every
// node of c (a tag of this run's own; TestMain removes them at the end).
func nodeImages(t *testing.T, c *testenv.NodeCluster) images {
	t.Helper()
	imagesOnce.Do(func() {
		start := time.Now()
		built, imagesErr = buildImages()
		t.Logf("images built in %s", time.Since(start).Round(time.Millisecond))
	})
	if imagesErr != nil {
		t.Fatal(imagesErr)
	}
	if !imported {
		start := time.Now()
		refs := []string{built.Vitals, built.Agent, built.Example}
		for _, ref := range refs {
			c.ImportImage(t, filepath.Join(imagesDir, archiveName(ref)))
		}
		imported = true
		removeImages = func() {
			for _, ref := range refs {
				if err := c.RemoveImage(ref); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
		}
		t.Logf("images %s imported into %d nodes in %s", strings.Join(refs, ", "), len(c.Nodes), time.Since(start).Round(time.Millisecond))
	}
	return built
}

func TestMain(m *testing.M) {
	code := m.Run()
	removeImages()
	if imagesDir != "" {
		os.RemoveAll(imagesDir)
	}
	os.Exit(code)
}

func archiveName(ref string) string {
	return strings.NewReplacer("/", "_", ":", "_").Replace(ref) + ".tar"
}

func buildImages() (images, error) {
	dir, err := os.MkdirTemp("", "vitals-node-images-")
	if err != nil {
		return images{}, err
	}
	imagesDir = dir
	root := repoRoot()
	for _, b := range []struct {
		out, pkg string
		tags     []string
	}{
		{"vitals", "./cmd/vitals", nil},
		{"healthcheck", "./cmd/healthcheck", []string{"-tags", "nethttpomithttp2"}},
		{"vitals-agent", "./cmd/vitals-agent", nil},
		{"vitals-cni", "./cmd/vitals-cni", nil},
		{"vitals-canary", "./cmd/vitals-canary", nil},
		{"service", "./deploy/healthcheck/example", nil},
	} {
		args := append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, b.tags...)
		args = append(args, "-o", filepath.Join(dir, b.out), b.pkg)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return images{}, fmt.Errorf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	tag := "test-" + randHex(4)
	img := images{
		Vitals:  "localhost/vitals-test/vitals:" + tag,
		Agent:   "localhost/vitals-test/vitals-agent:" + tag,
		Example: "localhost/vitals-test/healthcheck-example:" + tag,
	}
	bin := func(name string) string { return filepath.Join(dir, name) }
	hcConfig, err := os.ReadFile(filepath.Join(root, "deploy", "healthcheck", "healthcheck.yaml"))
	if err != nil {
		return images{}, err
	}
	specs := []struct {
		ref   string
		files []ociimage.File
		cfg   ociimage.Config
	}{
		{img.Vitals, []ociimage.File{{Path: "/vitals", Source: bin("vitals")}, {Path: "/healthcheck", Source: bin("healthcheck")},
			{Path: "/etc/ssl/certs/ca-certificates.crt", Source: "/etc/ssl/certs/ca-certificates.crt"}},
			ociimage.Config{Entrypoint: []string{"/vitals"}, Cmd: []string{"operator"}, User: "65532:65532", ExposedPorts: []string{"8080", "8082"}}},
		{img.Agent, []ociimage.File{{Path: "/vitals-agent", Source: bin("vitals-agent")}, {Path: "/vitals-cni", Source: bin("vitals-cni")},
			{Path: "/vitals-canary", Source: bin("vitals-canary")}},
			ociimage.Config{Entrypoint: []string{"/vitals-agent"}, ExposedPorts: []string{"8090"}}},
		{img.Example, []ociimage.File{{Path: "/service", Source: bin("service")}, {Path: "/healthcheck", Source: bin("healthcheck")},
			{Path: "/openstack/healthcheck", Link: "/healthcheck"}, {Path: "/etc/healthcheck.yaml", Data: hcConfig}},
			ociimage.Config{Entrypoint: []string{"/service"}, User: "65534:65534"}},
	}
	created := time.Unix(0, 0)
	for _, s := range specs {
		i, err := ociimage.Build(ociimage.Platform{OS: "linux", Architecture: runtime.GOARCH}, s.files, s.cfg, created)
		if err != nil {
			return images{}, err
		}
		idx, err := ociimage.Index(i)
		if err != nil {
			return images{}, err
		}
		if err := ociimage.WriteArchive(filepath.Join(dir, archiveName(s.ref)), s.ref, idx); err != nil {
			return images{}, err
		}
	}
	return img, nil
}

// namespace creates a namespace of the test's own, deleted when the test ends.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := "vitals-node-test-" + randHex(3)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	// the ServiceAccount controller makes "default"; pods are refused without it
	waitFor(t, 30*time.Second, "the default ServiceAccount of "+name, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

// waitFor polls cond every 250ms until it is true, fails t after timeout (with what it was waiting for).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		ok, err := cond(cctx)
		ccancel()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not after %s (last error: %v)", what, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podReady reports whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodReady waits until the pod is Ready and returns it.
func waitPodReady(t *testing.T, cs kubernetes.Interface, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, timeout, "pod "+ns+"/"+name+" Ready", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return podReady(p), nil
	})
	return pod
}

// podEvents returns the messages of the pod's Events, for failure messages.
func podEvents(cs kubernetes.Interface, ns, name string) string {
	evs, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range evs.Items {
		fmt.Fprintf(&b, "%s %s: %s\n", e.Type, e.Reason, e.Message)
	}
	return b.String()
}

// podsWaiting says, for failure messages, why the selected pods' containers are not ready: the reason and
// message the kubelet gives for each container waiting or not ready.
func podsWaiting(ctx context.Context, cs kubernetes.Interface, ns, selector string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return "pods: " + err.Error()
	}
	var why []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 0 {
			why = append(why, fmt.Sprintf("%s on %q: Pending", p.Name, p.Spec.NodeName))
		}
		for _, st := range p.Status.ContainerStatuses {
			switch {
			case st.State.Waiting != nil:
				msg := st.State.Waiting.Message
				if len(msg) > 300 {
					msg = msg[:300]
				}
				why = append(why, fmt.Sprintf("%s/%s: %s: %s", p.Name, st.Name, st.State.Waiting.Reason, msg))
			case !st.Ready:
				why = append(why, fmt.Sprintf("%s/%s: running, not ready (restarts %d)", p.Name, st.Name, st.RestartCount))
			}
		}
	}
	if len(why) == 0 {
		return "every container ready"
	}
	return strings.Join(why, "; ")
}

// restarts returns the restart count of the pod's container name.
func restarts(p *corev1.Pod, name string) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.RestartCount
		}
	}
	return -1
}

// httpGet returns the body of a GET of url (bounded: 1 MiB, 5 s).
func httpGet(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

// helm runs helm (built by hack/helm-build.sh) against the node cluster, with its own empty home.
func helm(t *testing.T, c *testenv.NodeCluster, args ...string) string {
	t.Helper()
	bin := testenv.Helm(t)
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// cidrHas reports whether ip is in cidr.
func cidrHas(cidr, ip string) bool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(ip)
	return err == nil && p.Contains(a)
}
