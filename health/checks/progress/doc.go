// Package progress turns a controller-runtime controller's progress into a liveness check, so that a
// controller is alive because it works, not because its process runs.
//
// A Controller observes one controller from inside its loop: Reconciler wraps the reconciler and
// records each reconcile as it starts and ends (and how it ends: returned, panicked, or its worker
// goroutine exited), and NewQueue builds the controller's work queue (controller-runtime's own
// priority queue) wrapped so that each request a worker takes is seen. Check then fails, with the
// reason, when
//
//   - a worker exited while reconciling (runtime.Goexit, or a panic not recovered by the
//     controller): the controller has fewer workers than it was built with and no restart of the
//     informers brings them back;
//   - a reconcile has run longer than HungAfter (a hung pass: a call that ignores its context, a
//     deadlock);
//   - requests are ready in the queue, no reconcile is running and no worker has taken one for
//     StallAfter (a stalled queue: every worker is gone or stuck outside a reconcile).
//
// A queue that is empty, or whose requests all wait for a later time (RequeueAfter), is idle, not
// stalled. A controller that has not started (a replica waiting for the leader election) passes.
//
// InformerRunning is the informer's side: it fails when the informer's run loop has stopped while
// the process runs. An informer that has not synced (the API server is unreachable) does not fail
// liveness: that is readiness's business.
package progress
