package cloudsim_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/vitalsproject/vitals/internal/test/cloudsim"
	"github.com/vitalsproject/vitals/internal/test/errbody"
)

// tokenFor issues a token for u1 in p1 over plain HTTP.
func tokenFor(t testing.TB, h http.Handler, user, pw, project string) string {
	body := `{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"` + user +
		`","domain":{"name":"Default"},"password":"` + pw + `"}}},"scope":{"project":{"name":"` + project +
		`","domain":{"name":"Default"}}}}}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v3/auth/tokens", strings.NewReader(body)))
	if rec.Code != 201 {
		t.Fatalf("issue token: %d %s", rec.Code, rec.Body)
	}
	return rec.Header().Get("X-Subject-Token")
}

// shape names the top-level key (or keys) an OpenStack error body of each service has.
func checkShape(t testing.TB, path string, code int, b []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: error body is not JSON: %q", path, b)
	}
	if code == 401 {
		if _, ok := m["error"]; !ok {
			t.Fatalf("%s: 401 body %s, want Keystone's {\"error\":...}", path, b)
		}
		return
	}
	switch {
	case strings.HasPrefix(path, "/networking/"):
		ne, ok := m["NeutronError"].(map[string]any)
		if !ok || ne["type"] == "" || ne["message"] == "" {
			t.Fatalf("%s: body %s, want NeutronError", path, b)
		}
	case strings.HasPrefix(path, "/load-balancer/"):
		if _, ok := m["faultstring"]; !ok {
			t.Fatalf("%s: body %s, want faultcode/faultstring", path, b)
		}
	case strings.HasPrefix(path, "/compute/"), strings.HasPrefix(path, "/volume/"):
		if len(m) != 1 {
			t.Fatalf("%s: body %s, want one fault key", path, b)
		}
		for _, v := range m {
			f, ok := v.(map[string]any)
			if !ok || f["code"] != float64(code) || f["message"] == "" {
				t.Fatalf("%s: body %s, want {\"<fault>\": {\"code\": %d, \"message\": ...}}", path, b, code)
			}
		}
	default:
		e, ok := m["error"].(map[string]any)
		if !ok || e["code"] != float64(code) {
			t.Fatalf("%s: body %s, want Keystone's error", path, b)
		}
	}
}

func TestBadRequestsAreShaped(t *testing.T) {
	e := newEnv(t)
	h := e.sim.Handler()
	tok := tokenFor(t, h, "u1", "pw1", "p1")
	sc, err := e.sim.SeedCluster(cloudsim.ClusterSeed{Project: "p1", Name: "k", Nodes: 1, Volumes: 1, LoadBalancers: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := "/networking/v2.0/routers/" + sc.RouterID
	for _, tc := range []struct {
		method, path, body string
		code               int
		noToken            bool
	}{
		{"POST", "/v3/auth/tokens", `{`, 400, true},
		{"POST", "/v3/auth/tokens", `{"auth":{}}`, 400, true},
		{"POST", "/v3/auth/tokens", `{"auth":{"identity":{"methods":["password"],"password":{"user":{"name":"u1","password":"x"}}}}}`, 401, true},
		{"GET", "/v3/auth/tokens", ``, 401, true},
		{"GET", "/networking/v2.0/networks", ``, 401, true},
		{"GET", "/networking/v2.0/networks/nope", ``, 404, false},
		{"POST", "/networking/v2.0/networks", `[]`, 400, false},
		{"POST", "/networking/v2.0/networks", ``, 400, false},
		{"POST", "/networking/v2.0/subnets", `{"subnet":{"network_id":"x","cidr":"10.0.0.0/24"}}`, 404, false},
		{"POST", "/networking/v2.0/ports", `{"port":{}}`, 400, false},
		{"PUT", r, `{"router":{"routes":[{"destination":"10.0.0.0/33","nexthop":"10.180.0.10"}]}}`, 400, false},
		{"PUT", r, `{"router":{"routes":[{"destination":"198.19.0.0/24","nexthop":"x"}]}}`, 400, false},
		{"PUT", r, `{"router":{"routes":"many"}}`, 400, false},
		{"PUT", r + "/add_extraroutes", `{"router":{}}`, 400, false},
		{"PUT", r + "/add_extraroutes", `{"router":{"routes":[{"destination":"198.19.0.0/24","nexthop":"10.180.0.10"},{"destination":"198.19.0.0/24","nexthop":"10.180.0.10"}]}}`, 200, false},
		{"PUT", r, `{"router":{"name":"x"}}`, 412, false}, // with a stale If-Match below
		{"POST", "/networking/v2.0/routers", `{"router":{"routes":[]}}`, 400, false},
		{"POST", "/networking/v2.0/security-group-rules", `{"security_group_rule":{"direction":"sideways","security_group_id":"x"}}`, 400, false},
		{"POST", "/networking/v2.0/security-group-rules", `{"security_group_rule":{"direction":"ingress","security_group_id":"x"}}`, 404, false},
		{"GET", "/networking/v2.0/ports?limit=-1", ``, 400, false},
		{"GET", "/networking/v2.0/nothing", ``, 404, false},
		{"GET", "/compute/v2.1/servers/nope", ``, 404, false},
		{"GET", "/compute/v2.1/servers/detail?marker=nope", ``, 400, false},
		{"POST", "/compute/v2.1/servers", `{"server":{"name":"x"}}`, 400, false},
		{"POST", "/compute/v2.1/servers", `{"server":{"name":"x","flavorRef":"1","networks":[{"uuid":"missing"}]}}`, 400, false},
		{"POST", "/compute/v2.1/servers/" + sc.Nodes[0].ID + "/action", `{"fly":{}}`, 400, false},
		{"POST", "/compute/v2.1/servers/" + sc.Nodes[0].ID + "/action", `{"reboot":{"type":"SOFT"},"os-stop":null}`, 400, false},
		{"POST", "/compute/v2.1/servers/" + sc.Nodes[0].ID + "/action", `{"addSecurityGroup":{}}`, 400, false},
		{"GET", "/compute/v2.1/servers?all_tenants=1", ``, 403, false},
		{"GET", "/volume/v3/" + e.p1 + "/volumes/nope", ``, 404, false},
		{"GET", "/volume/v3/someoneelse/volumes", ``, 400, false},
		{"POST", "/volume/v3/" + e.p1 + "/volumes", `{"volume":{"size":"big"}}`, 400, false},
		{"POST", "/volume/v3/" + e.p1 + "/volumes/" + sc.Volumes[0] + "/action", `{"os-force_delete":{}}`, 403, false},
		{"PATCH", "/volume/v3/" + e.p1 + "/volumes", ``, 405, false},
		{"GET", "/volume/v3/volumes/detail?limit=x", ``, 400, false},
		{"GET", "/load-balancer/v2/lbaas/loadbalancers/nope", ``, 404, false},
		{"GET", "/load-balancer/v3/lbaas/loadbalancers", ``, 404, false},
		{"DELETE", "/load-balancer/v2/lbaas/loadbalancers/" + sc.LoadBalancers[0], ``, 400, false},
		{"DELETE", "/load-balancer/v2/lbaas/loadbalancers/" + sc.LoadBalancers[0] + "?cascade=maybe", ``, 400, false},
		{"POST", "/load-balancer/v2/lbaas/listeners", `{"listener":{"protocol_port":99999}}`, 400, false},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if !tc.noToken {
				req.Header.Set("X-Auth-Token", tok)
			}
			if tc.code == 412 {
				req.Header.Set("If-Match", "revision_number=1")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.code)
			}
			if tc.code >= 400 {
				checkShape(t, tc.path, rec.Code, rec.Body.Bytes())
			}
		})
	}
}

// FuzzAPI sends arbitrary requests: every answer is a well-formed status, errors are
// OpenStack-shaped, and nothing panics (a panic would answer 500).
func FuzzAPI(f *testing.F) {
	for _, s := range []struct{ m, p, b string }{
		{"GET", "/networking/v2.0/ports?limit=1&marker=x", ""},
		{"PUT", "/networking/v2.0/routers/R", `{"router":{"routes":[{"destination":"1.2.3.0/24","nexthop":"10.180.0.9"}]}}`},
		{"PUT", "/networking/v2.0/routers/R/add_extraroutes", `{"router":{"routes":[{}]}}`},
		{"POST", "/networking/v2.0/ports", `{"port":{"network_id":"N","fixed_ips":[{"ip_address":"10.180.0.300"}]}}`},
		{"POST", "/networking/v2.0/subnets", `{"subnet":{"network_id":"N","cidr":"::/0"}}`},
		{"POST", "/compute/v2.1/servers", `{"server":{"name":"a","flavorRef":"1","networks":[{"port":"P"}]}}`},
		{"POST", "/compute/v2.1/servers/S/action", `{"reboot":null}`},
		{"POST", "/volume/v3/volumes", `{"volume":{"size":1e99}}`},
		{"POST", "/load-balancer/v2.0/lbaas/loadbalancers", `{"loadbalancer":{"vip_port_id":"P"}}`},
		{"POST", "/networking/v2.0/security-group-rules", `{"security_group_rule":{"direction":"ingress","security_group_id":"G","protocol":"tcp","port_range_min":1,"remote_ip_prefix":"1.2.3.4"}}`},
		{"PUT", "/networking/v2.0/quotas/P", `{"quota":{"port":-5}}`},
		{"POST", "/_sim/seed", `{"projects":[{"name":"x","networks":[{"name":"n","cidr":"bad"}]}]}`},
	} {
		f.Add(s.m, s.p, s.b)
	}
	sim, err := cloudsim.New(cloudsim.Options{Seed: 3})
	if err != nil {
		f.Fatal(err)
	}
	sc, err := sim.SeedCluster(cloudsim.ClusterSeed{Project: "p", Name: "k", Nodes: 1})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := sim.CreateUser("u", "pw", true, sc.ProjectID); err != nil {
		f.Fatal(err)
	}
	h := sim.Handler()
	tok := tokenFor(f, h, "u", "pw", "p")
	repl := strings.NewReplacer("/R", "/"+sc.RouterID, `"N"`, `"`+sc.NetworkID+`"`, `"P"`, `"`+sc.Nodes[0].PortID+`"`,
		"/S/", "/"+sc.Nodes[0].ID+"/", `"G"`, `"`+sc.SecurityGroup+`"`, "/P", "/"+sc.ProjectID)
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n#") || strings.ContainsAny(method, " \t\r\n/()<>@,;:\\\"[]?={}") || method == "" {
			return
		}
		req, err := http.NewRequest(method, "http://sim"+repl.Replace(path), bytes.NewBufferString(repl.Replace(body)))
		if err != nil {
			return
		}
		req.Header.Set("X-Auth-Token", tok)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %s = %d %s", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.HasPrefix(req.URL.Path, "/_sim/") && req.URL.Path != "/" {
			b, _ := io.ReadAll(rec.Body)
			checkShape(t, req.URL.Path, rec.Code, b)
		}
	})
}

// TestInjectedFaultBodies: a fault injected by the simulator answers the body the fault proxy injects for the
// same service and status (both come from package errbody).
func TestInjectedFaultBodies(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		service, path string
		style         errbody.Style
	}{
		{"identity", "/v3/auth/projects", errbody.Keystone},
		{"network", "/networking/v2.0/networks", errbody.Neutron},
		{"compute", "/compute/v2.1/servers", errbody.Nova},
		{"volume", "/volume/v3/volumes", errbody.Nova},
		{"load-balancer", "/load-balancer/v2/lbaas/loadbalancers", errbody.Octavia},
	} {
		for _, status := range []int{404, 409, 422, 503} {
			id, err := e.sim.AddFault(cloudsim.Fault{Service: tc.service, Status: status, Message: "injected"})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			e.sim.Handler().ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
			e.sim.RemoveFault(id)
			var got, want any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("%s %d: body %q is not JSON", tc.path, status, rec.Body)
			}
			_ = json.Unmarshal(errbody.JSON(tc.style, status, "", "injected"), &want)
			if rec.Code != status || !reflect.DeepEqual(got, want) {
				t.Errorf("%s %d: answered %d %s, want %s", tc.path, status, rec.Code, rec.Body, errbody.JSON(tc.style, status, "", "injected"))
			}
		}
	}
}
