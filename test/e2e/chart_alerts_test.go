package e2e

// The chart's alert rules, checked by the real promtool (built from its Go module by
// hack/promtool-build.sh): the rendered PrometheusRule's groups pass `promtool check rules`, and the unit
// tests in testdata/alerts pass `promtool test rules`, with every alert of the chart firing in one test case
// and staying silent in another.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/internal/test/testenv"
)

// chartAlertValues enables every alert of the chart (the defaults otherwise: the unit tests expect them):
// the agent, and the chart's ServiceMonitors (the absent() alerts need the chart's own scrape).
const chartAlertValues = "agent:\n  enabled: true\nmetrics:\n  serviceMonitor: {enabled: true}\n  prometheusRule: {enabled: true}\n"

// chartRuleGroups renders the chart's PrometheusRule and returns its spec as a Prometheus rules file.
func chartRuleGroups(t *testing.T, helm string) (rulesFile []byte, alerts []string) {
	t.Helper()
	rules := chartFind(chartObjects(t, helm, chartAlertValues), "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	spec, _, _ := unstructured.NestedMap(rules[0].Object, "spec")
	groups, _, _ := unstructured.NestedSlice(spec, "groups")
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rs {
			if a, ok := r.(map[string]any)["alert"].(string); ok {
				alerts = append(alerts, a)
			}
		}
	}
	data, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return data, alerts
}

func runPromtool(t *testing.T, promtool, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestChartAlertRules(t *testing.T) {
	helm := testenv.Helm(t)
	promtool := testenv.Promtool(t)
	rulesFile, alerts := chartRuleGroups(t, helm)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesFile, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", strings.TrimSpace(runPromtool(t, promtool, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")))

	src := filepath.Join("testdata", "alerts")
	tests, err := filepath.Glob(filepath.Join(src, "*_test.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no unit tests in %s (%v)", src, err)
	}
	// Which alerts the unit tests expect to fire, and which they expect silent.
	fires, silent := map[string]bool{}, map[string]bool{}
	var names []string
	for _, f := range tests {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tc := range doc.Tests {
			for _, a := range tc.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(f))
	}
	sort.Strings(names)
	out := runPromtool(t, promtool, dir, append([]string{"test", "rules"}, names...)...)
	t.Logf("promtool test rules: %s", strings.Join(strings.Fields(out), " "))

	for _, a := range alerts {
		if !fires[a] || !silent[a] {
			t.Errorf("alert %s: the unit tests in %s must expect it to fire (%v) and to stay silent (%v)", a, src, fires[a], silent[a])
		}
	}
	for a := range fires {
		if !slices.Contains(alerts, a) {
			t.Errorf("the unit tests in %s test %s, which the chart does not define", src, a)
		}
	}
	for _, want := range []string{"VitalsClusterStuckDeleting", "VitalsDeorbitDebrisLeft", "VitalsOrphanedRoutes",
		"VitalsRemediationBudgetExhausted", "VitalsAgentDown", "VitalsNodePodNetworkUnhealthy", "VitalsOperatorAbsent",
		"VitalsAgentAbsent", "VitalsClusterPassesFailing"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("the chart defines no %s (alerts: %v)", want, alerts)
		}
	}
	t.Logf("%d alerts, each fired and kept silent by %d unit test files", len(alerts), len(names))
}

// TestChartAlertRulesDeletingFor: deletingFor is a duration the template turns into seconds; the
// schema refuses what it could not convert.
func TestChartAlertRulesDeletingFor(t *testing.T) {
	helm := testenv.Helm(t)
	expr := regexp.MustCompile(`vitals_deorbit_start_time_seconds\{[^}]*\}\) > ([0-9]+)`)
	for _, tc := range []struct{ value, want string }{{"2h", "7200"}, {"1h30m", "5400"}, {"90s", "90"}, {"45m", "2700"}} {
		out, err := chartTemplate(t, helm, "vitals-system", "metrics:\n  prometheusRule:\n    enabled: true\n    deletingFor: "+tc.value+"\n")
		if err != nil {
			t.Fatalf("deletingFor %s: %v\n%s", tc.value, err, out)
		}
		m := expr.FindStringSubmatch(out)
		if m == nil || m[1] != tc.want {
			t.Errorf("deletingFor %s: rendered threshold %v, want %s seconds", tc.value, m, tc.want)
		}
	}
	for _, bad := range []string{"2 hours", "1d", "h", "-1h", "1.5h"} {
		out, err := chartTemplate(t, helm, "vitals-system", "metrics:\n  prometheusRule:\n    enabled: true\n    deletingFor: \""+bad+"\"\n")
		if err == nil || !strings.Contains(out, "deletingFor") {
			t.Errorf("deletingFor %q: err %v, want a refusal naming deletingFor:\n%s", bad, err, out)
		}
	}
}

// TestChartAlertRunbooks: every alert of the chart carries a runbook_url, metrics.prometheusRule.runbookURL
// with the alert's name in lower case as the anchor, and docs/runbooks.md has that section (a heading
// named after the alert, whose anchor GitHub makes the same lower-case name).
func TestChartAlertRunbooks(t *testing.T) {
	helm := testenv.Helm(t)
	doc, err := os.ReadFile(filepath.Join(opRepoRoot(), "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(doc), -1) {
		sections[strings.ToLower(m[1])] = true
	}
	for _, base := range []string{"", "https://wiki.example/vitals/runbooks"} {
		values := chartAlertValues
		want := "https://github.com/vitalsproject/vitals/blob/main/docs/runbooks.md"
		if base != "" {
			values = strings.Replace(values, "prometheusRule: {enabled: true}", "prometheusRule: {enabled: true, runbookURL: \""+base+"\"}", 1)
			want = base
		}
		rules := chartFind(chartObjects(t, helm, values), "PrometheusRule")
		if len(rules) != 1 {
			t.Fatalf("%d PrometheusRules rendered", len(rules))
		}
		groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
		n := 0
		for _, g := range groups {
			rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, r := range rs {
				rule := r.(map[string]any)
				alert, _ := rule["alert"].(string)
				url, _, _ := unstructured.NestedString(rule, "annotations", "runbook_url")
				if url != want+"#"+strings.ToLower(alert) {
					t.Errorf("alert %s: runbook_url %q, want %s#%s", alert, url, want, strings.ToLower(alert))
				}
				if !sections[strings.ToLower(alert)] {
					t.Errorf("alert %s: docs/runbooks.md has no section \"## %s\"", alert, alert)
				}
				n++
			}
		}
		if n < 12 {
			t.Errorf("%d alerts checked, want every alert of the chart (12)", n)
		}
	}
}
