#!/usr/bin/env bash
# The operator at scale (issue 10, item 6; issue 23): N VitalsClusters on the OpenStack simulator with a latency
# added to every API call, on a private real kube-apiserver + etcd (hack/kube.sh), `vitals operator` on them;
# prints, per phase, the passes of routegc, flight and access against their interval, the status writes, the
# API server's requests, and the memory and CPU of the operator, the API server, etcd and the simulator.
# Every cluster's kubeconfig Secret names one shared workload API server, a second private kube-apiserver +
# etcd with a few Ready Nodes (BENCH_WORKLOAD=0: none, flight then has no workload cluster).
# Usage: bench/operator/run.sh [flags of the driver, e.g. -sizes 100,300,1000 -latency 50ms -interval 30s -window 60s]
# Sharded replicas (issue 17): BENCH_FEATURE_GATES=ShardedListAndWatch=true bench/operator/run.sh -sizes 2000 -replicas 1,2,4
# (the private kube-apiserver gets --feature-gates=$BENCH_FEATURE_GATES).
# Another operator binary (the code before a change): -vitals PATH, and BENCH_CRDS=DIR for its CRD.
# Takes about 1.5 min per size on 2 cores. Writes logs under _out/bench-operator/; leaves nothing running.
set -euo pipefail
LOG_PREFIX=bench
. "$(dirname "$0")/../../hack/lib.sh"
cd "$ROOT"
DIR=${BENCH_DIR:-$ROOT/_out/bench-operator}
export KUBE_API_PORT=${BENCH_KUBE_API_PORT:-37443} ETCD_PORT=${BENCH_ETCD_PORT:-37379} ETCD_PEER_PORT=${BENCH_ETCD_PEER_PORT:-37380}
WL_API_PORT=${BENCH_WORKLOAD_API_PORT:-$((KUBE_API_PORT + 100))}
WL_ETCD_PORT=${BENCH_WORKLOAD_ETCD_PORT:-$((ETCD_PORT + 100))}
WL_ETCD_PEER_PORT=${BENCH_WORKLOAD_ETCD_PEER_PORT:-$((ETCD_PEER_PORT + 100))}
CRDS=${BENCH_CRDS:-deploy/crds/}
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "go: $(go version)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$DIR"; mkdir -p "$DIR"
if [ -n "${BENCH_FEATURE_GATES:-}" ]; then
  export KUBE_APISERVER_EXTRA_ARGS="${KUBE_APISERVER_EXTRA_ARGS:-} --feature-gates=$BENCH_FEATURE_GATES"
  echo "kube-apiserver feature gates: $BENCH_FEATURE_GATES"
fi
cleanup() {
  hack/kube.sh stop "$DIR/kube" >/dev/null 2>&1 || true
  [ "${BENCH_WORKLOAD:-1}" = 0 ] || hack/kube.sh stop "$DIR/workload" >/dev/null 2>&1 || true
}
trap cleanup EXIT
step "build bin/vitals and bin/vitals-cloudsim" make -s vitals cloudsim
KUBECONFIG=$(hack/kube.sh start "$DIR/kube" 2>"$DIR/kube.log")
export KUBECONFIG
step "install the VitalsCluster CRD ($CRDS)" kubectl apply --server-side -f "$CRDS" >/dev/null
kubectl wait --for=condition=Established crd/vitalsclusters.vitals.vitalsproject.io --timeout=60s >/dev/null
WL=()
if [ "${BENCH_WORKLOAD:-1}" != 0 ]; then
  WL_KUBECONFIG=$(KUBE_API_PORT=$WL_API_PORT ETCD_PORT=$WL_ETCD_PORT ETCD_PEER_PORT=$WL_ETCD_PEER_PORT KUBE_APISERVER_EXTRA_ARGS= \
    hack/kube.sh start "$DIR/workload" 2>"$DIR/workload.log")
  WL=(-workload-kubeconfig "$WL_KUBECONFIG" -workload-apiserver-pid-file "$DIR/workload/kube-apiserver.pid"
    -workload-etcd-pid-file "$DIR/workload/etcd.pid")
fi
go build -o "$DIR/operator-bench" ./bench/operator
echo "command: operator-bench $*"
"$DIR/operator-bench" -kubeconfig "$KUBECONFIG" -vitals bin/vitals -cloudsim bin/vitals-cloudsim -work "$DIR" -cleanup=false \
  -apiserver-pid-file "$DIR/kube/kube-apiserver.pid" -etcd-pid-file "$DIR/kube/etcd.pid" -etcd-url "http://127.0.0.1:$ETCD_PORT" \
  "${WL[@]}" "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
