package e2e

// The command line against the real cloud, with --os-cloud and a clouds.yaml as a user has them:
// `routes audit` by router name, its --exit-code (3 with an orphaned route, 0 without); `deorbit --router
// NAME` (a name is resolved in the credentials' project, then proven: no false ownership error), and its
// summary, which counts an excluded volume kept, never gone. The process environment is set (t.Setenv),
// so these tests do not run in parallel.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/cli"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// cliCloud writes the test cloud as cloud "test" of a clouds.yaml that OS_CLIENT_CONFIG_FILE names, and
// clears the OS_* variables, so that only --os-cloud finds the credentials.
func cliCloud(t *testing.T, env testenv.OpenStackEnv) {
	t.Helper()
	for _, kv := range env.Env() {
		k, _, _ := strings.Cut(kv, "=")
		t.Setenv(k, "")
	}
	t.Setenv("OS_CLOUD", "")
	yaml := strings.Replace(opCloudsYAML(env.AuthURL, env.Username, env.Password, env.ProjectName), "  openstack:", "  test:", 1)
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
		"--exclude", kept, "--cloud-wait-timeout", "0s")
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
	code, out, errs = cliRun("deorbit", "--os-cloud", "test", "--cluster-name", cluster, "--exclude", kept, "--cloud-wait-timeout", "0s", "-o", "json")
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
