package health

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, clk := newTest(t, WithRegisterer(reg), WithKubernetesMetricNames())
	m.MustRegister(Check{Name: "db", Run: ok, Probes: Liveness | Readiness, Interval: time.Hour})
	c, _ := m.Component("loop", ComponentOptions{})
	e := entryOf(t, m, "db")
	e.record(clk.Now(), 3*time.Millisecond, nil)
	e.record(clk.Now(), 7*time.Millisecond, errBoom)
	c.Fail(errBoom)

	want := `
# HELP vitals_health_check_results_total Runs of each check by result (success or failure).
# TYPE vitals_health_check_results_total counter
vitals_health_check_results_total{name="db",result="failure"} 1
vitals_health_check_results_total{name="db",result="success"} 1
# HELP vitals_health_check_status 1 when the check, component or budget passes the probe (ok, degraded or excused), 0 when it fails it.
# TYPE vitals_health_check_status gauge
vitals_health_check_status{kind="check",name="db",probe="liveness"} 0
vitals_health_check_status{kind="check",name="db",probe="readiness"} 0
vitals_health_check_status{kind="component",name="loop",probe="liveness"} 0
# HELP vitals_health_check_up 1 when the check, component or budget is ok, 0 when it is failed or unknown (whatever its severity).
# TYPE vitals_health_check_up gauge
vitals_health_check_up{kind="check",name="db",severity="critical"} 0
vitals_health_check_up{kind="component",name="loop",severity="critical"} 0
# HELP vitals_health_probe_status 1 when the probe (liveness, readiness, startup) passes, 0 when it fails.
# TYPE vitals_health_probe_status gauge
vitals_health_probe_status{probe="liveness"} 0
vitals_health_probe_status{probe="readiness"} 0
vitals_health_probe_status{probe="startup"} 1
`
	names := []string{"kubernetes_healthcheck", "kubernetes_healthchecks_total", "vitals_health_check_results_total",
		"vitals_health_check_status", "vitals_health_check_up", "vitals_health_probe_status"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "vitals_health_check_duration_seconds"); n != 1 {
		t.Fatalf("%d duration series", n)
	}
	c.Recover()
	e.record(clk.Now(), time.Millisecond, nil)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP vitals_health_probe_status 1 when the probe (liveness, readiness, startup) passes, 0 when it fails.
# TYPE vitals_health_probe_status gauge
vitals_health_probe_status{probe="liveness"} 1
vitals_health_probe_status{probe="readiness"} 1
vitals_health_probe_status{probe="startup"} 1
`), "vitals_health_probe_status"); err != nil {
		t.Fatal(err)
	}
	// A second manager on the same registry shares the collectors.
	m2, _ := newTest(t, WithRegisterer(reg))
	m2.MustRegister(Check{Name: "other", Run: ok})
}
