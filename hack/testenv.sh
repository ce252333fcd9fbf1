#!/usr/bin/env bash
# One entry point for the real services the tests use (make testenv-up / make testenv-down).
# Usage: hack/testenv.sh up [fast|full]   install what is missing, start kube-apiserver+etcd, OpenStack and a
#                                         private dockerd (in parallel), with the full tier also the workload
#                                         cluster of the deorbit tests (hack/workload.sh), the Cluster API
#                                         management cluster (hack/capi.sh) and the node cluster (hack/node.sh:
#                                         kubelets, containerd, CNI), write $TESTENV_DIR/env
#        hack/testenv.sh down             stop them all (by PID) and remove the env file
#        hack/testenv.sh status
# The OpenStack tier defaults to $VITALS_OPENSTACK_TIER, else full (fast = Keystone + Neutron only).
# `up` is idempotent: a component that already runs (and answers) is kept, not restarted; a running full
# OpenStack also serves a fast request.
# After `up`:  source .testenv/env   (VITALS_TEST_KUBECONFIG, KUBEBUILDER_ASSETS, OS_*, VITALS_TEST_OPENSTACK,
#              VITALS_TEST_DOCKER_HOST, VITALS_TEST_HELM, VITALS_TEST_PROMTOOL, VITALS_TEST_VM_KERNEL; full tier: VITALS_TEST_WORKLOAD_*,
#              VITALS_TEST_CAPI_*, VITALS_TEST_NODE_*)
# Env: VITALS_TESTENV_DIR (state, default <repo>/.testenv), VITALS_CACHE (built binaries), VITALS_SKIP_INSTALL=1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
H=$ROOT/hack
ENVF=$TESTENV_DIR/env
mkdir -p "$TESTENV_DIR/logs"

kube_ok() {
  local d=$TESTENV_DIR/kube tok port
  [ -f "$d/kubeconfig" ] && [ -f "$d/kube-apiserver.pid" ] && alive "$(cat "$d/kube-apiserver.pid")" || return 1
  tok=$(cut -d, -f1 "$d/tokens.csv"); port=$(sed -n 's|.*server: https://127.0.0.1:\([0-9]*\).*|\1|p' "$d/kubeconfig")
  [ "$(curl -sk -m 3 -H "Authorization: Bearer $tok" "https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ]
}
openstack_ok() { # WANTED_TIER
  local d=$TESTENV_DIR/openstack have
  [ -f "$d/openrc" ] || return 1
  have=$(cat "$d/tier" 2>/dev/null || true)
  [ "$have" = full ] || [ "$have" = "$1" ] || return 1
  "$H/openstack.sh" check 2>/dev/null || return 1
  curl -s -o /dev/null -m 3 http://127.0.0.1:5000/v3 && curl -s -o /dev/null -m 3 http://127.0.0.1:9696/
}
workload_ok() { [ -f "$TESTENV_DIR/openstack/openrc" ] && "$H/workload.sh" check 2>/dev/null; }
capi_ok() { [ -f "$TESTENV_DIR/openstack/openrc" ] && "$H/capi.sh" check 2>/dev/null; }
node_ok() { "$H/node.sh" check 2>/dev/null; }
docker_ok() {
  local d=$TESTENV_DIR/docker
  [ -f "$d/dockerd.launcher.pid" ] && alive "$(cat "$d/dockerd.launcher.pid")" && \
    docker -H "unix://$d/docker.sock" version >/dev/null 2>&1
}

