// Package health is Vitals' health manager: named checks that run in the background on their own
// schedule, component heartbeats, failure budgets, and an HTTP handler that answers Kubernetes-style
// probes (/livez, /readyz, /startupz, /healthz, Kuryr's /alive and /ready) from cached results.
//
// A probe never runs a check: it reads the latest result, so it answers in microseconds however slow
// Keystone or the Kubernetes API is. A check's result is trusted for interval+timeout; after that it is
// stale, and stale counts as failed.
//
// The package depends on the standard library, prometheus/client_golang and k8s.io/utils/clock only.
package health
