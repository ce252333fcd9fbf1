#!/usr/bin/env bash
# A real etcd + kube-apiserver on 127.0.0.1 for tests, from the binaries hack/kube-build.sh builds.
# Usage: hack/kube.sh start [STATE_DIR]   prints the kubeconfig path on stdout (progress on stderr)
#        hack/kube.sh stop  [STATE_DIR]   stops exactly the two processes start recorded (by PID)
# STATE_DIR defaults to $TESTENV_DIR/kube. Data is kept across stop/start of the same STATE_DIR.
# Auth: a static token in group system:masters; the apiserver's self-signed serving cert is the kubeconfig's
# CA. No controller-manager runs, so the ServiceAccount admission plugin is disabled.
# Env: KUBE_BIN_DIR (default: output of hack/kube-build.sh), KUBE_API_PORT (26443), ETCD_PORT (22379),
#      ETCD_PEER_PORT (22380), KUBE_APISERVER_EXTRA_ARGS (word-split, appended; for a list flag such as
#      --enable-admission-plugins, only one not set here).
#      For a cluster with nodes (hack/node.sh): KUBE_BIND_ADDRESS (127.0.0.1: the address it listens on and
#      advertises, and the kubeconfig's server), KUBE_AUTHORIZATION_MODE (RBAC), KUBE_DISABLE_ADMISSION
#      (ServiceAccount; empty: none). A tokens.csv already in STATE_DIR is kept: its first line is the admin's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CMD=${1:-}; DIR=${2:-$TESTENV_DIR/kube}
API_PORT=${KUBE_API_PORT:-26443}
ETCD_PORT=${ETCD_PORT:-22379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-22380}
BIND=${KUBE_BIND_ADDRESS:-127.0.0.1}
AUTHZ=${KUBE_AUTHORIZATION_MODE:-RBAC}
DISABLE_ADMISSION=${KUBE_DISABLE_ADMISSION-ServiceAccount}

stop() {
  stop_pidfile 10 kube-apiserver "$DIR/kube-apiserver.pid"
  stop_pidfile 10 etcd "$DIR/etcd.pid"
}

start() {
  local bin=${KUBE_BIN_DIR:-} tok i p
  [ -n "$bin" ] || bin=$("$ROOT/hack/kube-build.sh")
  [ -x "$bin/kube-apiserver" ] && [ -x "$bin/etcd" ] || die "no kube-apiserver/etcd in $bin"
  for p in etcd kube-apiserver; do
    if [ -f "$DIR/$p.pid" ] && alive "$(cat "$DIR/$p.pid")"; then die "$p already running (pid $(cat "$DIR/$p.pid")); run: $0 stop $DIR"; fi
  done
  mkdir -p "$DIR/etcd-data" "$DIR/certs"
  DIR=$(cd "$DIR" && pwd)
  if [ ! -f "$DIR/sa.key" ]; then
    openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
    openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
  fi
  if [ ! -f "$DIR/tokens.csv" ]; then
    tok=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
    echo "$tok,admin,admin-uid,system:masters" > "$DIR/tokens.csv"
  fi
  tok=$(head -1 "$DIR/tokens.csv" | cut -d, -f1)

  "$bin/etcd" --name=vitals --data-dir="$DIR/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="vitals=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes=2147483648 --log-level=warn \
    >>"$DIR/etcd.log" 2>&1 &
  echo $! > "$DIR/etcd.pid"
  for i in $(seq 1 300); do
    curl -sf -m 1 "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
    alive "$(cat "$DIR/etcd.pid")" || { tail -20 "$DIR/etcd.log" >&2; stop; die "etcd died; see $DIR/etcd.log"; }
    sleep 0.05
  done
  log "etcd answers on 127.0.0.1:$ETCD_PORT"

  # shellcheck disable=SC2086
  "$bin/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address="$BIND" --advertise-address="$BIND" --secure-port="$API_PORT" \
    --cert-dir="$DIR/certs" \
    --token-auth-file="$DIR/tokens.csv" \
    --authorization-mode="$AUTHZ" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$DIR/sa.pub" --service-account-signing-key-file="$DIR/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    ${DISABLE_ADMISSION:+--disable-admission-plugins=$DISABLE_ADMISSION} \
    --allow-privileged=true \
    --endpoint-reconciler-type=none \
    ${KUBE_APISERVER_EXTRA_ARGS:-} \
    >>"$DIR/kube-apiserver.log" 2>&1 &
  echo $! > "$DIR/kube-apiserver.pid"
  for i in $(seq 1 1200); do
    [ "$(curl -sk -m 2 -H "Authorization: Bearer $tok" "https://$BIND:$API_PORT/readyz" 2>/dev/null)" = ok ] && break
    alive "$(cat "$DIR/kube-apiserver.pid")" || { tail -20 "$DIR/kube-apiserver.log" >&2; stop; die "kube-apiserver died; see $DIR/kube-apiserver.log"; }
    [ "$i" = 1200 ] && { stop; die "kube-apiserver not ready after 120 s; see $DIR/kube-apiserver.log"; }
    sleep 0.1
  done
  log "kube-apiserver $("$bin/kube-apiserver" --version | awk '{print $2}') ready on https://$BIND:$API_PORT"

  cat > "$DIR/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: vitals-test
  cluster:
    server: https://$BIND:$API_PORT
    certificate-authority: $DIR/certs/apiserver.crt
users:
- name: admin
  user:
    token: $tok
contexts:
- name: vitals-test
  context: {cluster: vitals-test, user: admin, namespace: default}
current-context: vitals-test
KC
  echo "$DIR/kubeconfig"
}

case $CMD in
  start) step "start etcd + kube-apiserver ($DIR)" start ;;
  stop) step "stop kube-apiserver + etcd ($DIR)" stop ;;
  *) echo "usage: $0 start|stop [STATE_DIR]" >&2; exit 2 ;;
esac
