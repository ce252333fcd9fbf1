#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the tools module in hack/tools/kube (its own go.mod, never the project's)
# into a cache directory keyed by that module's go.mod + go.sum, and reuses them when present.
# Prints the directory holding both binaries (usable as KUBEBUILDER_ASSETS) on stdout; progress on stderr.
# Concurrent runs wait for each other (flock), so CI can start a build early in the background.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TOOLS=$ROOT/hack/tools/kube
K=$(awk '$1=="k8s.io/kubernetes" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
E=$(awk '$1=="go.etcd.io/etcd/server/v3" && NF>=2{print $2}' "$TOOLS/go.mod" | head -1)
[ -n "$K" ] || die "no k8s.io/kubernetes requirement in $TOOLS/go.mod"
KEY=$(cd "$TOOLS" && sha256sum go.sum go.mod | sha256sum | cut -c1-16)  # relative names: one cache for every checkout
OUT=$VITALS_CACHE/kube-$K-$KEY
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/kube-build.lock"
flock 9
if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; then
  log "reusing kube-apiserver $K + etcd $E in $OUT"
  echo "$OUT"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
MINOR=$(echo "$K" | cut -d. -f2)
LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
step "build kube-apiserver $K (cold: ~8-12 min on 2 cores)" \
  go build -trimpath -ldflags "$LDF" -o "$OUT.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
step "build etcd $E" go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/etcd" go.etcd.io/etcd/server/v3
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "binaries in $OUT"
echo "$OUT"
