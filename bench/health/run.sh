#!/usr/bin/env bash
# Benchmark of health endpoints: Vitals' health manager against the Kubernetes apiserver's healthz,
# controller-runtime's healthz, alexliesenfeld/health (synchronous and periodic checks) and a floor
# (a bare net/http handler writing "ok"). Each serves the same 10 checks of 2 ms each, in its own
# process on its own loopback port; wrk loads /readyz, /readyz?verbose (and Vitals' JSON) at 1, 64
# and 512 connections; the server's CPU time is read from /proc/<pid>/stat around each run; runs are
# interleaved between contenders and repeated, and the report shows medians.
# Then in-process allocations per request (go test -bench), then the CPU of Vitals' background
# runner for 100 checks at a 10 s interval.
#
# Usage: bench/health/run.sh            (env: DURATION=3s REPEAT=3 CONNS="1 64 512" RUNNER_SECONDS=60
#                                              CONTENDERS="floor vitals ..." SKIP_RUNNER=1)
set -euo pipefail
cd "$(dirname "$0")"

DURATION=${DURATION:-3s}
REPEAT=${REPEAT:-3}
CONNS=${CONNS:-"1 64 512"}
RUNNER_SECONDS=${RUNNER_SECONDS:-60}
CONTENDERS=${CONTENDERS:-"floor vitals apiserver controller-runtime alexliesenfeld alexliesenfeld-periodic"}
BASE_PORT=${BASE_PORT:-18480}
command -v wrk >/dev/null || { echo "wrk not found (Debian: apt-get install wrk)" >&2; exit 1; }

WORK=$(mktemp -d -t vitals-bench-health.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
BIN=$WORK/healthbench
go build -o "$BIN" ./cmd/healthbench
CLK_TCK=$(getconf CLK_TCK)
RESULTS=$WORK/results.tsv
: >"$RESULTS"

echo "# machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# cpu_ticks PID: user+system CPU ticks of the process (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

# Start every contender at once (one process each), then interleave the runs: for each repetition,
# connection count and path, each contender in turn (in an order rotated every repetition), so that
# a change of the machine's load hits all of them alike. The report gives the median of the
# repetitions.
declare -A PID ADDR
port=$BASE_PORT
for c in $CONTENDERS; do
	port=$((port + 1))
	ADDR[$c]=127.0.0.1:$port
	"$BIN" serve -contender "$c" -addr "${ADDR[$c]}" >"$WORK/$c.out" 2>&1 &
	PID[$c]=$!
done
for c in $CONTENDERS; do
	for _ in $(seq 1 300); do grep -q '^ready' "$WORK/$c.out" 2>/dev/null && break; sleep 0.1; done
	grep -q '^ready' "$WORK/$c.out" || { echo "$c did not start:"; cat "$WORK/$c.out"; exit 1; }
	wrk -t1 -c8 -d1s "http://${ADDR[$c]}/readyz" >/dev/null # warm up
	"$BIN" paths -contender "$c" >"$WORK/$c.paths"
done

read -r -a ALL <<<"$CONTENDERS"
for rep in $(seq 1 "$REPEAT"); do
	# Rotate the order each repetition: the contender that runs right after a 512-connection run
	# pays part of its teardown, so no contender may always follow the same one.
	shift_by=$(((rep - 1) % ${#ALL[@]}))
	ORDER=("${ALL[@]:shift_by}" "${ALL[@]:0:shift_by}")
	for key in readyz verbose json; do
		for n in $CONNS; do
			for c in "${ORDER[@]}"; do
				path=$(awk -v k="$key" '$1 == k {print $2}' "$WORK/$c.paths")
				[ -n "$path" ] || continue
				pid=${PID[$c]} addr=${ADDR[$c]}
				threads=$((n < 2 ? 1 : 2))
				t0=$(cpu_ticks "$pid")
				wrk -t"$threads" -c"$n" -d"$DURATION" --latency "http://$addr$path" >"$WORK/wrk.out"
				t1=$(cpu_ticks "$pid")
				requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
				secs=$(awk '/requests in/ {sub(/s,$/, "", $4); print $4}' "$WORK/wrk.out")
				rps=$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk.out")
				p50=$(awk '$1 == "50%" {print $2}' "$WORK/wrk.out")
				p99=$(awk '$1 == "99%" {print $2}' "$WORK/wrk.out")
				errs=$(awk '/Non-2xx|Socket errors/ {printf "%s ", $0}' "$WORK/wrk.out")
				cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" 'BEGIN { printf "%.3f", (b - a) / hz }')
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$key" "$path" "$n" "$requests" "$secs" "$rps" "$p50" "$p99" "$cpu" "$errs" >>"$RESULTS"
				printf '  [%s/%s] %-24s %-22s c=%-3s %10s req/s  p50 %-8s p99 %-8s cpu %ss %s\n' "$rep" "$REPEAT" "$c" "$path" "$n" "$rps" "$p50" "$p99" "$cpu" "$errs" >&2
			done
		done
	done
done
for c in $CONTENDERS; do kill "${PID[$c]}"; done
wait 2>/dev/null || true

echo
echo "## Served over HTTP: wrk -d$DURATION, median of $REPEAT interleaved runs, one server process per contender, CPU of the server only"
"$BIN" report <"$RESULTS"

echo
echo "## In-process, httptest recorder: go test -bench . -benchmem ./contenders/"
go test -run XXX -bench . -benchmem -benchtime "${BENCHTIME:-2s}" ./contenders/ | grep -E '^Benchmark|^ok'

if [ -z "${SKIP_RUNNER:-}" ]; then
	echo
	echo "## Background runner"
	"$BIN" runner -checks 100 -interval 10s -duration "${RUNNER_SECONDS}s"
fi
