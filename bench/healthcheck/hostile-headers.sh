#!/usr/bin/env bash
# Peak memory of one run against a hostile server that answers 200 with a header of SIZE_MIB MiB
# (lines "X-Pad: aaa..." of LINE bytes, sent as fast as the client reads), for healthcheck and curl -f.
#   RUNS=10 SIZE_MIB=64 LINE=1000 bench/healthcheck/hostile-headers.sh [HEALTHCHECK_BINARY]
# Needs: go, curl, python3, GNU time (/usr/bin/time). Prints one Markdown table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUNS=${RUNS:-10}
SIZE_MIB=${SIZE_MIB:-64}
LINE=${LINE:-1000}
W=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
HC=${1:-}
if [ -z "$HC" ]; then
  HC=$W/healthcheck
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -tags nethttpomithttp2 -o "$HC" ./cmd/healthcheck)
fi
python3 - "$SIZE_MIB" "$LINE" >"$W/port" 2>/dev/null <<'PY' &
import socket, sys, threading
size = int(sys.argv[1]) << 20
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
line = b"X-Pad: " + b"a" * max(1, int(sys.argv[2]) - 9) + b"\r\n"
def serve(c):
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\n")
        sent = 0
        while sent < size:
            c.sendall(line * 64); sent += len(line) * 64
        c.sendall(b"Content-Length: 3\r\n\r\nok\n")
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pid=$!
for _ in $(seq 50); do [ -s "$W/port" ] && break; sleep 0.1; done
URL="http://127.0.0.1:$(cat "$W/port")/health"
measure() { # name, command...
  local name=$1; shift
  : >"$W/rss"
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f %M -o "$W/one" "$@" >"$W/out" 2>&1 || true
    tail -n1 "$W/one" >>"$W/rss"
  done
  python3 - "$name" "$W/rss" "$(tail -n1 "$W/out" | cut -c1-90)" <<'PY'
import statistics, sys
v = [int(x) for x in open(sys.argv[2]).read().split() if x.isdigit()]
print(f"| {sys.argv[1]} | {statistics.median(v)/1024:.1f} / {max(v)/1024:.1f} MiB | {sys.argv[3]} |")
PY
}
echo "Header of $SIZE_MIB MiB in lines of $LINE bytes; peak RSS (/usr/bin/time -f %M) median / max of $RUNS runs; $(nproc) cores, $(uname -sr)."
echo
echo "| contender | peak RSS | last line |"
echo "|---|---|---|"
measure '`healthcheck http URL`' "$HC" http "$URL"
measure '`curl -fsS URL`' curl -fsS -o /dev/null "$URL"
