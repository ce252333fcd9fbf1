package errbody

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Style is the shape of an error body: each service family answers errors its own way.
type Style string

// Error body styles.
const (
	// Generic: {"error": {"code": 500, "message": "..."}}.
	Generic Style = "generic"
	// Keystone (and every 401 of an OpenStack service, answered by keystonemiddleware):
	// {"error": {"code": 401, "title": "Unauthorized", "message": "..."}}.
	Keystone Style = "keystone"
	// Neutron: {"NeutronError": {"type": "RouterNotFound", "message": "...", "detail": ""}}.
	Neutron Style = "neutron"
	// Nova, also Cinder: {"itemNotFound": {"code": 404, "message": "..."}}, the key following the status.
	Nova Style = "nova"
	// Octavia: {"faultcode": "Client", "faultstring": "...", "debuginfo": null}.
	Octavia Style = "octavia"
	// Kube: a Kubernetes metav1.Status with reason and code.
	Kube Style = "kube"
)

// Body is the error body of style for status with message. typ, when not empty, replaces what the status
// implies: Neutron's "type", Nova's key, Keystone's title, Kubernetes' reason (Octavia and Generic have none).
func Body(style Style, status int, typ, message string) any {
	switch style {
	case Keystone:
		return map[string]any{"error": map[string]any{"code": status, "title": or(typ, http.StatusText(status)), "message": message}}
	case Neutron:
		return map[string]any{"NeutronError": map[string]any{"type": or(typ, NeutronType(status)), "message": message, "detail": ""}}
	case Nova:
		return map[string]any{or(typ, NovaKey(status)): map[string]any{"code": status, "message": message}}
	case Octavia:
		code := "Client"
		if status >= 500 {
			code = "Server"
		}
		return map[string]any{"faultcode": code, "faultstring": message, "debuginfo": nil}
	case Kube:
		return map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
			"message": message, "reason": or(typ, KubeReason(status)), "code": status}
	default:
		return map[string]any{"error": map[string]any{"code": status, "message": message}}
	}
}

// JSON is Body encoded.
func JSON(style Style, status int, typ, message string) []byte {
	b, _ := json.Marshal(Body(style, status, typ, message)) // maps of strings and numbers always encode
	return b
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// NeutronType is the NeutronError type Neutron gives a status when no resource-specific one applies.
func NeutronType(status int) string {
	switch status {
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
		return strings.ReplaceAll("HTTP"+http.StatusText(status), " ", "")
	}
}

// NovaKey is the key of a Nova or Cinder error body (their wsgi Fault names): computeFault for any status
// without a name of its own.
func NovaKey(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "badRequest"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "itemNotFound"
	case http.StatusMethodNotAllowed:
		return "badMethod"
	case http.StatusConflict:
		return "conflictingRequest"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return "overLimit"
	case http.StatusUnsupportedMediaType:
		return "badMediaType"
	case http.StatusNotImplemented:
		return "notImplemented"
	case http.StatusServiceUnavailable:
		return "serviceUnavailable"
	default:
		return "computeFault"
	}
}

// KubeReason is the metav1.StatusReason the kube-apiserver gives a status.
func KubeReason(status int) string {
	switch status {
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
