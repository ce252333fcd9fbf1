// Package operator wires Vitals' operator: a controller-runtime manager with leader election (a
// Lease), the controllers (routegc today), Events, Prometheus metrics, and the controller health
// profile served on the health port.
//
// The health profile follows Kuryr's controller: readiness says the operator can do its work —
// Kubernetes answers a list and a watch, the informer cache has synced, a Keystone token can be had
// and Neutron answers one cheap request (each a background check with its own timeout, so a probe
// never waits); liveness says the process itself works — every controller loop and informer is a
// component with a heartbeat, and a replica that believes it leads must still hold the Lease.
// Liveness never fails because OpenStack is down: a restart would not bring OpenStack back.
// The controllers gate themselves on the readiness of Keystone and Neutron.
package operator
