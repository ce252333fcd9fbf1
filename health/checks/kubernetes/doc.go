// Package kubernetes holds health checks of the Kubernetes API as a controller depends on it: the
// API server's /readyz, a list followed by a watch, informer caches synced, and a leader election
// Lease held and fresh. Each constructor has the one shape of package checks: Name(NameOptions)
// (checks.Func, error), the clients in the options.
//
// Every check coalesces: it sends at most one round of requests per MinInterval and answers the
// calls in between with the last result, so probes never hammer the API server.
//
// Types declares the check types of this package for the check registry (health/checktype):
// vitals serve offers "kubernetes" (the API server's /readyz) through it.
package kubernetes
