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
	"github.com/vitalsproject/vitals/internal/testenv"
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
