#!/usr/bin/env bash
# A workload cluster on the real test cloud, for the deorbit end-to-end tests: its own etcd + kube-apiserver
# (hack/kube.sh on other ports), kube-controller-manager (PV binder, garbage collector), the OpenStack cloud
# controller manager (service controller only: LoadBalancer Services -> Octavia), the Cinder CSI plugin
# (controller service on a unix socket), csi-provisioner (PVCs -> Cinder volumes), csi-snapshotter and
# snapshot-controller (VolumeSnapshots -> Cinder snapshots), all acting with the credentials of a project of their
# own ("vitals-workload"), never the admin's.
# It is a cluster of its own, not the shared kube-apiserver: kube-controller-manager's garbage collector and
# namespace controller, and a cloud controller manager turning every LoadBalancer Service into an Octavia load
# balancer, would change what the other test packages see.
# Usage: hack/workload.sh start [STATE_DIR]   prints the env file to source on stdout (progress on stderr)
#        hack/workload.sh stop  [STATE_DIR]   stops exactly the processes start recorded (by PID)
#        hack/workload.sh check [STATE_DIR]   exit 0 when every process runs and the apiserver is ready
# STATE_DIR defaults to $TESTENV_DIR/workload. Needs the full OpenStack tier (Keystone, Neutron, Nova in the
# catalog, Cinder, Octavia) with admin credentials in OS_* (source $TESTENV_DIR/openstack/openrc).
# Env: KUBE_BIN_DIR (kube-apiserver + etcd; default: hack/kube-build.sh), CLOUD_BIN_DIR (default:
#      hack/cloud-build.sh), WORKLOAD_API_PORT (27443), WORKLOAD_ETCD_PORT (23379), WORKLOAD_PORT_BASE (27250:
#      kube-controller-manager +7, cloud controller manager +8 serve /healthz there), WORKLOAD_PROJECT
#      (vitals-workload: the project and user on the test cloud; another one for a second cluster on one cloud).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CMD=${1:-}; DIR=${2:-$TESTENV_DIR/workload}
API_PORT=${WORKLOAD_API_PORT:-27443}
ETCD_PORT=${WORKLOAD_ETCD_PORT:-23379}
BASE=${WORKLOAD_PORT_BASE:-27250}
KCM_PORT=$((BASE + 7)) OCCM_PORT=$((BASE + 8))
# The name the cloud controllers tag the cluster's resources with (spec.openstack.clusterName of the tests).
CLUSTER_NAME=vitals-workload
PROJECT=${WORKLOAD_PROJECT:-vitals-workload} # its project and user on the test cloud
STORAGE_CLASS=cinder SNAPSHOT_CLASS=cinder
NODE=workload-node-1 NODE_IP=10.0.10.11
PY=/usr/bin/python3 # Debian's interpreter, the one keystoneauth1 is installed for
PROCS="snapshot-controller csi-snapshotter csi-provisioner cinder-csi-plugin openstack-cloud-controller-manager
  kube-controller-manager"

