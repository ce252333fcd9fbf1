// Package serve is `vitals serve`: a standalone health server (a sidecar for services that cannot
// embed the health library) configured by a YAML file that lists checks of the types in
// health/checks, with their probes, intervals, timeouts, thresholds, start periods and severities.
//
// Load validates the whole file before anything starts and reports every problem as a
// config.Error (file, line, field, what was expected); Run serves /livez, /readyz, /startupz,
// /healthz, /alive, /ready, their /<probe>/<check> sub-paths and /metrics, and drains on shutdown.
// The schema is documented in docs/serve.md; examples/serve.yaml is a working example.
package serve
