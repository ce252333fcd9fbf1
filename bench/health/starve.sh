#!/usr/bin/env bash
# CPU-starvation experiment: does a starved process fail its own probes? Vitals' health manager serves
# 10 checks of 2 ms each, every 1 s with a 0.5 s timeout (a result is trusted for 1.5 s), for liveness
# and readiness, as in run.sh; HOGS busy loops starve the machine while wrk loads /livez and /readyz in
# parallel. A failed /livez is a restart Kubernetes would do for nothing; a failed /readyz under starvation
# is by design (a starved process is not ready). Bounded: ROUNDS × DURATION (default 6 × 10 s).
#
# Usage: bench/health/starve.sh     (env: HOGS=16 ROUNDS=6 DURATION=10s CONNS=64 BASE_PORT=18580)
set -euo pipefail
cd "$(dirname "$0")"

HOGS=${HOGS:-16}
ROUNDS=${ROUNDS:-6}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
BASE_PORT=${BASE_PORT:-18580}
command -v wrk >/dev/null || { echo "wrk not found (Debian: apt-get install wrk)" >&2; exit 1; }

WORK=$(mktemp -d -t vitals-bench-starve.XXXXXX)
HOG_PIDS=()
SERVER_PID=
cleanup() {
	for p in "${HOG_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
go build -o "$WORK/healthbench" ./cmd/healthbench
ADDR=127.0.0.1:$((BASE_PORT + 1))
HEALTHBENCH_LOG=1 "$WORK/healthbench" serve -contender vitals -addr "$ADDR" >"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 300); do grep -q '^ready' "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready' "$WORK/server.out" || { echo "server did not start:"; cat "$WORK/server.out" "$WORK/server.log"; exit 1; }

echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%dT%H:%MZ), load average before $(cut -d' ' -f1-3 /proc/loadavg), $HOGS hogs"
for _ in $(seq 1 "$HOGS"); do
	sh -c 'while :; do :; done' &
	HOG_PIDS+=($!)
done
sleep 5 # let the load build up

printf '%-6s %-8s %10s %10s %10s %s\n' round path requests non-2xx p99 load
declare -A REQ BAD
for round in $(seq 1 "$ROUNDS"); do
	# Both paths at once, so that every instant is probed for both probes.
	WRK_PIDS=()
	for path in /livez /readyz; do
		wrk -t1 -c"$((CONNS / 2))" -d"$DURATION" --latency "http://$ADDR$path" >"$WORK/wrk${path#/}.out" 2>&1 &
		WRK_PIDS+=($!)
	done
	wait "${WRK_PIDS[@]}" || true
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	for path in /livez /readyz; do
		out=$WORK/wrk${path#/}.out
		req=$(awk '/requests in/ {print $1}' "$out")
		bad=$(awk '/Non-2xx/ {print $NF}' "$out")
		p99=$(awk '$1 == "99%" {print $2}' "$out")
		bad=${bad:-0} req=${req:-0}
		REQ[$path]=$(( ${REQ[$path]:-0} + req )) BAD[$path]=$(( ${BAD[$path]:-0} + bad ))
		printf '%-6s %-8s %10s %10s %10s %s\n' "$round" "$path" "$req" "$bad" "$p99" "$load"
	done
done
for path in /livez /readyz; do
	echo "total $path: ${REQ[$path]} requests, ${BAD[$path]} non-2xx"
done
echo "transitions logged by the server: $(grep -c 'health status changed' "$WORK/server.log" || true) (to failed: $(grep 'health status changed' "$WORK/server.log" | grep -c 'to=failed' || true)); reasons of failures:"
grep 'health status changed' "$WORK/server.log" | grep 'to=failed' | sed -n 's/.*reason=//p' | sed 's/[0-9][0-9.]*m\?s/Xs/g; s/at [0-9T:Z-]*/at T/' | sort | uniq -c | sort -rn | head -5
