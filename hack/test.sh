#!/usr/bin/env bash
# The README's test command (make test): installs what is missing, starts the real services (full OpenStack
# tier unless VITALS_OPENSTACK_TIER says otherwise), runs every test with the race detector against them
# (VITALS_TESTENV_REQUIRED=1: a missing service fails a test instead of skipping it), and stops the services
# it started. Exits with go test's exit code.
# Env: VITALS_KEEP_TESTENV=1 leaves the services running afterwards; GO_TEST_FLAGS (default "-race -count=1");
#      TEST_PKGS (default ./..., as two runs: every package but test/e2e, then test/e2e).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
was_up=0
[ -f "$TESTENV_DIR/env" ] && was_up=1

# What each phase printed, kept for the digest at the end (outside the state directory, which down removes).
OUT=$ROOT/_out/test
mkdir -p "$OUT"; : > "$OUT/testenv-up.log"; : > "$OUT/go-test.out"

# digest: after the services are stopped, the last lines a CI log shows say why the run failed: the step
# that failed, the failed tests and packages (with the first lines of each failure), a panic or a race.
digest() {
  log "failure digest (full output above; also $OUT):"
  if grep -qE '^(--- FAIL|FAIL|panic:|WARNING: DATA RACE|fatal error:)' "$OUT/go-test.out"; then
    grep -E -A4 '^(--- FAIL|FAIL|panic:|WARNING: DATA RACE|fatal error:)' "$OUT/go-test.out" | cut -c1-300 | head -80 >&2
  elif [ -s "$OUT/go-test.out" ]; then
    tail -15 "$OUT/go-test.out" | cut -c1-300 >&2
  fi
  # Last, where a shortened log keeps them: what the failed tests asserted (a test's own file_test.go:N lines,
  # not the logs its components wrote through t.Log, which start with time= or a klog header).
  if grep -qE '^--- FAIL' "$OUT/go-test.out"; then
    log "what the failed tests said:"
    grep -E '^\s+[A-Za-z0-9_]+_test\.go:[0-9]+: ' "$OUT/go-test.out" |
      grep -vE '_test\.go:[0-9]+: (time=|[IWE][0-9]{4} )' | cut -c1-300 | tail -12 >&2 || true
  fi
  if [ -n "${failed_step:-}" ]; then
    log "failed step: $failed_step"
    [ "$failed_step" != "start test services" ] || tail -25 "$OUT/testenv-up.log" | cut -c1-300 >&2
  fi
}

cleanup() {
  local rc=$?
  # Leave services a developer had running before (make testenv-up) as they were.
  if [ "${VITALS_KEEP_TESTENV:-}" != 1 ] && [ $was_up = 0 ]; then
    step "stop test services" "$ROOT/hack/testenv.sh" down || true
  fi
  [ $rc = 0 ] || digest
  log "total: $(awk "BEGIN{printf \"%.0f\", $(_now) - $_LIB_T0}") s"
}
trap cleanup EXIT

failed_step="install dependencies"
VITALS_SKIP_GO_TOOLS=1 step "install dependencies" "$ROOT/hack/install-deps.sh"
failed_step="start test services"
step "start test services" "$ROOT/hack/testenv.sh" up "${VITALS_OPENSTACK_TIER:-full}" \
  2> >(tee "$OUT/testenv-up.log" >&2) >/dev/null
failed_step=
set -a; . "$TESTENV_DIR/env"; set +a
export VITALS_TESTENV_REQUIRED=1
rc=0
# test/e2e runs its long scenarios side by side (test/e2e/parallel_test.go), and still takes some 15-20 minutes
# under -race on 2 cores, past go test's default 10-minute limit per package. It runs after every other package,
# not beside them: its scenarios keep both cores busy, and test/node's kubelets, beside them, missed their waits
# (hack/README.md, "test/e2e side by side").
FLAGS=${GO_TEST_FLAGS:--race -count=1 -timeout 60m}
gotest() {  # gotest <what> <packages...>
  local what=$1; shift
  # shellcheck disable=SC2086
  step "go test $FLAGS $what" go test $FLAGS "$@" > >(tee -a "$OUT/go-test.out") 2>&1 || rc=$?
}
if [ -n "${TEST_PKGS:-}" ]; then
  # shellcheck disable=SC2086
  gotest "$TEST_PKGS" $TEST_PKGS
else
  mapfile -t pkgs < <(go list ./... | grep -v '/test/e2e$')
  gotest "./... but test/e2e" "${pkgs[@]}"
  gotest ./test/e2e ./test/e2e
fi
exit $rc
