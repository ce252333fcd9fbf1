package e2e

// The command line against the real cloud, with --os-cloud and a clouds.yaml as a user has them:
// `routes audit` by router name, its --exit-code (3 with an orphaned route, 0 without); `deorbit --router
// NAME` (a name is resolved in the credentials' project, then proven: no false ownership error), and its
// summary, which counts an excluded volume kept, never gone; `deorbit` refuses what the operator refuses (a
// same-named neighbour, a load balancer on a neighbour's subnet, a keep marker, an exclusion), and the sweep without
// the management cluster. The process environment is set (t.Setenv), so these tests do not run in parallel.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/ccm"
	"github.com/vitalsproject/vitals/internal/cli"
	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// cliCloud writes the test cloud as cloud "test" of a clouds.yaml that OS_CLIENT_CONFIG_FILE names, and
// clears the OS_* variables, so that only --os-cloud finds the credentials.
func cliCloud(t *testing.T, env testenv.OpenStackEnv) {
	t.Helper()
	cliCloudVia(t, env, env.AuthURL)
}

// cliCloudVia is cliCloud with Keystone at authURL (a fault proxy's, opFaultProxy).
func cliCloudVia(t *testing.T, env testenv.OpenStackEnv, authURL string) {
	t.Helper()
	for _, kv := range env.Env() {
		k, _, _ := strings.Cut(kv, "=")
		t.Setenv(k, "")
	}
	t.Setenv("OS_CLOUD", "")
	yaml := strings.Replace(opCloudsYAML(authURL, env.Username, env.Password, env.ProjectName), "  openstack:", "  test:", 1)
	f := filepath.Join(t.TempDir(), "clouds.yaml")
	if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OS_CLIENT_CONFIG_FILE", f)
}

func cliRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// routerName returns the name of a router.
func routerName(t *testing.T, cloud *openstack.Cloud, id string) string {
	t.Helper()
	nc, err := cloud.Client(openstack.ServiceNetworking)
	if err != nil {
		t.Fatal(err)
	}
	r, err := routers.Get(context.Background(), nc, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	return r.Name
}

func TestRoutesAuditExitCode(t *testing.T) {
	env := testenv.OpenStack(t)
	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	n := opNewNet(t, cloud)
	n.Port(5)
	n.SetRoutes(openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)})
	cliCloud(t, env)
	name := routerName(t, cloud, n.Router)

	audit := func(extra ...string) (int, string, string) {
		return cliRun(append([]string{"routes", "audit", "--os-cloud", "test", "--router", name, "--pod-cidr", "198.19.0.0/16", "--sources", "ports"}, extra...)...)
	}
	if code, out, errs := audit("--exit-code"); code != cli.ExitOK || !strings.Contains(out, "1 live, 0 orphaned") {
		t.Fatalf("audit --exit-code of a router without orphans: exit %d\n%s%s", code, out, errs)
	}
	n.SetRoutes(openstack.Route{Destination: "198.19.1.0/24", NextHop: n.IP(5)}, openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)})
	if code, out, errs := audit(); code != cli.ExitOK || !strings.Contains(out, "1 orphaned") {
		t.Errorf("audit (no --exit-code) with an orphan: exit %d, want 0\n%s%s", code, out, errs)
	}
	code, out, errs := audit("--exit-code", "-o", "json")
	var rep cli.RouteAudit
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != cli.ExitOrphaned || rep.Counts.Orphaned != 1 || rep.Router.ID != n.Router {
		t.Errorf("audit --exit-code -o json with an orphan: exit %d (want %d), %v, %+v\n%s", code, cli.ExitOrphaned, err, rep, errs)
	}
	if !strings.Contains(errs, "1 orphaned route(s)") {
		t.Errorf("audit --exit-code: stderr %q does not say why it exits %d", errs, code)
	}
	if code, _, errs := audit("--pod-cidr", "198.19.0.7/16"); code != cli.ExitConfig || !strings.Contains(errs, "host bits") {
		t.Errorf("a pod CIDR with host bits: exit %d, %q", code, errs)
	}
	if code, _, errs := cliRun("routes", "audit", "--os-cloud", "nosuchcloud", "--router", name, "--pod-cidr", "198.19.0.0/16"); code == cli.ExitOK ||
		!strings.Contains(errs, "nosuchcloud") {
		t.Errorf("--os-cloud of a cloud the clouds.yaml lacks: exit %d, %q; want an error naming it", code, errs)
	}
}

