package e2e

// vitals doctor against the real kube-apiserver and the real cloud: a VitalsCluster whose credentials
// Secret proves its router, network and subnet, with a reachable workload kubeconfig, passes every
// check (exit 0); one naming another project's router fails the cloud check with the tenancy reason
// (exit 1); one whose route limit (spec.controllers.flight.maxRoutes) the router's routes fill fails
// the route-headroom check by flight's rule; a missing one fails the cluster check; a bad -o is a flag
// error (exit 2).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/cli"
	"github.com/vitalsproject/vitals/internal/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

func TestDoctor(t *testing.T) {
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
	cluster := func(name, router string) {
		t.Helper()
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"},
				RouterID: router, NetworkID: n.Network, SubnetID: n.Subnet},
			KubeconfigSecretRef: &v1alpha1.SecretKeyRef{Name: "kubeconfig"},
			PodCIDRs:            []v1alpha1.CIDR{v1alpha1.CIDR("198.19.0.0/16")},
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
	}}
	if err := c.Create(context.Background(), tight); err != nil {
		t.Fatal(err)
	}

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
	for _, name := range []string{"crd", "cluster", "cloud", "routes", "route-headroom", "workload"} {
		if r := results(rep)[name]; r.Result != "ok" {
			t.Errorf("doctor good: check %s = %+v, want ok", name, r)
		}
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
}
