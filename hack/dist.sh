#!/usr/bin/env bash
# Builds the release archives kubectl-hpa_<VERSION>_<os>_<arch>.tar.gz (.zip for Windows), each
# holding the binary, LICENSE and kubectl_complete-hpa, plus checksums.txt, into DIST. The bytes
# depend only on the commit and the Go toolchain: no VCS stamping, trimmed paths, fixed codegen
# levels, and archive entries stamped with the commit time (SOURCE_DATE_EPOCH overrides it).
#
# Environment: VERSION and LDFLAGS (from the Makefile), DIST (output directory), GO.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
version=${VERSION:?VERSION must be set}
ldflags=${LDFLAGS:?LDFLAGS must be set}
dist=${DIST:-$root/dist}
platforms='linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64'
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# KREW_TOOLS names a directory where hack/krew-tools.sh already built the tools.
tools=${KREW_TOOLS:-$work/tools}
[ -n "${KREW_TOOLS:-}" ] || "$root/hack/krew-tools.sh" "$tools"

mkdir -p "$dist"
# Only what this script and krew-manifest.sh write: DIST may be shared with other files.
rm -f "$dist"/kubectl-hpa_*.tar.gz "$dist"/kubectl-hpa_*.zip "$dist/checksums.txt" "$dist/hpa.yaml"
for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  bin=kubectl-hpa ext=tar.gz
  if [ "$os" = windows ]; then bin=kubectl-hpa.exe ext=zip; fi
  mkdir -p "$work/$os-$arch"
  (cd "$root" && env GOFLAGS= CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOAMD64=v1 GOARM64=v8.0 \
    "$go" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$work/$os-$arch/$bin" ./cmd/kubectl-hpa)
  "$tools/krew-archive" -o "$dist/kubectl-hpa_${version}_${os}_${arch}.$ext" -mtime "$mtime" \
    "$work/$os-$arch/$bin" "$root/LICENSE" "$root/kubectl_complete-hpa"
done

cd "$dist"
if command -v sha256sum >/dev/null; then sum=(sha256sum); else sum=(shasum -a 256); fi
LC_ALL=C "${sum[@]}" kubectl-hpa_"${version}"_* >checksums.txt
echo "dist: $(ls | wc -l | tr -d ' ') files in $dist"
