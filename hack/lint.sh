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
step "staticcheck ${PKGS[*]}" go run honnef.co/go/tools/cmd/staticcheck@v0.7.0 "${PKGS[@]}" || rc=1
exit $rc
