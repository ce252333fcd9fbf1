#!/usr/bin/env bash
# The chaos soak (issue 27): `vitals operator --sharding` replicas against the OpenStack simulator, under random
# cloud 500s, slow reads, connection resets, replica SIGSTOP/SIGCONT of random length and kube-apiserver
# restarts, for SOAK_DURATION (default 30m); then the invariants from the simulator's request log (bench/soak).
# Usage: bench/soak/run.sh [flags of the driver, e.g. -replicas 3 -clusters 24 -seed 7]
#        SOAK_DURATION=3m bench/soak/run.sh      # a short one
# The kube-apiserver is a private one (hack/kube.sh, ports SOAK_KUBE_API_PORT=38443, SOAK_ETCD_PORT=38379,
# SOAK_ETCD_PEER_PORT=38380), restarted by the soak; logs under _out/soak/. Leaves nothing running. Not in CI.
set -euo pipefail
LOG_PREFIX=soak
. "$(dirname "$0")/../../hack/lib.sh"
cd "$ROOT"
DIR=$ROOT/_out/soak
export KUBE_API_PORT=${SOAK_KUBE_API_PORT:-38443} ETCD_PORT=${SOAK_ETCD_PORT:-38379} ETCD_PEER_PORT=${SOAK_ETCD_PEER_PORT:-38380}
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "cpus: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "go: $(go version)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$DIR"; mkdir -p "$DIR"
trap 'hack/kube.sh stop "$DIR/kube" >/dev/null 2>&1 || true' EXIT
step "build the vitals binary and the soak" go build -o "$DIR/vitals" ./cmd/vitals
go build -o "$DIR/soak" ./bench/soak
KUBECONFIG=$(hack/kube.sh start "$DIR/kube" 2>"$DIR/kube.log")
echo "command: soak -duration ${SOAK_DURATION:-30m} $*"
rc=0
"$DIR/soak" -kubeconfig "$KUBECONFIG" -kube-state "$DIR/kube" -kube-script hack/kube.sh -vitals "$DIR/vitals" -work "$DIR" \
  -duration "${SOAK_DURATION:-30m}" "$@" || rc=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
