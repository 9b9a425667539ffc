#!/usr/bin/env bash
# Packs the release archives kubectl-hpa_<VERSION>_<os>_<arch>.tar.gz (.zip for Windows), each
# holding the binary, LICENSE and kubectl_complete-hpa, plus checksums.txt, into DIST. The
# binaries are those `make build-all` left in BIN/<os>_<arch>/ (no VCS stamping, trimmed paths,
# fixed codegen levels); archive entries are stamped with the commit time (SOURCE_DATE_EPOCH
# overrides it), so the bytes depend only on the commit and the Go toolchain.
#
# Environment: VERSION (from the Makefile), BIN, DIST (output directory), PLATFORMS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set}
bin=${BIN:-$root/bin}
dist=${DIST:-$root/dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}

tools=$("$root/hack/krew-tools.sh" | tail -n1)

mkdir -p "$dist"
# Only what this script and krew-manifest.sh write: DIST may be shared with other files.
rm -f "$dist"/kubectl-hpa_*.tar.gz "$dist"/kubectl-hpa_*.zip "$dist/checksums.txt" "$dist/hpa.yaml"
for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  exe=kubectl-hpa ext=tar.gz
  if [ "$os" = windows ]; then exe=kubectl-hpa.exe ext=zip; fi
  "$tools/krew-archive" -o "$dist/kubectl-hpa_${version}_${os}_${arch}.$ext" -mtime "$mtime" \
    "$bin/${os}_${arch}/$exe" "$root/LICENSE" "$root/kubectl_complete-hpa"
done

cd "$dist"
if command -v sha256sum >/dev/null; then sum=(sha256sum); else sum=(shasum -a 256); fi
LC_ALL=C "${sum[@]}" kubectl-hpa_"${version}"_* >checksums.txt
echo "dist: $(ls | wc -l | tr -d ' ') files in $dist"
