#!/usr/bin/env bash
# A small Kubernetes cluster with real nodes, for the tests that need pods to run: its own etcd + kube-apiserver
# (hack/kube.sh on other ports and an address of its own), kube-controller-manager (node lifecycle with a 20 s
# grace, disruption/PodDisruptionBudgets, DaemonSets, ...) and kube-scheduler on the host, and NODE_COUNT nodes,
# each in a network + mount namespace of its own: containerd (Debian's 1.6) with runc, Debian's CNI plugins
# (bridge + host-local, portmap), kubelet and kube-proxy (iptables). The sandbox (pause) image is built here
# (internal/tools/pause, FROM scratch with internal/tools/ociimage) and imported with ctr: nothing is pulled.
#
# Network: a bridge in a namespace of its own (the "switch") joins the host (ADDR_BASE.254, where the API server
# listens: tests on the host reach it there) and node i (ADDR_BASE.i, its InternalIP). Node i's pods are on
# POD_BASE.i.0/24 (host-local); every node and the host route the other nodes' pod networks over the switch, so
# pods on different nodes reach each other and the host reaches every pod. The host gets one veth interface
# (vnode<hash>) and routes over it; the machine's global sysctls are never written (the kubelet's are shadowed
# inside each node's mount namespace) and no path of the host is written (each node's /var/lib/kubelet,
# /var/lib/cni, /var/log/containers, /run/containerd, /etc/cni/net.d, /opt/cni/bin, /run/vitals and /run/netns
# are private directories of its state, bind-mounted in its own mount namespace).
#
# Usage: hack/node.sh start [DIR]             prints the env file to source on stdout (progress on stderr)
#        hack/node.sh stop  [DIR]             stops exactly what start started (by PID), removes the namespaces
#        hack/node.sh check [DIR]             exit 0 when every process runs and the apiserver is ready
#        hack/node.sh kubelet-stop NODE [DIR] stops one node's kubelet (its pods keep running: a node whose
#                                             kubelet died); the node lifecycle controller marks it NotReady
#        hack/node.sh kubelet-start NODE [DIR] starts it again (KUBELET_PROVIDER_ID: its --provider-id)
#        hack/node.sh exec NODE CMD...       runs CMD in the node's namespaces (e.g. ctr, ip, iptables)
# DIR defaults to $TESTENV_DIR/node; it is made anew at every start. Needs root, Debian's containerd, runc,
# containernetworking-plugins, iptables and iproute2 (hack/install-deps.sh), and go (the sandbox image).
# Env: KUBE_BIN_DIR (kube-apiserver + etcd; default: hack/kube-build.sh), NODE_BIN_DIR (kubelet, kube-proxy,
#      kube-scheduler; default: hack/node-build.sh), CLOUD_BIN_DIR (kube-controller-manager; default:
#      hack/cloud-build.sh), NODE_COUNT (2), NODE_API_PORT (28443), NODE_ETCD_PORT (24379, and +1 for peers),
#      NODE_PORT_BASE (28250: kube-controller-manager +7, kube-scheduler +9, on 127.0.0.1),
#      NODE_ADDR_BASE (10.98.0), NODE_POD_BASE (10.244), NODE_MONITOR_GRACE (20s).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CMD=${1:-}
case $CMD in
  kubelet-stop|kubelet-start|exec) NODE_ARG=${2:-}; [ -n "$NODE_ARG" ] || { echo "usage: $0 $CMD NODE [DIR]" >&2; exit 2; }
    if [ "$CMD" = exec ]; then DIR=${VITALS_NODE_DIR:-$TESTENV_DIR/node}; shift 2; EXEC_ARGS=("$@"); else DIR=${3:-$TESTENV_DIR/node}; fi ;;
  *) DIR=${2:-$TESTENV_DIR/node} ;;
