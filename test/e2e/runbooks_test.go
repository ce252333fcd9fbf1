package e2e

// The commands of docs/runbooks.md and docs/troubleshooting.md run as written, by kubectl built from its module
// (hack/kubectl-build.sh, as the guide's test does), against the real kube-apiserver, on objects of this test's
// own that carry what the commands read: a VitalsCluster with the status blocks of its controllers, its
// credentials Secret, the pause ConfigMap, the operator's Deployment and the agent's DaemonSet, Events of the
// events.k8s.io kind as the operator records them, and a VitalsRemediation. The documents' names (clusters,
// vitals-system, prod-eu, <machine>) become the test's. A command that fails, or one that reads a field no object
// has (kubectl prints nothing for a JSONPath that matches nothing, <none> in a column), fails the test: a
// command that stopped working fails CI. Not run here, and logged: commands of other tools (vitals, openstack,
// curl, helm: the guide's test runs those), and kubectl logs, port-forward and the commands on a NODE or a POD
// (the shared kube-apiserver has no kubelet).

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// docCommands returns the lines of the sh blocks of a document.
func docCommands(t *testing.T, doc string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(opRepoRoot(), "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cmds []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "```sh"):
			in = true
		case strings.HasPrefix(l, "```"):
			in = false
		case in && strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#"):
			cmds = append(cmds, strings.TrimSpace(l))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cmds
}

// runbookJSONPath is a command's JSONPath output argument.
var runbookJSONPath = regexp.MustCompile(`-o jsonpath='([^']*)'`)

// runbookFields are the fields ({.a.b}) of a command's JSONPath, none for a template with range.
func runbookFields(cmd string) []string {
	m := runbookJSONPath.FindStringSubmatch(cmd)
	if m == nil || strings.Contains(m[1], "{range") {
		return nil
	}
	var fields []string
	for _, f := range regexp.MustCompile(`\{(\.[^}]*)\}`).FindAllStringSubmatch(m[1], -1) {
		fields = append(fields, f[1])
	}
	return fields
}

// runbookSkip says why a command is not run here ("" to run it).
func runbookSkip(cmd string) string {
	switch {
	case !strings.HasPrefix(cmd, "kubectl "):
		return "not kubectl"
	case strings.Contains(cmd, " logs "), strings.Contains(cmd, " port-forward "):
		return "needs a kubelet"
	case strings.Contains(cmd, "NODE"), strings.Contains(cmd, "POD"):
		return "needs a node"
	case strings.Contains(cmd, "--kubeconfig WORKLOAD"):
		return "the workload cluster's"
	}
	return ""
}

func TestRunbookCommands(t *testing.T) {
	_, c, ns := opKube(t)
	kb := exec.Command(filepath.Join(opRepoRoot(), "hack", "kubectl-build.sh"))
	kb.Stderr = os.Stderr
	out, err := kb.Output()
	if err != nil {
		t.Fatalf("hack/kubectl-build.sh: %v", err)
	}
	kubectl := strings.TrimSpace(string(out))
	ctx := context.Background()
	name := "prod-eu-" + opRandHex(3)
	now := metav1.NewTime(time.Now().Truncate(time.Second))

	// The fixture: what an operator that ran would have written.
	vcl := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: []string{"e2e.vitals/hold"}},
		Spec: v1alpha1.ClusterSpec{DeletionPolicy: v1alpha1.DeletionPolicyDeorbit, PodCIDRs: []v1alpha1.CIDR{"198.19.0.0/16"},
			OpenStack: v1alpha1.OpenStackSpec{ProjectID: "4b7e0f2a9c1d4e3f8a6b5c7d9e0f1a2b", RouterID: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"}}}
	if err := c.Create(ctx, vcl); err != nil {
		t.Fatal(err)
	}
	action := v1alpha1.Action{Time: now, Controller: v1alpha1.ControllerFlight, Action: v1alpha1.ActionRemoved, Object: "server/7c1f", Reason: "BudgetExhausted"}
	vcl.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Deleting", Message: "deorbit", LastTransitionTime: now},
		{Type: "CleanedUp", Status: metav1.ConditionFalse, Reason: "DebrisLeft", Message: "1 volume left", LastTransitionTime: now}}
	vcl.Status.Remediation = &v1alpha1.RemediationStatus{BudgetRemaining: 0, ActionTimes: []metav1.Time{now}}
	vcl.Status.RouteGC = &v1alpha1.RouteGCStatus{ControllerStatus: v1alpha1.ControllerStatus{Actions: []v1alpha1.Action{action}}}
	vcl.Status.Flight = &v1alpha1.FlightStatus{ControllerStatus: v1alpha1.ControllerStatus{Actions: []v1alpha1.Action{action}},
		Escalations: []v1alpha1.NodeEscalation{{Node: "node-1", Server: "7c1f", Step: "SoftReboot", Phase: "Taken", Since: now}},
		HostsDown:   []v1alpha1.HostFinding{{HostID: "3f5c0d1e9a7b", Zone: "nova", Servers: []string{"8d2e", "9a41"}, Since: now}}}
	vcl.Status.Deorbit = &v1alpha1.DeorbitStatus{ControllerStatus: v1alpha1.ControllerStatus{Actions: []v1alpha1.Action{action}}, Phase: "Sweep", StartTime: &now,
		Counts:    v1alpha1.DeorbitCounts{Remaining: 1},
		Resources: []v1alpha1.DeorbitResource{{Type: "volume", ID: "9d2e", State: "Failed", Status: "error_deleting", LastError: "Cinder refused"}}}
	vcl.Status.CloudHeal = &v1alpha1.CloudHealStatus{ControllerStatus: v1alpha1.ControllerStatus{Actions: []v1alpha1.Action{action}},
		StaleAttachments: []v1alpha1.StaleAttachment{{AttachmentID: "5a1e", VolumeID: "9d2e", ServerID: "7c1f", FirstSeen: now, Passes: 1}}}
	vcl.Status.Access = &v1alpha1.AccessStatus{Credentials: &v1alpha1.CredentialsStatus{Kind: "ApplicationCredential",
		Source: "secret clusters/prod-eu-cloud key clouds.yaml (cloud openstack)", ExpiresAt: &now, AuthenticatedSince: &now},
		WorkloadCredentials: []v1alpha1.WorkloadCredentialStatus{{Secret: "kube-system/cloud-config key cloud.conf", Consumer: "cloud controller manager",
			Kind: "ApplicationCredential", Reason: "ConsumersStale", ExpiresAt: &now, SecretResourceVersion: "4711", ChangeSeen: &now,
			StaleConsumers: []string{"openstack-cloud-controller-manager-7d9f"}}}}
	if err := c.Status().Update(ctx, vcl); err != nil {
		t.Fatalf("the VitalsCluster's status: %v", err)
	}
	// Terminating, as in troubleshooting's "A VitalsCluster stuck Terminating" (a finalizer of the test's holds it).
	t.Cleanup(func() {
		var cur v1alpha1.VitalsCluster
		if err := c.Get(ctx, client.ObjectKeyFromObject(vcl), &cur); err == nil {
			cur.Finalizers = nil
			_ = c.Update(ctx, &cur)
		}
	})
	if err := c.Delete(ctx, vcl); err != nil {
		t.Fatal(err)
	}
	labels := func(component string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": "vitals", "app.kubernetes.io/component": component}
	}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("x")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "vitalsproject/vitals:test"}}}}
	opPod, agentPod := *pod.DeepCopy(), *pod.DeepCopy()
	opPod.Labels, agentPod.Labels = labels("operator"), labels("agent")
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-clouds"}, Data: map[string][]byte{"clouds.yaml": []byte("clouds: {}\n")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vitals-remediation"}, Data: map[string]string{"paused": "false"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vitals-operator", Labels: labels("operator")},
			Spec: appsv1.DeploymentSpec{Replicas: ptrTo(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels("operator")}, Template: opPod}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vitals-agent", Labels: labels("agent")},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: agentPod}},
		&v1alpha1.VitalsRemediation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-md-0-x7k2p"}},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	// Events as the operator records them: the events.k8s.io kind (no deprecated lastTimestamp).
	event := func(reason, kind, regarding, note string) {
		ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "." + strings.ToLower(reason) + opRandHex(2)},
			EventTime: metav1.NewMicroTime(time.Now()), ReportingController: "vitals.vitalsproject.io/operator", ReportingInstance: "vitals-operator-0",
			Action: reason, Reason: reason, Type: corev1.EventTypeWarning, Note: note,
			Regarding: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: regarding}}
		if err := c.Create(ctx, ev); err != nil {
			t.Fatalf("create Event %s: %v", reason, err)
		}
	}
	event("ActionTaken", "VitalsCluster", name, "flight: SoftReboot of server 7c1f")
	event("PassAborted", "VitalsCluster", name, "routegc: the router is unreadable")
	event("DeorbitGaveUp", "VitalsCluster", name, "volume 9d2e left")
	event("FailedCreate", "DaemonSet", "vitals-agent", "agent pod not created")

	replacer := strings.NewReplacer("-n clusters", "-n "+ns, "-n vitals-system", "-n "+ns, "prod-eu", name,
		"<machine>", name+"-md-0-x7k2p", "/tmp/clouds.yaml", filepath.Join(t.TempDir(), "clouds.yaml"))
	env := append(os.Environ(), "KUBECONFIG="+testenv.KubeconfigPath(t), "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
	ran := 0
	for _, doc := range []string{"runbooks.md", "troubleshooting.md"} {
		for _, line := range docCommands(t, doc) {
			if why := runbookSkip(line); why != "" {
				t.Logf("%s: not run (%s): %s", doc, why, line)
				continue
			}
			cmd := replacer.Replace(line)
			sh := exec.Command("bash", "-o", "pipefail", "-c", cmd)
			sh.Env = env
			out, err := sh.CombinedOutput()
			ran++
			got := strings.TrimSpace(string(out))
			switch {
			case err != nil:
				t.Errorf("%s: %s\n  %v\n%s", doc, line, err, got)
			case got == "" && !strings.Contains(cmd, "| kubectl apply") && !strings.Contains(cmd, " > "): // a redirect writes a file
				t.Errorf("%s: %s\n  printed nothing: a field or an object it reads is not there", doc, line)
			case strings.Contains(cmd, "custom-columns") && strings.Contains(got, "<none>"):
				t.Errorf("%s: %s\n  a column is <none>: a field it reads is not there\n%s", doc, line, got)
			case strings.Contains(cmd, "jsonpath") && strings.Trim(got, " :\n") == "" && !strings.Contains(cmd, " > "):
				t.Errorf("%s: %s\n  the JSONPath matched nothing", doc, line)
			default:
				// Each field of a JSONPath on its own: one that matches nothing prints nothing among the others.
				for _, field := range runbookFields(cmd) {
					one := runbookJSONPath.ReplaceAllString(cmd, "-o jsonpath='{"+field+"}'")
					if i := strings.Index(one, " | "); i > 0 && strings.Contains(one, " > ") {
						one = one[:i] // what a pipe into a file would have been given
					}
					sh := exec.Command("bash", "-o", "pipefail", "-c", one)
					sh.Env = env
					out, err := sh.CombinedOutput()
					if err != nil || strings.TrimSpace(string(out)) == "" {
						t.Errorf("%s: %s\n  its field %s matches nothing (%v): %s", doc, line, field, err, out)
					}
				}
			}
		}
	}
	if ran < 20 {
		t.Errorf("%d commands run, want the documents' kubectl commands (20 or more)", ran)
	}
	t.Logf("%d commands of docs/runbooks.md and docs/troubleshooting.md ran", ran)
}
