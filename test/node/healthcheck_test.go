package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// examplePod reads deploy/healthcheck/pod.yaml, the documented example of healthcheck as Kubernetes exec
// probes (TripleO's images use it so: startup `listen`, liveness `http`, readiness `/openstack/healthcheck`
// with the checks of /etc/healthcheck.yaml), with the image built here.
func examplePod(t *testing.T, image string) *corev1.Pod {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "healthcheck", "pod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatalf("deploy/healthcheck/pod.yaml: %v", err)
	}
	p.Spec.Containers[0].Image = image
	p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	return &p
}

// TestHealthcheckExecProbes: the static healthcheck binary as the kubelet's exec probes, in a FROM-scratch
// image (no shell). The example pod turns Ready through `/openstack/healthcheck` (TripleO's path, checks from
// /etc/healthcheck.yaml) and is never restarted by its `healthcheck http` liveness probe; the same pod whose
// liveness asks a path that answers 404 is restarted, and the kubelet's Event carries healthcheck's line.
func TestHealthcheckExecProbes(t *testing.T) {
	c := testenv.Node(t)
	img := nodeImages(t, c)
	cs := c.Client(t)
	ns := namespace(t, cs)

	healthy := examplePod(t, img.Example)
	healthy.Name = "healthy"
	probe := healthy.Spec.Containers[0].LivenessProbe
	// run the liveness probe often, to see it pass several times in the test's time
	probe.PeriodSeconds, probe.TimeoutSeconds = 2, 2
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), healthy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	broken := examplePod(t, img.Example)
	broken.Name = "broken"
	probe = broken.Spec.Containers[0].LivenessProbe
	for i, a := range probe.Exec.Command {
		if strings.HasSuffix(a, "/health") {
			probe.Exec.Command[i] = strings.TrimSuffix(a, "/health") + "/missing" // the service answers 404
		}
	}
	probe.PeriodSeconds, probe.TimeoutSeconds, probe.FailureThreshold = 2, 2, 2
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), broken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	p := waitPodReady(t, cs, ns, healthy.Name, 2*time.Minute)
	t.Logf("healthy: Ready on %s after %s (readiness /openstack/healthcheck)", p.Spec.NodeName, time.Since(start).Round(100*time.Millisecond))

	waitFor(t, 2*time.Minute, "the broken pod restarted by its liveness probe", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, broken.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return restarts(p, "service") >= 1, nil
	})
	t.Logf("broken: restarted %s after create", time.Since(start).Round(100*time.Millisecond))
	ev := podEvents(cs, ns, broken.Name)
	if !strings.Contains(ev, "Liveness probe failed: unhealthy: http 127.0.0.1:8080/missing: status 404") {
		t.Errorf("the broken pod's Events lack healthcheck's line for the 404:\n%s", ev)
	}

	// by now the healthy pod's liveness probe (every 2 s) has run many times: never a restart
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), healthy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := restarts(p, "service"); r != 0 || !podReady(p) {
		t.Errorf("healthy: %d restarts, Ready %v; Events:\n%s", r, podReady(p), podEvents(cs, ns, healthy.Name))
	}
	if ev := podEvents(cs, ns, healthy.Name); strings.Contains(ev, "probe failed") {
		t.Errorf("healthy: a probe failed:\n%s", ev)
	}
}