esac
COUNT=${NODE_COUNT:-2}
API_PORT=${NODE_API_PORT:-28443}
ETCD_PORT=${NODE_ETCD_PORT:-24379}
BASE=${NODE_PORT_BASE:-28250}
KCM_PORT=$((BASE + 7)) SCHED_PORT=$((BASE + 9))
ADDR=${NODE_ADDR_BASE:-10.98.0}
HOST_IP=$ADDR.254
POD=${NODE_POD_BASE:-10.244}
SVC_CIDR=10.96.0.0/16
CLUSTER_NAME=vitals-node
PAUSE_IMAGE=localhost/vitals/pause:node
NAME_PREFIX=vitals-node-
# the host paths each node gets a private copy of, in its mount namespace
PRIVATE_PATHS="/var/lib/kubelet /var/lib/cni /var/log/containers /run/containerd /etc/cni/net.d /opt/cni/bin /run/vitals /run/netns"
CNI_PLUGINS="bridge host-local loopback portmap"
CNI_SRC=/usr/lib/cni # Debian's containernetworking-plugins

DIR=$(realpath -m "$DIR")
case $DIR in /|"$ROOT"|"$HOME") die "refusing state directory $DIR (it is made anew at start)" ;; esac
# names that must be unique on the host: one cluster per state directory
HASH=$(echo "$DIR" | md5sum | cut -c1-6)
HOST_LINK=vnode$HASH
CGROUP_PREFIX=/vitals-node-$HASH

node_name() { echo "$NAME_PREFIX$1"; }
node_index() { local n=${1#"$NAME_PREFIX"}; [[ "$n" =~ ^[0-9]+$ ]] && [ -d "$DIR/$(node_name "$n")" ] || die "no node $1 in $DIR"; echo "$n"; }
anchor() { cat "$DIR/$(node_name "$1")/anchor.pid"; }
# NS I CMD...: run CMD in node I's network + mount namespaces
NS() { local i=$1; shift; nsenter -t "$(anchor "$i")" -n -m -- "$@"; }
SW() { nsenter -t "$(cat "$DIR/switch.pid")" -n -- "$@"; }

# kapi METHOD PATH [BODY] [CONTENT-TYPE]: a request to the cluster's apiserver as admin; 409 is fine.
kapi() {
  local code
  code=$(curl -sS -m 30 --cacert "$DIR/kube/certs/apiserver.crt" -X "$1" -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H "Content-Type: ${4:-application/json}" ${3:+--data-binary "$3"} "https://$HOST_IP:$API_PORT$2" \
    -o "$DIR/kapi.out" -w '%{http_code}') || return 1
  case $code in 2??|409) return 0 ;; esac
  log "$1 $2: HTTP $code: $(head -c 300 "$DIR/kapi.out")"; return 1
}

kubeconfig() { # FILE TOKEN
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $CLUSTER_NAME
  cluster:
    server: https://$HOST_IP:$API_PORT
    certificate-authority: $DIR/kube/certs/apiserver.crt
users:
- name: user
  user:
    token: $2
contexts:
- name: $CLUSTER_NAME
  context: {cluster: $CLUSTER_NAME, user: user, namespace: default}
current-context: $CLUSTER_NAME
KC
}

tok() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# --- the switch and the host's link to it ---
network_up() {
  unshare --net sleep infinity < /dev/null > /dev/null 2>&1 &
  echo $! > "$DIR/switch.pid"; sleep 0.1
  SW ip link set lo up
  SW ip link add br0 type bridge
  SW ip link set br0 up
  ip link del "$HOST_LINK" 2>/dev/null || true
  ip link add "$HOST_LINK" type veth peer name host
  ip link set host netns "$(cat "$DIR/switch.pid")"
  SW ip link set host master br0
  SW ip link set host up
  ip addr add "$HOST_IP/24" dev "$HOST_LINK"
  ip link set "$HOST_LINK" up
  echo "$HOST_LINK" > "$DIR/host-link"
}

# --- node I: namespaces, network, private paths, cgroups ---
node_namespaces() {
  local i=$1 n d f kv j s=$DIR/$(node_name "$1")
  mkdir -p "$s"/{fixed,sysctl,containerd,kubelet,pod-logs,volume-plugins,manifests,ipam}
  unshare --net --mount --propagation slave sleep infinity < /dev/null > /dev/null 2>&1 &
  echo $! > "$s/anchor.pid"; sleep 0.1
  # the node's link to the switch: eth0 with its InternalIP
  SW ip link add "n$i" type veth peer name "eth$i"
  SW ip link set "eth$i" netns "$(anchor "$i")"
  SW ip link set "n$i" master br0
  SW ip link set "n$i" up
  NS "$i" sh -ec "ip link set lo up; ip link set eth$i name eth0; ip addr add $ADDR.$i/24 dev eth0; ip link set eth0 up
    ip route add default via $HOST_IP dev eth0
    sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.route_localnet=1"
  # the other nodes' pod networks, over the switch; the host reaches this node's pods the same way
  for j in $(seq 1 "$COUNT"); do [ "$j" = "$i" ] || NS "$i" ip route add "$POD.$j.0/24" via "$ADDR.$j" dev eth0; done
  ip route replace "$POD.$i.0/24" via "$ADDR.$i" dev "$HOST_LINK"
  # The kubelet sets six GLOBAL kernel sysctls at start (vm.overcommit_memory=1, kernel.panic=10, ...): files
  # holding the values it wants, bind-mounted over them in this mount namespace, leave the machine's alone.
  for kv in vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 \
            kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000; do
    f=${kv%%=*}; echo "${kv#*=}" > "$s/sysctl/${f//\//_}"
    NS "$i" mount --bind "$s/sysctl/${f//\//_}" "/proc/sys/$f"
  done
  # fixed host paths (the kubelet's device-plugin socket and log links, libcni's cache, containerd 1.6's
  # shim sockets) and the chart's hostPaths: private to this node. Each is made shared within the node's mount
  # namespace, as a systemd host's are: a pod's HostToContainer mount (the agent's /run/netns) needs a shared or
  # slave source, and a bind is only a slave where the host's root is shared; where it is private (some
  # machines' is), the kubelet could not start the agent ("not a shared or slave mount").
  for d in $PRIVATE_PATHS; do
    if [ ! -d "$d" ]; then mkdir -p "$d"; echo "$d" >> "$DIR/created-dirs"; fi # a mount point only; stop removes it
    mkdir -p "$s/fixed$d"; NS "$i" mount --bind "$s/fixed$d" "$d"; NS "$i" mount --make-shared "$d"
  done
  for n in $CNI_PLUGINS; do ln -s "$CNI_SRC/$n" "$s/fixed/opt/cni/bin/$n"; done
  # the pods' cgroup parent, in every cgroup v1 hierarchy (cgroupfs driver)
  local cg=$CGROUP_PREFIX-$i h
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    [ -f "$h/cgroup.procs" ] || continue
    mkdir -p "$h${cg#/}"
    case $h in */cpuset/) cat "$h/cpuset.cpus" > "$h${cg#/}/cpuset.cpus"; cat "$h/cpuset.mems" > "$h${cg#/}/cpuset.mems" ;; esac
  done
  echo "$cg" > "$s/cgroup-root"
}

