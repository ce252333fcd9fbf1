#!/usr/bin/env bash
# make release: the artifacts a user installs Vitals from, written into $OUT (default _out/release):
#   vitals-<version>.tgz                  the Helm chart (helm package), version and appVersion <version>
#   vitals-operator-<version>.oci.tar     the operator's image (vitals, healthcheck, a CA bundle), an OCI archive
#   vitals-agent-<version>.oci.tar        the node agent's image (vitals-agent, vitals-cni), an OCI archive
#   SHA256SUMS
# Each image is one OCI image index with an image per platform ($PLATFORMS, default linux/amd64 and
# linux/arm64), FROM scratch, built from static cross-compiled binaries by internal/tools/mkimage (no
# container engine, no registry, no base image), with the OCI labels org.opencontainers.image.* (version,
# revision, created, source, ...). The archives are reproducible: every file and the images are dated from
# the commit ($SOURCE_DATE_EPOCH). Push them with your own tool (docs/getting-started.md): skopeo copy --all
# oci-archive:FILE docker://REGISTRY/vitals/vitals:<version>, crane push, ctr images import, docker load.
#
# Variables: VERSION (default: git describe of a v* tag without the v, else <chart version>-dev.g<commit>),
# COMMIT (git rev-parse HEAD), PLATFORMS, OUT, IMAGE_PREFIX (the images' names in the archives, default
# docker.io/vitalsproject: the chart's default repositories; push them under any name).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"

OUT=${OUT:-_out/release}
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
IMAGE_PREFIX=${IMAGE_PREFIX:-docker.io/vitalsproject}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
CHART_VERSION=$(awk '$1 == "version:" {print $2; exit}' deploy/chart/vitals/Chart.yaml)
if [ -z "${VERSION:-}" ]; then
  if tag=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
    VERSION=${tag#v}
  else
    VERSION="$CHART_VERSION-dev.g$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    git diff --quiet HEAD 2>/dev/null || VERSION="$VERSION.dirty"
  fi
fi
# The version is the chart's (SemVer) and the images' tag: [0-9A-Za-z.-] only.
[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION=$VERSION: expected SemVer without build metadata, such as 1.2.3 or 1.2.3-rc.1"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -r "$CA_BUNDLE" ] || die "no CA bundle at $CA_BUNDLE (Debian: apt-get install ca-certificates; or set CA_BUNDLE)"

BUILD=$OUT/.build
rm -rf "$BUILD"
mkdir -p "$OUT" "$BUILD"
# One release in $OUT at a time: an earlier one's files would make vitals-*.tgz ambiguous.
rm -f "$OUT"/vitals-*.tgz "$OUT"/vitals-operator-*.oci.tar "$OUT"/vitals-agent-*.oci.tar "$OUT/SHA256SUMS"
LDFLAGS="-s -w -X github.com/vitalsproject/vitals/internal/base/version.Version=$VERSION -X github.com/vitalsproject/vitals/internal/base/version.Commit=$COMMIT"

build_platform() {
  local os=${1%%/*} arch=${1#*/} dir
  arch=${arch%%/*}
  dir=$BUILD/${os}_$arch
  mkdir -p "$dir"
  for b in vitals vitals-agent vitals-cni healthcheck; do
    tags=()
    [ "$b" = healthcheck ] && tags=(-tags nethttpomithttp2)
    CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath "${tags[@]}" -ldflags "$LDFLAGS" -o "$dir/$b" "./cmd/$b"
  done
}
IFS=, read -ra plats <<<"$PLATFORMS"
for p in "${plats[@]}"; do
  step "build the static binaries for $p" build_platform "$p"
done
step "build mkimage" go build -o "$BUILD/mkimage" ./internal/tools/mkimage

labels=(
  -label "org.opencontainers.image.version=$VERSION"
  -label "org.opencontainers.image.revision=$COMMIT"
  -label "org.opencontainers.image.created=$CREATED"
  -label "org.opencontainers.image.source=https://github.com/vitalsproject/vitals"
  -label "org.opencontainers.image.url=https://github.com/vitalsproject/vitals"
  -label "org.opencontainers.image.licenses=Apache-2.0"
  -label "org.opencontainers.image.vendor=The Vitals Authors"
)
step "image vitals-operator" "$BUILD/mkimage" -o "$OUT/vitals-operator-$VERSION.oci.tar" -name "$IMAGE_PREFIX/vitals:$VERSION" \
  -platform "$PLATFORMS" \
  -file "/vitals=$BUILD/{os}_{arch}/vitals:0755" -file "/healthcheck=$BUILD/{os}_{arch}/healthcheck:0755" \
  -file "/etc/ssl/certs/ca-certificates.crt=$CA_BUNDLE:0644" \
  -user 65532:65532 -expose 8080 -expose 8082 -entrypoint '["/vitals"]' -cmd '["operator"]' \
  "${labels[@]}" -label "org.opencontainers.image.title=vitals" \
  -label "org.opencontainers.image.description=Vitals: the operator and the command line (vitals), and the container healthcheck"
step "image vitals-agent" "$BUILD/mkimage" -o "$OUT/vitals-agent-$VERSION.oci.tar" -name "$IMAGE_PREFIX/vitals-agent:$VERSION" \
  -platform "$PLATFORMS" \
  -file "/vitals-agent=$BUILD/{os}_{arch}/vitals-agent:0755" -file "/vitals-cni=$BUILD/{os}_{arch}/vitals-cni:0755" \
  -expose 8090 -entrypoint '["/vitals-agent"]' \
  "${labels[@]}" -label "org.opencontainers.image.title=vitals-agent" \
  -label "org.opencontainers.image.description=Vitals: the node agent (vitals-agent) and the CNI reporter (vitals-cni)"

HELM=$(hack/helm-build.sh)
helm_home=$BUILD/helm
step "helm package" env HELM_CACHE_HOME="$helm_home/cache" HELM_CONFIG_HOME="$helm_home/config" HELM_DATA_HOME="$helm_home/data" \
  "$HELM" package deploy/chart/vitals --version "$VERSION" --app-version "$VERSION" --destination "$OUT"

rm -rf "$BUILD"
(cd "$OUT" && sha256sum "vitals-$VERSION.tgz" "vitals-operator-$VERSION.oci.tar" "vitals-agent-$VERSION.oci.tar" > SHA256SUMS)
log "release $VERSION ($COMMIT, $PLATFORMS) in $OUT:"
(cd "$OUT" && ls -l "vitals-$VERSION.tgz" "vitals-operator-$VERSION.oci.tar" "vitals-agent-$VERSION.oci.tar" SHA256SUMS) >&2
echo "$VERSION"
