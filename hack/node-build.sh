#!/usr/bin/env bash
# Builds the test node's Kubernetes binaries from the tools module in hack/tools/node (its own go.mod, never the
# project's): kubelet, kube-proxy (Services: the in-cluster API address of the chart's pods) and kube-scheduler
# (the chart's DaemonSet and Deployment pods are bound by it), all of Kubernetes v1.37.1 like kube-apiserver.
# The module has exactly the replace block and versions of tools/kube and tools/kcm, so the Go build cache
# shares their compiled Kubernetes packages; a module of its own so that changing it never rebuilds
# kube-apiserver or kube-controller-manager (hack/kube-build.sh and hack/cloud-build.sh key on theirs).
# kube-controller-manager comes from hack/cloud-build.sh; kube-apiserver and etcd from hack/kube-build.sh.
# Into a cache directory keyed by the module's go.mod + go.sum, reused when present.
# Prints the directory holding the three binaries on stdout; progress on stderr.
# Concurrent runs wait for each other (flock), so CI can start a build early in the background.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
TOOLS=$ROOT/hack/tools/node
K=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2}' "$TOOLS/go.mod" | head -1)
[ -n "$K" ] || die "no k8s.io/kubernetes requirement in $TOOLS/go.mod"
KEY=$(cd "$TOOLS" && sha256sum go.sum go.mod | sha256sum | cut -c1-16)  # relative names: one cache for every checkout
OUT=$VITALS_CACHE/node-$K-$KEY
BINS="kubelet kube-proxy kube-scheduler"
have() { local b; for b in $BINS; do [ -x "$OUT/$b" ] || return 1; done; }
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/node-build.lock"
flock 9
if have; then
  log "reusing kubelet, kube-proxy and kube-scheduler $K in $OUT"
  echo "$OUT"; exit 0
fi
after_kube_apiserver
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
MINOR=$(echo "$K" | cut -d. -f2)
LDF="-s -w -X k8s.io/component-base/version.gitVersion=$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
cd "$TOOLS"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
# one go build for the three: their packages compile once, in parallel
step "build kubelet, kube-proxy and kube-scheduler $K (cold: see hack/README.md)" \
  go build -trimpath -ldflags "$LDF" -o "$OUT.tmp/" \
  k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "binaries in $OUT"
echo "$OUT"
