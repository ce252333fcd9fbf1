package e2e

// The chart's CRDs as Cluster API and an uninstall see them: clusterctl move discovers every kind of Vitals
// (the label clusterctl.cluster.x-k8s.io on its CRD) and moves the VitalsRemediationTemplate, which nothing
// owns, because its CRD carries clusterctl.cluster.x-k8s.io/move (a moved MachineHealthCheck would otherwise
// name a template left behind); the VitalsCluster and the VitalsRemediation move with their owners (the Cluster,
// the Machine), so they must not carry it (clusterctl would move them twice). docs/upgrade.md's uninstall deletes
// every CRD the chart installs, and the chart's README says that helm uninstall keeps them.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestChartCRDsMoveLabelsAndUninstall(t *testing.T) {
	root := opRepoRoot()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in deploy/crds: %v", err)
	}
	upgrade, err := os.ReadFile(filepath.Join(root, "docs", "upgrade.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The uninstall's kubectl delete crd line.
	var deleteLine string
	for _, l := range strings.Split(string(upgrade), "\n") {
		if strings.Contains(l, "kubectl delete crd ") {
			deleteLine = l
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "deploy", "chart", "vitals", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	moved := []string{"VitalsRemediationTemplate"} // owned by nothing: moved by the label
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeAll(t, data)
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects", f, len(objs))
		}
		crd := objs[0]
		kind := chartString(crd, "spec", "names", "kind")
		plural := chartString(crd, "spec", "names", "plural")
		labels := crd.GetLabels()
		if _, ok := labels["clusterctl.cluster.x-k8s.io"]; !ok {
			t.Errorf("%s: no label clusterctl.cluster.x-k8s.io: clusterctl move does not discover %s", crd.GetName(), kind)
		}
		_, move := labels["clusterctl.cluster.x-k8s.io/move"]
		if want := slices.Contains(moved, kind); move != want {
			t.Errorf("%s: label clusterctl.cluster.x-k8s.io/move %v, want %v", crd.GetName(), move, want)
		}
		chart, err := os.ReadFile(filepath.Join(root, "deploy", "chart", "vitals", "crds", filepath.Base(f)))
		if err != nil || string(chart) != string(data) {
			t.Errorf("deploy/chart/vitals/crds/%s differs from deploy/crds (%v): run hack/generate.sh", filepath.Base(f), err)
		}
		if !strings.Contains(deleteLine, " "+crd.GetName()) {
			t.Errorf("docs/upgrade.md's uninstall (%q) does not delete %s", deleteLine, crd.GetName())
		}
		if !strings.Contains(string(readme), "`"+plural+"`") {
			t.Errorf("the chart's README does not name %s among the CRDs helm uninstall keeps", plural)
		}
	}
}

func chartString(u interface{ UnstructuredContent() map[string]any }, fields ...string) string {
	var v any = u.UnstructuredContent()
	for _, f := range fields {
		m, _ := v.(map[string]any)
		v = m[f]
	}
	s, _ := v.(string)
	return s
}
