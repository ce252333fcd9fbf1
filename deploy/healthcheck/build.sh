#!/usr/bin/env bash
# Builds the example image: static binaries into a temporary build context, then `docker build`
# with the legacy builder (no registry needed: FROM scratch).
#   IMAGE=vitals-healthcheck-example:dev  DOCKER_HOST=unix:///...  deploy/healthcheck/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
IMAGE=${IMAGE:-vitals-healthcheck-example:dev}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# nethttpomithttp2: the check speaks HTTP/1.1 only, so net/http's HTTP/2 code is dead weight
# (about 0.4 MB); without the tag the binary still builds and is just larger.
(cd "$root" &&
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -tags nethttpomithttp2 -o "$ctx/healthcheck" ./cmd/healthcheck &&
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$ctx/service" ./deploy/healthcheck/example)
mkdir -p "$ctx/openstack"
ln -s /healthcheck "$ctx/openstack/healthcheck"
cp "$here/Dockerfile" "$here/healthcheck.yaml" "$ctx/"
DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx"
echo "built $IMAGE ($(stat -c %s "$ctx/healthcheck") bytes of healthcheck)"
