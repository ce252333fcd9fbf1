#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the tools module in hack/tools/kube (its own go.mod, never the project's)
# into a cache directory keyed by that module's go.sum, and reuses them when present.
# Prints the directory holding both binaries (usable as KUBEBUILDER_ASSETS).
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$HERE/tools/kube
K=$(sed -n 's/^\tk8s.io\/kubernetes v\(.*\) \/\/ indirect$/v\1/p' "$TOOLS/go.mod" | head -1)
[ -n "$K" ] || K=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$TOOLS/go.mod" | head -1)
KEY=$(sha256sum "$TOOLS/go.sum" "$TOOLS/go.mod" | sha256sum | cut -c1-16)
CACHE=${VITALS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vitals}
OUT=$CACHE/kube-$K-$KEY
if [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/etcd" ]; then
  echo "kube-build: reusing $OUT" >&2
  echo "$OUT"; exit 0
fi
mkdir -p "$OUT.tmp"
MINOR=$(echo "$K" | cut -d. -f2)
LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
T0=$(date +%s)
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
echo "kube-build: building kube-apiserver $K (cold: ~8 min on 2 cores)" >&2
go build -trimpath -ldflags "$LDF" -o "$OUT.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
echo "kube-build: building etcd" >&2
go build -trimpath -ldflags "-s -w" -o "$OUT.tmp/etcd" go.etcd.io/etcd/server/v3
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
echo "kube-build: done in $(( $(date +%s) - T0 )) s -> $OUT" >&2
echo "$OUT"
