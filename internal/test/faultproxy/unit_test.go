package faultproxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestErrorBodyStyles(t *testing.T) {
	tests := []struct {
		name string
		f    Fault
		want string
	}{
		{"neutron conflict", Status(409, StyleNeutron, "route busy"), `{"NeutronError":{"detail":"","message":"route busy","type":"Conflict"}}`},
		{"neutron typed", Fault{Kind: KindStatus, Status: 404, Style: StyleNeutron, Message: "m", Type: "RouterNotFound"}, `{"NeutronError":{"detail":"","message":"m","type":"RouterNotFound"}}`},
		{"nova not found", Status(404, StyleNova, "no server"), `{"itemNotFound":{"code":404,"message":"no server"}}`},
		{"nova bad request", Status(400, StyleNova, "bad"), `{"badRequest":{"code":400,"message":"bad"}}`},
		{"nova fault", Status(500, StyleNova, "boom"), `{"computeFault":{"code":500,"message":"boom"}}`},
		{"keystone", Status(401, StyleKeystone, "who"), `{"error":{"code":401,"message":"who","title":"Unauthorized"}}`},
		{"generic", Status(503, StyleGeneric, "down"), `{"error":{"code":503,"message":"down"}}`},
		{"octavia", Status(409, StyleOctavia, "immutable"), `{"debuginfo":null,"faultcode":"Client","faultstring":"immutable"}`},
		{"kube", Status(409, StyleKube, "exists"), `{"apiVersion":"v1","code":409,"kind":"Status","message":"exists","metadata":{},"reason":"Conflict","status":"Failure"}`},
		{"raw body", Fault{Kind: KindStatus, Status: 500, Body: []byte("plain")}, `plain`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(errorBody(tt.f)); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if !strings.Contains(string(errorBody(Status(502, StyleGeneric, ""))), "Bad Gateway") {
		t.Fatal("an empty message must default to the status text")
	}
}

func TestReverseFirstArray(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"networks":[{"id":"a"},{"id":"b"},{"id":"c"}],"networks_links":[{"rel":"next"}]}`, `{"networks":[{"id":"c"},{"id":"b"},{"id":"a"}],"networks_links":[{"rel":"next"}]}`},
		{`{"kind":"List","metadata":{"x":[1]},"items":[1,2]}`, `{"kind":"List","metadata":{"x":[1]},"items":[2,1]}`},
		{`[1, 2, 3]`, `[3,2,1]`},
	}
	for _, tt := range tests {
		got, err := reverseFirstArray([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("reverseFirstArray(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"a":1}`, `"s"`, `{`} {
		if _, err := reverseFirstArray([]byte(bad)); err == nil {
			t.Errorf("reverseFirstArray(%s): want an error", bad)
		}
	}
}

func TestRewriteCatalog(t *testing.T) {
	in := `{"token":{"expires_at":"2026-01-01T00:00:00Z","audit_ids":[1234567890123],"catalog":[` +
		`{"type":"network","endpoints":[{"interface":"public","url":"http://127.0.0.1:9696"}]},` +
		`{"type":"compute","endpoints":[{"interface":"public","url":"http://127.0.0.1:8774/v2.1"}]},` +
		`{"type":"image","endpoints":[{"interface":"public","url":"http://127.0.0.1:9292"}]}]}}`
	m := map[string]string{"http://127.0.0.1:9696": "http://127.0.0.1:1111", "http://127.0.0.1:8774": "http://127.0.0.1:2222"}
	out, err := rewriteCatalog([]byte(in), func(o string) string { return m[o] })
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"url":"http://127.0.0.1:1111"`, `"url":"http://127.0.0.1:2222/v2.1"`, `"url":"http://127.0.0.1:9292"`, `1234567890123`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rewritten catalog lacks %s:\n%s", want, out)
		}
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("rewritten catalog is not JSON: %v", err)
	}
}

func TestRuleMatching(t *testing.T) {
	req := func(method, raw string) *http.Request {
		u, _ := url.Parse(raw)
		return &http.Request{Method: method, URL: u}
	}
	tests := []struct {
		name string
		rule Rule
		req  *http.Request
		want bool
	}{
		{"any", Rule{}, req("GET", "/x"), true},
		{"method", Rule{Method: "POST"}, req("GET", "/x"), false},
		{"method case", Rule{Method: "post"}, req("POST", "/x"), true},
		{"segment glob", Rule{Path: "/v2.0/routers/*"}, req("PUT", "/v2.0/routers/abc"), true},
		{"segment glob deeper", Rule{Path: "/v2.0/routers/*"}, req("PUT", "/v2.0/routers/abc/add_extraroutes"), false},
		{"subtree", Rule{Path: "/v2.0/**"}, req("PUT", "/v2.0/routers/abc/add_extraroutes"), true},
		{"subtree root", Rule{Path: "/v2.0/**"}, req("GET", "/v2.0"), true},
		{"subtree other", Rule{Path: "/v2.0/**"}, req("GET", "/v2.01"), false},
		{"query present", Rule{Query: map[string]string{"marker": ""}}, req("GET", "/n?limit=1&marker=abc"), true},
		{"query absent", Rule{Query: map[string]string{"marker": ""}}, req("GET", "/n?limit=1"), false},
		{"query value", Rule{Query: map[string]string{"limit": "2"}}, req("GET", "/n?limit=1"), false},
		{"body", Rule{Body: `"type": "HARD"`}, req("POST", "/servers/s/action"), true},
		{"body not in it", Rule{Body: `"type": "SOFT"`}, req("POST", "/servers/s/action"), false},
	}
	for _, tt := range tests {
		if got := tt.rule.matches(tt.req, []byte(`{"reboot": {"type": "HARD"}}`)); got != tt.want {
			t.Errorf("%s: matches = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRuleValidationAndSequence(t *testing.T) {
	bad := []Rule{
		{Fault: Reset()},
		{Name: "nofault"},
		{Name: "badstatus", Fault: Fault{Kind: KindStatus, Status: 42}},
		{Name: "badkind", Fault: Fault{Kind: "explode"}},
		{Name: "badpath", Path: "[", Fault: Reset()},
		{Name: "badstep", Sequence: []Fault{{Kind: "x"}}},
	}
	for _, r := range bad {
		if err := r.validate(); err == nil {
			t.Errorf("rule %+v: want a validation error", r)
		}
	}
	s := ruleState{Rule: FailTimes("twice", "GET", "", 2, Status(500, StyleNeutron, ""))}
	var kinds []Kind
	for range 4 {
		kinds = append(kinds, s.next().Kind)
	}
	if want := []Kind{KindStatus, KindStatus, KindPass, KindPass}; !equalKinds(kinds, want) {
		t.Fatalf("sequence kinds %v, want %v", kinds, want)
	}
	s = ruleState{Rule: Rule{Name: "once", Fault: Reset(), Times: 1}}
	if a, b := s.next().Kind, s.next().Kind; a != KindReset || b != KindPass {
		t.Fatalf("Times=1: got %s then %s", a, b)
	}
}

func equalKinds(a, b []Kind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
