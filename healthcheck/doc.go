// Package healthcheck is the container health check command: it parses check specs (from the
// command line or a YAML file), runs them once, prints exactly one line on stdout and returns the
// exit code Docker's HEALTHCHECK and Kubernetes exec probes expect (0 healthy, 1 unhealthy; bad
// arguments are unhealthy too, since Docker reserves 2).
//
// It runs in every container every few seconds, so it links only the standard library,
// health/checks and a YAML parser, and does no work at package init. cmd/healthcheck is its main;
// docs/healthcheck.md describes the forms.
package healthcheck
