// Package health is Vitals' health manager: named checks that run in the background on their own
// schedule, component heartbeats, failure budgets, and an HTTP handler that answers Kubernetes-style
// probes (/livez, /readyz, /startupz, /healthz, Kuryr's /alive and /ready) from cached results.
//
// A probe never runs a check: it reads the latest result, so it answers in microseconds however slow
// Keystone or the Kubernetes API is. A check's result is trusted for interval+timeout; after that it is
// stale, and stale counts as failed.
//
// # Checks
//
// Each check runs in its own goroutine, first after a short random delay, then every interval less
// 5-10% of jitter (so that jitter never makes a result stale). A run gets a context cancelled at the
// check's timeout; a run past its timeout is recorded as failed (ErrTimeout) at the deadline. If the
// function ignores its context, no second run starts while it is still running: each due run is
// recorded as failed with ErrStillRunning instead, so at most one goroutine per check outlives its
// timeout. A panic is a failure (ErrPanic) with the panic's message, logged with its stack.
//
// A check starts "unknown": it fails readiness (not ready until proven). FailureThreshold
// consecutive failures turn an ok or unknown check failed; SuccessThreshold consecutive successes
// turn a failed or unknown check ok. Liveness and startup restart the process, so they fail only on
// real results: an unknown check fails them neither below its failure threshold nor before its
// first result is overdue (start period, then interval+timeout after Start). A degraded check is
// reported but never fails a probe.
//
// A result older than interval+timeout is stale and fails readiness at once. On liveness and
// startup a stale result (or a missed heartbeat) gets a grace of four times the process's own
// scheduling delay, measured by a timer goroutine that records how late it fires (a starved
// process's check goroutines wait like every other), capped by WithLagGrace (default 10s); so do
// failures that are all timeouts while the process ran late, for up to the cap from the first.
//
// # Components and budgets
//
// A Component is a heartbeat: it is dead when it has not beaten within its deadline or when Fail was
// called, and alive again on Beat (deadline) or Recover (failure), unless latched. A Budget counts
// failure events, either N within a sliding window or N in a row (reset by a success). Both are
// evaluated when probed: Beat, Failure and Success are cheap enough for hot paths.
//
// # Probes over HTTP
//
// Manager.Handler serves the apiserver's text format byte for byte (status, headers and body of
// "ok", ?verbose, ?exclude= with its warning line, and the /<probe>/<check> paths), JSON on
// "Accept: application/json" or ?format=json, and HEAD as oslo.middleware does (204 or 503, no
// body). Failure reasons are withheld unless HandlerOptions.Details is set, except on a per-check
// path asked from a loopback address. A handler can be disabled by files as oslo.middleware's
// healthcheck is (disable_by_file_path, disable_by_file_paths, enable_by_file_paths); the files are
// looked at no more than once a second (FileGate). oslo.middleware's healthcheck application
// (/healthcheck from readiness: status codes, text/HTML/JSON by Accept, its detailed mode) is package
// health/oslo, mounted beside the probes through ServerOptions.Handlers.
//
// After Drain, readiness fails at once (a "shutdown" pseudo-check, as in the apiserver) while
// liveness keeps passing for the drain delay, so that Kubernetes stops sending traffic before the
// process exits.
//
// # The server
//
// Server is the one HTTP server of Vitals' programs (vitals serve, the node agent, the operator's
// controller manager, where it is a Runnable that needs no leader election): the probe paths and
// /metrics, with read-header, read, write and idle timeouts, a header size limit and a connection
// cap that evicts the longest-waiting idle connection rather than leave the kubelet's next probe
// queued behind idle or slow clients. When its context ends it drains, then shuts down.
//
// # Speed
//
// Every change (a check result, a heartbeat failure, a budget event) rebuilds an immutable snapshot
// of all results with each probe's verdict, published through an atomic pointer; each snapshot
// knows the instant until which it holds (the next staleness, heartbeat deadline, start-period end
// or budget expiry, and at most a second after it was built). A background watcher, started by
// Start, rebuilds the snapshot at that instant, so that transitions reach listeners, logs and
// metrics even when nobody probes. On the real clock a probe of a started manager therefore only
// loads the pointer (a clock read can cost more than the rest of the probe); otherwise it also
// reads the clock and rebuilds an expired snapshot itself. The verbose and JSON bodies are rendered
// once per snapshot and then served as cached bytes: a probe allocates nothing.
//
// The package depends on the standard library, prometheus/client_golang and k8s.io/utils/clock only.
package health
