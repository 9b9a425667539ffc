#!/usr/bin/env bash
# `make release`: everything a release uploads, into DIST: the six platform archives,
# checksums.txt, the krew manifest hpa.yaml, the image (OCI layout image/, the oci-archive
# kubectl-hpa_<VERSION>_image.tar, image.digest) and kubectl-hpa.yaml, deploy/kubectl-hpa.yaml
# with the image referenced by the digest just built. It refuses a dirty tree, a VERSION that is
# not semver and a missing platform archive with one line, and builds in a staging directory
# moved into DIST only when complete, so a failure leaves DIST as it was.
#
# Environment: VERSION, DIST, IMAGE_REPO, MAKE.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set}
dist=${DIST:-$root/dist}
repo=${IMAGE_REPO:-ghcr.io/kubectl-hpa/kubectl-hpa}
platforms='linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64'
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
fail() { echo "release: $*" >&2; exit 1; }

[ -z "$(git -C "$root" status --porcelain)" ] || fail "the working tree is dirty; commit or stash first (git status)"
[[ $version =~ $semver ]] || fail "VERSION $version is not semver vMAJOR.MINOR.PATCH[-pre] (krew requires the leading v)"

mkdir -p "$dist"
stage=$(mktemp -d "$dist/.release.XXXXXX")
trap 'rm -rf "$stage"' EXIT
log=$stage/.log
build() {
  # DIST_STANDIN empty whatever MAKEFLAGS carries: every archive holds its real binary.
  if ! "${MAKE:-make}" -C "$root" --no-print-directory VERSION="$version" DIST="$stage" DIST_STANDIN= "$@" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    fail "make $* failed (output above)"
  fi
}
build dist
for p in $platforms; do
  ext=tar.gz; [ "${p%/*}" = windows ] && ext=zip
  a=kubectl-hpa_${version}_${p%/*}_${p#*/}.$ext
  [ -f "$stage/$a" ] || fail "missing platform archive $a"
  grep -q "  $a\$" "$stage/checksums.txt" || fail "checksums.txt does not list $a"
done
build -o dist krew-manifest image
digest=$(cat "$stage/image.digest")
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "no image digest in image.digest"
# Only the image line changes: deploy/ names the image by digest already.
sed -E "s#^( *image: ).*@sha256:[0-9a-f]{64}\$#\\1$repo@$digest#" "$root/deploy/kubectl-hpa.yaml" >"$stage/kubectl-hpa.yaml"
grep -q "image: $repo@$digest\$" "$stage/kubectl-hpa.yaml" || fail "deploy/kubectl-hpa.yaml has no image line by digest to render"
rm -f "$log"

for f in "$stage"/*; do
  name=$(basename "$f")
  rm -rf "${dist:?}/$name"
  mv "$f" "$dist/$name"
done
echo "release $version: $(ls "$dist" | wc -l | tr -d ' ') files in $dist (image $repo@$digest)"
