#!/usr/bin/env bash
# A Cluster API management cluster on the real test cloud, for the Cluster API end-to-end tests: its own etcd +
# kube-apiserver (hack/kube.sh on other ports: never the shared kube-apiserver, whose other test packages must not
# see Cluster API's CRDs and webhooks), the Cluster API core manager and the OpenStack provider (CAPO), both built
# by hack/capi-build.sh, with their CRDs and webhook configurations from the module sources they were built from.
# The managers serve their conversion, defaulting and validation webhooks on 127.0.0.1 with a serving certificate
# made here (its own CA): the CRDs' conversion webhooks and the webhook configurations call them by URL with that
# CA as caBundle (what cert-manager and kustomize do in a real installation).
# CAPO acts with the credentials of a project of the harness, "vitals-capi" (user of the same name with the member
# and load-balancer_member roles, password kept in the state directory), never the admin's; its clouds.yaml is
# written beside (the tests put it into the Cluster's identity Secret). The admin makes one external network for
# it, vitals-capi-external (flat, physnet "external", 203.0.113.0/24): CAPO gives a cluster a router only with an
# external network.
# Usage: hack/capi.sh start [STATE_DIR]   prints the env file to source on stdout (progress on stderr)
#        hack/capi.sh stop  [STATE_DIR]   stops exactly the processes start recorded (by PID)
#        hack/capi.sh check [STATE_DIR]   exit 0 when every process runs and answers
# STATE_DIR defaults to $TESTENV_DIR/capi. Needs the full OpenStack tier (Keystone, Neutron, Octavia) with admin
# credentials in OS_* (source $TESTENV_DIR/openstack/openrc).
# Env: KUBE_BIN_DIR (default: hack/kube-build.sh), CAPI_BIN_DIR (default: hack/capi-build.sh), CAPI_API_PORT
#      (29443), CAPI_ETCD_PORT (25379, and +1 for peers), CAPI_PORT_BASE (29250: the core manager's webhooks +1,
#      health +2, metrics +3; CAPO's webhooks +4, health +5, metrics +6), CAPI_PROJECT (vitals-capi).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CMD=${1:-}; DIR=${2:-$TESTENV_DIR/capi}
API_PORT=${CAPI_API_PORT:-29443}
ETCD_PORT=${CAPI_ETCD_PORT:-25379}
BASE=${CAPI_PORT_BASE:-29250}
CAPI_WH=$((BASE + 1)) CAPI_HEALTH=$((BASE + 2)) CAPI_METRICS=$((BASE + 3))
CAPO_WH=$((BASE + 4)) CAPO_HEALTH=$((BASE + 5)) CAPO_METRICS=$((BASE + 6))
PROJECT=${CAPI_PROJECT:-vitals-capi}
EXTNET=vitals-capi-external EXTCIDR=203.0.113.0/24
PY=/usr/bin/python3 # Debian's interpreter, the one keystoneauth1 is installed for
PROCS="capo-controller cluster-api-controller"

kubeenv() { KUBE_API_PORT=$API_PORT ETCD_PORT=$ETCD_PORT ETCD_PEER_PORT=$((ETCD_PORT + 1)) "$@"; }

