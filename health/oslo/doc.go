// Package oslo serves a health.Manager's readiness as oslo.middleware's healthcheck application (5.x)
// does on /healthcheck: the status codes (200, 503; HEAD 204 or 503 without a body), text/plain,
// text/html or JSON negotiated from Accept as webob does for oslo's offers, its disable_by_file
// backend (the probe handler's disable/enable-by-file options) and its "detailed" mode. It is tested
// against Debian's python3-oslo.middleware, with the same backends' states.
//
// It is apart from package health so that programs that do not answer as an OpenStack API service (the
// node agent, the operator, the container healthcheck) do not carry it: `vitals serve` mounts it beside
// the probes (health.ServerOptions.Handlers).
package oslo
