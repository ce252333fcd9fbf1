#!/usr/bin/env bash
# A private Docker engine for tests: its own socket, data-root, exec-root and pidfile under STATE_DIR, no
# bridge and no iptables rules (containers use --network none or host), overlay2 storage.
# Usage: hack/docker.sh start [STATE_DIR]   prints the DOCKER_HOST value (unix://...) on stdout
#        hack/docker.sh stop  [STATE_DIR]   stops the dockerd start recorded (by PID)
# STATE_DIR defaults to $TESTENV_DIR/docker.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
CMD=${1:-}; DIR=${2:-$TESTENV_DIR/docker}

stop() { stop_pidfile 20 dockerd "$DIR/dockerd.launcher.pid"; rm -f "$DIR/dockerd.pid"; }

start() {
  local sock i
  command -v dockerd >/dev/null || die "dockerd missing: run hack/install-deps.sh"
  mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
  if [ -f "$DIR/dockerd.launcher.pid" ] && alive "$(cat "$DIR/dockerd.launcher.pid")"; then
    die "dockerd already running (pid $(cat "$DIR/dockerd.launcher.pid")); run: $0 stop $DIR"
  fi
  sock=$DIR/docker.sock
  [ ${#sock} -lt 100 ] || die "socket path too long for a unix socket: $sock (set VITALS_TESTENV_DIR to a shorter path)"
  mkdir -p "$DIR/data" "$DIR/exec"
  nohup dockerd --data-root "$DIR/data" --exec-root "$DIR/exec" --pidfile "$DIR/dockerd.pid" \
    -H "unix://$sock" --iptables=false --ip6tables=false --bridge=none --storage-driver overlay2 \
    < /dev/null >> "$DIR/dockerd.log" 2>&1 &
  echo $! > "$DIR/dockerd.launcher.pid"
  for i in $(seq 1 300); do
    docker -H "unix://$sock" version >/dev/null 2>&1 && break
    alive "$(cat "$DIR/dockerd.launcher.pid")" || { tail -20 "$DIR/dockerd.log" >&2; die "dockerd died; see $DIR/dockerd.log"; }
    sleep 0.1
  done
  docker -H "unix://$sock" version >/dev/null 2>&1 || { stop; die "dockerd not ready after 30 s; see $DIR/dockerd.log"; }
  log "dockerd $(docker -H "unix://$sock" version -f '{{.Server.Version}}') ready on unix://$sock"
  echo "unix://$sock"
}

case $CMD in
  start) step "start dockerd ($DIR)" start ;;
  stop) step "stop dockerd ($DIR)" stop ;;
  *) echo "usage: $0 start|stop [STATE_DIR]" >&2; exit 2 ;;
esac
