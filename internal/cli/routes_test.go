package cli

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vitalsproject/vitals/openstack"
	"github.com/vitalsproject/vitals/routes"
)

// routeAuditFixture analyses a router with a live, an orphaned, a protected and a foreign route.
func routeAuditFixture(t *testing.T) (*routes.Snapshot, routes.Plan) {
	t.Helper()
	live := routes.NewAddresses()
	live.Add("10.0.0.5", "port p1")
	snap := &routes.Snapshot{
		Router: &openstack.Router{ID: "r1", Name: "cluster-router", RevisionNumber: 7, Routes: []openstack.Route{
			{Destination: "198.19.1.0/24", NextHop: "10.0.0.5"},
			{Destination: "198.19.2.0/24", NextHop: "10.0.0.99"},
			{Destination: "198.19.7.0/24", NextHop: "10.0.0.7"},
			{Destination: "0.0.0.0/0", NextHop: "10.0.0.1"},
		}},
		Live:    live,
		Sources: []routes.SourceRead{{Name: "ports", Items: 1}},
	}
	plan, err := routes.Analyze(routes.Input{
		Routes: snap.Router.Routes, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("198.19.0.0/16")},
		Protected: []routes.ProtectedRoute{{Destination: netip.MustParsePrefix("198.19.7.0/24")}},
		Live:      live, Sources: snap.Sources, Now: time.Unix(1_800_000_000, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	return snap, plan
}

func TestRouteAuditOutput(t *testing.T) {
	snap, plan := routeAuditFixture(t)
	want := RouteAudit{
		Router:  AuditRouter{ID: "r1", Name: "cluster-router", Revision: 7},
		Sources: []AuditSource{{Name: "ports", Items: 1}},
		Routes: []AuditRoute{
			{Destination: "198.19.1.0/24", NextHop: "10.0.0.5", Verdict: "live", Detail: "nexthop held by port p1"},
			{Destination: "198.19.2.0/24", NextHop: "10.0.0.99", Verdict: "orphaned", Detail: "nexthop held by no port or server"},
			{Destination: "198.19.7.0/24", NextHop: "10.0.0.7", Verdict: "protected", Detail: "on the protected list (nexthop held by no port or server)"},
			{Destination: "0.0.0.0/0", NextHop: "10.0.0.1", Verdict: "foreign", Detail: "destination outside the pod CIDRs"},
		},
		Counts: AuditCounts{Routes: 4, Ours: 3, Live: 1, Orphaned: 1, Protected: 1, Foreign: 1},
	}
	for _, tc := range []struct {
		output string
		decode func([]byte, any) error
	}{
		{"json", json.Unmarshal},
		{"yaml", func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
	} {
		t.Run(tc.output, func(t *testing.T) {
			var out bytes.Buffer
			if err := WriteRouteAudit(&out, tc.output, snap, plan); err != nil {
				t.Fatal(err)
			}
			var got RouteAudit
			if err := tc.decode(out.Bytes(), &got); err != nil {
				t.Fatalf("decode %s: %v\n%s", tc.output, err, out.String())
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("-o %s:\n got %s\nwant %s", tc.output, gj, wj)
			}
			// Stable lower-case field names.
			if tc.output == "json" && (!strings.Contains(out.String(), `"nexthop": "10.0.0.99"`) || !strings.Contains(out.String(), `"inPodCIDRs": 3`)) {
				t.Errorf("-o json field names:\n%s", out.String())
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		var out bytes.Buffer
		if err := WriteRouteAudit(&out, "text", snap, plan); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"router r1 (cluster-router), revision 7, 4 routes; sources: ports=1", "DESTINATION",
			"198.19.2.0/24  10.0.0.99  orphaned   nexthop held by no port or server",
			"4 routes: 3 in the pod CIDRs (1 live, 1 orphaned, 1 protected), 1 foreign, 0 invalid"} {
			if !strings.Contains(out.String(), w) {
				t.Errorf("text output lacks %q:\n%s", w, out.String())
			}
		}
	})
}

// TestOutputFlagRefused: an unknown format is a flag error (exit 2) before any cloud is asked.
func TestOutputFlagRefused(t *testing.T) {
	for _, args := range [][]string{
		{"routes", "audit", "--router", "r1", "--pod-cidr", "198.19.0.0/16", "-o", "xml"},
		{"version", "-o", "table"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != ExitConfig || !strings.Contains(errb.String(), "expected text, json or yaml") {
			t.Errorf("%v: exit %d, stderr %q; want %d and the formats", args, code, errb.String(), ExitConfig)
		}
	}
}
