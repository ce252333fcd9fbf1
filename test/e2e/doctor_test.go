package e2e

// vitals doctor against the real kube-apiserver and the real cloud: a VitalsCluster whose credentials
// Secret proves its router, network and subnet, with a reachable workload kubeconfig, passes every
// check (exit 0); one naming another project's router fails the cloud check with the tenancy reason
// (exit 1); one whose route limit (spec.controllers.flight.maxRoutes) the router's routes fill fails
// the route-headroom check by flight's rule; a missing one fails the cluster check; a bad -o is a flag
// error (exit 2). A tenant's project whose Neutron quota of networks the admin set to what it holds
// fails the quota-network check as a member reads it (QuotaExhausted), its subnets at the threshold
// warn, and its Cinder quota of volumes set to 0 only warns (Cinder's quotas are for information);
// with networks at the threshold too, the doctor warns and exits 0.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/quotasets"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/quotas"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/cli"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

func TestDoctor(t *testing.T) {
	parallel(t)
	admin := testenv.Kube(t)
	kubeconfig := testenv.KubeconfigPath(t)
	env := testenv.OpenStack(t)
	opInstallCRD(t, admin)
	c := opClient(t, admin)
	ns := opNamespace(t, c)
	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	n := opNewNet(t, cloud)
	// A router of another project: the tenant's credentials cannot prove it theirs.
	tenant := opNewTenant(t, cloud, env)
	foreign := opNewNet(t, tenant.Cloud)

	// The workload kubeconfig a tenant would give: everything inline (files are refused).
	ca := admin.CAData
	if len(ca) == 0 {
		var err error
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, admin.Host, base64.StdEncoding.EncodeToString(ca), admin.BearerToken)
	for name, data := range map[string]map[string]string{
		"creds":      {"clouds.yaml": opCloudsYAML(env.AuthURL, env.Username, env.Password, env.ProjectName)},
		"kubeconfig": {"kubeconfig": kc},
	} {
		if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	// The workload cluster's consumer Secrets (kube-system, as the cloud controller manager's): good's holds its
	// own credentials, tight's a wrong password.
	sfx := opRandHex(4)
	goodWL, badWL := "doctor-cloud-config-"+sfx, "doctor-bad-cloud-config-"+sfx
	for name, yaml := range map[string]string{
		goodWL: opCloudsYAML(env.AuthURL, env.Username, env.Password, env.ProjectName),
		badWL:  opCloudsYAML(env.AuthURL, env.Username, "not-the-password", env.ProjectName),
	} {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: v1alpha1.WorkloadCredentialsNamespace, Name: name}, StringData: map[string]string{"clouds.yaml": yaml}}
		if err := c.Create(context.Background(), sec); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), sec) })
	}
	cluster := func(name, router string) {
		t.Helper()
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
				RouterID: router, NetworkID: n.Network, SubnetID: n.Subnet},
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "kubeconfig"},
			PodCIDRs:            []v1alpha1.CIDR{v1alpha1.CIDR("198.19.0.0/16")},
			WorkloadCredentials: v1alpha1.WorkloadCredentialsSpec{Secrets: []v1alpha1.WorkloadCredentialsSecret{{Name: goodWL, Consumer: "openstack-cloud-controller-manager"}}},
		}}
		if router != n.Router {
			vc.Spec.OpenStack.NetworkID, vc.Spec.OpenStack.SubnetID = "", ""
			vc.Spec.PodCIDRs = []v1alpha1.CIDR{"198.20.0.0/16"}
		}
		if err := c.Create(context.Background(), vc); err != nil {
			t.Fatal(err)
		}
	}
	cluster("good", n.Router)
	cluster("foreign", foreign.Router)
	// The same router, with a limit its one route fills (pod CIDRs apart: the tenancy refuses overlaps).
	n.SetRoutes(openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)})
	tight := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tight"}, Spec: v1alpha1.ClusterSpec{
		OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
			RouterID: n.Router, NetworkID: n.Network, SubnetID: n.Subnet},
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "kubeconfig"},
		PodCIDRs:            []v1alpha1.CIDR{"198.21.0.0/16"},
		Controllers:         v1alpha1.ControllersSpec{Flight: v1alpha1.FlightSpec{MaxRoutes: ptr.To[int32](1)}},
		WorkloadCredentials: v1alpha1.WorkloadCredentialsSpec{Secrets: []v1alpha1.WorkloadCredentialsSecret{{Name: badWL}}},
	}}
	if err := c.Create(context.Background(), tight); err != nil {
		t.Fatal(err)
	}
	// A cluster without a workload kubeconfig: the operator serves it without its workload cluster.
	nokube := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nokube"}, Spec: v1alpha1.ClusterSpec{
		OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
			RouterID: n.Router, NetworkID: n.Network, SubnetID: n.Subnet},
		PodCIDRs: []v1alpha1.CIDR{"198.23.0.0/16"},
	}}
	if err := c.Create(context.Background(), nokube); err != nil {
		t.Fatal(err)
	}

	// The tenant's cluster: its own credentials, router, network and subnet; its quotas set low as admin.
	if err := c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-creds"},
		StringData: map[string]string{"clouds.yaml": tenant.CloudsYAML}}); err != nil {
		t.Fatal(err)
	}
	quotaVC := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"}, Spec: v1alpha1.ClusterSpec{
		OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "tenant-creds"},
			RouterID: foreign.Router, NetworkID: foreign.Network, SubnetID: foreign.Subnet},
		KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "kubeconfig"},
		PodCIDRs:            []v1alpha1.CIDR{"198.22.0.0/16"},
	}}
	if err := c.Create(context.Background(), quotaVC); err != nil {
		t.Fatal(err)
	}
	doctorSetQuotas(t, cloud, tenant.ProjectID)

	doctor := func(args ...string) (int, cli.DoctorReport, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Main(append([]string{"doctor", "--kubeconfig", kubeconfig, "-n", ns, "--allow-loopback-workload", "--trusted-auth-url", env.AuthURL}, args...), &out, &errb)
		var rep cli.DoctorReport
		if code != cli.ExitConfig {
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil && len(args) > 0 && args[len(args)-1] == "json" {
				t.Fatalf("doctor %v: output is not a report: %v\n%s\n%s", args, err, out.String(), errb.String())
			}
		}
		return code, rep, out.String() + errb.String()
	}
	results := func(rep cli.DoctorReport) map[string]cli.DoctorCheck {
		m := map[string]cli.DoctorCheck{}
		for _, ch := range rep.Checks {
			m[ch.Name] = ch
		}
		return m
	}

	code, rep, out := doctor("good", "-o", "json")
	if code != 0 || !rep.OK || rep.ProjectID == "" {
		t.Fatalf("doctor good: exit %d, report %+v\n%s", code, rep, out)
	}
	for _, name := range []string{"crd", "cluster", "cloud", "routes", "route-headroom", "volume-attachments", "credentials", "workload", "workload-credentials"} {
		if r := results(rep)[name]; r.Result != "ok" {
			t.Errorf("doctor good: check %s = %+v, want ok", name, r)
		}
	}
	if r := results(rep)["quota-network"]; r.Result == "failed" || r.Result == "skipped" || len(r.Quotas) == 0 {
		t.Errorf("doctor good: check quota-network = %+v, want read and not failed", r)
	}
	t.Logf("doctor good: %+v", rep)

	code, rep, out = doctor("foreign", "-o", "json")
	r := results(rep)
	if code != cli.ExitDoctorFailed || rep.OK || r["cloud"].Result != "failed" || r["cloud"].Reason == "" || r["routes"].Result != "skipped" || r["workload"].Result != "ok" {
		t.Errorf("doctor foreign: exit %d, checks %+v\n%s", code, rep.Checks, out)
	}
	t.Logf("doctor foreign: cloud %+v", r["cloud"])

	code, rep, out = doctor("tight", "-o", "json")
	if r := results(rep); code != cli.ExitDoctorFailed || r["route-headroom"].Result != "failed" || r["route-headroom"].Reason != "NearRouteLimit" || r["cloud"].Result != "ok" {
		t.Errorf("doctor tight: exit %d, checks %+v\n%s", code, rep.Checks, out)
	}
	t.Logf("doctor tight: route-headroom %+v", results(rep)["route-headroom"])
	// its workload Secret's password is refused by the cluster's Keystone: failed, and nothing of the Secret shown
	if w := results(rep)["workload-credentials"]; w.Result != "failed" || w.Reason != "InvalidCredentials" || strings.Contains(w.Detail, "not-the-password") {
		t.Errorf("doctor tight: check workload-credentials = %+v, want failed InvalidCredentials without the Secret's contents", w)
	}

	code, rep, out = doctor("quota", "--quota-threshold", "50", "-o", "json")
	r = results(rep)
	if code != cli.ExitDoctorFailed || rep.OK || r["cloud"].Result != "ok" || rep.ProjectID != tenant.ProjectID {
		t.Errorf("doctor quota: exit %d, project %s, checks %+v\n%s", code, rep.ProjectID, rep.Checks, out)
	}
	if n := r["quota-network"]; n.Result != "failed" || n.Reason != cli.ReasonQuotaExhausted ||
		!strings.Contains(n.Detail, "network 1/1") || !strings.Contains(n.Detail, "subnet 1/2 (50%)") {
		t.Errorf("doctor quota: quota-network = %+v, want failed (network 1/1 exhausted, subnet 1/2 near)", n)
	}
	if b := r["quota-block-storage"]; b.Result != "warning" || b.Reason != cli.ReasonQuotaExhausted || !strings.Contains(b.Detail, "volumes 0/0") {
		t.Errorf("doctor quota: quota-block-storage = %+v, want a warning (volumes 0/0)", b)
	}
	// Octavia's quota: read by a member, or skipped with the reason when its policy refuses; never failed.
	if l := r["quota-load-balancer"]; l.Result != "ok" && (l.Result != "skipped" || l.Reason == "") {
		t.Errorf("doctor quota: quota-load-balancer = %+v, want ok or skipped with a reason", l)
	}
	t.Logf("doctor quota: %+v", rep.Checks)
	if code, _, out := doctor("quota", "--quota-threshold", "50"); code != cli.ExitDoctorFailed || !strings.Contains(out, "quota-network") {
		t.Errorf("doctor quota (table): exit %d\n%s", code, out)
	} else {
		t.Logf("doctor quota (table):\n%s", out)
	}

	// Networks 1 of 2 now: every quota at the threshold or under; warnings fail nothing (exit 0).
	nc, err := cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quotas.Update(context.Background(), nc, tenant.ProjectID, quotas.UpdateOpts{Network: ptr.To(2)}).Extract(); err != nil {
		t.Fatal(err)
	}
	code, rep, out = doctor("quota", "--quota-threshold", "50", "-o", "json")
	if n := results(rep)["quota-network"]; code != 0 || !rep.OK || n.Result != "warning" || n.Reason != cli.ReasonQuotaNear || !strings.Contains(n.Detail, "network 1/2 (50%)") {
		t.Errorf("doctor quota (near): exit %d, ok %t, quota-network %+v, want exit 0 with a QuotaNear warning\n%s", code, rep.OK, n, out)
	}

	// No workload kubeconfig: its workload check is skipped, which fails nothing; with
	// --allow-local-workload the cluster of --kubeconfig is its workload cluster, and is checked.
	code, rep, out = doctor("nokube", "-o", "json")
	if r := results(rep); code != 0 || !rep.OK || r["workload"].Result != "skipped" || !strings.Contains(r["workload"].Detail, "--allow-local-workload") || r["cloud"].Result != "ok" {
		t.Errorf("doctor nokube: exit %d, checks %+v\n%s", code, rep.Checks, out)
	}
	code, rep, out = doctor("nokube", "--allow-local-workload", "-o", "json")
	if r := results(rep); code != 0 || r["workload"].Result != "ok" {
		t.Errorf("doctor nokube --allow-local-workload: exit %d, workload %+v\n%s", code, r["workload"], out)
	}

	// --context picks the kubeconfig's context, as kubectl's: a kubeconfig whose current context is a
	// server that does not answer works with --context naming the good one.
	two := doctorTwoContexts(t, kubeconfig)
	var cout, cerr bytes.Buffer
	if code := cli.Main([]string{"doctor", "good", "--kubeconfig", two, "--context", "test", "-n", ns, "--allow-loopback-workload",
		"--trusted-auth-url", env.AuthURL, "--timeout", "30s", "-o", "json"}, &cout, &cerr); code != 0 {
		t.Errorf("doctor --context test: exit %d\n%s%s", code, cout.String(), cerr.String())
	}

	code, rep, out = doctor("missing", "-o", "json")
	if r := results(rep); code != cli.ExitDoctorFailed || r["cluster"].Result != "failed" || r["cloud"].Result != "skipped" {
		t.Errorf("doctor missing: exit %d, checks %+v\n%s", code, rep.Checks, out)
	}

	code, _, out = doctor("good")
	if code != 0 || !bytes.Contains([]byte(out), []byte("CHECK")) {
		t.Errorf("doctor good (table): exit %d\n%s", code, out)
	}
	t.Logf("doctor good (table):\n%s", out)

	if code, _, out := doctor("good", "-o", "xml"); code != cli.ExitConfig {
		t.Errorf("doctor -o xml: exit %d, want %d\n%s", code, cli.ExitConfig, out)
	}
	if code, _, out := doctor("good", "--quota-threshold", "0"); code != cli.ExitConfig {
		t.Errorf("doctor --quota-threshold 0: exit %d, want %d\n%s", code, cli.ExitConfig, out)
	}

	// Shell completion: the VitalsClusters of the namespace, and the namespaces, from the real cluster.
	complete := func(args ...string) []string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"__complete", "doctor", "--kubeconfig", kubeconfig}, args...), &out, &errb); code != 0 {
			t.Fatalf("__complete doctor %v: exit %d\n%s", args, code, errb.String())
		}
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	if got := complete("-n", ns, ""); !slices.Equal(got, []string{"foreign", "good", "nokube", "quota", "tight", ":4"}) {
		t.Errorf("__complete doctor -n %s '': %q, want the namespace's VitalsClusters", ns, got)
	}
	if got := complete("-n", ""); !slices.Contains(got, ns) || !slices.Contains(got, "default") {
		t.Errorf("__complete doctor -n '': %q, want the namespaces (%s among them)", got, ns)
	}
}