func TestDeorbitRouterNameAndKeptVolumes(t *testing.T) {
	env := testenv.RequireFull(t)
	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	n := opNewNet(t, cloud)
	n.SetRoutes(openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)})
	opKube(t) // the VitalsCluster CRD, for the same-named neighbours guard
	mgmt := testenv.KubeconfigPath(t)
	cliCloud(t, env)
	name := routerName(t, cloud, n.Router)

	ctx := t.Context()
	bc, err := cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		t.Fatal(err)
	}
	cluster := "vitals-cli-kept-" + opRandHex(4)
	var ids []string
	for i := range 2 {
		v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: fmt.Sprintf("%s-pv-%d", cluster, i),
			Metadata: map[string]string{wlVolumeClusterKey: cluster}}, nil).Extract()
		if err != nil {
			t.Fatalf("create volume: %v", err)
		}
		t.Cleanup(func() { _ = volumes.Delete(context.Background(), bc, v.ID, volumes.DeleteOpts{}).ExtractErr() })
		if err := volumes.WaitForStatus(ctx, bc, v.ID, "available"); err != nil {
			t.Fatalf("volume %s: %v", v.ID, err)
		}
		ids = append(ids, v.ID)
	}
	kept, deleted := ids[0], ids[1]

	code, out, errs := cliRun("deorbit", "--os-cloud", "test", "--cluster-name", cluster, "--router", name, "--pod-cidr", "198.19.0.0/16",
		"--exclude", kept, "--cloud-wait-timeout", "0s", "--management-kubeconfig", mgmt)
	if code != cli.ExitOK {
		t.Fatalf("deorbit --router %s (a name): exit %d\n%s%s", name, code, out, errs)
	}
	for _, want := range []string{"deorbit " + cluster + ": project " + cloud.ProjectID(), "kept " + "volume", "1 kept, not deleted",
		"kept in the cloud", kept} {
		if !strings.Contains(out, want) {
			t.Errorf("deorbit output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "every resource of "+cluster+" gone") {
		t.Errorf("deorbit says every resource is gone, with %s kept:\n%s", kept, out)
	}
	if _, err := volumes.Get(ctx, bc, kept).Extract(); err != nil {
		t.Errorf("the excluded volume %s: %v, want it kept", kept, err)
	}
	if _, err := volumes.Get(ctx, bc, deleted).Extract(); !openstack.IsNotFound(err) {
		t.Errorf("volume %s after deorbit: %v, want 404", deleted, err)
	}
	if n.Routes()[openstack.Route{Destination: "198.19.2.0/24", NextHop: n.IP(99)}] {
		t.Errorf("the cluster's route on router %s (%s) is still there", name, n.Router)
	}
	// The JSON report says the same: the kept volume is Kept.
	code, out, errs = cliRun("deorbit", "--os-cloud", "test", "--cluster-name", cluster, "--exclude", kept, "--cloud-wait-timeout", "0s", "-o", "json",
		"--management-kubeconfig", mgmt)
	var rep cli.DeorbitReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != cli.ExitOK {
		t.Fatalf("deorbit -o json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	for _, r := range rep.Status.Resources {
		if r.ID == kept && r.State != v1alpha1.DeorbitKept {
			t.Errorf("the excluded volume's state %s, want %s", r.State, v1alpha1.DeorbitKept)
		}
	}
}

// TestDeorbitRefusesAsTheOperator: `vitals deorbit` runs the operator's proofs, in the operator's code, against the
// real Cinder and Octavia and the VitalsClusters of the management cluster:
//   - another VitalsCluster names the same cloud cluster: the sweep deletes nothing (exit 4, the neighbour named, what
//     the sweep found reported not proven), as the operator's sweep guard refuses;
//   - without the management cluster, that guard cannot run: the run says so and refuses the sweep too;
//   - the neighbour gone, the cluster's own VitalsCluster (--vitalscluster) gives the nodes' subnet and the
//     exclusions: the load balancer named as the cluster's but on a neighbour's subnet is never touched, the volume
//     the annotation excludes and the volume whose Cinder metadata carries the keep marker as "True" are kept; the
//     cluster's own load balancer and volume go.
func TestDeorbitRefusesAsTheOperator(t *testing.T) {
	env := testenv.RequireFull(t)
	auth := opAuth(t, env)
	cloud := opConnect(t, auth, nil)
	ours, theirs := opNewNet(t, cloud), opNewNet(t, cloud)
	_, c, ns := opKube(t)
	mgmt := testenv.KubeconfigPath(t)
	// The command reaches Cinder, Octavia and Neutron through fault proxies that count every DELETE: "never
	// touched" is proven on the wire.
	via, proxies := opFaultProxy(t, env, cloud, openstack.ServiceBlockStorage, openstack.ServiceLoadBalancer, openstack.ServiceNetworking)
	for _, p := range proxies {
		if err := p.Add(faultproxy.Rule{Name: "any-delete", Method: "DELETE", Path: "/**", Fault: faultproxy.Pass()}); err != nil {
			t.Fatal(err)
		}
	}
	deletes := func() int {
		n := 0
		for _, p := range proxies {
			n += p.Matched("any-delete")
		}
		return n
	}
	cliCloudVia(t, env, via.Options.IdentityEndpoint)
	ctx := t.Context()
	bc, err := cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := cloud.Client(openstack.ServiceLoadBalancer)
	if err != nil {
		t.Fatal(err)
	}
	cluster := "vitals-cli-guard-" + opRandHex(4)
	volume := func(name string, md map[string]string) string {
		t.Helper()
		md[wlVolumeClusterKey] = cluster
		v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: cluster + "-" + name, Metadata: md}, nil).Extract()
		if err != nil {
			t.Fatalf("create volume: %v", err)
		}
		t.Cleanup(func() { _ = volumes.Delete(context.Background(), bc, v.ID, volumes.DeleteOpts{}).ExtractErr() })
		return v.ID
	}
	vDel, vMarked, vExcluded := volume("pv-0", map[string]string{}), volume("pv-kept", map[string]string{v1alpha1.AnnotationKeep: "True"}), volume("pv-excluded", map[string]string{})
	lb := func(ns string, subnet string) string {
		t.Helper()
		l, err := loadbalancers.Create(ctx, lc, loadbalancers.CreateOpts{Name: ccm.LoadBalancerName(cluster, ns, "web"), VipSubnetID: subnet}).Extract()
		if err != nil {
			t.Fatalf("create load balancer: %v", err)
		}
		t.Cleanup(func() {
			_ = loadbalancers.Delete(context.Background(), lc, l.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr()
		})
		return l.ID
	}
	lbOurs, lbTheirs := lb("app", ours.Subnet), lb("other", theirs.Subnet)
	opEventually(t, wlCloudTimeout, "volumes and load balancers ready", func() (bool, string) {
		var wait []string
		for _, id := range []string{vDel, vMarked, vExcluded} {
			if v, err := cloud.GetVolume(ctx, id); err != nil || v.Status != "available" {
				wait = append(wait, fmt.Sprintf("volume %s %v %v", id, v, err))
			}
		}
		for _, id := range []string{lbOurs, lbTheirs} {
			if l, err := cloud.GetLoadBalancer(ctx, id); err != nil || l.ProvisioningStatus != "ACTIVE" {
				wait = append(wait, fmt.Sprintf("load balancer %s %v %v", id, l, err))
			}
		}
		return len(wait) == 0, strings.Join(wait, ", ")
	})
	vcl := func(name, router, subnet, exclude string, pods v1alpha1.CIDR) *v1alpha1.VitalsCluster {
		t.Helper()
		vc := &v1alpha1.VitalsCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.ClusterSpec{
			OpenStack: v1alpha1.OpenStackSpec{CredentialsSecretRef: &v1alpha1.SecretKeyRef{Name: "creds"}, RouterID: router, SubnetID: subnet, ClusterName: cluster},
			PodCIDRs:  []v1alpha1.CIDR{pods},
		}}
		if exclude != "" {
			vc.Annotations = map[string]string{v1alpha1.AnnotationExclude: exclude}
		}
		if err := c.Create(ctx, vc); err != nil {
			t.Fatal(err)
		}
		return vc
	}
	own := vcl("own", ours.Router, ours.Subnet, vExcluded, "198.19.0.0/16")
	neighbour := vcl("neighbour", theirs.Router, theirs.Subnet, "", "198.20.0.0/16")

	deorbitRun := func(args ...string) (int, cli.DeorbitReport, string) {
		t.Helper()
		code, out, errs := cliRun(append([]string{"deorbit", "--os-cloud", "test", "--cluster-name", cluster, "--cloud-wait-timeout", "0s", "-o", "json"}, args...)...)
		var rep cli.DeorbitReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("deorbit %v: exit %d, %v\nstdout:\n%s\nstderr:\n%s", args, code, err, out, errs)
		}
		return code, rep, errs
	}
	untouched := func(when string) {
		t.Helper()
		if n := deletes(); n != 0 {
			t.Errorf("%s: %d DELETE requests to Cinder, Octavia or Neutron, want none", when, n)
		}
		for _, id := range []string{vDel, vMarked, vExcluded} {
			if v, err := cloud.GetVolume(ctx, id); err != nil || v.Status == "deleting" {
				t.Errorf("%s: volume %s: %v, %v; want it untouched", when, id, v, err)
			}
		}
		for _, id := range []string{lbOurs, lbTheirs} {
			if l, err := cloud.GetLoadBalancer(ctx, id); err != nil || l.ProvisioningStatus != "ACTIVE" {
				t.Errorf("%s: load balancer %s: %v, %v; want it untouched", when, id, l, err)
			}
		}
	}
	proof := func(rep cli.DeorbitReport, name string) cli.DeorbitProof {
		for _, p := range rep.Proofs {
			if p.Name == name {
				return p
			}
		}
		t.Errorf("no proof %s in %+v", name, rep.Proofs)
		return cli.DeorbitProof{}
	}

	// A same-named neighbour: refused, as the operator's sweep guard refuses.
	code, rep, errs := deorbitRun("--management-kubeconfig", mgmt, "--vitalscluster", ns+"/own")
	if code != cli.ExitRefused || rep.Result != cli.DeorbitRefused || !strings.Contains(proof(rep, cli.ProofNeighbours).Note, ns+"/neighbour") {
		t.Errorf("deorbit with a same-named neighbour: exit %d (want %d), result %s, proofs %+v\n%s", code, cli.ExitRefused, rep.Result, rep.Proofs, errs)
	}
	untouched("a same-named neighbour")

	// No management cluster: the guard cannot run, and the sweep is refused.
	code, rep, errs = deorbitRun("--subnet", ours.Subnet)
	if p := proof(rep, cli.ProofNeighbours); code != cli.ExitRefused || p.Ran || !strings.Contains(p.Note, "--management-kubeconfig") {
		t.Errorf("deorbit without the management cluster: exit %d (want %d), proof %+v\n%s", code, cli.ExitRefused, p, errs)
	}
	if !slices.ContainsFunc(rep.Status.NotProven, func(r v1alpha1.DeorbitResource) bool { return r.ID == vDel }) {
		t.Errorf("not proven %+v: want volume %s reported, never touched", rep.Status.NotProven, vDel)
	}
	untouched("no management cluster")

	// The neighbour gone: the cluster's own VitalsCluster's subnet and exclusions apply.
	if err := c.Delete(ctx, neighbour); err != nil {
		t.Fatal(err)
	}
	code, rep, errs = deorbitRun("--management-kubeconfig", mgmt, "--vitalscluster", client.ObjectKeyFromObject(own).String())
	if code != cli.ExitOK || rep.Result != cli.DeorbitDone || !proof(rep, cli.ProofSubnet).Ran || !strings.Contains(proof(rep, cli.ProofSubnet).Note, ours.Subnet) {
		t.Fatalf("deorbit: exit %d, result %s, proofs %+v\n%s", code, rep.Result, rep.Proofs, errs)
	}
	states := map[string]string{}
	for _, r := range rep.Status.Resources {
		states[r.ID] = r.State
	}
	for id, want := range map[string]string{vDel: v1alpha1.DeorbitGone, lbOurs: v1alpha1.DeorbitGone, vMarked: v1alpha1.DeorbitKept, vExcluded: v1alpha1.DeorbitKept} {
		if states[id] != want {
			t.Errorf("%s: state %q, want %s", id, states[id], want)
		}
	}
	if _, ok := states[lbTheirs]; ok {
		t.Errorf("the load balancer on the neighbour's subnet, %s, is tracked (%s): want it never the cluster's", lbTheirs, states[lbTheirs])
	}
	if l, err := cloud.GetLoadBalancer(ctx, lbTheirs); err != nil || l.ProvisioningStatus != "ACTIVE" {
		t.Errorf("the load balancer on the neighbour's subnet, %s: %v, %v; want it untouched", lbTheirs, l, err)
	}
	for _, id := range []string{vMarked, vExcluded} {
		if _, err := cloud.GetVolume(ctx, id); err != nil {
			t.Errorf("kept volume %s: %v", id, err)
		}
	}
	if _, err := cloud.GetVolume(ctx, vDel); !openstack.IsNotFound(err) {
		t.Errorf("volume %s after deorbit: %v, want 404", vDel, err)
	}
	if _, err := cloud.GetLoadBalancer(ctx, lbOurs); !openstack.IsNotFound(err) {
		t.Errorf("the cluster's load balancer %s after deorbit: %v, want 404", lbOurs, err)
	}
	if n := deletes(); n < 2 {
		t.Errorf("%d DELETE requests through the proxies, want the volume's and the load balancer's (the counts above would prove nothing)", n)
	}
}