stop() {
  local p procs=()
  for p in $PROCS; do [ -f "$DIR/$p.pid" ] && procs+=("$p=$(cat "$DIR/$p.pid")"); done
  # all at once: each takes a second or two to stop
  [ ${#procs[@]} -eq 0 ] || stop_pids 10 "${procs[@]}"
  for p in $PROCS; do rm -f "$DIR/$p.pid"; done
  KUBE_API_PORT=$API_PORT ETCD_PORT=$ETCD_PORT ETCD_PEER_PORT=$((ETCD_PORT + 1)) "$ROOT/hack/kube.sh" stop "$DIR/kube" >&2
  rm -f "$DIR/env"
}

check() {
  local p
  [ -f "$DIR/env" ] || return 1
  for p in $PROCS; do [ -f "$DIR/$p.pid" ] && alive "$(cat "$DIR/$p.pid")" || return 1; done
  [ "$(curl -sk -m 3 -H "Authorization: Bearer $(cut -d, -f1 "$DIR/kube/tokens.csv")" \
    "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null)" = ok ]
}

# kapi METHOD PATH [BODY] [CONTENT-TYPE]: a request to the workload kube-apiserver; fails on an HTTP error but
# 409 (already exists). BODY @FILE sends a file.
kapi() {
  local code
  code=$(curl -sSk -m 30 -X "$1" -H "Authorization: Bearer $TOKEN" -H "Content-Type: ${4:-application/json}" \
    ${3:+--data-binary "$3"} "https://127.0.0.1:$API_PORT$2" -o "$DIR/kapi.out" -w '%{http_code}') || return 1
  case $code in 2??|409) return 0 ;; esac
  log "$1 $2: HTTP $code: $(head -c 300 "$DIR/kapi.out")"; return 1
}

# tenant: the project, its member user (password kept in DIR across restarts) and its load-balancer network, on
# the real Keystone and Neutron, and a router with an interface on that network. Prints "PROJECT_ID SUBNET_ID
# ROUTER_ID".
tenant() {
  [ -f "$DIR/tenant-password" ] || head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/tenant-password"
  PASSWORD=$(cat "$DIR/tenant-password") NAME=$PROJECT PYTHONPATH=$ROOT/hack/py $PY - <<'EOF'
import os
from ostenant import tenant, tenant_session
name, password = os.environ["NAME"], os.environ["PASSWORD"]
admin, project = tenant(name, password, "workload cluster of the deorbit end-to-end tests")
# room for many volumes: the tests create dozens, and a debris test leaves some until its cleanup
cinder = dict(service_type="volumev3", interface="public")
admin.put("/os-quota-sets/%s" % project.id, endpoint_filter=cinder, json={"quota_set": {
    "volumes": 500, "snapshots": 500, "gigabytes": 5000}})
tenant = tenant_session(name, password, project)
n = dict(service_type="network", interface="public")
nets = tenant.get("/v2.0/networks?name=%s-lb" % name, endpoint_filter=n).json()["networks"]
net = nets[0] if nets else tenant.post("/v2.0/networks", endpoint_filter=n,
    json={"network": {"name": name + "-lb"}}).json()["network"]
subs = tenant.get("/v2.0/subnets?name=%s-lb" % name, endpoint_filter=n).json()["subnets"]
sub = subs[0] if subs else tenant.post("/v2.0/subnets", endpoint_filter=n, json={"subnet": {
    "name": name + "-lb", "network_id": net["id"], "ip_version": 4, "cidr": "10.0.10.0/24"}}).json()["subnet"]
# the cluster's router (pod routes of a VitalsCluster), with an interface on the subnet
routers = tenant.get("/v2.0/routers?name=%s" % name, endpoint_filter=n).json()["routers"]
if routers:
    router = routers[0]
else:
    router = tenant.post("/v2.0/routers", endpoint_filter=n, json={"router": {"name": name}}).json()["router"]
    tenant.put("/v2.0/routers/%s/add_router_interface" % router["id"], endpoint_filter=n, json={"subnet_id": sub["id"]})
print(project.id, sub["id"], router["id"])
EOF
}

healthz() { [ "$(curl -sk -m 1 "https://127.0.0.1:$1/healthz" 2>/dev/null)" = ok ]; }

start() {
  local kbin=${KUBE_BIN_DIR:-} cbin=${CLOUD_BIN_DIR:-} kc ids project subnet router now b
  [ -n "${OS_AUTH_URL:-}" ] || die "OS_* unset: source $TESTENV_DIR/openstack/openrc"
  [ -n "$kbin" ] || kbin=$("$ROOT/hack/kube-build.sh")
  [ -n "$cbin" ] || cbin=$("$ROOT/hack/cloud-build.sh")
  for b in $PROCS; do [ -x "$cbin/$b" ] || die "no $b in $cbin"; done
  [ -f "$cbin/crds/volumesnapshots.yaml" ] || die "no VolumeSnapshot CRDs in $cbin/crds"
  mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
  for b in $PROCS; do
    if [ -f "$DIR/$b.pid" ] && alive "$(cat "$DIR/$b.pid")"; then die "$b already running (pid $(cat "$DIR/$b.pid")); run: $0 stop $DIR"; fi
  done
  rm -f "$DIR/env"
  # The apiserver and the tenant's project/network are independent: overlap them.
  KUBE_BIN_DIR=$kbin KUBE_API_PORT=$API_PORT ETCD_PORT=$ETCD_PORT ETCD_PEER_PORT=$((ETCD_PORT + 1)) \
    "$ROOT/hack/kube.sh" start "$DIR/kube" > "$DIR/kube.out" 2> "$DIR/kube.err" &
  local kpid=$!
  ids=$(tenant) || die "could not set up the project $PROJECT on the test cloud"
  read -r project subnet router <<< "$ids"
  log "project $PROJECT ($project), load-balancer subnet $subnet, router $router"
  wait $kpid || { tail -20 "$DIR/kube.err" >&2; die "workload kube-apiserver did not start; see $DIR/kube/kube-apiserver.log"; }
  kc=$DIR/kube/kubeconfig
  TOKEN=$(cut -d, -f1 "$DIR/kube/tokens.csv")
  for b in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
    kapi POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions "@$cbin/crds/$b.yaml" application/yaml \
      || die "could not create the CRD $b"
  done

  cat > "$DIR/cloud.conf" <<CONF
[Global]
auth-url = $OS_AUTH_URL
username = $PROJECT
password = $(cat "$DIR/tenant-password")
tenant-id = $project
user-domain-name = Default
region = ${OS_REGION_NAME:-RegionOne}

[LoadBalancer]
lb-provider = amphora
subnet-id = $subnet
# no floating network: Octavia's no-op network driver invents the VIP port, so no floating IP can be bound to it
internal-lb = true
cascade-delete = true

[BlockStorage]
ignore-volume-az = true
CONF
  chmod 600 "$DIR/cloud.conf"

  # kube-controller-manager: every default controller but the node lifecycle one (the Node below has no kubelet
  # and must not be tainted or evicted); no cloud provider (the OpenStack one runs on its own).
  bgproc kube-controller-manager "$cbin/kube-controller-manager" --kubeconfig="$kc" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$DIR/kcm-certs" \
    --service-account-private-key-file="$DIR/kube/sa.key" --root-ca-file="$DIR/kube/certs/apiserver.crt" \
    --use-service-account-credentials=false --cluster-name="$CLUSTER_NAME" \
    --controllers='*,-node-lifecycle-controller' --v=2
  # openstack-cloud-controller-manager: the service (LoadBalancer) controller only
  bgproc openstack-cloud-controller-manager "$cbin/openstack-cloud-controller-manager" --kubeconfig="$kc" \
    --cloud-provider=openstack --cloud-config="$DIR/cloud.conf" --controllers=service \
    --cluster-name="$CLUSTER_NAME" --concurrent-service-syncs=4 \
    --leader-elect=false --use-service-account-credentials=false \
    --bind-address=127.0.0.1 --secure-port="$OCCM_PORT" --cert-dir="$DIR/occm-certs" --v=2
  # Cinder CSI, controller service only, on a unix socket; csi-provisioner beside it
  rm -f "$DIR/csi.sock"
  bgproc cinder-csi-plugin "$cbin/cinder-csi-plugin" --endpoint="unix://$DIR/csi.sock" --cloud-config="$DIR/cloud.conf" \
    --cluster="$CLUSTER_NAME" --provide-node-service=false --with-topology=false --v=2
  wait_for cinder-csi-plugin 60 test -S "$DIR/csi.sock"
  bgproc csi-provisioner "$cbin/csi-provisioner" --kubeconfig="$kc" --csi-address="$DIR/csi.sock" \
    --leader-election=false --extra-create-metadata --timeout=60s --v=2
  bgproc csi-snapshotter "$cbin/csi-snapshotter" --kubeconfig="$kc" --csi-address="$DIR/csi.sock" \
    --leader-election=false --extra-create-metadata --timeout=60s --v=2
  bgproc snapshot-controller "$cbin/snapshot-controller" --kubeconfig="$kc" --leader-election=false --v=2
  wait_for kube-controller-manager 120 healthz "$KCM_PORT"
  wait_for openstack-cloud-controller-manager 120 healthz "$OCCM_PORT"
  wait_for csi-provisioner 120 grep -q 'Started provisioner controller' "$DIR/csi-provisioner.log"
  wait_for csi-snapshotter 120 grep -qi 'Starting CSI snapshotter' "$DIR/csi-snapshotter.log"
  wait_for snapshot-controller 120 grep -qi 'Starting snapshot controller' "$DIR/snapshot-controller.log"

  # The StorageClass of the tests, and one Node: the service controller builds no load balancer without a
  # node; its InternalIP becomes the pool member (no kubelet: the status is written here).
  kapi POST /apis/storage.k8s.io/v1/storageclasses "{\"apiVersion\":\"storage.k8s.io/v1\",\"kind\":\"StorageClass\",
    \"metadata\":{\"name\":\"$STORAGE_CLASS\"},\"provisioner\":\"cinder.csi.openstack.org\",
    \"reclaimPolicy\":\"Delete\",\"volumeBindingMode\":\"Immediate\"}" || die "could not create the StorageClass"
  kapi POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$NODE\",
    \"labels\":{\"kubernetes.io/hostname\":\"$NODE\"}}}" || die "could not create Node $NODE"
  now=$(date -u +%FT%TZ)
  kapi PATCH "/api/v1/nodes/$NODE/status" "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$NODE_IP\"}],
    \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"NoKubelet\",\"message\":\"written by hack/workload.sh\",
    \"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" application/merge-patch+json \
    || die "could not write the status of Node $NODE"
  kapi POST /apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses "{\"apiVersion\":\"snapshot.storage.k8s.io/v1\",
    \"kind\":\"VolumeSnapshotClass\",\"metadata\":{\"name\":\"$SNAPSHOT_CLASS\"},\"driver\":\"cinder.csi.openstack.org\",
    \"deletionPolicy\":\"Delete\"}" || die "could not create the VolumeSnapshotClass"
  log "StorageClass $STORAGE_CLASS, VolumeSnapshotClass $SNAPSHOT_CLASS (cinder.csi.openstack.org) and Node $NODE ready"

  {
    echo "export VITALS_TEST_WORKLOAD_KUBECONFIG=$kc"
    echo "export VITALS_TEST_WORKLOAD_CLUSTER_NAME=$CLUSTER_NAME"
    echo "export VITALS_TEST_WORKLOAD_STORAGE_CLASS=$STORAGE_CLASS"
    echo "export VITALS_TEST_WORKLOAD_SNAPSHOT_CLASS=$SNAPSHOT_CLASS"
    echo "export VITALS_TEST_WORKLOAD_SUBNET_ID=$subnet"
    echo "export VITALS_TEST_WORKLOAD_ROUTER_ID=$router"
    echo "export VITALS_TEST_WORKLOAD_NODE_IP=$NODE_IP"
    echo "export VITALS_TEST_WORKLOAD_OS_PROJECT_ID=$project"
    echo "export VITALS_TEST_WORKLOAD_OS_PROJECT_NAME=$PROJECT"
    echo "export VITALS_TEST_WORKLOAD_OS_USERNAME=$PROJECT"
    echo "export VITALS_TEST_WORKLOAD_OS_PASSWORD=$(cat "$DIR/tenant-password")"
  } > "$DIR/env.tmp"
  mv "$DIR/env.tmp" "$DIR/env"
  echo "$DIR/env"
}

case $CMD in
  start) step "start the workload cluster ($DIR)" start ;;
  stop) step "stop the workload cluster ($DIR)" stop ;;
  check) check ;;
  *) echo "usage: $0 start|stop|check [STATE_DIR]" >&2; exit 2 ;;
esac
