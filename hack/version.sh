#!/usr/bin/env bash
# Prints the release version of the checkout in $1 (default: this repository) as semver with its
# leading v, which krew requires: the tag at HEAD (vMAJOR.MINOR.PATCH[-pre]); after a tag,
# git describe's vX.Y.Z-N-g<commit>; without a tag, v0.0.0-<commit>. A dirty tree adds -dirty.
set -euo pipefail
dir=${1:-$(cd "$(dirname "$0")/.." && pwd)}
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
commit=$(git -C "$dir" rev-parse --short HEAD 2>/dev/null) || { echo v0.0.0-unknown; exit 0; }
dirty=
[ -z "$(git -C "$dir" status --porcelain --untracked-files=no 2>/dev/null)" ] || dirty=-dirty
version=$(git -C "$dir" describe --tags --match 'v[0-9]*' 2>/dev/null) || version=
if [[ ! $version =~ $semver ]]; then
  # An all-digit commit with a leading zero is not a valid pre-release identifier; g marks it as
  # a commit, as git describe does.
  pre=$commit
  [[ ! $pre =~ ^0[0-9]*$ ]] || pre=g$pre
  version=v0.0.0-$pre
fi
echo "$version$dirty"
