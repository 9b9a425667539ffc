#!/usr/bin/env bash
# make krew: installs krew, built from the module version krew/tools pins (hack/krew-tools.sh,
# the krew the tests run), into KREW_ROOT (default ~/.krew) without a network, the way krew's
# own offline installation does: krew installs itself from a local manifest and archive
# (`krew install --manifest=krew.yaml --archive=krew.tar.gz`). krew then has its receipt, store
# and bin/kubectl-krew link as after its official installer, so `kubectl krew upgrade` replaces
# it like any krew once an index is added. It adds no plugin index: that needs the network
# (`kubectl krew update`). An installed krew is left as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
tools=$(GO="$go" "$root/hack/krew-tools.sh" | tail -n1)
cd "$root/krew/tools"
version=$("$go" list -m -f '{{.Version}}' sigs.k8s.io/krew)
license=$("$go" list -m -f '{{.Dir}}' sigs.k8s.io/krew)/LICENSE
os=$("$go" env GOOS) arch=$("$go" env GOARCH)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The layout of krew's release archives: the binary named for its platform, and the license.
mkdir "$work/archive"
cp "$tools/krew" "$work/archive/krew-${os}_${arch}"
cp "$license" "$work/archive/LICENSE"
tar -C "$work/archive" -czf "$work/krew.tar.gz" "krew-${os}_${arch}" LICENSE
sum=$(sha256sum "$work/krew.tar.gz" | cut -d' ' -f1)
# The uri is where krew's own release keeps this platform's archive; --archive stands in for it.
cat >"$work/krew.yaml" <<MANIFEST
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: krew
spec:
  version: $version
  homepage: https://krew.sigs.k8s.io/
  shortDescription: Package manager for kubectl plugins.
  description: krew $version built from source by kubectl-hpa's make krew.
  platforms:
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: https://github.com/kubernetes-sigs/krew/releases/download/$version/krew-${os}_${arch}.tar.gz
    sha256: $sum
    files:
    - from: krew-${os}_${arch}
      to: krew
    - from: LICENSE
      to: .
    bin: krew
MANIFEST
"$tools/krew" install --manifest="$work/krew.yaml" --archive="$work/krew.tar.gz"
