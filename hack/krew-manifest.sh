#!/usr/bin/env bash
# Renders krew/hpa.yaml for VERSION into DIST/hpa.yaml with the sha256 sums of the archives in
# DIST (built by hack/dist.sh for the same VERSION), then validates it with krew's own
# validate-krew-manifest, whose messages report what is wrong (a version without its leading v,
# for example).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set, with its leading v: make krew-manifest VERSION=v1.2.3}
dist=${DIST:-$root/dist}

tools=$("$root/hack/krew-tools.sh" | tail -n1)

# KREW_PLATFORMS (os/arch, blank-separated; make krew-local sets it): a manifest of those alone.
only=${KREW_PLATFORMS:-}
"$tools/krew-render" -template "$root/krew/hpa.yaml" -tag "$version" -dist "$dist" -o "$dist/hpa.yaml" ${only:+-platforms "${only// /,}"}
"$tools/validate-krew-manifest" -manifest "$dist/hpa.yaml" -skip-install
echo "krew-manifest: $dist/hpa.yaml"
