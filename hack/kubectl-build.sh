#!/usr/bin/env bash
# Builds kubectl from the tools module in hack/tools/kubectl (its own go.mod, never the project's: the versions
# and replace block of tools/kube, so that the Go build cache shares their packages) into a cache directory
# keyed by that module's go.mod + go.sum, and reuses it when present. The test of docs/getting-started.md runs
# the document's kubectl steps with it; the machine's own kubectl, if any, is never used.
# Prints the path of the kubectl binary on stdout; progress on stderr. Concurrent runs wait for each other.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TOOLS=$ROOT/hack/tools/kubectl
K=$(awk '$1=="k8s.io/kubernetes" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
[ -n "$K" ] || die "no k8s.io/kubernetes requirement in $TOOLS/go.mod"
KEY=$(cd "$TOOLS" && sha256sum go.sum go.mod | sha256sum | cut -c1-16)  # relative names: one cache for every checkout
OUT=$VITALS_CACHE/kubectl-$K-$KEY
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/kubectl-build.lock"
flock 9
if [ -x "$OUT/kubectl" ]; then
  log "reusing kubectl $K in $OUT"
  echo "$OUT/kubectl"; exit 0
fi
after_kube_apiserver
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
MINOR=$(echo "$K" | cut -d. -f2)
LDF="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDF="$LDF -X $p.gitVersion=$K -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
step "build kubectl $K (cold: ~3-5 min on 2 cores; less after kube-build.sh)" \
  go build -trimpath -ldflags "$LDF" -o "$OUT.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "kubectl in $OUT"
echo "$OUT/kubectl"
