// Package deorbit is issue 13's bench (BenchmarkDeorbit in its test, run by run.sh): deorbit's engine deletes a
// cluster with 200 PVCs bound to Cinder CSI volumes and 50 LoadBalancer Services against a private real
// kube-apiserver (the workload cluster) and the OpenStack simulator, whose Cinder and Octavia take 2 s to delete;
// it reports the wall time as a multiple of that latency. Results are in docs/benchmarks.md.
package deorbit
