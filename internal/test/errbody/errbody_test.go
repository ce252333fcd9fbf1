package errbody

import (
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		style  Style
		status int
		typ    string
		want   string
	}{
		{Keystone, 401, "", `{"error":{"code":401,"message":"m","title":"Unauthorized"}}`},
		{Neutron, 404, "RouterNotFound", `{"NeutronError":{"detail":"","message":"m","type":"RouterNotFound"}}`},
		{Neutron, 409, "", `{"NeutronError":{"detail":"","message":"m","type":"Conflict"}}`},
		{Neutron, 412, "", `{"NeutronError":{"detail":"","message":"m","type":"HTTPPreconditionFailed"}}`},
		{Nova, 404, "", `{"itemNotFound":{"code":404,"message":"m"}}`},
		{Nova, 405, "", `{"badMethod":{"code":405,"message":"m"}}`},
		{Nova, 429, "", `{"overLimit":{"code":429,"message":"m"}}`},
		{Nova, 422, "", `{"computeFault":{"code":422,"message":"m"}}`},
		{Nova, 500, "", `{"computeFault":{"code":500,"message":"m"}}`},
		{Octavia, 409, "ignored", `{"debuginfo":null,"faultcode":"Client","faultstring":"m"}`},
		{Octavia, 503, "", `{"debuginfo":null,"faultcode":"Server","faultstring":"m"}`},
		{Kube, 409, "", `{"apiVersion":"v1","code":409,"kind":"Status","message":"m","metadata":{},"reason":"Conflict","status":"Failure"}`},
		{Generic, 502, "", `{"error":{"code":502,"message":"m"}}`},
	} {
		got := string(JSON(tc.style, tc.status, tc.typ, "m"))
		if got != tc.want {
			t.Errorf("%s %d %q: %s, want %s", tc.style, tc.status, tc.typ, got, tc.want)
		}
		var v any
		if err := json.Unmarshal([]byte(got), &v); err != nil {
			t.Errorf("%s %d: not JSON: %v", tc.style, tc.status, err)
		}
	}
}
