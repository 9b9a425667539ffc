#!/usr/bin/env bash
# Builds the container image of the linux binaries `make build-all` left in BIN/linux_<arch>/ as
# one OCI index (deploy/image, go-containerregistry): an OCI layout in DIST/image (index.json
# names it VERSION) and the same as an oci-archive DIST/kubectl-hpa_<VERSION>_image.tar, and
# writes the index digest to DIST/image.digest. Labels carry the full commit; every timestamp is
# the commit time (SOURCE_DATE_EPOCH overrides it), so the digest depends only on the commit and
# the Go toolchain.
#
# Environment: VERSION, BIN, DIST, IMAGE_PLATFORMS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set}
bin=${BIN:-$root/bin}
dist=${DIST:-$root/dist}
platforms=${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
tools=$("$root/hack/krew-tools.sh" | tail -n1)

args=()
for platform in $platforms; do args+=(-bin "$platform=$bin/${platform%/*}_${platform#*/}/kubectl-hpa"); done
mkdir -p "$dist"
rm -rf "$dist/image" "$dist"/kubectl-hpa_*_image.tar "$dist/image.digest"
digest=$("$tools/oci-image" build -version "$version" -revision "$(git -C "$root" rev-parse HEAD)" \
  -created "$mtime" -license "$root/LICENSE" "${args[@]}" \
  -layout "$dist/image" -archive "$dist/kubectl-hpa_${version}_image.tar")
echo "$digest" >"$dist/image.digest"
echo "image: $digest ($platforms) in $dist/image and $dist/kubectl-hpa_${version}_image.tar"
