package cli

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/internal/test/testenv/prereq"
)

// dotVersion is the Graphviz hack/render-docs.sh pins (what dot -V says of Debian bookworm's graphviz).
const dotVersion = "2.43.0"

// TestArchitecturePictureIsCurrent: each docs/images/*.svg is its .dot's rendering by the pinned dot, as
// hack/render-docs.sh writes it: a source changed without rendering it again fails here.
func TestArchitecturePictureIsCurrent(t *testing.T) {
	prereq.Short(t, "runs dot")
	dot, err := exec.LookPath("dot")
	if err != nil {
		testenv.Unavailable(t, "Graphviz's dot not available: %v (apt-get install graphviz, or hack/install-deps.sh)", err)
	}
	v, _ := exec.Command(dot, "-V").CombinedOutput()
	if m := regexp.MustCompile(`version ([0-9.]+)`).FindSubmatch(v); m == nil || string(m[1]) != dotVersion {
		testenv.Unavailable(t, "dot says %q, hack/render-docs.sh pins %s: its pictures would differ", strings.TrimSpace(string(v)), dotVersion)
	}
	root := repoRoot(t)
	srcs, _ := filepath.Glob(filepath.Join(root, "docs", "images", "*.dot"))
	if len(srcs) == 0 {
		t.Fatal("no docs/images/*.dot")
	}
	for _, src := range srcs {
		want, err := exec.Command(dot, "-Tsvg", src).Output()
		if err != nil {
			t.Fatalf("dot -Tsvg %s: %v", src, err)
		}
		svg := strings.TrimSuffix(src, ".dot") + ".svg"
		got, err := os.ReadFile(svg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the rendering of %s: run hack/render-docs.sh", svg, src)
		}
	}
	// The page shows the picture.
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil || !bytes.Contains(page, []byte("](images/architecture.svg)")) {
		t.Errorf("docs/architecture.md does not show images/architecture.svg (%v)", err)
	}
}

// TestAPIReferenceIsCurrent: docs/api.md is what hack/api-docs.sh (crd-ref-docs, pinned by its tools module)
// writes from the Go types of api/v1alpha1 now.
func TestAPIReferenceIsCurrent(t *testing.T) {
	prereq.Short(t, "builds crd-ref-docs (cached after the first run)")
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "api.md")
	cmd := exec.Command(filepath.Join(root, "hack", "api-docs.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/api-docs.sh: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/api.md is not what hack/api-docs.sh writes from api/v1alpha1: run hack/generate.sh api")
	}
	for _, s := range []string{"#### VitalsCluster", "`spec` _[ClusterSpec](#clusterspec)_", "deletionPolicy", "podCIDRs"} {
		if !bytes.Contains(want, []byte(s)) {
			t.Errorf("docs/api.md lacks %q: the generator's output changed shape", s)
		}
	}
}

// reasonPackages are the packages whose Reason* constants are the reasons of a VitalsCluster's conditions,
// its Events and its status lines: docs/troubleshooting.md says what each means and what to do.
var reasonPackages = []string{"tenancy", "workload", "remediation", "fencing", "controllers/pass",
	"controllers/access", "controllers/flight", "controllers/deorbit", "controllers/remediate", "controllers/cloudheal"}

// TestTroubleshootingNamesEveryReason: every Reason* string constant of reasonPackages, read from their
// source (so that a new one fails here until the page explains it), is named on docs/troubleshooting.md as
// `Reason` or by a heading of its own.
func TestTroubleshootingNamesEveryReason(t *testing.T) {
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, pkg := range reasonPackages {
		files, _ := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for name, value := range reasonConstants(t, f) {
				n++
				if !bytes.Contains(page, []byte("`"+value+"`")) && !bytes.Contains(page, []byte("\n### "+value+"\n")) {
					t.Errorf("docs/troubleshooting.md does not name %s.%s (%q, %s): say what it means and what to do", pkg, name, value, filepath.Base(f))
				}
			}
		}
	}
	if n < 40 {
		t.Fatalf("%d reason constants found: the scan is broken", n)
	}
}

// reasonConstants are the string constants of file whose names begin with Reason.
func reasonConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if !strings.HasPrefix(id.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[id.Name] = v
				}
			}
		}
	}
	return out
}
