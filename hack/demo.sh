#!/usr/bin/env bash
# The demo: Vitals' operator collecting the orphaned routes of a cluster's router.
#
#   make demo                 # simulated OpenStack (default)
#   make demo DEMO_CLOUD=real # the real local OpenStack of `make testenv-up` (Keystone + Neutron)
#
# It starts, on 127.0.0.1 only:
#   1. a real kube-apiserver + etcd (hack/kube.sh; built from Go modules the first time: ~8 min cold on 2 cores,
#      ~10 s warm),
#   2. a cloud: `vitals-cloudsim --demo` (a router with 5 live, 3 orphaned and 2 foreign routes), or with
#      DEMO_CLOUD=real a fresh router on the real Neutron carrying the same kinds of routes,
#   3. `vitals operator` with its health server,
# then creates a VitalsCluster resource for that router, shows the probes and the routes being collected; with the
# simulator it then plays the kubelets of four of the cluster's five servers and shows a node repair (a Node NotReady
# past its dwell cordoned, drained and soft-rebooted, uncordoned once Ready again; the server that never registered
# rebooted), runs `vitals doctor` on it (the quota checks included), sets its deletionPolicy to Deorbit, deletes it, shows
# deorbit holding the deletion that nothing confirms (the interlock), confirms it, and shows deorbit clearing the cluster's volumes,
# load balancers and routes from the cloud before the finalizer goes; and it stops everything it started (also on Ctrl-C). Nothing outside _out/demo/ is written, besides the Go build cache.
# Env: DEMO_CLOUD=sim|real, DEMO_KEEP=1 (leave the services running and print how to use them),
#      DEMO_INTERVAL (route collector interval, default 5s).
set -euo pipefail
LOG_PREFIX=demo
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

CLOUD=${DEMO_CLOUD:-sim}
INTERVAL=${DEMO_INTERVAL:-5s}
DIR=$ROOT/_out/demo
SIM_PORT=${DEMO_SIM_PORT:-28780}
HEALTH_PORT=${DEMO_HEALTH_PORT:-28082}
METRICS_PORT=${DEMO_METRICS_PORT:-28080}
export KUBE_API_PORT=${DEMO_KUBE_API_PORT:-36443} ETCD_PORT=${DEMO_ETCD_PORT:-32379} ETCD_PEER_PORT=${DEMO_ETCD_PEER_PORT:-32380}
PIDS=()

