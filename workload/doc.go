// Package workload gives the operator access to each VitalsCluster's own Kubernetes cluster (the workload
// cluster): one cached client and informer set per cluster (a controller-runtime cluster.Cluster), built
// from the kubeconfig Secret the spec names, started on demand, rebuilt when the Secret changes (uid or
// resourceVersion), and stopped, with every goroutine it started, when the VitalsCluster goes.
//
// The kubeconfig is a tenant's input: ParseKubeconfig accepts inline data only and refuses credential
// plugins, auth providers, file references, proxies and (unless allowed) unverified TLS; errors name
// fields by position and never quote the Secret. Every access has its own rate limiter, connection pool
// and bounds on dial, header, request and watch time and on response size, and refuses redirects and
// link-local addresses, so that a hostile server can neither stall nor flood the operator.
//
// Each access probes its API (/readyz) and its informers on an interval; the result is the cluster's
// remediation.CheckWorkload (the remediation gate), a metric, and, through the access controller, the
// WorkloadReachable condition. It never feeds the operator's own liveness or readiness: one workload
// cluster's outage shows on that VitalsCluster only.
package workload
