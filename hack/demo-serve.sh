#!/usr/bin/env bash
# Demo of Vitals' standalone health server: build bin/vitals, run
#   vitals serve --config examples/serve.yaml
# show its endpoints with curl, then stop it with SIGTERM and show the drain.
# Usage: hack/demo-serve.sh [CONFIG]   (the config must listen on 127.0.0.1:8080 unless ADDR is set)
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=${1:-examples/serve.yaml}
ADDR=${ADDR:-127.0.0.1:8080}
BIN=${BIN:-bin/vitals}
LOG=$(mktemp -t vitals-serve-demo.XXXXXX.log)

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "build $BIN"
go build -o "$BIN" ./cmd/vitals

step "start: $BIN serve --config $CONFIG --listen $ADDR   (logs: $LOG)"
"$BIN" serve --config "$CONFIG" --listen "$ADDR" >"$LOG" 2>&1 &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; }
trap cleanup EXIT

# Wait until every readiness check has passed once (or give up after 20s and show why).
for _ in $(seq 1 200); do
	if ! kill -0 "$PID" 2>/dev/null; then
		echo "vitals serve exited:"; cat "$LOG"; exit 1
	fi
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/readyz" || true)
	[ "$code" = 200 ] && break
	sleep 0.1
done

show() { # show METHOD PATH [curl args...]
	local method=$1 path=$2; shift 2
	step "$method http://$ADDR$path $*"
	if [ "$method" = HEAD ]; then
		curl -s -o /dev/null -I -w 'HTTP %{http_code}\n' "http://$ADDR$path" "$@"
	else
		curl -s -w '\n(HTTP %{http_code})\n' "http://$ADDR$path" "$@"
	fi
}

show GET /livez
show GET '/readyz?verbose'
show GET '/livez?verbose'
show GET /readyz/tcp-self
show GET /readyz -H 'Accept: application/json'
show HEAD /readyz
step "GET http://$ADDR/metrics (excerpt)"
curl -s "http://$ADDR/metrics" | grep -E '^vitals_health_(check_status|probe_status)' | head -12

step "SIGTERM: readiness fails at once, liveness holds for the drain delay"
kill -TERM "$PID"
sleep 0.3
curl -s -o /dev/null -w '/readyz during drain: HTTP %{http_code}\n' "http://$ADDR/readyz" || true
curl -s -o /dev/null -w '/livez  during drain: HTTP %{http_code}\n' "http://$ADDR/livez" || true
wait "$PID" && echo "exited cleanly (code 0)"
trap - EXIT

step "server log"
cat "$LOG"
rm -f "$LOG"
