// Package faultproxy is an HTTP reverse proxy that sits between Vitals and a real service (Keystone, Neutron,
// Nova, Cinder, Octavia, the kube-apiserver) and injects the failures real services rarely show on cue:
// latency, an error status with an OpenStack- or Kubernetes-shaped body, a connection reset, a request that
// never gets an answer, a truncated body, a list page in another order, or a scripted sequence such as
// "fail twice, then pass".
//
// Rules select requests by method, path pattern and query parameters (for example the `marker=` of page 2 and
// later) and can be added, removed and cleared while the proxy serves, from the test. Every injected fault is
// logged (log/slog) and counted, so that a test can assert that the failure it wanted did happen.
//
// Clients find OpenStack services through Keystone's catalog, which names the real endpoints. Cloud puts a proxy
// in front of Keystone that rewrites the catalog in token responses so that every service is reached through a
// proxy of its own; the upstream services also see the proxy's Host header, so the links they return (the next
// page of a list) lead back through the proxy. For the kube-apiserver, NewKube returns a proxy and a
// client configuration that uses it.
package faultproxy
