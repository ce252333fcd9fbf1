#!/usr/bin/env bash
# Builds the controllers of a workload cluster that the deorbit end-to-end tests need, each from its own tools
# module (never the project's go.mod):
#   tools/kcm          kube-controller-manager (same Kubernetes as tools/kube; PV binder, garbage collector)
#   tools/cpo          openstack-cloud-controller-manager + cinder-csi-plugin (k8s.io/cloud-provider-openstack)
#   tools/csi          csi-provisioner (github.com/kubernetes-csi/external-provisioner/v5), csi-snapshotter and
#                      snapshot-controller (github.com/kubernetes-csi/external-snapshotter/v8), and the
#                      VolumeSnapshot CRDs of the external-snapshotter client module they are built with (crds/)
# into one cache directory keyed by the go.mod + go.sum of the three modules, and reuses it when present.
# A separate module from tools/kube: changing this stack never rebuilds kube-apiserver (hack/kube-build.sh keys on
# that module alone).
# Prints the directory holding the six binaries and crds/ on stdout; progress on stderr.
# Concurrent runs wait for each other (flock), so CI can start a build early in the background.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
T=$ROOT/hack/tools
# req MODULE PATH: the version MODULE's go.mod requires of PATH (block or single-line require).
req() { awk -v m="$2" '$1=="require"{$1=""; $0=$0} $1==m && $2 ~ /^v/ {print $2}' "$T/$1/go.mod" | head -1; }
K=$(req kcm k8s.io/kubernetes)
C=$(req cpo k8s.io/cloud-provider-openstack)
P=$(req csi github.com/kubernetes-csi/external-provisioner/v5)
S=$(req csi github.com/kubernetes-csi/external-snapshotter/v8)
[ -n "$K" ] && [ -n "$C" ] && [ -n "$P" ] && [ -n "$S" ] || die "a version is missing in $T/{kcm,cpo,csi}/go.mod"
# relative paths: the same modules give the same key in every checkout
KEY=$(cd "$T" && sha256sum kcm/go.{mod,sum} cpo/go.{mod,sum} csi/go.{mod,sum} | sha256sum | cut -c1-16)
OUT=$VITALS_CACHE/cloud-$K-$C-$KEY
BINS="kube-controller-manager openstack-cloud-controller-manager cinder-csi-plugin csi-provisioner csi-snapshotter
  snapshot-controller"
have() { local b; for b in $BINS; do [ -x "$OUT/$b" ] || return 1; done; [ -f "$OUT/crds/volumesnapshots.yaml" ]; }
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/cloud-build.lock"
flock 9
if have; then
  log "reusing kube-controller-manager $K, cloud-provider-openstack $C, csi-provisioner $P, external-snapshotter $S in $OUT"
  echo "$OUT"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
MINOR=$(echo "$K" | cut -d. -f2)
KLDF="-s -w -X k8s.io/component-base/version.gitVersion=$K -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
CLDF="-s -w -X k8s.io/cloud-provider-openstack/pkg/version.Version=$C -X k8s.io/component-base/version.gitVersion=$C"
(cd "$T/cpo" && step "build openstack-cloud-controller-manager $C (cold: ~4-6 min)" \
  go build -trimpath -ldflags "$CLDF" -o "$OUT.tmp/openstack-cloud-controller-manager" \
  k8s.io/cloud-provider-openstack/cmd/openstack-cloud-controller-manager)
(cd "$T/cpo" && step "build cinder-csi-plugin $C" \
  go build -trimpath -ldflags "$CLDF" -o "$OUT.tmp/cinder-csi-plugin" k8s.io/cloud-provider-openstack/cmd/cinder-csi-plugin)
(cd "$T/csi" && step "build csi-provisioner $P (cold: ~2-3 min)" \
  go build -trimpath -ldflags "-s -w -X main.version=$P" -o "$OUT.tmp/csi-provisioner" \
  github.com/kubernetes-csi/external-provisioner/v5/cmd/csi-provisioner)
(cd "$T/csi" && step "build csi-snapshotter + snapshot-controller $S" \
  go build -trimpath -ldflags "-s -w -X main.version=$S" -o "$OUT.tmp/" \
  github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter \
  github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller)
# kube-controller-manager last, after kube-apiserver's build
after_kube_apiserver
(cd "$T/kcm" && step "build kube-controller-manager $K (cold: ~2-4 min on 2 cores after kube-apiserver's)" \
  go build -trimpath -ldflags "$KLDF" -o "$OUT.tmp/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager)
# the VolumeSnapshot CRDs, from the client module the sidecars were built with
CRD=$(cd "$T/csi" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd
mkdir -p "$OUT.tmp/crds"
for k in volumesnapshotclasses volumesnapshotcontents volumesnapshots; do
  cp "$CRD/snapshot.storage.k8s.io_$k.yaml" "$OUT.tmp/crds/$k.yaml"
done
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "binaries in $OUT"
echo "$OUT"
