package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/controllers/deorbit"
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
		{[]string{"deorbit", "--cluster-name", "c1", "--vitalscluster", "ns/c1"}, "--vitalscluster"},
		{[]string{"deorbit", "--cluster-name", "c1", "--management-kubeconfig", "/nonexistent/kubeconfig", "--vitalscluster", "c1"}, "--vitalscluster"},
		{[]string{"deorbit", "--cluster-name", "c1", "--management-kubeconfig", "/nonexistent/kubeconfig"}, "--management-kubeconfig"},
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

// vitals deorbit -o json|yaml against the real Cinder: a volume the Cinder CSI driver would have tagged with the
// cluster's name. Without the management cluster the same-named neighbours guard cannot run: the run refuses the
// sweep's delete (exit 4, result refused, the volume not proven and still there), and says which proof it could not
// run. With it, the volume is in the dry run's plan (stdout holds the report only, the progress goes to stderr), then
// deleted by a real run whose YAML report says done.
func TestDeorbitOutput(t *testing.T) {
	env := testenv.RequireFull(t)
	for _, kv := range env.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("OS_CLOUD", "")
	testenv.InstallCRD(t, testenv.Kube(t))
	mgmt := testenv.KubeconfigPath(t)
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
	code, out, errs := run("-o", "json", "--cloud-wait-timeout", "0s")
	var rep DeorbitReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitRefused || rep.Result != DeorbitRefused {
		t.Fatalf("deorbit without the management cluster: exit %d (want %d), %v, result %q\nstdout:\n%s\nstderr:\n%s", code, ExitRefused, err, rep.Result, out, errs)
	}
	if !slices.ContainsFunc(rep.Proofs, func(p DeorbitProof) bool { return p.Name == ProofNeighbours && !p.Ran }) {
		t.Errorf("proofs %+v: want the neighbours guard not run", rep.Proofs)
	}
	if !slices.ContainsFunc(rep.Status.NotProven, func(r v1alpha1.DeorbitResource) bool { return r.ID == v.ID }) {
		t.Errorf("not proven %+v: want volume %s", rep.Status.NotProven, v.ID)
	}
	if _, err := volumes.Get(ctx, bc, v.ID).Extract(); err != nil {
		t.Fatalf("volume %s after the refused run: %v, want it there", v.ID, err)
	}

	code, out, errs = run("--dry-run", "-o", "json", "--management-kubeconfig", mgmt)
	rep = DeorbitReport{}
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
	if !strings.Contains(errs, "phase") || !strings.Contains(errs, "proof neighbours: ran") {
		t.Errorf("deorbit -o json: the progress and the proofs are not on stderr:\n%s", errs)
	}

	code, out, errs = run("-o", "yaml", "--cloud-wait-timeout", "0s", "--management-kubeconfig", mgmt)
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

// The proofs a run reports: the subnet when one is given, the neighbours guard when the management cluster is read
// (refused without it), the keep ledger when one was taken.
func TestDeorbitProofs(t *testing.T) {
	start := metav1.Now()
	ledger := &v1alpha1.DeorbitStatus{StartTime: &start, Seen: &v1alpha1.DeorbitSeen{KeepTime: &start,
		Keep: []v1alpha1.DeorbitKeepEntry{{Type: v1alpha1.DeorbitVolume, ID: "v1"}}}}
	own := &v1alpha1.VitalsCluster{}
	for _, tc := range []struct {
		name string
		in   deorbit.Input
		st   *v1alpha1.DeorbitStatus
		mgmt bool
		own  *v1alpha1.VitalsCluster
		ran  map[string]bool
		note map[string]string // in the proof's note
	}{
		{name: "nothing to prove with", in: deorbit.Input{SweepRefused: "the same-named neighbours guard could not run"}, st: &v1alpha1.DeorbitStatus{StartTime: &start},
			ran:  map[string]bool{ProofSubnet: false, ProofNeighbours: false, ProofKeepLedger: false},
			note: map[string]string{ProofNeighbours: "could not run", ProofKeepLedger: "only a volume's Cinder metadata", ProofSubnet: "any subnet"}},
		{name: "every proof, the cluster's own VitalsCluster read", in: deorbit.Input{Target: deorbit.Target{SubnetID: "s1"}}, st: ledger, mgmt: true, own: own,
			ran:  map[string]bool{ProofSubnet: true, ProofNeighbours: true, ProofKeepLedger: true},
			note: map[string]string{ProofSubnet: "subnet s1", ProofNeighbours: "other than ns/c1", ProofKeepLedger: "1 volumes"}},
		{name: "the management cluster without the cluster's own", in: deorbit.Input{}, st: ledger, mgmt: true,
			ran:  map[string]bool{ProofNeighbours: true},
			note: map[string]string{ProofNeighbours: "any VitalsCluster names"}},
		{name: "a neighbour found before the run", in: deorbit.Input{SweepRefused: "VitalsCluster x/y names the same cloud cluster"}, st: ledger, mgmt: true,
			ran:  map[string]bool{ProofNeighbours: true},
			note: map[string]string{ProofNeighbours: "x/y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &deorbitFlags{clusterName: "c1", vcl: "ns/c1"}
			ps := deorbitProofs(tc.in, tc.st, f, tc.mgmt, tc.own)
			got := map[string]DeorbitProof{}
			for _, p := range ps {
				got[p.Name] = p
			}
			for name, ran := range tc.ran {
				if got[name].Ran != ran {
					t.Errorf("proof %s: ran %v, want %v (%q)", name, got[name].Ran, ran, got[name].Note)
				}
			}
			for name, want := range tc.note {
				if !strings.Contains(got[name].Note, want) {
					t.Errorf("proof %s: %q, want %q in it", name, got[name].Note, want)
				}
			}
		})
	}
}
