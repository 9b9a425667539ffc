#!/usr/bin/env bash
# Builds the real control-plane binaries used by the end-to-end tests and the demo:
# kube-apiserver and kube-controller-manager v1.37.2, etcd (the version k8s.io/kubernetes
# requires) and metrics-server v0.8.0. They are cached under a directory keyed by the
# tools modules' go.sum, so a warm run only checks that they exist.
# Prints the binary directory on stdout's last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/test/e2e/tools
key=$(cat "$tools/go.sum" "$tools/metricsserver/go.sum" "$0" | sha256sum | cut -c1-12)
bin=${KUBECTL_HPA_TESTBIN:-${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-hpa/testbin/$key}
want=(kube-apiserver kube-controller-manager etcd metrics-server)
missing=()
for b in "${want[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then echo "$bin"; exit 0; fi
mkdir -p "$(dirname "$bin")"
# One build at a time per cache key: a second caller (make and a test binary, two CI jobs)
# waits for the first and then finds the binaries.
exec 9>"$bin.lock"
if ! flock -n 9; then
  echo "build-testbin: another build of $bin is running; waiting for it" >&2
  flock 9
fi
missing=()
for b in "${want[@]}"; do [ -x "$bin/$b" ] || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then echo "$bin"; exit 0; fi
mkdir -p "$bin.partial"
command -v go >/dev/null || { echo "build-testbin: go not found on PATH" >&2; exit 1; }
V=v1.37.2
ldf="-s -w -X k8s.io/component-base/version.gitVersion=$V -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$V \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"
start=$(date +%s)
echo "build-testbin: building ${missing[*]} into $bin (cold: about 15 minutes on 2 cores)" >&2
for b in "${missing[@]}"; do
  t0=$(date +%s)
  case "$b" in
    kube-apiserver|kube-controller-manager)
      (cd "$tools" && go build -trimpath -ldflags "$ldf" -o "$bin.partial/$b" "k8s.io/kubernetes/cmd/$b") ;;
    etcd)
      (cd "$tools" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/etcd" ./cmd/etcd) ;;
    metrics-server)
      (cd "$tools/metricsserver" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server) ;;
  esac
  echo "build-testbin: $b built in $(( $(date +%s) - t0 ))s" >&2
done
mkdir -p "$bin"
for b in "${missing[@]}"; do mv "$bin.partial/$b" "$bin/$b"; done
rmdir "$bin.partial" 2>/dev/null || true
echo "build-testbin: done in $(( $(date +%s) - start ))s" >&2
echo "$bin"
