package prereq

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoPlainSkip keeps every skip of the module's tests behind this package's rule: a call of a method
// named Skip, Skipf or SkipNow anywhere but here is an error naming its place (modules of their own
// under the tree, such as bench/health, are not this module's and are left out). A plain t.Skip
// passes silently where CI requires every prerequisite (the flight node tests off the full tier, the
// Docker tests without the CLI, the connectivity tests without root all did).
func TestNoPlainSkip(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			// A module of its own (bench/health, the tools modules) cannot import this package, and
			// go test ./... of this module does not run its tests.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Dir(path) == self {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				switch sel.Sel.Name {
				case "Skip", "Skipf", "SkipNow":
					rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
					t.Errorf("%s:%d: %s: plain skip; use prereq.Missing (a missing prerequisite: fails when %s=1) or prereq.Short (-short), or testenv's accessors",
						rel, fset.Position(call.Pos()).Line, sel.Sel.Name, EnvRequired)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the repository", files, root)
	}
}

func moduleRoot() (string, error) {
	dir, err := filepath.Abs(".")
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

func TestMissing(t *testing.T) {
	for _, required := range []bool{false, true} {
		t.Setenv(EnvRequired, map[bool]string{false: "", true: "1"}[required])
		rec := &recorder{TB: t}
		func() {
			defer func() { _ = recover() }() // Skip and Fatal end the goroutine in testing; the recorder panics
			Missing(rec, "needs %s", "root")
		}()
		if required && (rec.fatal == "" || rec.skip != "") || !required && (rec.skip == "" || rec.fatal != "") {
			t.Errorf("required=%v: skip %q, fatal %q", required, rec.skip, rec.fatal)
		}
		if !strings.HasPrefix(rec.skip+rec.fatal, "needs root") {
			t.Errorf("message %q", rec.skip+rec.fatal)
		}
	}
}

// recorder records Skip and Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	skip, fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	panic("skip")
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic("fatal")
}
