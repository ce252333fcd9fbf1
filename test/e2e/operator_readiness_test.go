package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vitalsproject/vitals/internal/test/faultproxy"
	"github.com/vitalsproject/vitals/internal/test/testenv"
	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/operator"
)

// TestOperatorReadinessNeutronFaults runs the operator against the real Keystone and Neutron through
// internal/test/faultproxy and breaks Neutron under it: a failing quota read is reported (the quota check
// is degraded by default) without failing readiness, or fails it when configured critical; Neutron
// answering 503 fails readiness naming neutron; liveness passes throughout.
func TestOperatorReadinessNeutronFaults(t *testing.T) {
	parallel(t)
	cfg := testenv.Kube(t)
	env := testenv.OpenStack(t)
	opInstallCRD(t, cfg)
	c := opClient(t, cfg)
	auth, proxies := opFaultProxy(t, env, opConnect(t, opAuth(t, env), nil), openstack.ServiceNetworking)
	neutron := proxies[0]

	start := func(id string, critical bool) string {
		r := opStart(t, operator.Options{
			RestConfig: cfg, Namespace: opNamespace(t, c), Identity: id, Cloud: &auth, QuotaCritical: critical,
			CheckInterval: 5 * time.Second, CheckTimeout: 5 * time.Second, QuotaInterval: 5 * time.Second,
			MaxRoutes: 1000, // the shared test project's routers may carry routes of other tests
		})
		return r.op.HealthAddr()
	}
	live := func(addr string) {
		t.Helper()
		if code, body := probe(addr, "/livez?verbose"); code != 200 {
			t.Fatalf("/livez = %d with Neutron faulted: %s", code, body)
		}
	}
	quotaFault := faultproxy.Rule{Name: "quota-reset", Method: http.MethodGet, Path: "/v2.0/quotas/**", Fault: faultproxy.Reset()}
	networksFault := faultproxy.Rule{Name: "networks-503", Method: http.MethodGet, Path: "/v2.0/networks",
		Fault: faultproxy.Status(503, faultproxy.StyleNeutron, "neutron-server is restarting")}

	addr := start("quota-degraded", false)
	opEventually(t, 3*time.Minute, "/readyz and /readyz/quota 200 with Neutron up", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		qcode, qbody := probe(addr, "/readyz/quota")
		return code == 200 && qcode == 200, body + qbody
	})

	// Quota reads fail: reported on /readyz/quota, readiness holds (degraded).
	if err := neutron.Add(quotaFault); err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "/readyz/quota failing with quota reads reset", func() (bool, string) {
		code, body := probe(addr, "/readyz/quota")
		return code == 500 && strings.Contains(body, "read network quota"), body
	})
	if code, body := probe(addr, "/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]quota ok") {
		t.Fatalf("/readyz = %d with a degraded quota check failing: %s", code, body)
	}
	live(addr)

	// Neutron answers 503: readiness fails naming neutron; liveness holds.
	if err := neutron.Add(networksFault); err != nil {
		t.Fatal(err)
	}
	opEventually(t, time.Minute, "/readyz failing naming neutron", func() (bool, string) {
		live(addr)
		code, body := probe(addr, "/readyz?verbose")
		return code == 500 && strings.Contains(body, "[-]neutron failed"), body
	})
	if code, body := probe(addr, "/readyz/neutron"); code != 500 || !strings.Contains(body, "503") {
		t.Errorf("/readyz/neutron = %d: %s", code, body)
	}
	if neutron.Count("networks-503") == 0 || neutron.Count("quota-reset") == 0 {
		t.Fatalf("faults not injected: networks %d, quota %d", neutron.Count("networks-503"), neutron.Count("quota-reset"))
	}
	neutron.Remove("networks-503")
	opEventually(t, time.Minute, "/readyz 200 with Neutron back (quota still failing)", func() (bool, string) {
		code, body := probe(addr, "/readyz?verbose")
		return code == 200, body
	})

	// Configured critical, the same quota fault fails readiness.
	crit := start("quota-critical", true)
	opEventually(t, 3*time.Minute, "/readyz failing naming quota when critical", func() (bool, string) {
		live(crit)
		code, body := probe(crit, "/readyz?verbose")
		return code == 500 && strings.Contains(body, "[-]quota failed"), body
	})
	neutron.Clear()
	opEventually(t, time.Minute, "/readyz 200 once quota reads work", func() (bool, string) {
		code, body := probe(crit, "/readyz?verbose")
		return code == 200, body
	})
}
