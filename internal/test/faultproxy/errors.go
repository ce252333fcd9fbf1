package faultproxy

import (
	"net/http"

	"github.com/vitalsproject/vitals/internal/test/errbody"
)

// Style is the shape of an injected error body: each service family answers errors its own way, and clients
// (gophercloud, client-go) parse those shapes. The bodies come from package errbody, which the simulator
// answers with too.
type Style = errbody.Style

// Error body styles.
const (
	// StyleGeneric: {"error": {"code": 500, "message": "..."}}.
	StyleGeneric = errbody.Generic
	// StyleKeystone: {"error": {"code": 401, "message": "...", "title": "Unauthorized"}}.
	StyleKeystone = errbody.Keystone
	// StyleNeutron: {"NeutronError": {"type": "Conflict", "message": "...", "detail": ""}}.
	StyleNeutron = errbody.Neutron
	// StyleNova (also Cinder): {"itemNotFound": {"code": 404, "message": "..."}}, the key following the status.
	StyleNova = errbody.Nova
	// StyleOctavia: {"faultcode": "Client", "faultstring": "...", "debuginfo": null}.
	StyleOctavia = errbody.Octavia
	// StyleKube: a Kubernetes metav1.Status with reason and code.
	StyleKube = errbody.Kube
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
	return errbody.JSON(f.Style, f.Status, f.Type, msg)
}
