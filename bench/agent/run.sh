#!/usr/bin/env bash
# Measures the node agent's resident memory at idle and under 100 CNI results per second, sent through
# its report socket and as kubelet FailedCreatePodSandBox Events in a real kube-apiserver (about 20
# pods bound to the node, so that the agent takes the Events as evidence and counts them), for two
# binaries: `vitals-agent` (the DaemonSet's binary) and `vitals agent` (the same command inside the
# operator's binary), and prints both binaries' sizes.
#
#   bench/agent/run.sh                      # uses .testenv/env (make testenv-up) for the kube-apiserver
#   RATE=100 DURATION=60s IDLE=20s bench/agent/run.sh
#   CONNECTIVITY=1 bench/agent/run.sh       # as root: the pod network connectivity check on, every 5s,
#                                           # from a network namespace to a peer namespace (TCP
#                                           # responders for a pod and a Service, a DNS responder)
#
# Without a kube-apiserver it measures the socket source only (--watch-events=false --node-conditions=false).
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE=${RATE:-100}
DURATION=${DURATION:-60s}
IDLE=${IDLE:-20s}
work=$(mktemp -d /tmp/vitals-bench-agent.XXXXXX)
agent_pid=""
responders=()
netns_pod="vbench-pod-$$"
netns_peer="vbench-peer-$$"
cleanup() {
	if [[ -n "$agent_pid" ]]; then kill -INT "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
	for pid in "${responders[@]}"; do kill "$pid" 2>/dev/null || true; done
	if [[ -n "${CONNECTIVITY:-}" ]]; then ip netns del "$netns_pod" 2>/dev/null || true; ip netns del "$netns_peer" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals" ./cmd/vitals
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals-agent" ./cmd/vitals-agent
go build -o "$work/driver" ./bench/agent/driver

if [[ -z "${VITALS_TEST_KUBECONFIG:-}" && -f .testenv/env ]]; then
	# shellcheck disable=SC1091
	source .testenv/env
fi
KUBECONFIG_BENCH=${VITALS_TEST_KUBECONFIG:-}

mkdir -p "$work/net.d"
echo '{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"},{"type":"portmap"}]}' >"$work/net.d/10-pods.conflist"
node="bench-agent-$$"
if [[ -n "$KUBECONFIG_BENCH" ]]; then
	go run ./bench/agent/nodeobj -kubeconfig "$KUBECONFIG_BENCH" -node "$node" -create
fi
connectivity_args=()
if [[ -n "${CONNECTIVITY:-}" ]]; then
	# A pod's namespace and a peer playing a pod on another node (198.18.1.3:8080), a Service
	# (198.19.0.1:443) and the cluster DNS (198.19.0.10:53, answering every A query with 198.19.0.1).
	ip netns add "$netns_pod"
	ip netns add "$netns_peer"
	ip -n "$netns_pod" link add eth0 type veth peer name eth0 netns "$netns_peer"
	ip -n "$netns_pod" addr add 198.18.1.2/24 dev eth0
	ip -n "$netns_peer" addr add 198.18.1.3/24 dev eth0
	ip -n "$netns_peer" addr add 198.19.0.1/32 dev lo
	ip -n "$netns_peer" addr add 198.19.0.10/32 dev lo
	for ns in "$netns_pod" "$netns_peer"; do ip -n "$ns" link set lo up; ip -n "$ns" link set eth0 up; done
	ip -n "$netns_pod" route add 198.19.0.0/16 via 198.18.1.3
	ip netns exec "$netns_peer" python3 -m http.server 8080 --bind 198.18.1.3 >/dev/null 2>&1 &
	responders+=($!)
	ip netns exec "$netns_peer" python3 -m http.server 443 --bind 198.19.0.1 >/dev/null 2>&1 &
	responders+=($!)
	ip netns exec "$netns_peer" python3 bench/agent/dnsresponder.py 198.19.0.10 198.19.0.1 &
	responders+=($!)
	connectivity_args=(--connectivity-netns "/var/run/netns/$netns_pod" --connectivity-pod 198.18.1.3:8080
		--connectivity-service 198.19.0.1:443 --connectivity-dns-server 198.19.0.10
		--connectivity-dns-name kubernetes.default.svc.cluster.local --connectivity-interval 5s)
fi
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sizes: vitals $(stat -c %s "$work/vitals") bytes, vitals-agent $(stat -c %s "$work/vitals-agent") bytes"

# bench LABEL COMMAND...: runs one agent binary through idle, socket and kube phases.
bench() {
	local label=$1
	shift
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	local args=(--node-name "$node" --bind-address 127.0.0.1 --port "$port" --socket "$work/cni.sock"
		--cni-conf-dir "$work/net.d" --memory-source rss --max-memory-usage 64 --log-level warn "${connectivity_args[@]}")
	if [[ -n "$KUBECONFIG_BENCH" ]]; then
		args+=(--kubeconfig "$KUBECONFIG_BENCH")
	else
		args+=(--watch-events=false --node-conditions=false --capabilities=)
	fi
	echo "## $label"
	"$@" "${args[@]}" 2>"$work/agent-$label.log" &
	agent_pid=$!
	for _ in $(seq 200); do
		curl -fsS "http://127.0.0.1:$port/alive" >/dev/null 2>&1 && break
		sleep 0.1
	done
	curl -fsS "http://127.0.0.1:$port/alive" >/dev/null
	"$work/driver" -mode idle -pid "$agent_pid" -duration "$IDLE"
	"$work/driver" -mode socket -pid "$agent_pid" -rate "$RATE" -duration "$DURATION" -socket "$work/cni.sock"
	if [[ -n "$KUBECONFIG_BENCH" ]]; then
		"$work/driver" -mode kube -pid "$agent_pid" -rate "$RATE" -duration "$DURATION" -kubeconfig "$KUBECONFIG_BENCH" -node "$node" -namespace vitals-bench-agent
	fi
	"$work/driver" -mode idle -pid "$agent_pid" -duration 5s
	curl -fsS "http://127.0.0.1:$port/metrics" | grep -E '^vitals_agent_(cni_reports|kube_events|connectivity_probes)_total' || true
	kill -INT "$agent_pid"
	wait "$agent_pid" || true
	agent_pid=""
}

bench vitals-agent "$work/vitals-agent"
bench vitals "$work/vitals" agent
if [[ -n "$KUBECONFIG_BENCH" ]]; then
	go run ./bench/agent/nodeobj -kubeconfig "$KUBECONFIG_BENCH" -node "$node" -delete
fi
