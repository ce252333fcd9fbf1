#!/usr/bin/env bash
# Renders the pictures of docs/ from their sources: docs/images/*.dot to docs/images/*.svg with Graphviz's dot,
# the version pinned below (Debian bookworm's graphviz package, installed by hack/install-deps.sh): another
# version lays the graph out differently, and the test that the committed SVG is the source's rendering
# (internal/cli TestArchitecturePictureIsCurrent) would fail. Run it after changing a .dot file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$ROOT"
DOT_VERSION=2.43.0   # what dot -V says of Debian bookworm's graphviz 2.42.2-7
command -v dot >/dev/null || die "no dot: apt-get install graphviz (or hack/install-deps.sh)"
have=$(dot -V 2>&1 | sed -n 's/.*version \([0-9.]*\).*/\1/p')
[ "$have" = "$DOT_VERSION" ] || die "dot $have, want $DOT_VERSION (Debian bookworm's graphviz 2.42.2-7): the pictures would differ"
for src in docs/images/*.dot; do
  dot -Tsvg "$src" -o "${src%.dot}.svg"
  log "rendered ${src%.dot}.svg"
done
