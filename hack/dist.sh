#!/usr/bin/env bash
# Packs the release archives kubectl-hpa_<VERSION>_<os>_<arch>.tar.gz (.zip for Windows), each
# holding the binary, LICENSE and kubectl_complete-hpa, plus checksums.txt, into DIST. The
# binaries are those `make build-all` left in BIN/<os>_<arch>/ (no VCS stamping, trimmed paths,
# fixed codegen levels); archive entries are stamped with the commit time (SOURCE_DATE_EPOCH
# overrides it), so the bytes depend only on the commit and the Go toolchain.
#
# STANDIN names platforms (of PLATFORMS) whose archive holds a stand-in payload instead of the
# binary: a text file under the binary's name, mode 0755, saying what it stands for. Only the
# krew round trip of make test asks for it (make dist DIST_STANDIN=..., for the platforms make
# test type-checks instead of building); the archive's name, layout, entries and modes are the
# release's, only the payload's bytes differ. A release never has a stand-in (make release
# refuses DIST_STANDIN).
#
# Environment: VERSION (from the Makefile), BIN, DIST (output directory), PLATFORMS, STANDIN.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=${VERSION:?VERSION must be set}
bin=${BIN:-$root/bin}
dist=${DIST:-$root/dist}
platforms=${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
mtime=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct)}
standin=" ${STANDIN:-} "

tools=$("$root/hack/krew-tools.sh" | tail -n1)

mkdir -p "$dist"
# Only what this script and krew-manifest.sh write: DIST may be shared with other files.
rm -f "$dist"/kubectl-hpa_*.tar.gz "$dist"/kubectl-hpa_*.zip "$dist/checksums.txt" "$dist/hpa.yaml"
for platform in $platforms; do
  os=${platform%/*} arch=${platform#*/}
  exe=kubectl-hpa ext=tar.gz
  if [ "$os" = windows ]; then exe=kubectl-hpa.exe ext=zip; fi
  payload=$bin/${os}_${arch}/$exe
  if [[ $standin == *" $platform "* ]]; then
    [ -n "${standin_dir:-}" ] || { standin_dir=$(mktemp -d); trap 'rm -rf "$standin_dir"' EXIT; }
    mkdir -p "$standin_dir/${os}_${arch}"
    payload=$standin_dir/${os}_${arch}/$exe
    printf '%s\n' "kubectl-hpa $version $platform: a stand-in, not the plugin. make test's krew round trip" \
      "packs this in place of the $platform binary, which make test type-checks instead of building" \
      "(hack/typecheck-platforms.sh); make dist, build-all and release build the real binary." >"$payload"
    chmod 0755 "$payload"
    echo "dist: $platform holds a stand-in payload (DIST_STANDIN)"
  fi
  "$tools/krew-archive" -o "$dist/kubectl-hpa_${version}_${os}_${arch}.$ext" -mtime "$mtime" \
    "$payload" "$root/LICENSE" "$root/kubectl_complete-hpa"
done

cd "$dist"
if command -v sha256sum >/dev/null; then sum=(sha256sum); else sum=(shasum -a 256); fi
LC_ALL=C "${sum[@]}" kubectl-hpa_"${version}"_* >checksums.txt
echo "dist: $(ls | wc -l | tr -d ' ') files in $dist"
