package rbac

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func manifest(t *testing.T) *Manifest {
	t.Helper()
	m, err := ParseManifest(repoFile(t, ManifestPath))
	if err != nil {
		t.Fatalf("%s: %v", ManifestPath, err)
	}
	return m
}

func diff(t *testing.T, what string, got, want []Access) {
	t.Helper()
	for _, a := range minus(want, got) {
		t.Errorf("%s: missing %s", what, a)
	}
	for _, a := range minus(got, want) {
		t.Errorf("%s: more than needed: %s", what, a)
	}
}

// TestManifestGrantsExactlyPermissions: the manifest's roles grant the union of Permissions, no more, and
// bind them to its ServiceAccount, whose token its Secret is.
func TestManifestGrantsExactlyPermissions(t *testing.T) {
	m := manifest(t)
	diff(t, ManifestPath, m.Accesses(), Of(Permissions))
	for _, r := range m.ClusterRole.Rules {
		if len(r.ResourceNames) > 0 {
			t.Errorf("ClusterRole rule %v names resources: Permissions has no such rule", r)
		}
	}
	sa := m.ServiceAccount
	onlySA := func(what string, subjects []rbacv1.Subject) {
		t.Helper()
		if len(subjects) != 1 || subjects[0].Kind != rbacv1.ServiceAccountKind || subjects[0].Name != sa.Name || subjects[0].Namespace != sa.Namespace {
			t.Errorf("%s: subjects %v, want only ServiceAccount %s/%s", what, subjects, sa.Namespace, sa.Name)
		}
	}
	crb := m.ClusterRoleBinding
	onlySA("ClusterRoleBinding "+crb.Name, crb.Subjects)
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != m.ClusterRole.Name {
		t.Errorf("the ClusterRoleBinding binds %s %s, want ClusterRole %s", crb.RoleRef.Kind, crb.RoleRef.Name, m.ClusterRole.Name)
	}
	if len(m.RoleBindings) != len(m.Roles) {
		t.Errorf("%d RoleBindings for %d Roles", len(m.RoleBindings), len(m.Roles))
	}
	for _, r := range m.Roles {
		i := slices.IndexFunc(m.RoleBindings, func(b rbacv1.RoleBinding) bool {
			return b.Namespace == r.Namespace && b.RoleRef.Kind == "Role" && b.RoleRef.Name == r.Name
		})
		if i < 0 {
			t.Errorf("Role %s/%s: no RoleBinding binds it", r.Namespace, r.Name)
			continue
		}
		onlySA("RoleBinding "+r.Namespace+"/"+m.RoleBindings[i].Name, m.RoleBindings[i].Subjects)
	}
	if s := m.TokenSecret; s != nil {
		if s.Type != "kubernetes.io/service-account-token" || s.Namespace != sa.Namespace || s.Annotations["kubernetes.io/service-account.name"] != sa.Name {
			t.Errorf("Secret %s/%s: type %s, for %q: want the token of ServiceAccount %s/%s", s.Namespace, s.Name, s.Type,
				s.Annotations["kubernetes.io/service-account.name"], sa.Namespace, sa.Name)
		}
		if len(s.Data)+len(s.StringData) > 0 {
			t.Errorf("Secret %s/%s holds data: the token controller fills it in", s.Namespace, s.Name)
		}
	}
}

// docTable returns the rows of docs/operator.md's table of the workload cluster's RBAC: caller -> its columns.
func docTable(t *testing.T) map[string][]string {
	t.Helper()
	const header = "| caller | needs in the workload cluster | one may drop with it disabled |"
	lines := strings.Split(string(repoFile(t, "docs/operator.md")), "\n")
	i := slices.Index(lines, header)
	if i < 0 {
		t.Fatalf("docs/operator.md: no line %q", header)
	}
	rows := map[string][]string{}
	for _, l := range lines[i+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cols := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cols) != 3 {
			t.Fatalf("docs/operator.md: row %q: want 3 columns", l)
		}
		caller := strings.Trim(cols[0], "`")
		if _, dup := rows[caller]; dup {
			t.Errorf("docs/operator.md: caller %s twice", caller)
		}
		rows[caller] = cols[1:]
	}
	return rows
}

// parseCell reads a cell of the table: "none", or "; "-separated accesses (ParseAccess).
func parseCell(t *testing.T, where, cell string) []Access {
	t.Helper()
	if cell == "none" {
		return nil
	}
	var out []Access
	for _, part := range strings.Split(cell, "; ") {
		as, ok := ParseAccess(part)
		if !ok {
			t.Errorf("%s: cannot read %q", where, part)
			continue
		}
		out = append(out, as...)
	}
	Sort(out)
	return out
}

