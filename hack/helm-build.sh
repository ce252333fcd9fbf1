#!/usr/bin/env bash
# Builds the helm CLI from the tools module in hack/tools/helm (its own go.mod, never the project's) into a
# cache directory keyed by that module's go.mod + go.sum, and reuses it when present. There is no Debian helm
# package; helm is a Go module, so the module proxy is enough.
# Prints the path of the helm binary on stdout; progress on stderr.
# Concurrent runs wait for each other (flock), so CI can start a build early in the background.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TOOLS=$ROOT/hack/tools/helm
H=$(awk '$1=="helm.sh/helm/v3" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
[ -n "$H" ] || die "no helm.sh/helm/v3 requirement in $TOOLS/go.mod"
# The Kubernetes version helm assumes offline (helm template, helm lint) follows its client-go, as upstream's
# Makefile does it.
CG=$(awk '$1=="k8s.io/client-go" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
KMINOR=$(echo "${CG:-v0.20.0}" | cut -d. -f2)
KEY=$(cd "$TOOLS" && sha256sum go.sum go.mod | sha256sum | cut -c1-16)  # relative names: one cache for every checkout
OUT=$VITALS_CACHE/helm-$H-$KEY
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/helm-build.lock"
flock 9
if [ -x "$OUT/helm" ]; then
  log "reusing helm $H in $OUT"
  echo "$OUT/helm"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
LDF="-s -w -X helm.sh/helm/v3/internal/version.version=$H -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  LDF="$LDF -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$KMINOR"
done
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
step "build helm $H for Kubernetes 1.$KMINOR (cold: ~4.5 min on 2 cores)" \
  go build -trimpath -ldflags "$LDF" -o "$OUT.tmp/helm" helm.sh/helm/v3/cmd/helm
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "helm in $OUT"
echo "$OUT/helm"
