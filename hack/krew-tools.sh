#!/usr/bin/env bash
# Builds the release and krew tools of the krew/tools module into $1: krew-archive, krew-render,
# and krew and validate-krew-manifest at the versions pinned there (v0.4.3). Go's build cache
# makes repeated builds cheap; the module cache or proxy supplies the sources.
set -euo pipefail
out=${1:?usage: hack/krew-tools.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
cd "$root/krew/tools"
"${GO:-go}" build -o "$out/" \
  ./cmd/krew-archive ./cmd/krew-render \
  sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest
