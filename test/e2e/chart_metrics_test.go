package e2e

// The chart's monitoring names what the code exports: every metric and every label name of the
// PrometheusRule's expressions, the Grafana dashboard's queries and variables, and the series the promtool
// unit tests (testdata/alerts) feed the rules, is one the code registers (or a label Prometheus adds to the
// targets of the chart's monitors). A typo there is a silent alert or an empty panel: promtool's unit tests
// cannot see it, since they are fed the series their author wrote. No metric of the code has a label that
// collides with a target's (namespace, pod, ...) or with the external label cluster.

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// targetLabels are the labels Prometheus gives every series of the chart's ServiceMonitors and PodMonitors
// (the Prometheus Operator's target labels, and node from the monitors' relabeling).
var targetLabels = []string{"namespace", "pod", "container", "service", "endpoint", "job", "instance", "node"}

// codeMetrics returns the metrics the code registers with their label names: each prometheus.New*(Opts{Name:
// ...}, []string{...}) call of the non-test Go files (Name a string literal or a constant of its package). A
// histogram adds _bucket (with le), _sum and _count; Prometheus' up is a target's.
func codeMetrics(t *testing.T) map[string][]string {
	t.Helper()
	metrics := map[string][]string{"up": nil}
	// add records a metric made by prometheus.<constructor> with its labels (a histogram's series too).
	add := func(name, constructor string, labels []string) {
		metrics[name] = labels
		switch {
		case strings.Contains(constructor, "Histogram"):
			metrics[name+"_bucket"] = append(slices.Clone(labels), "le")
			metrics[name+"_sum"], metrics[name+"_count"] = labels, labels
		case strings.Contains(constructor, "Summary"):
			metrics[name] = append(slices.Clone(labels), "quantile")
			metrics[name+"_sum"], metrics[name+"_count"] = labels, labels
		}
	}
	root := opRepoRoot()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains([]string{"test", "testdata", "bench", "vendor"}, d.Name())) {
			return filepath.SkipDir
		}
		var files []*ast.File
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, e.Name()), nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		// The package's string constants, for names given as one.
		consts := map[string]string{}
		for _, f := range files {
			for _, decl := range f.Decls {
				if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
					for _, spec := range g.Specs {
						vs := spec.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								if s, ok := stringLit(vs.Values[i]); ok {
									consts[n.Name] = s
								}
							}
						}
					}
				}
			}
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, isIdent := sel.X.(*ast.Ident); !isIdent || x.Name != "prometheus" || !strings.HasPrefix(sel.Sel.Name, "New") {
					return true
				}
				if sel.Sel.Name == "NewDesc" && len(call.Args) == 4 {
					// A collector's own metric: NewDesc(name, help, variable labels, constant labels).
					name, ok := stringLit(call.Args[0])
					if id, isIdent := call.Args[0].(*ast.Ident); isIdent {
						name, ok = consts[id.Name], consts[id.Name] != ""
					}
					if !ok {
						t.Errorf("%s: a metric whose name the scan cannot read", fset.Position(call.Pos()))
						return true
					}
					var labels []string
					if l, isList := call.Args[2].(*ast.CompositeLit); isList {
						for _, el := range l.Elts {
							if s, ok := stringLit(el); ok {
								labels = append(labels, s)
							}
						}
					}
					metrics[name] = labels
					return true
				}
				opts, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					return true
				}
				// The name: Name, or Namespace_Subsystem_Name; a Subsystem that is not a constant is a controller's
				// name (pass.NewMetrics), one metric per controller.
				var name, namespace, subsystem string
				subsystems := []string{""}
				for _, el := range opts.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					k, isIdent := kv.Key.(*ast.Ident)
					if !isIdent {
						continue
					}
					v, known := stringLit(kv.Value)
					if id, ok := kv.Value.(*ast.Ident); ok {
						v, known = consts[id.Name], consts[id.Name] != ""
					}
					switch k.Name {
					case "Name":
						name = v
					case "Namespace":
						namespace = v
					case "Subsystem":
						subsystem = v
						if !known {
							subsystems = v1alpha1.Controllers
						}
					}
				}
				if name == "" {
					t.Errorf("%s: a metric whose name the scan cannot read", fset.Position(call.Pos()))
					return true
				}
				var labels []string
				if len(call.Args) > 1 {
					if l, ok := call.Args[1].(*ast.CompositeLit); ok {
						for _, el := range l.Elts {
							if s, ok := stringLit(el); ok {
								labels = append(labels, s)
							}
						}
					}
				}
				for _, sub := range subsystems {
					if sub == "" {
						sub = subsystem
					}
					add(prometheus.BuildFQName(namespace, sub, name), sel.Sel.Name, labels)
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The scan must see what the chart uses, with its labels.
	for name, label := range map[string]string{"vitals_routegc_routes": "verdict", "vitals_remediation_actions_total": "reason",
		"vitals_health_check_up": "kind", "vitals_health_probe_status": "probe", "vitals_workload_reachable": "vitalscluster",
		"vitals_routegc_pass_duration_seconds_bucket": "le", "vitals_agent_cni_reports_total": "source",
		"vitals_cluster_condition": "status", "vitals_build_info": "goversion"} {
		if !slices.Contains(metrics[name], label) {
			t.Fatalf("the code scan found %s with labels %v, without %s: the scan is broken", name, metrics[name], label)
		}
	}
	return metrics
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	promMetric   = regexp.MustCompile(`\b(vitals_[a-z0-9_]+|up)\b`)
	promGrouping = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelValues  = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{[^}]*\})?\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
	labelRef     = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	// The last four arguments of label_replace: "dst", "replacement", "src", "regex".
	labelReplaceDst = regexp.MustCompile(`,\s*"([a-zA-Z_][a-zA-Z0-9_]*)",\s*"[^"]*",\s*"[^"]*",\s*"[^"]*"\s*\)`)
)

