package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// chartDir is deploy/chart/vitals of this checkout.
func chartDir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "chart", "vitals")
}

// TestChartREADMEIsCurrent: the chart's README holds the table values.yaml makes, so that a value added,
// renamed or re-documented without hack/generate.sh fails here.
func TestChartREADMEIsCurrent(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-chart", chartDir(t), "-check"}, &stderr); code != 0 {
		t.Errorf("chartdoc -check: exit %d: %s", code, stderr.String())
	}
}

// TestChartREADMEEveryValue: every key of values.yaml, at every depth, has its row.
func TestChartREADMEEveryValue(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := Table(values)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"image.registry", "serviceAccount.name", "operator.podSecurityContext.runAsUser",
		"operator.extraVolumeMounts", "metrics.labels", "metrics.prometheusRule.disabled", "agent.tolerations",
		"operator.topologySpreadConstraints"} {
		if !strings.Contains(table, "| `"+key+"` |") {
			t.Errorf("no row for %s", key)
		}
	}
}

func TestTable(t *testing.T) {
	tests := []struct{ name, values, want string }{
		{"scalars with comments", "# The size.\nsize: 3 # at most 5\nname: \"\"\n",
			"| `size` | `3` | The size. at most 5 |\n| `name` | `\"\"` |  |\n"},
		{"nested, documented parent", "# Of a.\na:\n  b: x\n  c: [1, 2]\n  d: {}\n",
			"| `a` | | Of a. |\n| `a.b` | `x` |  |\n| `a.c` | `[1, 2]` |  |\n| `a.d` | `{}` |  |\n"},
		{"block list and flow map as one default", "l:\n  - a\n  - b\nm: {x: 1}\n",
			"| `l` | `[a, b]` |  |\n| `m` | `{x: 1}` |  |\n"},
		{"a pipe escaped", "# a | b\nk: \"x|y\"\n", "| `k` | `\"x\\|y\"` | a \\| b |\n"},
		{"a commented-out key", "o:\n  # Spread them.\n  # spread: []\n  # The class.\n  class: \"\"\n",
			"| `o.spread` | unset (`[]`) | Spread them. |\n| `o.class` | `\"\"` | The class. |\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Table([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			want := "| Value | Default | What |\n|---|---|---|\n" + tc.want
			if got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	tests := []struct{ name, values, readme string }{
		{"no markers", "a: 1\n", "# README\n"},
		{"markers reversed", "a: 1\n", endMarker + "\n" + beginMarker + "\n"},
		{"not a mapping", "- a\n", beginMarker + "\n" + endMarker + "\n"},
		{"bad YAML", "a: [\n", beginMarker + "\n" + endMarker + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Render([]byte(tc.values), []byte(tc.readme)); err == nil {
				t.Errorf("Render accepted %q / %q", tc.values, tc.readme)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("values.yaml", "# A.\na: 1\n")
	write("README.md", "x\n"+beginMarker+"\nold\n"+endMarker+"\ny\n")
	var stderr bytes.Buffer
	if code := run([]string{"-chart", dir, "-check"}, &stderr); code != 1 {
		t.Errorf("-check on a stale README: exit %d, want 1", code)
	}
	if code := run([]string{"-chart", dir}, &stderr); code != 0 {
		t.Errorf("write: exit %d: %s", code, stderr.String())
	}
	if code := run([]string{"-chart", dir, "-check"}, &stderr); code != 0 {
		t.Errorf("-check after writing: exit %d", code)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if want := "x\n" + beginMarker + "\n\n| Value | Default | What |\n|---|---|---|\n| `a` | `1` | A. |\n\n" + endMarker + "\ny\n"; string(got) != want {
		t.Errorf("README\n%s\nwant\n%s", got, want)
	}
	if code := run([]string{"-chart", filepath.Join(dir, "none")}, &stderr); code != 2 {
		t.Errorf("a missing chart: exit %d, want 2", code)
	}
	if code := run([]string{"extra"}, &stderr); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
}
