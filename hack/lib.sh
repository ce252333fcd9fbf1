# Shared helpers for the hack/ scripts (sourced, not run).
# ROOT: repository root. TESTENV_DIR: state of the test services (default $ROOT/.testenv, gitignored).

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
TESTENV_DIR=${VITALS_TESTENV_DIR:-$ROOT/.testenv}
# Built kube-apiserver/etcd and other downloads live outside the repository, reused between runs.
VITALS_CACHE=${VITALS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vitals}
export VITALS_CACHE

_now() { date +%s.%N; }
_LIB_T0=${_LIB_T0:-$(_now)}
# log MSG: one progress line on stderr, prefixed with the script name and the seconds since it started.
log() { printf '[%s %6.1fs] %s\n' "${LOG_PREFIX:-$(basename "$0" .sh)}" "$(awk "BEGIN{print $(_now) - $_LIB_T0}")" "$*" >&2; }
# step NAME CMD...: run CMD, then print how long it took; fails like CMD.
step() {
  local name=$1 t rc=0; shift
  t=$(_now)
  log "$name ..."
  "$@" || rc=$?
  if [ $rc -eq 0 ]; then
    log "$name: done in $(awk "BEGIN{printf \"%.1f\", $(_now) - $t}") s"
  else
    log "$name: FAILED (exit $rc) after $(awk "BEGIN{printf \"%.1f\", $(_now) - $t}") s"
  fi
  return $rc
}
die() { log "ERROR: $*"; exit 1; }
# after_kube_apiserver: builds kube-apiserver first (hack/kube-build.sh: waits on its lock while it builds, reuses
# its output once built). For the other builds of the same Kubernetes module version (kube-controller-manager, the
# nodes', kubectl): many of their packages are kube-apiserver's, and the Go build cache then serves them instead
# of a second compile of the same packages beside the first.
after_kube_apiserver() { "$ROOT/hack/kube-build.sh" >/dev/null; }

# alive PID: the process exists.
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# stop_pids WAIT NAME=PID...: TERM every recorded process at once, wait up to WAIT seconds, then KILL what is
# left together with the direct children recorded before the TERM. Only the given PIDs are touched.
stop_pids() {
  local wait=$1 entry pid i left kids=""; shift
  for entry in "$@"; do
    pid=${entry#*=}; alive "$pid" || continue
    kids="$kids $(ps -o pid= --ppid "$pid" 2>/dev/null | tr '\n' ' ')"
    kill -TERM "$pid" 2>/dev/null || true
  done
  left=""
  for i in $(seq 1 $((wait * 10))); do
    left=""; for entry in "$@"; do alive "${entry#*=}" && left="$left $entry"; done
    [ -z "$left" ] && break; sleep 0.1
  done
  for entry in $left; do log "${entry%%=*} (${entry#*=}) ignored TERM for ${wait}s: KILL"; kill -KILL "${entry#*=}" 2>/dev/null || true; done
  for pid in $kids; do alive "$pid" && kill -KILL "$pid" 2>/dev/null || true; done
  for entry in "$@"; do log "stopped ${entry%%=*} (${entry#*=})"; done
}

# stop_pidfile WAIT NAME FILE: stop the process whose PID FILE holds, then remove FILE.
stop_pidfile() {
  local wait=$1 name=$2 f=$3
  [ -f "$f" ] || return 0
  stop_pids "$wait" "$name=$(cat "$f")"
  rm -f "$f"
}

# wait_http NAME URL TIMEOUT_S [CODES]: wait until URL answers with one of CODES (default 200 300 401).
wait_http() {
  local name=$1 url=$2 tmo=$3 codes=" ${4:-200 300 401} " i code
  for i in $(seq 1 $((tmo * 4))); do
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" 2>/dev/null || true)
    [[ "$codes" == *" $code "* ]] && { log "$name answers ($code)"; return 0; }
    sleep 0.25
  done
  log "$name did not answer at $url within $tmo s"; return 1
}

# bgproc NAME CMD...: start a long-running process in the background, its log in $DIR/NAME.log and its PID in
# $DIR/NAME.pid (DIR: the calling script's state directory).
bgproc() {
  local name=$1; shift
  nohup "$@" < /dev/null >> "$DIR/$name.log" 2>&1 &
  echo $! > "$DIR/$name.pid"
}

# wait_for NAME TIMEOUT_S CMD...: until CMD succeeds, failing early when NAME's process (bgproc) died.
wait_for() {
  local name=$1 tmo=$2 i; shift 2
  for i in $(seq 1 $((tmo * 10))); do
    "$@" && { log "$name ready"; return 0; }
    alive "$(cat "$DIR/$name.pid")" || { tail -20 "$DIR/$name.log" >&2; die "$name died; see $DIR/$name.log"; }
    sleep 0.1
  done
  tail -20 "$DIR/$name.log" >&2; die "$name not ready after $tmo s; see $DIR/$name.log"
}