// promLabels checks one PromQL expression against the code's metrics: every metric it names is exported,
// every label of its selectors is one of that metric's (or a target's), and every label it groups by is one
// of each metric inside the aggregation. It returns the labels of its by clauses.
func promLabels(t *testing.T, metrics map[string][]string, where, expr string) []string {
	t.Helper()
	e := promString.ReplaceAllString(expr, `""`) // values may hold anything
	has := func(metric, label string) bool {
		return slices.Contains(metrics[metric], label) || slices.Contains(targetLabels, label)
	}
	for _, m := range promMetric.FindAllString(e, -1) {
		if _, ok := metrics[m]; !ok {
			t.Errorf("%s names %s, which the code does not export: %s", where, m, expr)
		}
	}
	for _, sel := range promSelector.FindAllStringSubmatch(e, -1) {
		if _, ok := metrics[sel[1]]; !ok {
			continue // reported above, or a function's braces
		}
		for _, l := range promMatcher.FindAllStringSubmatch(sel[2], -1) {
			if !has(sel[1], l[1]) {
				t.Errorf("%s selects %s by label %s, which it does not have (labels %v and the targets'): %s", where, sel[1], l[1], metrics[sel[1]], expr)
			}
		}
	}
	for _, lv := range labelValues.FindAllStringSubmatch(e, -1) {
		if !has(lv[1], lv[2]) {
			t.Errorf("%s asks the values of label %s of %s, which it does not have (labels %v): %s", where, lv[2], lv[1], metrics[lv[1]], expr)
		}
	}
	var by []string
	for _, g := range promGrouping.FindAllStringSubmatchIndex(e, -1) {
		arg := aggregated(e, g[0], g[1])
		for _, l := range strings.Split(e[g[2]:g[3]], ",") {
			l = strings.TrimSpace(l)
			if l == "" {
				continue
			}
			by = append(by, l)
			for _, m := range promMetric.FindAllString(arg, -1) {
				if _, ok := metrics[m]; ok && !has(m, l) {
					t.Errorf("%s groups %s by label %s, which it does not have (labels %v): %s", where, m, l, metrics[m], expr)
				}
			}
		}
	}
	return by
}

// aggregated returns the argument of the aggregation whose by/without clause spans e[start:end]: the
// parenthesized expression after it (sum by (x) (...)), or before it (sum(...) by (x)).
func aggregated(e string, start, end int) string {
	balanced := func(from, step int) string {
		depth := 0
		for i := from; i >= 0 && i < len(e); i += step {
			switch e[i] {
			case '(':
				depth += step
			case ')':
				depth -= step
			}
			if depth == 0 {
				return e[min(from, i) : max(from, i)+1]
			}
		}
		return ""
	}
	if rest := strings.TrimLeft(e[end:], " \t\n"); strings.HasPrefix(rest, "(") {
		return balanced(len(e)-len(rest), 1)
	}
	if before := strings.TrimRight(e[:start], " \t\n"); strings.HasSuffix(before, ")") {
		return balanced(len(before)-1, -1)
	}
	return ""
}

