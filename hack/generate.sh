#!/usr/bin/env bash
# Generates the Cluster resource's deepcopy functions (api/v1alpha1/zz_generated.deepcopy.go) and its CRD
# (deploy/crds/) with controller-gen, then copies the CRD into the Helm chart and the plain manifests.
# Run after changing anything under api/. Needs only the Go toolchain (controller-gen is built from its
# module, pinned; the first run takes about a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
CONTROLLER_TOOLS_VERSION=${CONTROLLER_TOOLS_VERSION:-v0.21.0}
CACHE=${VITALS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vitals}
BIN=$CACHE/controller-gen-$CONTROLLER_TOOLS_VERSION
if [ ! -x "$BIN/controller-gen" ]; then
  echo "generate: building controller-gen $CONTROLLER_TOOLS_VERSION (about a minute, once)" >&2
  mkdir -p "$BIN"
  # Built outside the project's module so that the project's go.mod is left alone.
  (cd "$BIN" && GOBIN="$BIN" GOFLAGS= go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION")
fi
HEADER=$(mktemp); trap 'rm -f "$HEADER"' EXIT
printf '%s\n' '// Copyright The Vitals Authors. SPDX-License-Identifier: Apache-2.0' >"$HEADER"
"$BIN/controller-gen" object:headerFile="$HEADER" paths=./api/... \
  crd:maxDescLen=400 paths=./api/... output:crd:dir=deploy/crds
mkdir -p deploy/chart/vitals/crds
for f in deploy/crds/*.yaml; do
  cp "$f" deploy/chart/vitals/crds/
done
echo "generate: wrote api/v1alpha1/zz_generated.deepcopy.go and $(ls deploy/crds/*.yaml | tr '\n' ' ')" >&2
