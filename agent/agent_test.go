package agent

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vitalsproject/vitals/cnireport"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitStatus(t *testing.T, url string, want int) string {
	t.Helper()
	var body string
	waitFor(t, url+" answering "+http.StatusText(want), func() bool {
		var code int
		code, body = httpGet(t, url)
		return code == want
	})
	return body
}

// TestAgentEndToEnd wires the whole agent against the real kube-apiserver: probes, the socket and Go API
// sources, the failure budget, node conditions and Node Events.
func TestAgentEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		prereq.Missing(t, "needs root: readiness requires NET_ADMIN in the effective set")
	}
	c := kubeClient(t)
	node := uniqueName("agent-e2e")
	createNode(t, c, node)

	a, base, o := startAgent(t, node, func(o *Options) {
		o.Capabilities = []string{"NET_ADMIN"}
		o.FailuresCount = 2
		// The socket and the Go API report successes too, as the CNI reporter does.
		o.FailureMode = ModeConsecutive
		o.MaxMemoryMiB = 4096
	})
	conf := filepath.Join(o.CNIConfDir, "10-kuryr.conf")
	waitStatus(t, base+"/ready", http.StatusOK)
	waitStatus(t, base+"/alive", http.StatusOK)
	body := waitStatus(t, base+"/livez?verbose", http.StatusOK)
	for _, name := range []string{CheckNetlink, CheckCNIConfig, CheckMemory, BudgetCNIAdd, BudgetSandboxNetwork, ComponentEvents, ComponentSocket, ComponentConditions} {
		if !strings.Contains(body, "[+]"+name+" ok") {
			t.Errorf("/livez?verbose lacks %s:\n%s", name, body)
		}
	}
	body = waitStatus(t, base+"/readyz?verbose", http.StatusOK)
	for _, name := range []string{CheckKubernetesAPI, CheckCapabilities} {
		if !strings.Contains(body, "[+]"+name+" ok") {
			t.Errorf("/readyz?verbose lacks %s:\n%s", name, body)
		}
	}
	waitCondition(t, c, node, ConditionPodNetworkHealthy, corev1.ConditionTrue)
	waitCondition(t, c, node, ConditionCNIHealthy, corev1.ConditionTrue)

	// Two failures are tolerated (cni_failures_count = 2), the third exhausts the budget.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	if _, err := cnireport.Send(sctx, o.SocketPath,
		Report{Op: OpAdd, Result: Failure, Pod: "default/web-1", Error: "no IP addresses available in range set"},
		Report{Op: OpAdd, Result: Failure, Pod: "default/web-2", Error: "no IP addresses available in range set"},
	); err != nil {
		t.Fatal(err)
	}
	if code, _ := httpGet(t, base+"/alive"); code != http.StatusOK {
		t.Fatalf("/alive = %d after two tolerated failures", code)
	}
	if _, err := cnireport.Send(sctx, o.SocketPath, Report{Op: OpAdd, Result: Failure, Pod: "default/web-3", Error: "no IP addresses available in range set"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, base+"/alive", http.StatusInternalServerError)
	if code, body := httpGet(t, base+"/livez/"+BudgetCNIAdd); code != http.StatusInternalServerError || !strings.Contains(body, "3 consecutive failures") {
		t.Errorf("/livez/%s = %d %q", BudgetCNIAdd, code, body)
	}
	// Readiness is about the API and capabilities: unaffected.
	if code, _ := httpGet(t, base+"/ready"); code != http.StatusOK {
		t.Errorf("/ready = %d while only liveness fails", code)
	}
	cond := waitCondition(t, c, node, ConditionPodNetworkHealthy, corev1.ConditionFalse)
	if cond.Reason != "CNIAddFailuresExceeded" || !strings.Contains(cond.Message, "default/web-3") {
		t.Errorf("PodNetworkHealthy = %+v", cond)
	}
	// Each failure is an Event on the Node.
	waitFor(t, "CNIAddFailed events on the node", func() bool {
		evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node + ",reason=" + EventReasonCNIAddFailed})
		if err != nil {
			t.Fatal(err)
		}
		n := int32(0)
		for _, e := range evs.Items {
			n += e.Count
		}
		return n >= 3
	})

	// The Go API: a daemon embedding the agent reports a success, which resets the consecutive budget.
	if err := a.Reporter().Report(context.Background(), Report{Op: OpAdd, Result: Success, Pod: "default/web-4"}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, base+"/alive", http.StatusOK)
	waitCondition(t, c, node, ConditionPodNetworkHealthy, corev1.ConditionTrue)

	// A broken CNI configuration turns CNIHealthy False with its reason.
	if err := os.WriteFile(conf, []byte(`{"cniVersion": "0.3.1", "name": "kuryr"`), 0o644); err != nil {
		t.Fatal(err)
	}
	cond = waitCondition(t, c, node, ConditionCNIHealthy, corev1.ConditionFalse)
	if cond.Reason != "CNIConfigInvalid" || !strings.Contains(cond.Message, "10-kuryr.conf") {
		t.Errorf("CNIHealthy = %+v", cond)
	}

	_, body = httpGet(t, base+"/metrics")
	if !strings.Contains(body, `vitals_agent_cni_reports_total{op="ADD",result="failure",source="socket"} 3`) ||
		!strings.Contains(body, `vitals_agent_cni_reports_total{op="ADD",result="success",source="api"} 1`) {
		t.Errorf("metrics lack the report counters:\n%s", grepLines(body, "vitals_agent"))
	}
}

func waitCondition(t *testing.T, c kubernetes.Interface, node string, typ corev1.NodeConditionType, status corev1.ConditionStatus) corev1.NodeCondition {
	t.Helper()
	var cond corev1.NodeCondition
	waitFor(t, string(typ)+"="+string(status), func() bool {
		cond, _ = nodeCondition(t, c, node, typ)
		return cond.Status == status
	})
	return cond
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

const kuryr = `{"cniVersion": "0.3.1", "name": "kuryr", "type": "kuryr-cni", "kuryr_conf": "kuryr.conf", "debug": false}`
