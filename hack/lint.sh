#!/usr/bin/env bash
# Linters (make lint): gofmt must list no file, go vet and staticcheck (pinned) must pass.
# Args: packages (default ./...).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
PKGS=("${@:-./...}")
gofmt_check() {
  local out
  out=$(gofmt -l $(git ls-files -co --exclude-standard '*.go' 2>/dev/null || find . -name '*.go' -not -path './.testenv/*'))
  [ -z "$out" ] || { echo "gofmt -l lists files that need formatting:" >&2; echo "$out" >&2; return 1; }
}
rc=0
step "gofmt -l" gofmt_check || rc=1
# -race: the packages vet compiles for their export data are then the ones `go test -race` (make test) links,
# from the build cache. Measured cold on ./workload (hack/README.md): vet then test's compile 273 + 218 s plain,
# 215 + 35 s with -race. No file of the project is built only without the race detector.
step "go vet -race ${PKGS[*]}" go vet -race "${PKGS[@]}" || rc=1
# staticcheck reads its dependencies' export data through go list: with -race in GOFLAGS that is what go vet -race
# compiled just now (its cache), instead of a second, plain compile of every dependency. staticcheck itself is built
# plainly (go run with that GOFLAGS would build it with the race detector, several times slower).
staticcheck_race() {
  GOBIN="$VITALS_CACHE/go-tools" go install honnef.co/go/tools/cmd/staticcheck@v0.7.0 &&
    GOFLAGS="${GOFLAGS:+$GOFLAGS }-race" "$VITALS_CACHE/go-tools/staticcheck" "$@"
}
step "staticcheck ${PKGS[*]}" staticcheck_race "${PKGS[@]}" || rc=1
exit $rc
