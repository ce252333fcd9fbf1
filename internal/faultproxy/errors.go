package faultproxy

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Style is the shape of an injected error body: each service family answers errors its own way, and clients
// (gophercloud, client-go) parse those shapes.
type Style string

// Error body styles.
const (
	// StyleGeneric: {"error": {"code": 500, "message": "..."}}.
	StyleGeneric Style = "generic"
	// StyleKeystone: {"error": {"code": 401, "message": "...", "title": "Unauthorized"}}.
	StyleKeystone Style = "keystone"
	// StyleNeutron: {"NeutronError": {"type": "Conflict", "message": "...", "detail": ""}}.
	StyleNeutron Style = "neutron"
	// StyleNova (also Cinder): {"itemNotFound": {"code": 404, "message": "..."}}, the key following the status.
	StyleNova Style = "nova"
	// StyleOctavia: {"faultcode": "Client", "faultstring": "...", "debuginfo": null}.
	StyleOctavia Style = "octavia"
	// StyleKube: a Kubernetes metav1.Status with reason and code.
	StyleKube Style = "kube"
)

// errorBody renders f's error body.
func errorBody(f Fault) []byte {
	if f.Body != nil {
		return f.Body
	}
	msg := f.Message
	if msg == "" {
		msg = "fault injected by faultproxy: " + http.StatusText(f.Status)
	}
	var v any
	switch f.Style {
	case StyleNeutron:
		v = map[string]any{"NeutronError": map[string]any{"type": or(f.Type, neutronType(f.Status)), "message": msg, "detail": ""}}
	case StyleNova:
		v = map[string]any{or(f.Type, novaKey(f.Status)): map[string]any{"code": f.Status, "message": msg}}
	case StyleKeystone:
		v = map[string]any{"error": map[string]any{"code": f.Status, "message": msg, "title": or(f.Type, http.StatusText(f.Status))}}
	case StyleOctavia:
		code := "Client"
		if f.Status >= 500 {
			code = "Server"
		}
		v = map[string]any{"faultcode": code, "faultstring": msg, "debuginfo": nil}
	case StyleKube:
		v = map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
			"message": msg, "reason": or(f.Type, kubeReason(f.Status)), "code": f.Status}
	default:
		v = map[string]any{"error": map[string]any{"code": f.Status, "message": msg}}
	}
	b, _ := json.Marshal(v) // maps of strings and numbers always encode
	return b
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func neutronType(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "NotAuthorized"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusRequestEntityTooLarge:
		return "OverQuota"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	default:
		return strings.ReplaceAll("HTTP"+http.StatusText(code), " ", "")
	}
}

func novaKey(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "badRequest"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "itemNotFound"
	case http.StatusConflict:
		return "conflictingRequest"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return "overLimit"
	case http.StatusNotImplemented:
		return "notImplemented"
	case http.StatusServiceUnavailable:
		return "serviceUnavailable"
	default:
		return "computeFault"
	}
}

func kubeReason(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Expired"
	case http.StatusUnprocessableEntity:
		return "Invalid"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusGatewayTimeout:
		return "Timeout"
	default:
		return "InternalError"
	}
}