stop() {
  local p procs=()
  for p in $PROCS; do [ -f "$DIR/$p.pid" ] && procs+=("$p=$(cat "$DIR/$p.pid")"); done
  [ ${#procs[@]} -eq 0 ] || stop_pids 10 "${procs[@]}"
  for p in $PROCS; do rm -f "$DIR/$p.pid"; done
  kubeenv "$ROOT/hack/kube.sh" stop "$DIR/kube" >&2
  rm -f "$DIR/env"
}

healthy() { [ "$(curl -s -m 2 "http://127.0.0.1:$1/readyz" 2>/dev/null)" = ok ]; }

check() {
  local p
  [ -f "$DIR/env" ] || return 1
  for p in $PROCS; do [ -f "$DIR/$p.pid" ] && alive "$(cat "$DIR/$p.pid")" || return 1; done
  healthy "$CAPI_HEALTH" && healthy "$CAPO_HEALTH" || return 1
  [ "$(curl -sk -m 3 -H "Authorization: Bearer $(cut -d, -f1 "$DIR/kube/tokens.csv")" \
    "https://127.0.0.1:$API_PORT/readyz" 2>/dev/null)" = ok ]
}

# tenant: CAPO's project, its member user (password kept in DIR across restarts) and the external network, on the
# real Keystone and Neutron. Prints "PROJECT_ID EXTERNAL_NETWORK_ID".
tenant() {
  [ -f "$DIR/tenant-password" ] || head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DIR/tenant-password"
  PASSWORD=$(cat "$DIR/tenant-password") NAME=$PROJECT EXTNET=$EXTNET EXTCIDR=$EXTCIDR PYTHONPATH=$ROOT/hack/py $PY - <<'EOF'
import os
from ostenant import tenant
admin, project = tenant(os.environ["NAME"], os.environ["PASSWORD"],
    "Cluster API end-to-end tests: the project CAPO acts in")
n = dict(service_type="network", interface="public")
ext = os.environ["EXTNET"]
nets = admin.get("/v2.0/networks?name=%s" % ext, endpoint_filter=n).json()["networks"]
net = nets[0] if nets else admin.post("/v2.0/networks", endpoint_filter=n, json={"network": {
    "name": ext, "router:external": True, "provider:network_type": "flat",
    "provider:physical_network": "external"}}).json()["network"]
if not admin.get("/v2.0/subnets?network_id=%s" % net["id"], endpoint_filter=n).json()["subnets"]:
    admin.post("/v2.0/subnets", endpoint_filter=n, json={"subnet": {"name": ext, "network_id": net["id"],
        "ip_version": 4, "cidr": os.environ["EXTCIDR"], "enable_dhcp": False}})
print(project.id, net["id"])
EOF
}

# certs: a CA and the managers' webhook serving certificate for 127.0.0.1, kept in DIR across restarts.
certs() {
  local d=$DIR/certs
  [ -f "$d/tls.crt" ] && return 0
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vitals-capi-webhook-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$d/ext.cnf"
  openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 \
    -extfile "$d/ext.cnf" -out "$d/tls.crt" 2>/dev/null
  rm -f "$d/tls.csr" "$d/ext.cnf"
}

# apply: the CRDs and webhook configurations of both managers, by server-side apply. Each CRD that the module's
# kustomization patches for conversion gets a conversion webhook by URL; the contract labels of the kustomization
# (CAPO: cluster.x-k8s.io/v1beta1) go on its CRDs; the webhook configurations call the manager by URL. ORC's Image
# CRD (crds/orc) goes in alone: CAPO watches Images, and no ORC controller runs. So do the kubeadm control plane's
# CRDs (crds/kcp), with their contract labels: the ClusterClass of a test names a KubeadmControlPlaneTemplate, and no
# control plane provider runs.
apply() {
  API=https://127.0.0.1:$API_PORT TOKEN=$(cut -d, -f1 "$DIR/kube/tokens.csv") CA=$DIR/certs/ca.crt \
    SRC="capi=$1/crds/capi=$CAPI_WH capo=$1/crds/capo=$CAPO_WH orc=$1/crds/orc= kcp=$1/crds/kcp=" $PY - <<'EOF'
import base64, glob, json, os, re, requests, urllib3, yaml
api, ca = os.environ["API"], base64.b64encode(open(os.environ["CA"], "rb").read()).decode()
s = requests.Session()
s.headers.update({"Authorization": "Bearer " + os.environ["TOKEN"]})
# the apiserver's own self-signed serving certificate on 127.0.0.1 is not verified, as curl -k in workload.sh
# (OpenSSL 3 refuses its chain as a trust anchor); verify=False on each request: a session's is overridden by
# REQUESTS_CA_BUNDLE
urllib3.disable_warnings()

def apply(path, obj):
    r = s.patch(api + path + "/" + obj["metadata"]["name"], params={"fieldManager": "vitals-capi-harness",
        "force": "true"}, data=json.dumps(obj), headers={"Content-Type": "application/apply-patch+yaml"}, timeout=60, verify=False)
    if r.status_code >= 300:
        raise SystemExit("apply %s %s: HTTP %d: %s" % (obj["kind"], obj["metadata"]["name"], r.status_code, r.text[:300]))

for entry in os.environ["SRC"].split():
    name, src, port = entry.split("=")
    url = "https://127.0.0.1:%s" % port
    kust = {}
    if os.path.exists(src + "/kustomization.yaml.txt"):
        kust = yaml.safe_load(open(src + "/kustomization.yaml.txt"))
    labels = {}
    for l in kust.get("labels") or []:
        labels.update(l.get("pairs") or {})
    convert = set()
    for p in (kust.get("patches") if port else None) or []:  # no manager, no conversion webhook: the stored version
        m = re.match(r"patches/webhook_in_(\w+)\.yaml$", p.get("path", "") if isinstance(p, dict) else p)
        if m:
            convert.add(m.group(1))
    n = 0
    for f in sorted(glob.glob(src + "/*.yaml")):
        if f.endswith("/webhook.yaml"):
            continue
        crd = yaml.safe_load(open(f))
        crd["metadata"].setdefault("labels", {}).update(labels)
        if crd["spec"]["names"]["plural"] in convert:
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1", "v1beta1"],
                "clientConfig": {"url": url + "/convert", "caBundle": ca}}}
        apply("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        n += 1
    hooks = 0
    for wh in yaml.safe_load_all(open(src + "/webhook.yaml")) if os.path.exists(src + "/webhook.yaml") else []:
        if not wh:
            continue
        wh["metadata"]["name"] = name + "-" + wh["metadata"]["name"]
        for w in wh["webhooks"]:
            path = w["clientConfig"].pop("service")["path"]
            w["clientConfig"] = {"url": url + path, "caBundle": ca}
            hooks += 1
        plural = "mutatingwebhookconfigurations" if wh["kind"] == "MutatingWebhookConfiguration" else "validatingwebhookconfigurations"
        apply("/apis/admissionregistration.k8s.io/v1/" + plural, wh)
    print("%s: %d CRDs (%d with conversion webhooks, labels %s), %d webhooks%s" % (name, n, len(convert), labels, hooks,
        " -> " + url if hooks else ""))
EOF
}


start() {
  local kbin=${KUBE_BIN_DIR:-} cbin=${CAPI_BIN_DIR:-} kc ids project extnet b
  [ -n "${OS_AUTH_URL:-}" ] || die "OS_* unset: source $TESTENV_DIR/openstack/openrc"
  [ -n "$kbin" ] || kbin=$("$ROOT/hack/kube-build.sh")
  [ -n "$cbin" ] || cbin=$("$ROOT/hack/capi-build.sh")
  for b in $PROCS; do [ -x "$cbin/$b" ] || die "no $b in $cbin"; done
  mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
  for b in $PROCS; do
    if [ -f "$DIR/$b.pid" ] && alive "$(cat "$DIR/$b.pid")"; then die "$b already running (pid $(cat "$DIR/$b.pid")); run: $0 stop $DIR"; fi
  done
  rm -f "$DIR/env"
  # The apiserver and the tenant's project are independent: overlap them.
  KUBE_BIN_DIR=$kbin kubeenv "$ROOT/hack/kube.sh" start "$DIR/kube" > "$DIR/kube.out" 2> "$DIR/kube.err" &
  local kpid=$!
  ids=$(tenant) || die "could not set up the project $PROJECT on the test cloud"
  read -r project extnet <<< "$ids"
  log "project $PROJECT ($project), external network $EXTNET ($extnet)"
  wait $kpid || { tail -20 "$DIR/kube.err" >&2; die "management kube-apiserver did not start; see $DIR/kube/kube-apiserver.log"; }
  kc=$DIR/kube/kubeconfig
  certs
  apply "$cbin" >&2 || die "could not apply the CRDs and webhooks of $cbin/crds"

  # --diagnostics-address with --insecure-diagnostics: metrics over plain HTTP on 127.0.0.1 (no RBAC proxy);
  # the webhook servers listen on every address of the machine (the managers have no host flag), port fixed.
  bgproc cluster-api-controller env KUBECONFIG="$kc" "$cbin/cluster-api-controller" --leader-elect=false \
    --webhook-port="$CAPI_WH" --webhook-cert-dir="$DIR/certs" --health-addr="127.0.0.1:$CAPI_HEALTH" \
    --diagnostics-address="127.0.0.1:$CAPI_METRICS" --insecure-diagnostics \
    --feature-gates=ClusterTopology=true,RuntimeSDK=true --v=2
  bgproc capo-controller env KUBECONFIG="$kc" "$cbin/capo-controller" --leader-elect=false \
    --webhook-port="$CAPO_WH" --webhook-cert-dir="$DIR/certs" --health-addr="127.0.0.1:$CAPO_HEALTH" \
    --diagnostics-address="127.0.0.1:$CAPO_METRICS" --insecure-diagnostics --v=2
  wait_for cluster-api-controller 180 healthy "$CAPI_HEALTH"
  wait_for capo-controller 180 healthy "$CAPO_HEALTH"

  cat > "$DIR/clouds.yaml.tmp" <<CLOUDS
clouds:
  openstack:
    auth:
      auth_url: $OS_AUTH_URL
      username: $PROJECT
      password: $(cat "$DIR/tenant-password")
      project_id: $project
      user_domain_name: Default
    region_name: ${OS_REGION_NAME:-RegionOne}
    interface: public
    identity_api_version: 3
CLOUDS
  chmod 600 "$DIR/clouds.yaml.tmp"; mv "$DIR/clouds.yaml.tmp" "$DIR/clouds.yaml"
  {
    echo "export VITALS_TEST_CAPI_KUBECONFIG=$kc"
    echo "export VITALS_TEST_CAPI_CLOUDS_YAML=$DIR/clouds.yaml"
    echo "export VITALS_TEST_CAPI_EXTERNAL_NETWORK_ID=$extnet"
    echo "export VITALS_TEST_CAPI_OS_PROJECT_ID=$project"
    echo "export VITALS_TEST_CAPI_OS_PROJECT_NAME=$PROJECT"
    echo "export VITALS_TEST_CAPI_OS_USERNAME=$PROJECT"
    echo "export VITALS_TEST_CAPI_OS_PASSWORD=$(cat "$DIR/tenant-password")"
  } > "$DIR/env.tmp"
  mv "$DIR/env.tmp" "$DIR/env"
  echo "$DIR/env"
}

case $CMD in
  start) step "start the Cluster API management cluster ($DIR)" start ;;
  stop) step "stop the Cluster API management cluster ($DIR)" stop ;;
  check) check ;;
  *) echo "usage: $0 start|stop|check [STATE_DIR]" >&2; exit 2 ;;
esac