up() {
  local tier=${1:-${VITALS_OPENSTACK_TIER:-full}} kb_pid hb_pid pb_pid vk_pid vmkernel= cb_pid= ab_pid= ap_pid= nb_pid= os_pid dk_pid assets helm promtool kubeconfig rc=0
  [ "$tier" = fast ] || [ "$tier" = full ] || die "tier must be fast or full, not $tier"
  rm -f "$ENVF"
  # The kube-apiserver build is CPU-bound and the package installation network/disk-bound: overlap them.
  "$H/kube-build.sh" > "$TESTENV_DIR/logs/kube-build.out" 2> >(tee "$TESTENV_DIR/logs/kube-build.log" >&2) &
  kb_pid=$!
  # helm (to render the chart in tests) is built from its Go module too, alongside.
  "$H/helm-build.sh" > "$TESTENV_DIR/logs/helm-build.out" 2> "$TESTENV_DIR/logs/helm-build.log" &
  hb_pid=$!
  # promtool (to check the chart's alert rules and run their unit tests) likewise.
  "$H/promtool-build.sh" > "$TESTENV_DIR/logs/promtool-build.out" 2> "$TESTENV_DIR/logs/promtool-build.log" &
  pb_pid=$!
  # the cgroup v2 guest's kernel (health/checks TestMemoryCgroupV2RealMount), fetched alongside
  "$H/vmkernel-build.sh" > "$TESTENV_DIR/logs/vmkernel-build.out" 2> "$TESTENV_DIR/logs/vmkernel-build.log" &
  vk_pid=$!
  # the workload cluster's controllers (full tier), from their Go modules too
  if [ "$tier" = full ]; then
    "$H/cloud-build.sh" > "$TESTENV_DIR/logs/cloud-build.out" 2> "$TESTENV_DIR/logs/cloud-build.log" &
    cb_pid=$!
    # the Cluster API core manager and CAPO (hack/capi.sh), likewise
    "$H/capi-build.sh" > "$TESTENV_DIR/logs/capi-build.out" 2> "$TESTENV_DIR/logs/capi-build.log" &
    ab_pid=$!
    # and the node cluster's kubelet, kube-proxy and kube-scheduler
    "$H/node-build.sh" > "$TESTENV_DIR/logs/node-build.out" 2> "$TESTENV_DIR/logs/node-build.log" &
    nb_pid=$!
  fi
  [ "${VITALS_SKIP_INSTALL:-}" = 1 ] || VITALS_SKIP_GO_TOOLS=1 step "install dependencies" "$H/install-deps.sh"

  if openstack_ok "$tier"; then
    log "OpenStack ($(cat "$TESTENV_DIR/openstack/tier") tier) already running: kept"; os_pid=
  else
    "$H/openstack.sh" start "$tier" > "$TESTENV_DIR/logs/openstack.log" 2>&1 &
    os_pid=$!; log "starting OpenStack ($tier tier) in the background (log: $TESTENV_DIR/logs/openstack.log)"
  fi
  if docker_ok; then log "dockerd already running: kept"; else
    "$H/docker.sh" stop >/dev/null 2>&1 || true
    "$H/docker.sh" start > "$TESTENV_DIR/logs/docker.out" &
    dk_pid=$!
  fi
  step "kube-apiserver + etcd binaries" wait $kb_pid || die "kube-build failed; see $TESTENV_DIR/logs/kube-build.log"
  assets=$(tail -1 "$TESTENV_DIR/logs/kube-build.out")
  if kube_ok; then log "kube-apiserver already running: kept"; else
    "$H/kube.sh" stop >/dev/null 2>&1 || true
    KUBE_BIN_DIR=$assets "$H/kube.sh" start > "$TESTENV_DIR/logs/kube.out" 2> "$TESTENV_DIR/logs/kube.log" \
      || { tail -20 "$TESTENV_DIR/logs/kube.log" >&2; die "kube-apiserver did not start"; }
    grep -v '^[IWE][0-9]\{4\} ' "$TESTENV_DIR/logs/kube.log" >&2 || true
  fi
  kubeconfig=$TESTENV_DIR/kube/kubeconfig
  if [ -n "${dk_pid:-}" ]; then wait "$dk_pid" || die "dockerd did not start; see $TESTENV_DIR/docker/dockerd.log"; fi
  if [ -n "$os_pid" ]; then
    step "OpenStack ($tier tier)" wait "$os_pid" || rc=$?
    if [ $rc -eq 0 ]; then grep -E '^\[openstack' "$TESTENV_DIR/logs/openstack.log" | tail -25 >&2 || true
    else grep -v '^[IWE][0-9]\{4\} ' "$TESTENV_DIR/logs/openstack.log" | tail -40 >&2 || true; fi
    [ $rc -eq 0 ] || die "OpenStack did not start; see $TESTENV_DIR/logs/openstack.log and $TESTENV_DIR/openstack/log/"
  fi
  if [ -n "$cb_pid" ]; then
    step "workload cluster binaries" wait $cb_pid || { tail -20 "$TESTENV_DIR/logs/cloud-build.log" >&2; die "cloud-build failed; see $TESTENV_DIR/logs/cloud-build.log"; }
    # the Cluster API management cluster, beside the workload cluster
    step "Cluster API binaries" wait $ab_pid || { tail -20 "$TESTENV_DIR/logs/capi-build.log" >&2; die "capi-build failed; see $TESTENV_DIR/logs/capi-build.log"; }
    if [ -z "$os_pid" ] && capi_ok; then log "Cluster API management cluster already running: kept"; else
      "$H/capi.sh" stop >/dev/null 2>&1 || true
      ( . "$TESTENV_DIR/openstack/openrc"
        KUBE_BIN_DIR=$assets CAPI_BIN_DIR=$(tail -1 "$TESTENV_DIR/logs/capi-build.out") "$H/capi.sh" start ) \
        > "$TESTENV_DIR/logs/capi.out" 2> "$TESTENV_DIR/logs/capi.log" &
      ap_pid=$!
    fi
    # a freshly started OpenStack knows nothing of the cluster's project: start the cluster again then
    if [ -z "$os_pid" ] && workload_ok; then log "workload cluster already running: kept"; else
      "$H/workload.sh" stop >/dev/null 2>&1 || true
      ( . "$TESTENV_DIR/openstack/openrc"
        KUBE_BIN_DIR=$assets CLOUD_BIN_DIR=$(tail -1 "$TESTENV_DIR/logs/cloud-build.out") "$H/workload.sh" start ) \
        > "$TESTENV_DIR/logs/workload.out" 2> "$TESTENV_DIR/logs/workload.log" \
        || { tail -20 "$TESTENV_DIR/logs/workload.log" >&2; die "the workload cluster did not start; see $TESTENV_DIR/logs/workload.log"; }
      grep -v '^[IWE][0-9]\{4\} ' "$TESTENV_DIR/logs/workload.log" >&2 || true
    fi
    if [ -n "$ap_pid" ]; then
      wait "$ap_pid" || { tail -20 "$TESTENV_DIR/logs/capi.log" >&2; die "the Cluster API management cluster did not start; see $TESTENV_DIR/logs/capi.log"; }
      grep -v '^[IWE][0-9]\{4\} ' "$TESTENV_DIR/logs/capi.log" >&2 || true
    fi
  fi
  if [ -n "$nb_pid" ]; then
    step "node cluster binaries" wait $nb_pid || { tail -20 "$TESTENV_DIR/logs/node-build.log" >&2; die "node-build failed; see $TESTENV_DIR/logs/node-build.log"; }
    if node_ok; then log "node cluster already running: kept"; else
      "$H/node.sh" stop >/dev/null 2>&1 || true
      KUBE_BIN_DIR=$assets CLOUD_BIN_DIR=$(tail -1 "$TESTENV_DIR/logs/cloud-build.out") \
        NODE_BIN_DIR=$(tail -1 "$TESTENV_DIR/logs/node-build.out") "$H/node.sh" start \
        > "$TESTENV_DIR/logs/node.out" 2> "$TESTENV_DIR/logs/node.log" \
        || { tail -20 "$TESTENV_DIR/logs/node.log" >&2; die "the node cluster did not start; see $TESTENV_DIR/logs/node.log"; }
      grep -v '^[IWE][0-9]\{4\} ' "$TESTENV_DIR/logs/node.log" >&2 || true
    fi
  fi
  step "helm binary" wait $hb_pid || { tail -20 "$TESTENV_DIR/logs/helm-build.log" >&2; die "helm-build failed; see $TESTENV_DIR/logs/helm-build.log"; }
  helm=$(tail -1 "$TESTENV_DIR/logs/helm-build.out")
  step "promtool binary" wait $pb_pid || { tail -20 "$TESTENV_DIR/logs/promtool-build.log" >&2; die "promtool-build failed; see $TESTENV_DIR/logs/promtool-build.log"; }
  promtool=$(tail -1 "$TESTENV_DIR/logs/promtool-build.out")
  # not fatal: without it the one test that needs it says so (and fails in the required mode)
  if step "guest kernel" wait $vk_pid; then vmkernel=$(tail -1 "$TESTENV_DIR/logs/vmkernel-build.out")
  else tail -5 "$TESTENV_DIR/logs/vmkernel-build.log" >&2; log "WARNING: no guest kernel; see $TESTENV_DIR/logs/vmkernel-build.log"; fi
  write_env "$assets" "$kubeconfig" "$helm" "$promtool" "$vmkernel"
  log "all services up; for a shell: source $ENVF"
  echo "$ENVF"
}

