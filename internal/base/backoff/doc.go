// Package backoff spaces the retries of every loop of Vitals that talks to an API: the exponential
// steps of k8s.io/apimachinery's wait.Backoff (its Duration, Factor, Steps and Cap), with the jitter
// drawn from a source the caller injects, so that tests choose the randomness and a fleet of agents
// or a thousand workload clusters spread their retries instead of retrying in step. Waits end when
// their context does.
//
// The controllers' work queues get the same treatment from operator's rate limiter, built on
// client-go's workqueue limiters with Jitter.
package backoff