cleanup() {
  local rc=$?
  if [ "${DEMO_KEEP:-0}" = 1 ] && [ $rc -eq 0 ]; then
    log "DEMO_KEEP=1: leaving everything running. Stop with: kill ${PIDS[*]//*=/}; hack/kube.sh stop $DIR/kube"
    return
  fi
  log "stopping what the demo started"
  [ ${#PIDS[@]} -gt 0 ] && stop_pids 10 "${PIDS[@]}" || true
  if [ "$CLOUD" = real ] && [ -n "${REAL_CLEANUP:-}" ]; then eval "$REAL_CLEANUP" >/dev/null 2>&1 || true; fi
  [ -f "$DIR/kube/kube-apiserver.pid" ] && hack/kube.sh stop "$DIR/kube" || true
  [ $rc -eq 0 ] && log "demo finished" || log "demo FAILED (exit $rc); logs in $DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is missing: $2"; }
need go "install Go 1.26 (https://go.dev/dl/)"
need curl "apt-get install -y curl"
need openssl "apt-get install -y openssl"
if ! command -v kubectl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "install kubectl (Debian package)" apt-get install -y -qq kubectl >/dev/null
  else
    die "kubectl is missing: apt-get install kubectl"
  fi
fi
rm -rf "$DIR"; mkdir -p "$DIR"

step "build bin/vitals" make -s vitals
VITALS=$ROOT/bin/vitals
if [ "$CLOUD" = sim ]; then
  step "build bin/vitals-cloudsim" make -s cloudsim
fi

# --- 1. Kubernetes -------------------------------------------------------------------------------------------
log "kube-apiserver + etcd: the first run builds them from Go modules (~8 min on 2 cores; cached afterwards)"
KUBECONFIG=$(hack/kube.sh start "$DIR/kube")
export KUBECONFIG
log "kube-apiserver ready; KUBECONFIG=$KUBECONFIG"
step "install the VitalsCluster CRD" kubectl apply --server-side -f deploy/crds/ >/dev/null
kubectl wait --for=condition=Established crd/vitalsclusters.vitals.vitalsproject.io --timeout=60s >/dev/null

# --- 2. The cloud --------------------------------------------------------------------------------------------
if [ "$CLOUD" = sim ]; then
  log "starting the OpenStack simulator (vitals-cloudsim --demo) on 127.0.0.1:$SIM_PORT"
  "$ROOT/bin/vitals-cloudsim" --listen "127.0.0.1:$SIM_PORT" --demo --seed 42 --log-level warn >"$DIR/cloudsim.env" 2>"$DIR/cloudsim.log" &
  PIDS+=("cloudsim=$!")
  wait_http "simulator Keystone" "http://127.0.0.1:$SIM_PORT/v3" 30
  for i in $(seq 1 40); do grep -q OS_AUTH_URL "$DIR/cloudsim.env" && break; sleep 0.25; done
  # shellcheck disable=SC1091
  . "$DIR/cloudsim.env"
  # The demo cluster lives in project "demo", user demo/demo.
  export OS_USERNAME=demo OS_PASSWORD=demo OS_PROJECT_NAME=demo
  ROUTER=demo-router
  PODCIDR=198.19.0.0/16
else
  [ -f "$TESTENV_DIR/env" ] || die "DEMO_CLOUD=real needs the local OpenStack: run make testenv-up first"
  # shellcheck disable=SC1091
  . "$TESTENV_DIR/env"
  need openstack "apt-get install -y python3-openstackclient"
  S=vitals-demo-$$
  log "creating network, subnet, router and two node ports on the real Neutron ($S)"
  openstack network create "$S" -f value -c id >/dev/null
  openstack subnet create "$S" --network "$S" --subnet-range 10.181.0.0/24 -f value -c id >/dev/null
  openstack router create "$S" -f value -c id >/dev/null
  openstack router add subnet "$S" "$S"
  openstack port create "$S-node-0" --network "$S" --fixed-ip subnet="$S",ip-address=10.181.0.10 >/dev/null
  openstack port create "$S-node-1" --network "$S" --fixed-ip subnet="$S",ip-address=10.181.0.11 >/dev/null
  openstack router set "$S" --route destination=198.19.0.0/24,gateway=10.181.0.10 --route destination=198.19.1.0/24,gateway=10.181.0.11 \
    --route destination=198.19.2.0/24,gateway=10.181.0.12 --route destination=198.19.3.0/24,gateway=10.181.0.13 \
    --route destination=10.250.0.0/24,gateway=10.181.0.14
  REAL_CLEANUP="openstack router unset --all-route $S; openstack router remove subnet $S $S; openstack router delete $S; openstack port delete $S-node-0 $S-node-1; openstack subnet delete $S; openstack network delete $S"
  ROUTER=$S
  PODCIDR=198.19.0.0/16
fi

log "the router before the operator (vitals routes audit: the same analysis, changing nothing):"
"$VITALS" routes audit --router "$ROUTER" --pod-cidr "$PODCIDR" --sources ports | tee "$DIR/audit-before.txt" | sed 's/^/    /'
ROUTER_ID=$(sed -n 's/^router \([^ ]*\) .*/\1/p' "$DIR/audit-before.txt")

# --- 3. The operator -----------------------------------------------------------------------------------------
log "starting vitals operator (health on :$HEALTH_PORT, metrics on :$METRICS_PORT)"
"$VITALS" operator --kubeconfig "$KUBECONFIG" --health-bind-address 127.0.0.1 --health-port "$HEALTH_PORT" \
  --metrics-bind-address "127.0.0.1:$METRICS_PORT" --leader-elect --leader-election-namespace default \
  --check-interval 2s --check-timeout 2s --trust-namespace default --allow-loopback-workload >"$DIR/operator.log" 2>&1 &
PIDS+=("operator=$!")
wait_http "operator health server" "http://127.0.0.1:$HEALTH_PORT/livez" 60 "200 503"
for i in $(seq 1 60); do
  code=$(curl -s -o "$DIR/readyz.txt" -w '%{http_code}' "http://127.0.0.1:$HEALTH_PORT/readyz?verbose" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
log "probe /readyz?verbose -> $code (Kubernetes list+watch, informers synced, Keystone token, Neutron answers):"
sed 's/^/    /' "$DIR/readyz.txt"
log "probe /livez?verbose -> $(curl -s -o "$DIR/livez.txt" -w '%{http_code}' "http://127.0.0.1:$HEALTH_PORT/livez?verbose") (controller loop, informer, leader Lease):"
sed 's/^/    /' "$DIR/livez.txt"

# --- 4. The VitalsCluster---------------------------------------------------------------------------------------
log "creating VitalsCluster 'demo' for router $ROUTER_ID (pod CIDR $PODCIDR, interval $INTERVAL, protected: 198.19.7.0/24)"
kubectl apply -f - >/dev/null <<YAML
apiVersion: vitals.vitalsproject.io/v1alpha1
kind: VitalsCluster
metadata:
  name: demo
  namespace: default
  # the demo's passes are seconds apart: a proof age below the one-minute floor, which only this allows
  annotations: {vitals.vitalsproject.io/unsafe-allow-short-proof-age: "true"}
spec:
  openstack: {routerID: "$ROUTER_ID"}
  podCIDRs: ["$PODCIDR"]
  remediation:
    minProofAge: 10s   # the default is 5m, the floor 1m
  controllers:
    routegc:
      interval: $INTERVAL
      addressSources: [ports]
      protectedRoutes: [{destination: 198.19.7.0/24}]   # orphaned, but protected: it stays
YAML
log "an orphaned route is removed only when two passes at least $INTERVAL apart saw it orphaned, and first seen 10s ago (the remediation policy's minProofAge); watching ..."
removed_before=-1
for i in $(seq 1 120); do
  removed=$(kubectl get vitalscluster demo -o jsonpath='{.status.routegc.removedTotal}' 2>/dev/null || true)
  suspects=$(kubectl get vitalscluster demo -o jsonpath='{range .status.routegc.suspects[*]}{.destination} {end}' 2>/dev/null || true)
  healthy=$(kubectl get vitalscluster demo -o jsonpath='{.status.conditions[?(@.type=="RoutesHealthy")].reason}' 2>/dev/null || true)
  if [ "${removed:-0}" != "$removed_before" ] || [ $((i % 10)) = 0 ]; then
    log "  pass: RoutesHealthy=${healthy:-pending} removed=${removed:-0} awaiting proof: ${suspects:-none}"
    removed_before=${removed:-0}
  fi
  [ "$healthy" = NoOrphanedRoutes ] && break
  sleep 0.5
done
grep 'msg="route removed"' "$DIR/operator.log" | sed -n 's/.*msg="route removed".* destination=\([^ ]*\) nexthop=\([^ ]*\) method=\([^ ]*\).*/    operator log: route removed \1 via \2 (\3)/p' | head -20 || true
log "the VitalsCluster (kubectl get vitalsclusters -o wide):"
kubectl get vitalsclusters.vitals.vitalsproject.io -o wide | sed 's/^/    /'
log "the route collector's last actions (status.routegc.actions):"
kubectl get vitalscluster demo -o jsonpath='{range .status.routegc.actions[*]}{.action}{"\t"}{.reason}{"\t"}{.object}{"\n"}{end}' | sed 's/^/    /'
log "events (WorkloadLocalNotAllowed and flight's PassAborted: the cluster names no workload kubeconfig yet, so flight waits; the route collector needs only the cloud):"
events() { # the Events of VitalsCluster demo, oldest first: name, reason, note
  kubectl get events.events.k8s.io -n default --field-selector regarding.name=demo --sort-by=.metadata.creationTimestamp \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.reason}{"\t"}{.note}{"\n"}{end}' 2>/dev/null || true
}
events | awk -F'\t' '{ printf "    %-24s %s\n", $2, $3 }' | head -20
log "metrics (vitals_routegc_*):"
curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^vitals_routegc_\(routes_removed_total\|routes_skipped_total\|passes_total\)' | sed 's/^/    /' || true
log "the router after (vitals routes audit):"
"$VITALS" routes audit --router "$ROUTER_ID" --pod-cidr "$PODCIDR" --sources ports --protect 198.19.7.0/24 | sed 's/^/    /'
[ "$healthy" = NoOrphanedRoutes ] || die "the orphaned routes were not all collected; see $DIR/operator.log"

# --- 5. Node repair (simulator: its demo project holds the cluster's five servers) ------------------------------
if [ "$CLOUD" = sim ]; then
  # The workload cluster is the demo's kube-apiserver itself; a tenant's kubeconfig carries everything inline.
  CA=$(base64 -w0 <"$DIR/kube/certs/apiserver.crt")
  sed "s|certificate-authority: .*|certificate-authority-data: $CA|" "$KUBECONFIG" >"$DIR/workload.kubeconfig"
  kubectl create secret generic demo-kubeconfig --from-file=kubeconfig="$DIR/workload.kubeconfig" >/dev/null
  # The demo plays the kubelets: a Node for four of the five servers (the fifth never registers), each Ready.
  read -r -a SERVERS <<<"$DEMO_SERVERS"
  kubelet_says() { # NODE STATUS REASON: the Node's Ready condition as its kubelet would write it
    local now; now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    kubectl patch node "$1" --subresource=status --type merge -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"$2\",\"reason\":\"$3\",\"message\":\"demo kubelet\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
  }
  for i in 0 1 2 3; do
    id=${SERVERS[$i]%%=*} name=${SERVERS[$i]#*=}
    kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: $name, labels: {vitals-demo/pool: pool-$i}}
spec: {providerID: "openstack:///$id"}
YAML
    kubelet_says "$name" True KubeletReady
  done
  SICK=${SERVERS[1]#*=} NEVER=${SERVERS[4]#*=}
  log "node repair: the workload cluster (this kube-apiserver) has a Ready Node for four of the five servers; $NEVER never registered"
  kubectl patch vitalscluster demo --type merge -p "$(cat <<JSON
{"spec":{"kubeconfigSecretRef":{"name":"demo-kubeconfig"},"controllers":{"flight":{"interval":"5s",
 "servers":{"metadata":{"kubernikus:cluster":"demo"}},
 "repairs":{"nodes":{"unhealthyConditions":[{"type":"Ready","status":"False","timeout":"15s"},{"type":"Ready","status":"Unknown","timeout":"15s"}],
  "nodeStartupTimeout":"1m","softRebootTimeout":"1m","nodePoolLabel":"vitals-demo/pool"}}}}}}
JSON
)" >/dev/null
  log "  spec: a node is unhealthy after Ready False or Unknown for 15s, a server unregistered 1m after its creation; one step at a time per pool (vitals-demo/pool)"
  kubelet_says "$SICK" False KubeletNotReady
  events | cut -f1 >"$DIR/events-nodes.txt"
  log "  $SICK: its kubelet reports NotReady; flight waits out the 15s dwell, then cordons, drains (the Eviction API) and soft-reboots it"
  escalation() { kubectl get vitalscluster demo -o jsonpath="{range .status.flight.escalations[?(@.node==\"$1\")]}{.step}/{.phase}{end}" 2>/dev/null || true; }
  cordoned() { local v; v=$(kubectl get node "$1" -o jsonpath='{.spec.unschedulable}'); echo "${v:-false}"; }
  unregistered() { kubectl get vitalscluster demo -o jsonpath="{range .status.flight.escalations[?(@.reason==\"NeverRegistered\")]}{.step}/{.phase}{end}" 2>/dev/null || true; }
  last="" lastn="" rebooted=""
  for i in $(seq 1 180); do
    e=$(escalation "$SICK") n=$(unregistered)
    if [ "$e" != "$last" ]; then
      if [ -n "$rebooted" ] && [ -z "$e" ]; then log "  $SICK: Ready again, the escalation closed; cordoned: $(cordoned "$SICK")"
      else log "  $SICK: escalation ${e:-none yet}; cordoned: $(cordoned "$SICK")"; fi
      last=$e
    fi
    [ "$n" != "$lastn" ] && log "  $NEVER (never registered): escalation ${n:-none yet}" && lastn=$n
    if [ -z "$rebooted" ] && [[ "$e" == SoftReboot/* ]]; then
      rebooted=1
      log "  $SICK: soft-rebooted; its kubelet comes back and reports Ready: flight uncordons it"
      kubelet_says "$SICK" True KubeletReady
    fi
    if [ -n "$rebooted" ] && [ -z "$e" ] && [ "$(kubectl get node "$SICK" -o jsonpath='{.spec.unschedulable}')" != true ] && [[ "$n" == SoftReboot/* || "$n" == HardReboot/* ]]; then break; fi
    sleep 0.5
  done
  [ -n "$rebooted" ] || die "flight did not repair $SICK; see $DIR/operator.log"
  log "events of the node repair:"
  events | grep -v -F -f "$DIR/events-nodes.txt" | awk -F'\t' '{ printf "    %-24s %s\n", $2, $3 }' | cut -c1-220 | tail -14 || true
  log "metrics (vitals_remediation_actions_total of flight):"
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^vitals_remediation_actions_total{.*controller="flight"' | sed 's/^/    /' || true
fi

# --- 6. Deorbit (simulator: its demo project holds the cluster's Cinder CSI volumes and load balancers) --------
if [ "$CLOUD" = sim ]; then
  log "what deorbit would delete in the cloud for cluster 'demo' (vitals deorbit --dry-run: the same engine, deleting nothing):"
  "$VITALS" deorbit --cluster-name demo --router "$ROUTER_ID" --pod-cidr "$PODCIDR" --protect 198.19.7.0/24 --dry-run 2>&1 | sed 's/^/    /'
  # deletionPolicy Deorbit: deleting the VitalsCluster may tear the cluster down (the default, Orphan, deletes nothing)
  kubectl patch vitalscluster demo --type merge -p '{"spec":{"deletionPolicy":"Deorbit"}}' >/dev/null
  for i in $(seq 1 60); do
    [ "$(kubectl get vitalscluster demo -o jsonpath='{.status.conditions[?(@.type=="WorkloadReachable")].status}')" = True ] && break
    sleep 0.5
  done
  log "vitals doctor: the operator's own checks of the cluster and its cloud, the project's quotas included (changes nothing):"
  rc=0
  "$VITALS" doctor demo -n default --trust-namespace default --allow-loopback-workload >"$DIR/doctor.txt" 2>&1 || rc=$?
  sed 's/^/    /' "$DIR/doctor.txt"
  [ $rc = 0 ] || die "vitals doctor found a failed check (exit $rc)"
  log "deleting VitalsCluster 'demo' (deletionPolicy Deorbit): nothing proves the cluster itself going yet (no Cluster API owner being deleted, no confirmation), so deorbit holds the finalizer and deletes nothing:"
  events | cut -f1 >"$DIR/events-before.txt"
  kubectl delete vitalscluster demo --wait=false >/dev/null
  reason=""
  for i in $(seq 1 60); do
    reason=$(kubectl get vitalscluster demo -o jsonpath='{.status.conditions[?(@.type=="CleanedUp")].reason}' 2>/dev/null || true)
    [ "$reason" = NotConfirmed ] && break
    sleep 0.5
  done
  [ "$reason" = NotConfirmed ] || die "deorbit did not hold the unconfirmed deletion; see $DIR/operator.log"
  kubectl get vitalscluster demo -o jsonpath='{.status.conditions[?(@.type=="CleanedUp")].message}' | fold -s -w 110 | sed 's/^/    CleanedUp=False NotConfirmed: /'
  echo >&2
  UID_=$(kubectl get vitalscluster demo -o jsonpath='{.metadata.uid}')
  log "confirming the teardown for this VitalsCluster (its uid $UID_): deorbit holds its finalizer until the cloud confirms the cluster's resources are gone"
  kubectl annotate vitalscluster demo "vitals.vitalsproject.io/confirm-deorbit=$UID_" >/dev/null
  last=""
  for i in $(seq 1 240); do
    if [ -z "$(kubectl get vitalscluster demo --ignore-not-found -o name)" ]; then phase=gone
    else phase=$(kubectl get vitalscluster demo -o jsonpath='{.status.deorbit.phase}' 2>/dev/null || true); fi
    [ "$phase" != "$last" ] && log "  deorbit phase: ${phase:-pending}" && last=$phase
    [ "$phase" = gone ] && break
    sleep 0.5
  done
  [ "$phase" = gone ] || die "deorbit did not finish; see $DIR/operator.log"
  log "events of the deletion:"
  events | grep -v -F -f "$DIR/events-before.txt" | awk -F'\t' '{ printf "    %-24s %s\n", $2, $3 }' | tail -14 || true
  log "metrics (vitals_deorbit_deletes_total):"
  curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep '^vitals_deorbit_deletes_total' | sed 's/^/    /' || true
  log "the cloud after (vitals deorbit --dry-run again: nothing of the cluster is left):"
  "$VITALS" deorbit --cluster-name demo --router "$ROUTER_ID" --pod-cidr "$PODCIDR" --protect 198.19.7.0/24 --dry-run 2>&1 | sed 's/^/    /'
fi
