#!/usr/bin/env bash
# The operator at scale (issue 10, item 6): N VitalsClusters on the OpenStack simulator with a latency added to
# every API call, on a private real kube-apiserver + etcd (hack/kube.sh), `vitals operator` on them; prints
# whether every route pass ran within its interval, and the operator's memory and CPU, for each N.
# Usage: bench/operator/run.sh [flags of the driver, e.g. -sizes 100,300,1000 -latency 50ms -interval 30s -window 60s]
# Sharded replicas (issue 17): BENCH_FEATURE_GATES=ShardedListAndWatch=true bench/operator/run.sh -sizes 2000 -replicas 1,2,4
# (the private kube-apiserver gets --feature-gates=$BENCH_FEATURE_GATES).
# Takes about 1.5 min per size on 2 cores. Writes logs under _out/bench-operator/; leaves nothing running.
set -euo pipefail
LOG_PREFIX=bench
. "$(dirname "$0")/../../hack/lib.sh"
cd "$ROOT"
DIR=$ROOT/_out/bench-operator
export KUBE_API_PORT=${BENCH_KUBE_API_PORT:-37443} ETCD_PORT=${BENCH_ETCD_PORT:-37379} ETCD_PEER_PORT=${BENCH_ETCD_PEER_PORT:-37380}
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "go: $(go version)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$DIR"; mkdir -p "$DIR"
if [ -n "${BENCH_FEATURE_GATES:-}" ]; then
  export KUBE_APISERVER_EXTRA_ARGS="${KUBE_APISERVER_EXTRA_ARGS:-} --feature-gates=$BENCH_FEATURE_GATES"
  echo "kube-apiserver feature gates: $BENCH_FEATURE_GATES"
fi
trap 'hack/kube.sh stop "$DIR/kube" >/dev/null 2>&1 || true' EXIT
step "build bin/vitals and bin/vitals-cloudsim" make -s vitals cloudsim
KUBECONFIG=$(hack/kube.sh start "$DIR/kube" 2>"$DIR/kube.log")
export KUBECONFIG
step "install the VitalsCluster CRD" kubectl apply --server-side -f deploy/crds/ >/dev/null
kubectl wait --for=condition=Established crd/vitalsclusters.vitals.vitalsproject.io --timeout=60s >/dev/null
go build -o "$DIR/operator-bench" ./bench/operator
echo "command: operator-bench $*"
"$DIR/operator-bench" -kubeconfig "$KUBECONFIG" -vitals bin/vitals -cloudsim bin/vitals-cloudsim -work "$DIR" -cleanup=false "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
