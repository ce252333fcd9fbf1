#!/usr/bin/env bash
# Floods a node agent's report socket with connections that send nothing and prints the agent's resident
# memory: at idle, the most during the flood (held 5 s), whether a report sent after the flood is still
# answered, and how many of the connections the agent closed. The agent runs with the socket source only,
# as bench/agent/run.sh runs it without a kube-apiserver.
#
#   bench/agent/flood.sh [AGENT_BINARY] [CONNECTIONS]     # default: vitals-agent built from this tree, 10000
#
# To compare two builds, pass each binary in turn (e.g. one built from main, one from a branch).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/vitals-bench-flood.XXXXXX)
agent_pid=""
cleanup() {
	if [[ -n "$agent_pid" ]]; then kill -INT "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
bin=${1:-}
conns=${2:-10000}
if [[ -z "$bin" ]]; then
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/vitals-agent" ./cmd/vitals-agent
	bin=$work/vitals-agent
fi
go build -o "$work/driver" ./bench/agent/driver
mkdir -p "$work/net.d"
echo '{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge"},{"type":"portmap"}]}' >"$work/net.d/10-pods.conflist"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg), $bin"
"$bin" --node-name flood --bind-address 127.0.0.1 --port "$port" --socket "$work/cni.sock" --cni-conf-dir "$work/net.d" \
	--memory-source rss --max-memory-usage 64 --log-level warn --watch-events=false --node-conditions=false --capabilities= 2>"$work/agent.log" &
agent_pid=$!
for _ in $(seq 200); do
	curl -fsS "http://127.0.0.1:$port/alive" >/dev/null 2>&1 && break
	sleep 0.1
done
sleep 3
echo "idle rss_kib=$(awk '/VmRSS/{print $2}' "/proc/$agent_pid/status")"
"$work/driver" -mode flood -pid "$agent_pid" -conns "$conns" -duration 5s -socket "$work/cni.sock"
curl -s -o /dev/null -w "alive after the flood: %{http_code}\n" "http://127.0.0.1:$port/alive"
