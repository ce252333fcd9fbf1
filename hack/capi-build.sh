#!/usr/bin/env bash
# Builds the Cluster API core manager (sigs.k8s.io/cluster-api, main at its module root) and the OpenStack
# infrastructure provider CAPO (sigs.k8s.io/cluster-api-provider-openstack, main at its module root) from the tools
# module hack/tools/capi (its own go.mod, never the project's; CAPO requires the same cluster-api, so one module
# builds both), and copies their CRDs and webhook configurations from the module sources into the cache beside
# them (crds/capi, crds/capo: config/crd/bases, config/crd/kustomization.yaml for the contract labels,
# config/webhook/manifests.yaml), where hack/capi.sh applies them; and the CRD of ORC's Image
# (github.com/k-orc/openstack-resource-controller, of the version CAPO requires: crds/orc), which CAPO's
# OpenStackServer controller watches (without it the manager exits when its caches do not sync).
# One cache directory capi-<versions>-<hash of the module's go.mod+go.sum>, reused while it does not change.
# Prints that directory on stdout; progress on stderr. Concurrent runs wait for each other (flock).
# The checksum database answers 404 for CAPO v0.13.0 and for ORC (github.com/k-orc/openstack-resource-controller,
# which CAPO imports): hack/tools/capi/go.sum pins both, so the build needs no GONOSUMDB; only re-resolving the
# module (go get) does, see hack/README.md.
# Env: VITALS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/vitals)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
T=$ROOT/hack/tools/capi
req() { awk -v m="$1" '$1=="require"{$1=""; $0=$0} $1==m && $2 ~ /^v/ {print $2}' "$T/go.mod" | head -1; }
A=$(req sigs.k8s.io/cluster-api)
O=$(req sigs.k8s.io/cluster-api-provider-openstack)
[ -n "$A" ] && [ -n "$O" ] || die "a version is missing in $T/go.mod"
KEY=$(cd "$T" && sha256sum go.mod go.sum | sha256sum | cut -c1-16) # relative names: one key for every checkout
OUT=$VITALS_CACHE/capi-$A-$O-$KEY
have() {
  [ -x "$OUT/cluster-api-controller" ] && [ -x "$OUT/capo-controller" ] &&
    [ -f "$OUT/crds/capi/webhook.yaml" ] && [ -f "$OUT/crds/capo/webhook.yaml" ] && [ -f "$OUT/crds/orc/images.yaml" ] &&
    [ -f "$OUT/crds/kcp/kustomization.yaml.txt" ]
}
mkdir -p "$VITALS_CACHE"
exec 9>"$VITALS_CACHE/capi-build.lock"
flock 9
if have; then
  log "reusing cluster-api $A and cluster-api-provider-openstack $O in $OUT"
  echo "$OUT"; exit 0
fi
rm -rf "$OUT.tmp"; mkdir -p "$OUT.tmp"
cd "$T"
export CGO_ENABLED=0 GOFLAGS=-mod=mod
MINOR=$(echo "$A" | cut -d. -f2)
ALDF="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$A -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitMinor=$MINOR -X sigs.k8s.io/cluster-api/version.gitTreeState=clean -X sigs.k8s.io/cluster-api/version.buildDate=1970-01-01T00:00:00Z"
OLDF="-s -w -X sigs.k8s.io/cluster-api-provider-openstack/version.gitVersion=$O -X sigs.k8s.io/cluster-api-provider-openstack/version.gitTreeState=clean -X sigs.k8s.io/cluster-api-provider-openstack/version.buildDate=1970-01-01T00:00:00Z"
if [ -x "$OUT/cluster-api-controller" ] && [ -x "$OUT/capo-controller" ]; then
  cp "$OUT/cluster-api-controller" "$OUT/capo-controller" "$OUT.tmp/" # built: only the manifests are missing
else
  step "build the Cluster API core manager $A (cold: see hack/README.md)" \
    go build -trimpath -ldflags "$ALDF" -o "$OUT.tmp/cluster-api-controller" sigs.k8s.io/cluster-api
  step "build the OpenStack provider (CAPO) $O" \
    go build -trimpath -ldflags "$OLDF" -o "$OUT.tmp/capo-controller" sigs.k8s.io/cluster-api-provider-openstack
fi
# CRDs and webhook configurations from the sources the binaries were built from
for m in capi:sigs.k8s.io/cluster-api capo:sigs.k8s.io/cluster-api-provider-openstack; do
  d=$(go list -m -f '{{.Dir}}' "${m#*:}")
  mkdir -p "$OUT.tmp/crds/${m%%:*}"
  cp "$d"/config/crd/bases/*.yaml "$OUT.tmp/crds/${m%%:*}/"
  cp "$d/config/crd/kustomization.yaml" "$OUT.tmp/crds/${m%%:*}/kustomization.yaml.txt"
  cp "$d/config/webhook/manifests.yaml" "$OUT.tmp/crds/${m%%:*}/webhook.yaml"
done
# the kubeadm control plane's CRDs alone (no controller of it runs): a ClusterClass names a control plane template,
# and Cluster API's topology controller makes the KubeadmControlPlane from it
d=$(go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)/controlplane/kubeadm/config/crd
mkdir -p "$OUT.tmp/crds/kcp"
cp "$d"/bases/*.yaml "$OUT.tmp/crds/kcp/"
cp "$d/kustomization.yaml" "$OUT.tmp/crds/kcp/kustomization.yaml.txt"
d=$(go list -m -f '{{.Dir}}' github.com/k-orc/openstack-resource-controller/v2)
mkdir -p "$OUT.tmp/crds/orc"
cp "$d/config/crd/bases/openstack.k-orc.cloud_images.yaml" "$OUT.tmp/crds/orc/images.yaml"
chmod -R u+w "$OUT.tmp/crds"
rm -rf "$OUT"; mv "$OUT.tmp" "$OUT"
log "binaries in $OUT"
echo "$OUT"
