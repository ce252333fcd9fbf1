#!/usr/bin/env bash
# Container healthcheck benchmark: wall time (hyperfine) and peak RSS (/usr/bin/time -f %M) per
# invocation, side by side in one run, against the same local endpoint:
#   healthcheck http   vs   curl -fsS   vs   TripleO-style bash + curl (set -euo pipefail)
#   (and a minimal static Go GET, the floor of any Go checker)
#   healthcheck listen vs   bash + /proc (port-check.sh)
# plus the binary's size. Prints a Markdown report (also written to $OUT).
#   RUNS=300 OUT=/tmp/healthcheck-bench.md bench/healthcheck/run.sh
# Needs: go, curl, hyperfine, GNU time (/usr/bin/time), python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
RUNS=${RUNS:-300}
WARMUP=${WARMUP:-20}
RSS_RUNS=${RSS_RUNS:-30}
W=$(mktemp -d)
OUT=${OUT:-$W/report.md}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"; }
trap cleanup EXIT
for t in go curl hyperfine python3 /usr/bin/time; do command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 1; }; done

# ---- binaries: our healthcheck (as `make healthcheck` builds it, and with HTTP/2 left out),
# ---- a tiny local HTTP service, and a minimal static Go GET (the floor)
(cd "$root" &&
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$W/healthcheck" ./cmd/healthcheck &&
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -tags nethttpomithttp2 -o "$W/healthcheck-noh2" ./cmd/healthcheck)
mkdir -p "$W/src/svc" "$W/src/minget"
printf 'module benchsrc\n\ngo 1.22\n' >"$W/src/go.mod"
cat >"$W/src/svc/main.go" <<'GO'
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	log.Fatal(http.Serve(l, nil))
}
GO
cat >"$W/src/minget/main.go" <<'GO'
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	r, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println("unhealthy:", err)
		os.Exit(1)
	}
	r.Body.Close()
	if r.StatusCode >= 400 {
		fmt.Println("unhealthy:", r.StatusCode)
		os.Exit(1)
	}
	fmt.Println("healthy:", r.StatusCode)
}
GO
(cd "$W/src" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$W/vitals-bench-svc" ./svc &&
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$W/minget" ./minget)
mkfifo "$W/port.fifo"
"$W/vitals-bench-svc" >"$W/port.fifo" 2>"$W/svc.log" &
pids+=($!)
read -r PORT <"$W/port.fifo"
URL="http://127.0.0.1:$PORT/health"
HC=$W/healthcheck
# Everything must pass before it is timed.
"$HC" http "$URL" >/dev/null
curl -fsS "$URL" >/dev/null
"$here/tripleo-healthcheck-curl.sh" "$URL" >/dev/null
"$W/minget" "$URL" >/dev/null
"$HC" listen vitals-bench-svc "$PORT" >/dev/null
"$here/port-check.sh" vitals-bench-svc "$PORT" >/dev/null

names=(hc_http curl_fsS tripleo_curl minimal_go_get hc_noh2_http hc_listen hc_port bash_proc_listen)
declare -A cmd=(
  [hc_http]="$HC http $URL"
  [hc_noh2_http]="$W/healthcheck-noh2 http $URL"
  [curl_fsS]="curl -fsS $URL"
  [tripleo_curl]="$here/tripleo-healthcheck-curl.sh $URL"
  [minimal_go_get]="$W/minget $URL"
  [hc_listen]="$HC listen vitals-bench-svc $PORT"
  [hc_port]="$HC port vitals-bench-svc $PORT"
  [bash_proc_listen]="$here/port-check.sh vitals-bench-svc $PORT"
)
args=()
for n in "${names[@]}"; do args+=(-n "$n" "${cmd[$n]}"); done
# Interleaved is not possible with hyperfine; run the HTTP group and the port group each in one
# invocation so that they share the machine's state as closely as possible.
hyperfine -N -w "$WARMUP" -r "$RUNS" --export-json "$W/wall.json" "${args[@]}" >"$W/hyperfine.txt" 2>&1

for n in "${names[@]}"; do
  : >"$W/rss.$n"
  for _ in $(seq "$RSS_RUNS"); do
    # shellcheck disable=SC2086
    /usr/bin/time -f %M -o "$W/one" ${cmd[$n]} >/dev/null 2>&1 || true
    cat "$W/one" >>"$W/rss.$n"
  done
done

# Package init cost (GODEBUG=inittrace=1 sums), median of 20 runs, ours vs the minimal GET.
for n in healthcheck minget; do
  : >"$W/init.$n"
  for _ in $(seq 20); do
    if [ "$n" = healthcheck ]; then a=(http "$URL"); else a=("$URL"); fi
    GODEBUG=inittrace=1 "$W/$n" "${a[@]}" 2>&1 >/dev/null |
      awk '/^init /{for(i=1;i<=NF;i++) if($(i+1)=="ms" && $(i+2)=="clock,") s+=$i} END{printf "%.3f\n", s}' >>"$W/init.$n"
  done
done

python3 - "$W" "$OUT" "$RUNS" "$RSS_RUNS" "${names[@]}" <<'PY'
import json, os, platform, statistics, subprocess, sys, datetime
w, out, runs, rss_runs, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
res = {r["command"]: r for r in json.load(open(os.path.join(w, "wall.json")))["results"]}
def med(n): return statistics.median(res[n]["times"]) * 1000
def p90(n):
    t = sorted(res[n]["times"]); return t[int(len(t) * 0.9) - 1] * 1000
def cpums(n): return (res[n]["user"] + res[n]["system"]) * 1000
def initms(n):
    return statistics.median(float(x) for x in open(os.path.join(w, "init." + n)).read().split())
def rss(n):
    v = [int(x) for x in open(os.path.join(w, "rss." + n)).read().split() if x.strip().isdigit()]
    return statistics.median(v) / 1024, max(v) / 1024
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
gov = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip()
curlv = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0].split(" (")[0]
size = os.path.getsize(os.path.join(w, "healthcheck")); size2 = os.path.getsize(os.path.join(w, "healthcheck-noh2"))
label = {
 "hc_http": "`healthcheck http URL`", "hc_noh2_http": "`healthcheck http URL` (built with `-tags nethttpomithttp2`)",
 "curl_fsS": "`curl -fsS URL`", "tripleo_curl": "TripleO-style bash `set -euo pipefail` + `curl -g -k -q -s -S --fail --max-time 10 ...`",
 "minimal_go_get": "minimal static Go `http.Get` (floor)", "hc_listen": "`healthcheck listen vitals-bench-svc PORT`",
 "hc_port": "`healthcheck port vitals-bench-svc PORT`", "bash_proc_listen": "bash + /proc (`port-check.sh`)"}