// doctorTwoContexts writes a copy of kubeconfig whose current context is "broken" (a server that does not
// answer) and whose context "test" is the original's.
func doctorTwoContexts(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	orig := cfg.Contexts[cfg.CurrentContext]
	if orig == nil {
		t.Fatalf("%s has no current context", kubeconfig)
	}
	broken := clientcmdapi.NewCluster()
	broken.Server = "https://127.0.0.1:1"
	cfg.Clusters["broken"] = broken
	bc := orig.DeepCopy()
	bc.Cluster = "broken"
	cfg.Contexts["broken"], cfg.Contexts["test"] = bc, orig
	cfg.CurrentContext = "broken"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// doctorSetQuotas sets, as admin, project's Neutron quota of networks to the one network it holds
// and of subnets to 2 (it holds one), and its Cinder quota of volumes to 0; the cleanup gives the
// project its default quotas back.
func doctorSetQuotas(t *testing.T, admin *openstack.Cloud, project string) {
	t.Helper()
	ctx := context.Background()
	nc, err := admin.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quotas.Update(ctx, nc, project, quotas.UpdateOpts{Network: ptr.To(1), Subnet: ptr.To(2)}).Extract(); err != nil {
		t.Fatalf("set the network quotas of project %s: %v", project, err)
	}
	t.Cleanup(func() { _ = quotas.Delete(context.Background(), nc, project).ExtractErr() })
	bc, err := admin.Client(openstack.ServiceBlockStorage)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quotasets.Update(ctx, bc, project, quotasets.UpdateOpts{Volumes: ptr.To(0)}).Extract(); err != nil {
		t.Fatalf("set the block-storage quotas of project %s: %v", project, err)
	}
	t.Cleanup(func() { _ = quotasets.Delete(context.Background(), bc, project).ExtractErr() })
}

// TestDoctorWithoutCRD: against an API server where the VitalsCluster CRD is not installed (a private
// kube-apiserver), the crd check fails and says to install deploy/crds/, every other check is skipped,
// and the exit code is 1 for scripts.
func TestDoctorWithoutCRD(t *testing.T) {
	parallel(t)
	k := testenv.PrivateKube(t)
	var out, errb bytes.Buffer
	code := cli.Main([]string{"doctor", "prod-eu", "-n", "clusters", "--kubeconfig", k.KubeconfigPath(), "--allow-loopback-workload", "-o", "json"}, &out, &errb)
	var rep cli.DoctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, output is not a report: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	if code != cli.ExitDoctorFailed || rep.OK || len(rep.Checks) == 0 {
		t.Fatalf("exit %d, report %+v, want exit %d and a failed report", code, rep, cli.ExitDoctorFailed)
	}
	for i, ch := range rep.Checks {
		switch {
		case i == 0 && (ch.Name != "crd" || ch.Result != "failed" || !strings.Contains(ch.Detail, "the CRD is not installed") || !strings.Contains(ch.Detail, "deploy/crds/")):
			t.Errorf("first check %+v, want crd failed: the CRD is not installed, naming deploy/crds/", ch)
		case i > 0 && ch.Result != "skipped":
			t.Errorf("check %+v after a failed crd check, want skipped", ch)
		}
	}
	t.Logf("doctor without the CRD: exit %d, %+v", code, rep.Checks[0])
}
