package health

import "testing"

func TestProbeHelpers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Probe
	}{
		{"liveness", Liveness}, {"livez", Liveness}, {"alive", Liveness}, {" Ready ", Readiness},
		{"readyz", Readiness}, {"startup", Startup}, {"startupz", Startup},
	} {
		got, err := ParseProbe(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseProbe(%q) = %v, %v", tc.in, got, err)
		}
	}
	if _, err := ParseProbe("nope"); err == nil {
		t.Error("ParseProbe(nope) succeeded")
	}
	if s := AllProbes.String(); s != "liveness,readiness,startup" {
		t.Errorf("String %q", s)
	}
	if !AllProbes.Has(Liveness|Startup) || Readiness.Has(Liveness) || Readiness.Has(0) {
		t.Error("Has")
	}
	if Degraded.String() != "degraded" || Critical.String() != "critical" || Window.String() != "window" ||
		Consecutive.String() != "consecutive" {
		t.Error("String of enums")
	}
	r := Result{Probes: Readiness, Status: StatusFailed}
	if !r.Failing(Readiness) || r.Failing(Liveness) {
		t.Error("Failing: critical")
	}
	r.Severity = Degraded
	if r.Failing(Readiness) {
		t.Error("Failing: degraded")
	}
}
