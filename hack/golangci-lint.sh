#!/usr/bin/env bash
# Runs golangci-lint at the version pinned in hack/tools/go.mod with the arguments given, e.g.
# `hack/golangci-lint.sh run ./...`. The binary is built once into a cache directory keyed by the
# hash of what it is built from (hack/tools' go.mod and go.sum, the Go version, the build
# flags), like hack/krew-tools.sh; its analysis cache lives beside it. `hack/golangci-lint.sh
# build` only builds it and prints its path (make test does that in the background).
#
# golangci-lint type-checks the imports of the packages it analyses from their export data,
# which `go list -export` compiles with GOFLAGS' build flags. -race makes those the very
# packages `go vet -race` and `go test -race` compiled, found in Go's build cache, instead of a
# second, plain compile of the whole dependency tree (minutes of CPU on a cold machine).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
flags=(-trimpath)
# cpu_of FILE: "CPU Ns: Us user + Ss sys" from bash's `times` output in FILE (the shell's and its
# children's times, added).
cpu_of() {
  awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t[i] += a[1] * 60 + a[2] } }
    END { printf "CPU %ds: %ds user + %ds sys", t[1] + t[2] + 0.5, t[1] + 0.5, t[2] + 0.5 }' "$1"
}
key=$( { "$go" env GOVERSION GOOS GOARCH; echo "${flags[*]}"; cat "$root/hack/tools/go.mod" "$root/hack/tools/go.sum"; } | sha256sum | cut -c1-12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-hpa/golangci-lint
bin=$cache/$key/golangci-lint
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  # One build per key at a time: a second caller waits for the first and then finds the binary.
  exec 9>"$cache/$key.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    start=$(date +%s)
    rm -rf "$cache/$key.partial" && mkdir -p "$cache/$key.partial"
    # The subshell writes its process tree's CPU time (bash's times) as it exits.
    (trap 'times >"$cache/$key.times"' EXIT; cd "$root/hack/tools" && "$go" build "${flags[@]}" \
      -o "$cache/$key.partial/golangci-lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
    rm -rf "${bin%/*}" && mv "$cache/$key.partial" "${bin%/*}"
    echo "golangci-lint: built $("$bin" version --short 2>/dev/null || true) into ${bin%/*} in $(( $(date +%s) - start ))s ($(cpu_of "$cache/$key.times"))" >&2
    rm -f "$cache/$key.times"
  fi
  exec 9>&-
fi
if [ "${1:-}" = build ]; then echo "$bin"; exit 0; fi
export GOLANGCI_LINT_CACHE=$cache/analysis
export GOFLAGS="-race${GOFLAGS:+ $GOFLAGS}"
cd "$root"
# Runs wait for one another instead of failing (golangci-lint's lock is machine-wide): several
# worktrees verify at once.
# (The flag, not the config key: the lock is taken before the configuration is read.)
if [ "${1:-}" = run ]; then shift; exec "$bin" run --allow-serial-runners "$@"; fi
exec "$bin" "$@"
