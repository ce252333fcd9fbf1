#!/usr/bin/env bash
# Measures the node agent's resident memory with the pod network connectivity check on, probing 100
# peers discovered through the real kube-apiserver, against the same agent without the check and with
# the static targets of before (a namespace entered by hand; CONNECTIVITY=1 of run.sh), and the canary's.
#
#   bench/agent/peers.sh                        # as root, with .testenv/env (make testenv-up)
#   PEERS=100 SAMPLE=100 INTERVAL=5s IDLE=60s bench/agent/peers.sh
#   BEFORE_REF=<commit> bench/agent/peers.sh    # also the agent of that commit, with its static targets
#   ONLY=peers bench/agent/peers.sh             # one configuration: off, static or peers
#
# The network, in namespaces of its own: this node's canary in "pod" (198.18.1.2; the real
# vitals-canary, linked to the agent's socket), PEERS canaries of other nodes in "peers"
# (198.19.1.1 ... on port 8091, one listener each, accepting and closing as a canary does), joined by
# a veth pair. In the API: a Node for the agent, the canaries' EndpointSlices (PEERS ready endpoints
# on nodes of their own, and this node's canary), in the namespace vitals-bench-agent. The agent runs
# every source (kubelet Events watch, pod index, report socket, node conditions) as in run.sh, with
# the check every INTERVAL (default 5s: six times its default) and a sample of SAMPLE peers per pass
# (default 100: every peer, every pass). RSS (VmRSS) is sampled every 250 ms by bench/agent/driver.
set -euo pipefail
cd "$(dirname "$0")/../.."
PEERS=${PEERS:-100}
SAMPLE=${SAMPLE:-100}
INTERVAL=${INTERVAL:-5s}
IDLE=${IDLE:-60s}
work=$(mktemp -d /tmp/vitals-bench-peers.XXXXXX)
ns_pod="vbp-pod-$$"
ns_peers="vbp-peers-$$"
pids=()
cleanup() {
	# TERM: background jobs of a script ignore SIGINT (the python responders would never end).
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	ip netns del "$ns_pod" 2>/dev/null || true
	ip netns del "$ns_peers" 2>/dev/null || true
	if [[ -n "${KUBECONFIG_BENCH:-}" ]]; then
		"$work/peers" -kubeconfig "$KUBECONFIG_BENCH" -service "$svc" -delete 2>/dev/null || true
		"$work/nodeobj" -kubeconfig "$KUBECONFIG_BENCH" -node "$node" -pods 0 -delete 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
[[ $(id -u) == 0 ]] || { echo "peers.sh: needs root (network namespaces)" >&2; exit 2; }

if [[ -z "${VITALS_TEST_KUBECONFIG:-}" && -f .testenv/env ]]; then
	# shellcheck disable=SC1091
	source .testenv/env
fi
KUBECONFIG_BENCH=${VITALS_TEST_KUBECONFIG:-}
[[ -n "$KUBECONFIG_BENCH" ]] || { echo "peers.sh: needs a kube-apiserver (VITALS_TEST_KUBECONFIG or .testenv/env)" >&2; exit 2; }

CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals-agent" ./cmd/vitals-agent
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals-canary" ./cmd/vitals-canary
go build -o "$work/driver" ./bench/agent/driver
go build -o "$work/nodeobj" ./bench/agent/nodeobj
go build -o "$work/peers" ./bench/agent/peers
if [[ -n "${BEFORE_REF:-}" ]]; then
	mkdir -p "$work/before"
	git archive "$BEFORE_REF" | tar -x -C "$work/before"
	(cd "$work/before" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals-agent-before" ./cmd/vitals-agent)
fi

node="bench-peers-$$"
svc="bench-canary-$$"
"$work/nodeobj" -kubeconfig "$KUBECONFIG_BENCH" -node "$node" -pods 0 -create
"$work/peers" -kubeconfig "$KUBECONFIG_BENCH" -service "$svc" -node "$node" -peers "$PEERS" -create

ip netns add "$ns_pod"
ip netns add "$ns_peers"
ip -n "$ns_pod" link add eth0 type veth peer name eth0 netns "$ns_peers"
ip -n "$ns_pod" addr add 198.18.1.2/24 dev eth0
ip -n "$ns_peers" addr add 198.18.1.1/24 dev eth0
# The static targets of before: a pod (198.18.1.1:8080), a Service (198.19.0.1:443), the cluster DNS
# (198.19.0.10:53) in the peers' namespace.
ip -n "$ns_peers" addr add 198.19.0.1/32 dev lo
ip -n "$ns_peers" addr add 198.19.0.10/32 dev lo
for ((i = 0; i < PEERS; i++)); do
	ip -n "$ns_peers" addr add "198.19.$((1 + i / 250)).$((1 + i % 250))/32" dev lo
done
for n in "$ns_pod" "$ns_peers"; do ip -n "$n" link set lo up; ip -n "$n" link set eth0 up; done
ip -n "$ns_pod" route add 198.19.0.0/16 via 198.18.1.1
ip netns exec "$ns_peers" "$work/peers" -listen -peers "$PEERS" >"$work/peers.log" 2>&1 &
pids+=($!)
ip netns exec "$ns_peers" python3 -m http.server 8080 --bind 198.18.1.1 >/dev/null 2>&1 &
pids+=($!)
ip netns exec "$ns_peers" python3 -m http.server 443 --bind 198.19.0.1 >/dev/null 2>&1 &
pids+=($!)
	ip netns exec "$ns_peers" python3 bench/agent/dnsresponder.py 198.19.0.10 198.19.0.1 &
pids+=($!)
mkdir -p "$work/net.d"
echo '{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"},{"type":"portmap"}]}' >"$work/net.d/10-pods.conflist"

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sizes: vitals-agent $(stat -c %s "$work/vitals-agent") bytes, vitals-canary $(stat -c %s "$work/vitals-canary") bytes; peers $PEERS, sample $SAMPLE, interval $INTERVAL, idle $IDLE"

static_args=(--connectivity-netns "/var/run/netns/$ns_pod" --connectivity-pod 198.18.1.1:8080
	--connectivity-service 198.19.0.1:443 --connectivity-dns-server 198.19.0.10
	--connectivity-dns-name kubernetes.default.svc.cluster.local --connectivity-interval "$INTERVAL")
peer_args=(--connectivity-canary-socket "$work/canary/canary.sock" --connectivity-peers-service "vitals-bench-agent/$svc"
	--connectivity-peers-sample "$SAMPLE" --connectivity-peers-min 3 --connectivity-interval "$INTERVAL")

# bench LABEL BINARY ARGS...: runs one agent for IDLE and prints its memory; with the canary's socket
# among ARGS, the canary runs beside it and its memory is printed too.
bench() {
	local label=$1 bin=$2
	shift 2
	local port canary_pid="" agent_pid
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	echo "## $label"
	"$bin" --node-name "$node" --bind-address 127.0.0.1 --port "$port" --socket "$work/cni.sock" --kubeconfig "$KUBECONFIG_BENCH" \
		--cni-conf-dir "$work/net.d" --memory-source rss --max-memory-usage 64 --log-level warn "$@" 2>"$work/agent-$label.log" &
	agent_pid=$!
	pids+=("$agent_pid")
	if [[ " $* " == *" --connectivity-canary-socket "* ]]; then
		for _ in $(seq 100); do [[ -S "$work/canary/canary.sock" ]] && break; sleep 0.1; done
		# shellcheck disable=SC2086
		ip netns exec "$ns_pod" env ${CANARY_ENV:-} POD_NAMESPACE=vitals-bench-agent POD_NAME=canary-bench POD_IP=198.18.1.2 \
			"$work/vitals-canary" --listen 198.18.1.2:8091 --socket "$work/canary/canary.sock" 2>"$work/canary-$label.log" &
		canary_pid=$!
		pids+=("$canary_pid")
	fi
	for _ in $(seq 200); do
		curl -fsS "http://127.0.0.1:$port/alive" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://127.0.0.1:$port/alive" >/dev/null
	if [[ -n "$canary_pid" ]]; then
		"$work/driver" -mode idle -pid "$canary_pid" -duration "$IDLE" | sed 's/^/canary: /' &
		local canary_driver=$!
	fi
	"$work/driver" -mode idle -pid "$agent_pid" -duration "$IDLE" | sed 's/^/agent: /'
	[[ -n "$canary_pid" ]] && wait "$canary_driver"
	curl -fsS "http://127.0.0.1:$port/metrics" | grep -E '^vitals_agent_connectivity_(probes_total|peers)' || true
	curl -fsS "http://127.0.0.1:$port/livez/pod-network-peers" 2>/dev/null && echo " (/livez/pod-network-peers)" || true
	kill "$agent_pid"
	wait "$agent_pid" || true
	if [[ -n "$canary_pid" ]]; then kill "$canary_pid"; wait "$canary_pid" || true; fi
}

if [[ -n "${BEFORE_REF:-}" ]]; then
	bench "before-static-$(git rev-parse --short "$BEFORE_REF")" "$work/vitals-agent-before" "${static_args[@]}"
fi
[[ -z "${ONLY:-}" || "$ONLY" == off ]] && bench off "$work/vitals-agent"
[[ -z "${ONLY:-}" || "$ONLY" == static ]] && bench static "$work/vitals-agent" "${static_args[@]}"
[[ -z "${ONLY:-}" || "$ONLY" == peers ]] && bench peers "$work/vitals-agent" "${peer_args[@]}"
kill "${pids[0]}" && wait "${pids[0]}" || true
cat "$work/peers.log"
