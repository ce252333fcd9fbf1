// Package openstack is Vitals' access to an OpenStack cloud: authentication (clouds.yaml with
// secure.yaml, OS_* environment variables, a Kuryr-style INI auth section), service clients for
// Identity, Networking, Compute, Block Storage and Load Balancer with a client-side rate limiter,
// request metrics and token re-authentication, and small interfaces per resource that controllers
// and checks use.
//
// Every List call returns all pages or an error: never a partial list. A filter a resource cannot
// apply is an error too, never silently dropped.
//
// A command that accepts several sources asks PickAuth, the one place that chooses among them (an INI
// auth section, then clouds.yaml, then OS_* variables). The INI sections are read with config.LoadINI,
// so that [DEFAULT] is inherited as oslo.config does.
//
// TLS: each source may name a CA bundle (clouds.yaml cacert, overridden by OS_CACERT; OS_CACERT alone;
// an INI cafile) and may skip verification when asked (verify: false, OS_INSECURE, insecure). Without
// either, the system roots verify. Connect's error for a certificate that does not verify wraps
// ErrUntrustedCertificate and the x509 error.
//
// Typical use:
//
//	auth, err := openstack.AuthFromINI("/etc/kuryr/kuryr.conf") // or AuthFromCloudsYAML, AuthFromEnv
//	if err != nil { return err }                                  // a *config.Error: file, line, option
//	cloud, err := openstack.Connect(ctx, openstack.Config{Auth: auth, QPS: 10, Registerer: reg})
//	if err != nil { return err }                                  // wraps ErrWrongCredentials, ErrUnreachable, ErrUntrustedCertificate
//	routes, err := cloud.RemoveRoutes(ctx, routerID, stale)       // Routers, Ports, Servers, ...
//
// Requests pass one http.RoundTripper per Cloud (re-authentication included) that waits for the
// rate limiter and records, on the Registerer given:
//
//	vitals_openstack_requests_total{openstack_service,operation,code}
//	vitals_openstack_request_errors_total{openstack_service,operation,reason}   reason: HTTP code, transport, rate_limiter
//	vitals_openstack_request_duration_seconds{openstack_service,operation}
//	vitals_openstack_rate_limiter_wait_seconds{openstack_service}
//
// where operation is the method and the path with IDs replaced, e.g. "PUT /v2.0/routers/{id}/remove_extraroutes".
//
// Package internal/test/contract holds the contract test suite that the real cloud and the simulator
// (internal/test/cloudsim) both pass.
package openstack
