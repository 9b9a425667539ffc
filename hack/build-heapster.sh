#!/usr/bin/env bash
# Builds the real Heapster (kubernetes-retired/heapster, v1.6.0-beta.1 at e1e8341) for the
# end-to-end tests and the demo; hack/build-testbin.sh calls it and caches the result.
#
#   build-heapster.sh OUT_DIR        builds OUT_DIR/heapster
#   build-heapster.sh --source-hash  prints the source's hash (part of the cache key)
#
# Source: KUBECTL_HPA_HEAPSTER_SRC, either a .tar.gz whose top folder is heapster/ (default:
# ../shared/heapster/heapster-e1e8341.tar.gz next to the repository) or a git clone of
# https://github.com/kubernetes-retired/heapster (hashed by its HEAD and uncommitted changes).
# Heapster predates Go modules: it is built in GOPATH mode from its vendor/ tree, ./metrics only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${KUBECTL_HPA_HEAPSTER_SRC:-$(cd "$root/.." && pwd)/shared/heapster/heapster-e1e8341.tar.gz}
version=v1.6.0-beta.1
if [ -f "$src" ]; then
  kind=archive
elif [ -e "$src/.git" ]; then
  kind=clone
else
  echo "build-heapster: $src is neither a .tar.gz of the Heapster tree nor a git clone of it (set KUBECTL_HPA_HEAPSTER_SRC)" >&2
  exit 1
fi
if [ "${1:-}" = --source-hash ]; then
  if [ $kind = archive ]; then
    sha256sum "$src" | cut -d' ' -f1
  else
    { git -C "$src" rev-parse HEAD; git -C "$src" diff HEAD; } | sha256sum | cut -d' ' -f1
  fi
  exit 0
fi
out=${1:?usage: build-heapster.sh OUT_DIR | --source-hash}
if [ $kind = archive ]; then
  commit=$(basename "$src" .tar.gz | sed -n 's/^heapster-\([0-9a-f]*\)$/\1/p')
else
  commit=$(git -C "$src" rev-parse --short HEAD)
fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
tree=$work/gopath/src/k8s.io/heapster
mkdir -p "$tree"
if [ $kind = archive ]; then
  tar -xzf "$src" -C "$tree" --strip-components=1
else
  (cd "$src" && tar -cf - --exclude=.git .) | tar -xf - -C "$tree"
fi
# Go 1.22 and later panic at init on a base64 alphabet with a duplicate symbol; this vendored
# alphabet ends in "__" and only names generated identifiers, so "_." serves as well.
codec=$tree/vendor/github.com/ugorji/go/codec/gen.go
sed -i 's|0123456789__")|0123456789_.")|' "$codec"
grep -q '0123456789_.")' "$codec" || { echo "build-heapster: the base64 alphabet fix did not apply to $codec" >&2; exit 1; }
# -trimpath keeps the Go build cache useful across temporary GOPATHs (a rebuild after a
# change of this script takes seconds).
(cd "$tree" && GOPATH=$work/gopath GO111MODULE=off GOFLAGS= CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X k8s.io/heapster/version.HeapsterVersion=$version -X k8s.io/heapster/version.GitCommit=$commit" \
  -o "$out/heapster" ./metrics)
"$out/heapster" --version >/dev/null || { echo "build-heapster: the built heapster does not start" >&2; exit 1; }
