#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker and rule unit-test runner) from the tools module in
# hack/tools/promtool (its own go.mod, never the project's) into a cache directory keyed by that module's
# go.mod + go.sum, and reuses it when present. promtool is a Go module, so the module proxy is enough.
# The service discovery plugins are left out (build tag remove_all_sd): the chart's rules need none of them.
# Prints the path of the promtool binary on stdout; progress on stderr.
# Concurrent runs wait for each other (flock), so CI can start a build early in the background.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TOOLS=$ROOT/hack/tools/promtool
P=$(awk '$1=="github.com/prometheus/prometheus" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
[ -n "$P" ] || die "no github.com/prometheus/prometheus requirement in $TOOLS/go.mod"
KEY=$(cd "$TOOLS" && sha256sum go.sum go.mod | sha256sum | cut -c1-16)  # relative names: one cache for every checkout
OUT=$VITALS_CACHE/promtool-$P-$KEY
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/promtool-build.lock"
flock 9
if [ -x "$OUT/promtool" ]; then
  log "reusing promtool $P in $OUT"
  echo "$OUT/promtool"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
# The module's v0.3XX.Y stands for Prometheus 3.XX.Y.
V=$(echo "$P" | sed -E 's/^v0\.3([0-9][0-9])\.([0-9]+).*/3.\1.\2/; s/^3\.0([0-9])/3.\1/')
LDF="-s -w -X github.com/prometheus/common/version.Version=$V -X github.com/prometheus/common/version.Branch=module"
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
step "build promtool $P (cold: ~3 min on 2 cores)" \
  go build -trimpath -tags remove_all_sd -ldflags "$LDF" -o "$OUT.tmp/promtool" github.com/prometheus/prometheus/cmd/promtool
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "promtool in $OUT"
echo "$OUT/promtool"
