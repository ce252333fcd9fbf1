package openstack

import (
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
)

// IsNotFound reports whether err is an API answer of 404 Not Found.
func IsNotFound(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusNotFound)
}

// IsConflict reports whether err is a 409 Conflict or a 412 Precondition Failed (Neutron's answer
// to an If-Match revision_number that no longer holds).
func IsConflict(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusConflict) || gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed)
}

// IsUnauthorized reports whether err is a 401 (after re-authentication was tried).
func IsUnauthorized(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusUnauthorized)
}

// IsForbidden reports whether err is a 403 Forbidden: the credentials may not do or read this.
func IsForbidden(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusForbidden)
}

// IsBadRequest reports whether err is a 400 Bad Request: e.g. Cinder's refusal to delete a volume that still
// has snapshots (or is attached, in a group or awaiting a transfer).
func IsBadRequest(err error) bool {
	return gophercloud.ResponseCodeIs(err, http.StatusBadRequest)
}