base = {"hc_http": "curl_fsS", "hc_noh2_http": "curl_fsS", "curl_fsS": "curl_fsS", "tripleo_curl": "curl_fsS",
        "minimal_go_get": "curl_fsS", "hc_listen": "bash_proc_listen", "hc_port": "bash_proc_listen", "bash_proc_listen": "bash_proc_listen"}
L = []
L.append(f"Measured {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} on {os.cpu_count()} cores ({cpu}), "
         f"{platform.system()} {platform.release()}, {gov}, {curlv}; hyperfine -N, {runs} runs after warm-up; "
         f"peak RSS from `/usr/bin/time -f %M`, {rss_runs} runs. The machine was shared with other work.")
L.append("")
L.append("| contender | median wall | p90 wall | × baseline (median) | CPU user+sys (mean) | peak RSS median / max |")
L.append("|---|---|---|---|---|---|")
for n in names:
    b = base[n]; r = rss(n)
    L.append(f"| {label[n]} | {med(n):.2f} ms | {p90(n):.2f} ms | {med(n)/med(b):.2f}× {'curl' if b=='curl_fsS' else 'bash'} | {cpums(n):.2f} ms | {r[0]:.1f} / {r[1]:.1f} MiB |")
L.append("")
L.append(f"Binary size (`CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' ./cmd/healthcheck`): {size} bytes = {size/2**20:.2f} MiB; "
         f"with `-tags nethttpomithttp2`: {size2} bytes = {size2/2**20:.2f} MiB.")
L.append("")
L.append(f"Go package init (GODEBUG=inittrace=1, sum of clock, median of 20): healthcheck {initms('healthcheck'):.3f} ms, "
         f"minimal Go GET {initms('minget'):.3f} ms.")
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
echo
echo "(report written to $OUT; hyperfine output: $W/hyperfine.txt is removed at exit)"
