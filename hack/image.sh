#!/usr/bin/env bash
# Builds the container image of the linux binaries `make build-all` left in BIN/linux_<arch>/ as
# one OCI index (deploy/image, go-containerregistry): an OCI layout in DIST/image (index.json
# names it VERSION) and the same as an oci-archive DIST/kubectl-hpa_<VERSION>_image.tar, and
# writes the index digest to DIST/image.digest. Labels carry the full commit; every timestamp is
# the commit time (SOURCE_DATE_EPOCH overrides it), so the digest depends only on the commit and
# the Go toolchain.
#
# STANDIN names platforms (of IMAGE_PLATFORMS) whose layer holds a stand-in payload instead of the
# binary: make test's image test asks for it (make image IMAGE_STANDIN=...) for the platforms it
# does not build; make release refuses IMAGE_STANDIN.
#
# Environment: VERSION, BIN, DIST, IMAGE_PLATFORMS, STANDIN.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set}
bin=${BIN:-$root/bin}
dist=${DIST:-$root/dist}
platforms=${IMAGE_PLATFORMS:-linux/amd64 linux/arm64}
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
tools=$("$root/hack/krew-tools.sh" | tail -n1)

standin=" ${STANDIN:-} "

args=()
for platform in $platforms; do
  payload=$bin/${platform%/*}_${platform#*/}/kubectl-hpa
  if [[ $standin == *" $platform "* ]]; then
    [ -n "${standin_dir:-}" ] || { standin_dir=$(mktemp -d); trap 'rm -rf "$standin_dir"' EXIT; }
    payload=$standin_dir/${platform%/*}_${platform#*/}
    printf '%s\n' "kubectl-hpa $version $platform: a stand-in, not the plugin. make test's image test" \
      "packs this in place of the $platform binary, which make test type-checks instead of building" \
      "(hack/typecheck-platforms.sh); make image and release build the real binary." >"$payload"
    echo "image: $platform holds a stand-in payload (IMAGE_STANDIN)"
  fi
  args+=(-bin "$platform=$payload")
done
mkdir -p "$dist"
rm -rf "$dist/image" "$dist"/kubectl-hpa_*_image.tar "$dist/image.digest"
digest=$("$tools/oci-image" build -version "$version" -revision "$(git -C "$root" rev-parse HEAD)" \
  -created "$mtime" -license "$root/LICENSE" "${args[@]}" \
  -layout "$dist/image" -archive "$dist/kubectl-hpa_${version}_image.tar")
echo "$digest" >"$dist/image.digest"
echo "image: $digest ($platforms) in $dist/image and $dist/kubectl-hpa_${version}_image.tar"
