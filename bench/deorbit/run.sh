#!/usr/bin/env bash
# Deorbit at scale (issue 13): a cluster with 200 PVCs and 50 LoadBalancer Services deleted by deorbit's engine
# on a private kube-apiserver + etcd and the OpenStack simulator with a 2 s delete latency, twice: with the
# client rate limits the operator uses (the cloud's 10 requests/s, the workload cluster's 20/s), then without
# them (the engine alone). Prints the machine, the wall time, its ratio to the latency and the steps.
# Usage: bench/deorbit/run.sh [flags of the bench, e.g. -deorbit.pvcs=200 -deorbit.lbs=50 -deorbit.latency=2s]
# ROUNDS=N runs N rounds of each (default 1; the median is reported). Needs KUBEBUILDER_ASSETS (make testenv-up).
# Takes about 1.5 min on 2 cores; leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "go: $(go version)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in "" -deorbit.unlimited; do
	echo "command: go test -run '^\$' -bench BenchmarkDeorbit -benchtime ${ROUNDS:-1}x ./bench/deorbit/ -args $mode $*"
	go test -run '^$' -bench BenchmarkDeorbit -benchtime "${ROUNDS:-1}x" -timeout 30m ./bench/deorbit/ -args $mode "$@" |
		grep -E 'BenchmarkDeorbit|deorbit_test.go|^(ok|FAIL|PASS)'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
