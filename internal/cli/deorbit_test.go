package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
)

// Bad flags exit 2 with the flag named, before any cloud or cluster is reached.
func TestDeorbitBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deorbit"}, "--cluster-name"},
		{[]string{"deorbit", "--cluster-name", "c1", "--router", "r1"}, "--pod-cidr"},
		{[]string{"deorbit", "--cluster-name", "c1", "--give-up-after", "10s"}, "--give-up-after"},
		{[]string{"deorbit", "--cluster-name", "c1", "--parallel-deletes", "0"}, "--parallel-deletes"},
		{[]string{"deorbit", "--cluster-name", "c1", "--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, &out, &errb); code != ExitConfig {
			t.Errorf("%v: exit %d (%s), want %d", tc.args, code, errb.String(), ExitConfig)
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: %q does not name %s", tc.args, errb.String(), tc.want)
		}
	}
}

// vitals deorbit -o json|yaml against the real Cinder: a volume the Cinder CSI driver would have
// tagged with the cluster's name is in the dry run's plan (stdout holds the report only, the
// progress goes to stderr), then deleted by a real run whose YAML report says done.
func TestDeorbitOutput(t *testing.T) {
	env := testenv.RequireFull(t)
	for _, kv := range env.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("OS_CLOUD", "")
	ctx := t.Context()
	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: mustAuth(t)})
	if err != nil {
		t.Fatal(err)
	}
	bc, err := cloud.Client(openstack.ServiceBlockStorage)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vitals-cli-deorbit-%d", time.Now().UnixNano())
	v, err := volumes.Create(ctx, bc, volumes.CreateOpts{Size: 1, Name: name + "-pv",
		Metadata: map[string]string{"cinder.csi.openstack.org/cluster": name}}, nil).Extract()
	if err != nil {
		t.Fatalf("create volume: %v", err)
	}
	t.Cleanup(func() { _ = volumes.Delete(context.Background(), bc, v.ID, volumes.DeleteOpts{}).ExtractErr() })
	if err := volumes.WaitForStatus(ctx, bc, v.ID, "available"); err != nil {
		t.Fatalf("volume %s: %v", v.ID, err)
	}

	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(append([]string{"deorbit", "--cluster-name", name}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := run("--dry-run", "-o", "json")
	var rep DeorbitReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("deorbit --dry-run -o json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errs)
	}
	planned := false
	for _, r := range rep.Status.Resources {
		planned = planned || (r.ID == v.ID && r.State == v1alpha1.DeorbitWouldDelete)
	}
	if rep.Result != DeorbitPlanned || rep.Cluster != name || rep.ProjectID != cloud.ProjectID() || !planned {
		t.Errorf("deorbit --dry-run -o json: %+v; want planned in project %s with volume %s to delete", rep, cloud.ProjectID(), v.ID)
	}
	if !strings.Contains(errs, "phase") {
		t.Errorf("deorbit -o json: the progress is not on stderr:\n%s", errs)
	}

	code, out, errs = run("-o", "yaml", "--cloud-wait-timeout", "0s")
	rep = DeorbitReport{}
	if err := yaml.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Result != DeorbitDone || rep.Status.Counts.Total == 0 {
		t.Fatalf("deorbit -o yaml: exit %d, %v, %+v\nstdout:\n%s\nstderr:\n%s", code, err, rep, out, errs)
	}
	if _, err := volumes.Get(ctx, bc, v.ID).Extract(); !openstack.IsNotFound(err) {
		t.Errorf("volume %s after deorbit: %v, want 404", v.ID, err)
	}
}

func mustAuth(t *testing.T) openstack.Auth {
	t.Helper()
	a, err := openstack.PickAuth(openstack.AuthSources{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDeorbitResourcesTable: the plan and the debris are a table whose columns hold any name (a VIP port's
// is 47 characters), with a header, "-" for an empty cell and no trailing blanks.
func TestDeorbitResourcesTable(t *testing.T) {
	rs := []v1alpha1.DeorbitResource{
		{Type: "Route", ID: "198.19.0.0/24@10.180.0.10", Name: "198.19.0.0/24", State: v1alpha1.DeorbitWouldDelete},
		{Type: "Port", ID: "b5da9d3f-ff19-4574-8447-804beb91ea52", Name: "octavia-lb-52a20d5f-e39a-4100-af15-842de8faf8dc",
			Status: "DOWN", LastError: "goes with its load balancer", State: v1alpha1.DeorbitWouldDelete},
		{Type: "Volume", ID: "391cf884", Name: "pvc-demo-2", Status: "available", State: "Deleted"},
	}
	var b bytes.Buffer
	printResources(&b, "plan (dry run): would delete", rs, v1alpha1.DeorbitWouldDelete)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 || lines[0] != "plan (dry run): would delete:" || !strings.HasPrefix(lines[1], "  TYPE") {
		t.Fatalf("table:\n%s", b.String())
	}
	col := strings.Index(lines[1], "STATUS")
	for _, l := range lines[1:] {
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing blanks: %q", l)
		}
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("STATUS column (at %d) not aligned in %q", col, l)
		}
	}
	if !strings.HasSuffix(lines[2], " -") || strings.Contains(b.String(), "pvc-demo-2") {
		t.Errorf("want '-' for the route's empty status and the volume (not in state WouldDelete) left out:\n%s", b.String())
	}
	b.Reset()
	printResources(&b, "gave up; debris left in the cloud", nil, "")
	if b.String() != "gave up; debris left in the cloud:\n  (nothing)\n" {
		t.Errorf("empty table: %q", b.String())
	}
}