write_env() { # ASSETS KUBECONFIG HELM PROMTOOL [VMKERNEL]
  local os=$TESTENV_DIR/openstack
  {
    echo "# Written by hack/testenv.sh up on $(date -u +%FT%TZ). Source it: services for Vitals' tests."
    echo "export VITALS_TEST_KUBECONFIG=$2"
    echo "export KUBEBUILDER_ASSETS=$1"
    grep -E '^export OS_(AUTH_URL|USERNAME|PASSWORD|PROJECT_NAME|USER_DOMAIN_NAME|PROJECT_DOMAIN_NAME|DOMAIN_NAME|REGION_NAME)=' "$os/openrc"
    echo "export VITALS_TEST_OPENSTACK=$(cat "$os/tier")"
    echo "export VITALS_TEST_DOCKER_HOST=unix://$TESTENV_DIR/docker/docker.sock"
    echo "export VITALS_TEST_HELM=$3"
    echo "export VITALS_TEST_PROMTOOL=$4"
    if [ -n "${5:-}" ]; then echo "export VITALS_TEST_VM_KERNEL=$5"; fi
    if [ "$(cat "$os/tier")" = full ] && [ -f "$TESTENV_DIR/workload/env" ]; then cat "$TESTENV_DIR/workload/env"; fi
    if [ "$(cat "$os/tier")" = full ] && [ -f "$TESTENV_DIR/capi/env" ]; then cat "$TESTENV_DIR/capi/env"; fi
    if [ "$(cat "$os/tier")" = full ] && [ -f "$TESTENV_DIR/node/env" ]; then cat "$TESTENV_DIR/node/env"; fi
  } > "$ENVF.tmp"
  mv "$ENVF.tmp" "$ENVF"
}

down() {
  local p1 p2 p3
  rm -f "$ENVF"
  # first: their controllers talk to the OpenStack services stopped below
  "$H/workload.sh" stop || true
  "$H/capi.sh" stop || true
  "$H/node.sh" stop || true
  "$H/kube.sh" stop & p1=$!
  "$H/openstack.sh" stop & p2=$!
  "$H/docker.sh" stop & p3=$!
  wait $p1; wait $p2; wait $p3
}

case ${1:-} in
  up) step "testenv up" up "${2:-}" ;;
  down) step "testenv down" down ;;
  status)
    kube_ok && echo "kube-apiserver running" || echo "kube-apiserver stopped"
    docker_ok && echo "dockerd running" || echo "dockerd stopped"
    workload_ok && echo "workload cluster running" || echo "workload cluster stopped"
    capi_ok && echo "Cluster API management cluster running" || echo "Cluster API management cluster stopped"
    node_ok && echo "node cluster running" || echo "node cluster stopped"
    "$H/openstack.sh" status
    [ -f "$ENVF" ] && echo "env file: $ENVF" || echo "no env file" ;;
  *) echo "usage: $0 up [fast|full] | down | status" >&2; exit 2 ;;
esac