// TestDocsTableIsPermissions: docs/operator.md's table names every caller with exactly its accesses (Of) and what
// the manifest loses without it (Without); so the docs, the manifest and the code cannot drift apart.
func TestDocsTableIsPermissions(t *testing.T) {
	rows := docTable(t)
	for _, c := range Callers {
		cols, ok := rows[c]
		if !ok {
			t.Errorf("docs/operator.md: no row for caller %s", c)
			continue
		}
		delete(rows, c)
		diff(t, "docs/operator.md, "+c+", needs", parseCell(t, c, cols[0]), Of(Permissions, c))
		dropCell, addCell, _ := strings.Cut(cols[1], " — in its place: ")
		drop, add := Without(Permissions, c)
		diff(t, "docs/operator.md, "+c+", drop", parseCell(t, c, dropCell), drop)
		if addCell == "" {
			addCell = "none"
		}
		diff(t, "docs/operator.md, "+c+", in its place", parseCell(t, c, addCell), add)
	}
	for c := range rows {
		t.Errorf("docs/operator.md: row for %s, which is no caller of workload/rbac", c)
	}
}

// TestPermissions: every permission names a known caller, a resource or a URL (not both), verbs, a call site.
func TestPermissions(t *testing.T) {
	for _, p := range Permissions {
		switch {
		case !slices.Contains(Callers, p.Caller):
			t.Errorf("%+v: unknown caller", p)
		case (p.Resource == "") == (p.URL == ""):
			t.Errorf("%+v: want a resource or a URL", p)
		case p.URL != "" && (p.Group != "" || p.Namespace != ""):
			t.Errorf("%+v: a URL has no group or namespace", p)
		case len(p.Verbs) == 0 || p.Why == "":
			t.Errorf("%+v: want verbs and a call site", p)
		}
		for _, a := range p.Accesses() {
			back, ok := ParseAccess("`" + a.Name() + "` " + a.Verb + nsSuffix(a.Namespace))
			if !ok || len(back) != 1 || back[0] != a {
				t.Errorf("%s: reads back as %v", a, back)
			}
		}
	}
}

func nsSuffix(ns string) string {
	if ns == "" {
		return ""
	}
	return " (namespace `" + ns + "`)"
}

func TestWithout(t *testing.T) {
	ps := []Permission{
		{Caller: CallerFlight, Resource: "pods", Verbs: []string{"list"}},
		{Caller: CallerRemediate, Resource: "pods", Verbs: []string{"list"}, Namespace: "kube-system"},
		{Caller: CallerRemediate, Resource: "nodes", Verbs: []string{"list"}},
		{Caller: CallerCloudHeal, Resource: "nodes", Verbs: []string{"list", "watch"}},
		{Caller: CallerAccess, URL: "/readyz", Verbs: []string{"get"}},
	}
	pods := Access{Resource: "pods", Verb: "list"}
	podsKS := Access{Namespace: "kube-system", Resource: "pods", Verb: "list"}
	watch := Access{Resource: "nodes", Verb: "watch"}
	for _, tc := range []struct {
		caller    string
		drop, add []Access
	}{
		{caller: CallerFlight, drop: []Access{pods}, add: []Access{podsKS}},
		{caller: CallerRemediate},
		{caller: CallerCloudHeal, drop: []Access{watch}},
		{caller: CallerAccess},
	} {
		drop, add := Without(ps, tc.caller)
		diff(t, tc.caller+" drop", drop, tc.drop)
		diff(t, tc.caller+" add", add, tc.add)
	}
	if got := Of(ps); slices.Contains(got, podsKS) {
		t.Errorf("Of: %v holds pods in kube-system beside pods in every namespace", got)
	}
}

// TestChartLocalWorkloadRules: with operator.workload.allowLocal the operator acts on its own cluster as on a
// workload cluster, so the chart's local-workload ClusterRole and kube-node-lease Role hold the manifest's rules,
// the same ones.
func TestChartLocalWorkloadRules(t *testing.T) {
	const tpl = "deploy/chart/vitals/templates/operator-rbac.yaml"
	docs := strings.Split(string(repoFile(t, tpl)), "\n---\n")
	// rulesOf returns the rules of the local-workload object of kind (a Role: in namespace ns).
	rulesOf := func(kind string, ns ...string) []rbacv1.PolicyRule {
		t.Helper()
		for _, d := range docs {
			if !strings.Contains(d, "\nkind: "+kind+"\n") || !strings.Contains(d, "-local-workload\n") {
				continue
			}
			if len(ns) > 0 && !strings.Contains(d, "\n  namespace: "+ns[0]+"\n") {
				continue
			}
			i := strings.Index(d, "\nrules:\n")
			if i < 0 {
				t.Fatalf("%s: the local-workload %s has no rules", tpl, kind)
			}
			var r struct{ Rules []rbacv1.PolicyRule }
			if err := yaml.UnmarshalStrict([]byte(d[i+1:]), &r); err != nil {
				t.Fatalf("%s: the local-workload %s's rules: %v", tpl, kind, err)
			}
			return r.Rules
		}
		t.Fatalf("%s: no local-workload %s", tpl, kind)
		return nil
	}
	m := manifest(t)
	if got, want := rulesOf("ClusterRole"), m.ClusterRole.Rules; !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: the local-workload ClusterRole's rules\n%v\nwant the manifest's\n%v", tpl, got, want)
	}
	if len(m.Roles) == 0 {
		t.Fatalf("%s: no Role", ManifestPath)
	}
	for _, r := range m.Roles {
		if got, want := rulesOf("Role", r.Namespace), r.Rules; !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: the local-workload Role's rules in %s %v, want the manifest's %v", tpl, r.Namespace, got, want)
		}
	}
}