// dashboardQueries returns the PromQL of a Grafana dashboard: each panel's (nested ones too) targets'
// expressions and the query variables' queries.
func dashboardQueries(t *testing.T, data string) []string {
	t.Helper()
	var dash any
	if err := json.Unmarshal([]byte(data), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var out []string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(c, k)
			}
		case []any:
			for _, c := range x {
				walk(c, key)
			}
		case string:
			if key == "expr" || (key == "query" && strings.Contains(x, "(")) {
				out = append(out, x)
			}
		}
	}
	walk(dash, "")
	return out
}

// TestChartMonitoringNamesExported: the alert rules, the dashboard and the promtool unit tests' series
// name only metrics and labels the code exports.
func TestChartMonitoringNamesExported(t *testing.T) {
	helm := testenv.Helm(t)
	metrics := codeMetrics(t)
	objs := chartObjects(t, helm, "agent:\n  enabled: true\nmetrics:\n  serviceMonitor: {enabled: true}\n  prometheusRule: {enabled: true}\n  dashboard: {enabled: true}\n")

	alerts := 0
	for _, u := range chartFind(objs, "PrometheusRule") {
		groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "groups")
		for _, g := range groups {
			rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rules {
				rule := r.(map[string]any)
				expr, _ := rule["expr"].(string)
				where := "alert " + rule["alert"].(string)
				by := promLabels(t, metrics, where, expr)
				// label_replace(v, "dst", "replacement", "src", "regex") adds dst.
				for _, m := range labelReplaceDst.FindAllStringSubmatch(expr, -1) {
					by = append(by, m[1])
				}
				alerts++
				// Its annotations may only name labels the expression keeps.
				labels, _ := rule["labels"].(map[string]any)
				annotations, _ := rule["annotations"].(map[string]any)
				for k, a := range annotations {
					for _, ref := range labelRef.FindAllStringSubmatch(a.(string), -1) {
						if _, own := labels[ref[1]]; !own && !slices.Contains(by, ref[1]) {
							t.Errorf("%s: annotation %s shows $labels.%s, which its expression drops (by %v): %s", where, k, ref[1], by, expr)
						}
					}
				}
			}
		}
	}
	queries := 0
	for _, u := range chartFind(objs, "ConfigMap") {
		data, _, _ := unstructured.NestedString(u.Object, "data", "vitals.json")
		if data == "" {
			continue
		}
		for _, q := range dashboardQueries(t, data) {
			promLabels(t, metrics, "dashboard query", q)
			queries++
		}
	}
	if alerts < 6 || queries < 10 {
		t.Fatalf("%d alert expressions, %d dashboard queries: the chart lost them or the extraction is broken", alerts, queries)
	}

	// No metric of the code has a label Prometheus gives its targets (the scrape's namespace, pod, ...: the
	// target's would win, or be renamed exported_*) or cluster, the usual external label of federation and
	// remote write: a VitalsCluster is vitalscluster.
	for name, labels := range metrics {
		for _, l := range labels {
			if l == "cluster" || slices.Contains(targetLabels, l) {
				t.Errorf("metric %s has label %s, which collides with a target's or an external label: name the VitalsCluster vitalscluster", name, l)
			}
		}
	}

	// The series the promtool unit tests feed the rules are the code's, with its labels.
	files, _ := filepath.Glob(filepath.Join("testdata", "alerts", "*_test.yaml"))
	series := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests []struct {
				InputSeries []struct {
					Series string `json:"series"`
				} `json:"input_series"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range doc.Tests {
			for _, s := range tc.InputSeries {
				sel := promSelector.FindStringSubmatch(promString.ReplaceAllString(s.Series, `""`))
				if sel == nil {
					t.Errorf("%s: series %q has no labels", f, s.Series)
					continue
				}
				labels, ok := metrics[sel[1]]
				if !ok {
					t.Errorf("%s: series %s, which the code does not export", f, s.Series)
					continue
				}
				for _, l := range promMatcher.FindAllStringSubmatch(sel[2], -1) {
					if !slices.Contains(labels, l[1]) && !slices.Contains(targetLabels, l[1]) {
						t.Errorf("%s: series %s has label %s, which the code's %s does not (labels %v)", f, s.Series, l[1], sel[1], labels)
					}
				}
				series++
			}
		}
	}
	if series == 0 {
		t.Fatal("no input series in testdata/alerts: the extraction is broken")
	}
	if !t.Failed() {
		t.Logf("%d alert expressions, %d dashboard queries and %d unit-test series name only the code's metrics and labels (%d metrics)",
			alerts, queries, series, len(metrics))
	}
}
