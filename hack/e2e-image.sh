#!/usr/bin/env bash
# Builds the image for this machine's platform exactly as `make image` builds each platform's
# (hack/image.sh) into OUT/oci, checks it with go-containerregistry's validation and unpacks it
# as a runtime would: OUT/rootfs, OUT/config.json (the image config), OUT/digest. The in-cluster
# end-to-end test runs the binary of OUT/rootfs.
#
# Environment: VERSION, BIN, HOST_PLATFORM, OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:?OUT must be set}
platform=${HOST_PLATFORM:?HOST_PLATFORM must be set}
tools=$("$root/hack/krew-tools.sh" | tail -n1)
# Built beside OUT and moved into place whole: a build cut short (Ctrl-C, a killed make) leaves
# the previous image, or none, never a half-unpacked one for the next test run.
tmp=$out.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
DIST=$tmp/oci IMAGE_PLATFORMS=$platform "$root/hack/image.sh" >/dev/null
"$tools/oci-image" unpack -layout "$tmp/oci/image" -ref "$VERSION" -platform "$platform" \
  -rootfs "$tmp/rootfs" -config "$tmp/config.json" >"$tmp/digest"
rm -rf "$out" && mv "$tmp" "$out"
echo "e2e-image: $(cat "$out/digest") ($platform) unpacked into $out/rootfs"
