#!/usr/bin/env bash
# Builds the release tools once: krew-archive and krew-render, and krew and validate-krew-manifest
# at the versions pinned in krew/tools (v0.4.3), and the image builder oci-image of deploy/image,
# into a cache directory keyed by the hash of their inputs (the modules' go.mod, go.sum and
# sources, the Go version and this script); prints that directory on stdout's last line. A warm call only
# checks that the tools are there. KREW_TOOLS, when set, names a directory of tools built already.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
if [ -n "${KREW_TOOLS:-}" ]; then echo "$KREW_TOOLS"; exit 0; fi
mods=(krew/tools deploy/image)
want=(krew-archive krew-render oci-image krew validate-krew-manifest)
# cpu_of FILE: "CPU Ns: Us user + Ss sys" from bash's `times` output in FILE (the shell's and its
# children's times, added).
cpu_of() {
  awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t[i] += a[1] * 60 + a[2] } }
    END { printf "CPU %ds: %ds user + %ds sys", t[1] + t[2] + 0.5, t[1] + 0.5, t[2] + 0.5 }' "$1"
}
key=$( { "$go" env GOVERSION GOOS GOARCH; cat "$0"; cd "$root" && for m in "${mods[@]}"; do
  git ls-files -co --exclude-standard -- "$m/go.mod" "$m/go.sum" "$m/*.go"; done \
  | grep -v '_test\.go$' | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-12)
out=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-hpa/krew-tools/$key
complete() { for b in "${want[@]}"; do [ -x "$out/$b" ] || return 1; done; }
if complete; then echo "$out"; exit 0; fi
mkdir -p "$(dirname "$out")"
# One build per key at a time: a second caller waits for the first and then finds the tools.
exec 9>"$out.lock"
flock 9
if complete; then echo "$out"; exit 0; fi
start=$(date +%s)
rm -rf "$out.partial" && mkdir -p "$out.partial"
# The subshell writes its process tree's CPU time (bash's times) as it exits.
(
  trap 'times >"$out.times"' EXIT
  cd "$root/krew/tools"
  "$go" build -trimpath -o "$out.partial/" ./cmd/krew-archive ./cmd/krew-render \
    sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest
  cd "$root/deploy/image"
  "$go" build -trimpath -o "$out.partial/" ./cmd/oci-image
)
rm -rf "$out" && mv "$out.partial" "$out"
echo "krew-tools: ${want[*]} built in $(( $(date +%s) - start ))s into $out ($(cpu_of "$out.times"))" >&2
rm -f "$out.times"
echo "$out"