# the node's CNI configuration: bridge (host-local addresses of its pod network) then portmap
node_cni_config() {
  local i=$1 s=$DIR/$(node_name "$1")
  cat > "$s/fixed/etc/cni/net.d/10-bridge.conflist" <<X
{
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD.$i.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$s/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
X
}

node_containerd() {
  local i=$1 s=$DIR/$(node_name "$1") sock
  sock=$s/containerd/containerd.sock
  cat > "$s/containerd.toml" <<X
version = 2
root = "$s/containerd/root"
state = "$s/containerd/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$s/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # this machine withholds CAP_SYS_RESOURCE: runc could not give the sandbox its oom_score_adj of -998
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "$s/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/opt/cni/bin"
    conf_dir = "/etc/cni/net.d"
X
  bgproc_node "$i" containerd containerd --config "$s/containerd.toml"
  for _ in $(seq 1 300); do
    [ -S "$sock" ] && NS "$i" ctr --address "$sock" version >/dev/null 2>&1 && return 0
    alive "$(cat "$s/containerd.pid")" || { tail -20 "$s/containerd.log" >&2; die "containerd of node $i died; see $s/containerd.log"; }
    sleep 0.1
  done
  die "containerd of node $i not ready after 30 s; see $s/containerd.log"
}

# bgproc_node I NAME CMD...: start CMD in node I's namespaces, detached; PID in its state NAME.pid, log NAME.log
bgproc_node() {
  local i=$1 name=$2 s=$DIR/$(node_name "$1"); shift 2
  nsenter -t "$(anchor "$i")" -n -m -- setsid "$@" < /dev/null >> "$s/$name.log" 2>&1 &
  echo $! > "$s/$name.pid"
}

ctr_node() { local i=$1; shift; NS "$i" ctr --address "$DIR/$(node_name "$i")/containerd/containerd.sock" -n k8s.io "$@"; }

start_kubelet() {
  local i=$1 s=$DIR/$(node_name "$1") bin
  bin=$(cat "$DIR/node-bin")
  cat > "$s/kubelet.yaml" <<X
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false            # kubelet >= 1.35 refuses cgroup v1 hosts by default
cgroupDriver: cgroupfs
cgroupRoot: $(cat "$s/cgroup-root")
failSwapOn: false
containerRuntimeEndpoint: unix://$s/containerd/containerd.sock
staticPodPath: $s/manifests
podLogsDir: $s/pod-logs
volumePluginDir: $s/volume-plugins
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
nodeStatusUpdateFrequency: 5s
nodeStatusReportFrequency: 30s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
${KUBELET_PROVIDER_ID:+providerID: $KUBELET_PROVIDER_ID}
X
  bgproc_node "$i" kubelet "$bin/kubelet" --config="$s/kubelet.yaml" --kubeconfig="$s/kubelet.kubeconfig" \
    --root-dir="$s/kubelet" --cert-dir="$s/kubelet/pki" --hostname-override="$(node_name "$i")" --node-ip="$ADDR.$i"
}

start_kube_proxy() {
  local i=$1 s=$DIR/$(node_name "$1") bin
  bin=$(cat "$DIR/node-bin")
  cat > "$s/kube-proxy.yaml" <<X
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$DIR/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD.0.0/16
hostnameOverride: $(node_name "$i")
bindAddress: $ADDR.$i
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
X
  bgproc_node "$i" kube-proxy "$bin/kube-proxy" --config="$s/kube-proxy.yaml"
}

# register I: the Node object before its kubelet starts, with its pod network as spec.podCIDR (no controller
# allocates them here: each node's CNI configuration names its own)
register() {
  local i=$1
  kapi POST /api/v1/nodes "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$(node_name "$i")\",
    \"labels\":{\"kubernetes.io/hostname\":\"$(node_name "$i")\",\"kubernetes.io/os\":\"linux\"}},
    \"spec\":{\"podCIDR\":\"$POD.$i.0/24\",\"podCIDRs\":[\"$POD.$i.0/24\"]}}" || die "could not create Node $(node_name "$i")"
}

node_ready() { # I
  curl -s -m 5 --cacert "$DIR/kube/certs/apiserver.crt" -H "Authorization: Bearer $ADMIN_TOKEN" \
    "https://$HOST_IP:$API_PORT/api/v1/nodes/$(node_name "$1")" 2>/dev/null |
    python3 -c 'import json,sys; c=[x for x in json.load(sys.stdin)["status"].get("conditions",[]) if x["type"]=="Ready"]; sys.exit(0 if c and c[0]["status"]=="True" else 1)' 2>/dev/null
}

pause_image() {
  local out=$DIR/images
  mkdir -p "$out"
  (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/pause" ./internal/tools/pause) || return 1
  (cd "$ROOT" && go run ./internal/tools/mkimage -o "$out/pause.tar" -name "$PAUSE_IMAGE" -file "/pause=$out/pause" \
    -entrypoint /pause -user 65535:65535 -label org.opencontainers.image.title=pause \
    -label org.opencontainers.image.description="sandbox image of hack/node.sh")
}

start() {
  local kbin=${KUBE_BIN_DIR:-} nbin=${NODE_BIN_DIR:-} cbin=${CLOUD_BIN_DIR:-} i s b t t0 pause_pid kpid
  [ "$(id -u)" = 0 ] || die "run as root (namespaces, mounts, cgroups)"
  for b in containerd ctr runc iptables ip nsenter unshare go; do command -v $b >/dev/null || die "$b missing (hack/install-deps.sh)"; done
  for b in $CNI_PLUGINS; do [ -x "$CNI_SRC/$b" ] || die "CNI plugin $CNI_SRC/$b missing (hack/install-deps.sh: containernetworking-plugins)"; done
  [ -n "$kbin" ] || kbin=$("$ROOT/hack/kube-build.sh")
  [ -n "$nbin" ] || nbin=$("$ROOT/hack/node-build.sh")
  [ -n "$cbin" ] || cbin=$("$ROOT/hack/cloud-build.sh")
  for b in kubelet kube-proxy kube-scheduler; do [ -x "$nbin/$b" ] || die "no $b in $nbin"; done
  [ -x "$cbin/kube-controller-manager" ] || die "no kube-controller-manager in $cbin"
  if [ -f "$DIR/switch.pid" ] && alive "$(cat "$DIR/switch.pid")"; then die "a node cluster runs in $DIR; run: $0 stop $DIR"; fi
  rm -rf "$DIR"; mkdir -p "$DIR/kube"
  : > "$DIR/created-dirs"
  echo "$nbin" > "$DIR/node-bin"
  t0=$(_now)
  trap '[ $? = 0 ] || log "start failed (logs in $DIR): clean up with $0 stop $DIR"' EXIT

  pause_image > "$DIR/images.log" 2>&1 &
  pause_pid=$!

  # credentials: admin (kube-controller-manager, kube-scheduler, tests), each kubelet as its node (the Node
  # authorizer and NodeRestriction hold it to its own Node and pods), kube-proxy as system:kube-proxy
  ADMIN_TOKEN=$(tok)
  { echo "$ADMIN_TOKEN,admin,admin-uid,system:masters"
    for i in $(seq 1 "$COUNT"); do
      t=$(tok); echo "$t,system:node:$(node_name "$i"),node-$i-uid,system:nodes"; echo "$t" > "$DIR/node-$i.token"
    done
    t=$(tok); echo "$t,system:kube-proxy,kube-proxy-uid,"; echo "$t" > "$DIR/kube-proxy.token"
  } > "$DIR/kube/tokens.csv"
  chmod 600 "$DIR/kube/tokens.csv"

  network_up
  KUBE_BIN_DIR=$kbin KUBE_API_PORT=$API_PORT ETCD_PORT=$ETCD_PORT ETCD_PEER_PORT=$((ETCD_PORT + 1)) \
    KUBE_BIND_ADDRESS=$HOST_IP KUBE_AUTHORIZATION_MODE=Node,RBAC KUBE_DISABLE_ADMISSION= \
    KUBE_APISERVER_EXTRA_ARGS="--enable-admission-plugins=NodeRestriction --endpoint-reconciler-type=lease
      --service-cluster-ip-range=$SVC_CIDR --kubelet-preferred-address-types=InternalIP" \
    "$ROOT/hack/kube.sh" start "$DIR/kube" > "$DIR/kube.out" 2> "$DIR/kube.err" &
  kpid=$!
  for i in $(seq 1 "$COUNT"); do node_namespaces "$i"; node_cni_config "$i"; node_containerd "$i"; done
  log "$COUNT node namespaces with containerd, switch and host link $HOST_LINK ($HOST_IP)"
  wait $kpid || { tail -20 "$DIR/kube.err" >&2; die "kube-apiserver did not start; see $DIR/kube/kube-apiserver.log"; }
  kubeconfig "$DIR/kubeconfig" "$ADMIN_TOKEN"
  kubeconfig "$DIR/kube-proxy.kubeconfig" "$(cat "$DIR/kube-proxy.token")"
  for i in $(seq 1 "$COUNT"); do kubeconfig "$DIR/$(node_name "$i")/kubelet.kubeconfig" "$(cat "$DIR/node-$i.token")"; done

  bgproc kube-controller-manager "$cbin/kube-controller-manager" \
    --kubeconfig="$DIR/kubeconfig" --leader-elect=false --bind-address=127.0.0.1 --secure-port="$KCM_PORT" \
    --cert-dir="$DIR/kcm-certs" --service-account-private-key-file="$DIR/kube/sa.key" \
    --root-ca-file="$DIR/kube/certs/apiserver.crt" --service-cluster-ip-range="$SVC_CIDR" \
    --use-service-account-credentials=false --cluster-name="$CLUSTER_NAME" \
    --node-monitor-period=2s --node-monitor-grace-period="${NODE_MONITOR_GRACE:-20s}" --v=1
  bgproc kube-scheduler "$nbin/kube-scheduler" --kubeconfig="$DIR/kubeconfig" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --cert-dir="$DIR/scheduler-certs"

  wait $pause_pid || { cat "$DIR/images.log" >&2; die "could not build the pause image; see $DIR/images.log"; }
  for i in $(seq 1 "$COUNT"); do
    ctr_node "$i" images import "$DIR/images/pause.tar" > /dev/null || die "ctr import of the pause image into node $i failed"
    register "$i"
    start_kubelet "$i"
    start_kube_proxy "$i"
  done
  for i in $(seq 1 "$COUNT"); do wait_for "$(node_name "$i")/kubelet" 120 node_ready "$i"; done
  wait_for kube-controller-manager 60 curl -skf -m 1 "https://127.0.0.1:$KCM_PORT/healthz" -o /dev/null
  wait_for kube-scheduler 60 curl -skf -m 1 "https://127.0.0.1:$SCHED_PORT/healthz" -o /dev/null
  log "$COUNT nodes Ready after $(awk "BEGIN{printf \"%.1f\", $(_now) - $t0}") s"
  {
    echo "export VITALS_TEST_NODE_KUBECONFIG=$DIR/kubeconfig"
    echo "export VITALS_TEST_NODE_DIR=$DIR"
    echo "export VITALS_TEST_NODE_SCRIPT=$ROOT/hack/node.sh"
    echo "export VITALS_TEST_NODE_NAMES=\"$(for i in $(seq 1 "$COUNT"); do printf '%s ' "$(node_name "$i")"; done | sed 's/ $//')\""
    echo "export VITALS_TEST_NODE_PAUSE_IMAGE=$PAUSE_IMAGE"
  } > "$DIR/env.tmp"
  mv "$DIR/env.tmp" "$DIR/env"
  trap - EXIT
  echo "$DIR/env"
}

# stop_node I: kubelet and kube-proxy, every container through containerd, containerd, anything left in
# the node's network namespace, the namespaces, the pods' cgroups.
stop_node() {
  local i=$1 s=$DIR/$(node_name "$1") a netns d p cg h left procs=()
  [ -f "$s/anchor.pid" ] || return 0
  a=$(cat "$s/anchor.pid")
  for p in kubelet kube-proxy; do [ -f "$s/$p.pid" ] && procs+=("$(node_name "$i")/$p=$(cat "$s/$p.pid")"); done
  [ ${#procs[@]} -eq 0 ] || stop_pids 10 "${procs[@]}"
  if alive "$a" && [ -S "$s/containerd/containerd.sock" ] && [ -f "$s/containerd.pid" ] && alive "$(cat "$s/containerd.pid")"; then
    for t in $(ctr_node "$i" tasks ls -q 2>/dev/null); do ctr_node "$i" tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    sleep 0.5
    for t in $(ctr_node "$i" tasks ls -q 2>/dev/null); do ctr_node "$i" tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  [ -f "$s/containerd.pid" ] && stop_pids 10 "$(node_name "$i")/containerd=$(cat "$s/containerd.pid")"
  if alive "$a"; then
    # what is left in the node's network namespace (shims, containers) was started by it
    netns=$(readlink "/proc/$a/ns/net")
    for d in /proc/[0-9]*; do
      p=${d#/proc/}; [ "$p" = "$a" ] && continue
      [ "$(readlink "$d/ns/net" 2>/dev/null)" = "$netns" ] && kill -9 "$p" 2>/dev/null || true
    done
    kill "$a" 2>/dev/null || true # the last process of the namespaces: its mounts and links go with it
  fi
  cg=$(cat "$s/cgroup-root" 2>/dev/null || true)
  if [ -n "$cg" ]; then
    for p in $(find /sys/fs/cgroup/pids"$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    for _ in $(seq 1 50); do # killed tasks take a moment to leave their cgroups
      left=0
      for h in /sys/fs/cgroup/*/; do
        [ -d "$h${cg#/}" ] || continue
        find "$h${cg#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [ -d "$h${cg#/}" ] && left=1
      done
      [ $left = 0 ] && break; sleep 0.2
    done
    [ $left = 0 ] || log "cgroup $cg of node $i not fully removed"
  fi
}

stop() {
  local i procs=() p
  [ -d "$DIR" ] || { log "nothing in $DIR"; return 0; }
  rm -f "$DIR/env"
  for p in kube-scheduler kube-controller-manager; do [ -f "$DIR/$p.pid" ] && procs+=("$p=$(cat "$DIR/$p.pid")"); done
  [ ${#procs[@]} -eq 0 ] || stop_pids 10 "${procs[@]}"
  for i in $(seq 1 "$COUNT"); do stop_node "$i"; done
  for d in "$DIR"/"$NAME_PREFIX"*; do # nodes beyond NODE_COUNT of an earlier start
    [ -d "$d" ] || continue; i=${d##*-}; [ "$i" -gt "$COUNT" ] 2>/dev/null && stop_node "$i"
  done
  KUBE_API_PORT=$API_PORT ETCD_PORT=$ETCD_PORT ETCD_PEER_PORT=$((ETCD_PORT + 1)) KUBE_BIND_ADDRESS=$HOST_IP \
    "$ROOT/hack/kube.sh" stop "$DIR/kube" >&2
  [ -f "$DIR/switch.pid" ] && { kill "$(cat "$DIR/switch.pid")" 2>/dev/null || true; rm -f "$DIR/switch.pid"; }
  sleep 0.2
  ip link del "$HOST_LINK" 2>/dev/null || true
  [ -f "$DIR/created-dirs" ] && while read -r d; do rmdir "$d" 2>/dev/null || true; done < "$DIR/created-dirs"
  rm -f "$DIR/created-dirs"
}

check() {
  local i p s
  [ -f "$DIR/env" ] || return 1
  for p in kube-controller-manager kube-scheduler; do alive "$(cat "$DIR/$p.pid" 2>/dev/null)" || return 1; done
  for i in $(seq 1 "$COUNT"); do
    s=$DIR/$(node_name "$i")
    for p in anchor containerd kubelet kube-proxy; do alive "$(cat "$s/$p.pid" 2>/dev/null)" || return 1; done
  done
  alive "$(cat "$DIR/kube/kube-apiserver.pid" 2>/dev/null)" || return 1
  [ "$(curl -sk -m 3 -H "Authorization: Bearer $(head -1 "$DIR/kube/tokens.csv" | cut -d, -f1)" \
    "https://$HOST_IP:$API_PORT/readyz" 2>/dev/null)" = ok ]
}

kubelet_stop() {
  local i s
  i=$(node_index "$NODE_ARG"); s=$DIR/$(node_name "$i")
  stop_pidfile 10 "$(node_name "$i")/kubelet" "$s/kubelet.pid"
}

kubelet_start() {
  local i s
  i=$(node_index "$NODE_ARG"); s=$DIR/$(node_name "$i")
  if [ -f "$s/kubelet.pid" ] && alive "$(cat "$s/kubelet.pid")"; then die "the kubelet of $(node_name "$i") runs (pid $(cat "$s/kubelet.pid"))"; fi
  ADMIN_TOKEN=$(head -1 "$DIR/kube/tokens.csv" | cut -d, -f1)
  start_kubelet "$i"
  wait_for "$(node_name "$i")/kubelet" 120 node_ready "$i"
}

case $CMD in
  start) step "start the node cluster ($DIR)" start ;;
  stop) step "stop the node cluster ($DIR)" stop ;;
  check) check ;;
  kubelet-stop) step "stop the kubelet of $NODE_ARG" kubelet_stop ;;
  kubelet-start) step "start the kubelet of $NODE_ARG" kubelet_start ;;
  exec) i=$(node_index "$NODE_ARG"); NS "$i" "${EXEC_ARGS[@]}" ;;
  *) echo "usage: $0 start|stop|check [DIR] | kubelet-stop|kubelet-start NODE [DIR] | exec NODE CMD..." >&2; exit 2 ;;
esac
