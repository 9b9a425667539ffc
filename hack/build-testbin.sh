#!/usr/bin/env bash
# Builds the real components the end-to-end tests and the demo run: kube-apiserver and
# kube-controller-manager v1.37.2, etcd (the version k8s.io/kubernetes requires) and
# metrics-server v0.8.0 and custom-metrics-apiserver v1.37.0's test adapter (custom and external
# metrics) from Go modules, Heapster v1.6.0-beta.1 from its source archive
# (hack/build-heapster.sh; KUBECTL_HPA_HEAPSTER_SRC points it at another archive or a clone of
# kubernetes-retired/heapster), and Prometheus from Debian's package (or its module: below).
#
# Every component is cached on its own, under a key made of its inputs (its module's go.mod and
# go.sum, or Heapster's source hash and build script, and the text of its build function below), so changing one component's recipe, or
# this script elsewhere, rebuilds only that component. The test set is a directory of symbolic
# links to the cached binaries, keyed by the components' keys; its path is stdout's last line.
#
# Arguments name the components to build (controlplane, metricsserver, custommetrics, heapster,
# prometheus);
# none builds them all. The set's directory links every component either way: a link to one not
# built yet dangles until a build of it ends (make test starts the end-to-end tests before
# Prometheus is built, and the tests wait for it: test/e2e/cluster's Config.BinWait), and a
# failed build leaves COMPONENT_DIR.failed beside the component's directory for them to see.
#
# Environment: KUBECTL_HPA_TESTBIN names a directory to build the set into instead (no cache);
# XDG_CACHE_HOME moves the cache (default ~/.cache/kubectl-hpa); KUBECTL_HPA_PROGRESS=SECONDS says
# every SECONDS that a build goes on; KUBECTL_HPA_PROMETHEUS=module
# builds Prometheus 3.x from its module instead of fetching Debian's 2.42.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/test/e2e/tools
cache=${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-hpa

V=v1.37.2
# The version stamped into the control plane, as a release build of v1.37.2 would carry.
k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$V -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z -X k8s.io/client-go/pkg/version.gitVersion=$V \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=37"

# build_<component> OUT_DIR: builds the component's binaries into OUT_DIR.
#
# Every Go component is built static, CGO_ENABLED=0, as their release builds are (Kubernetes'
# server binaries, etcd's, metrics-server's image, Prometheus' promu builds), with GOFLAGS
# cleared and -trimpath, the plugin's release build flags (the Makefile's GOBUILD): the control
# plane then compiles the standard library and most of the packages it shares with the plugin
# (k8s.io/api, apimachinery, client-go v0.37.2 and below, at the same versions) into Go's build
# cache once for both, instead of once with cgo and once without. make test builds this
# machine's plugin before the components for that (hack/test.sh).
build_controlplane() {
  (cd "$tools" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$k8s_ldflags" -o "$1/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
  (cd "$tools" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$k8s_ldflags" -o "$1/kube-controller-manager" k8s.io/kubernetes/cmd/kube-controller-manager)
  (cd "$tools" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$1/etcd" ./cmd/etcd)
}
# metrics-server has a module of its own: v0.8.0 does not run on the control plane's k8s.io
# libraries (v0.37's OpenAPI model names: it stops at start, no definition for version.Info).
build_metricsserver() {
  (cd "$tools/metricsserver" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$1/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server)
}
# The custom metrics adapter is custom-metrics-apiserver's own test adapter, in a module of its
# own at the control plane's k8s.io versions (test/e2e/tools/custommetrics/go.mod says why).
build_custommetrics() {
  (cd "$tools/custommetrics" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$1/custom-metrics-adapter" sigs.k8s.io/custom-metrics-apiserver/test-adapter)
}
build_heapster() {
  "$root/hack/build-heapster.sh" "$1"
}
# Prometheus is Debian's package by default: bookworm's 2.42.0, fetched with apt-get download and
# unpacked with dpkg-deb (nothing is installed), in seconds, where building v0.316.0 (3.x) from
# its module costs about 450 s of CPU on a fresh machine, a tenth of make test's (docs/timings.md).
# KUBECTL_HPA_PROMETHEUS=module builds the module instead; so does a machine whose apt cannot
# fetch the package (it says so). The tests list the nodes as static targets, so neither needs a
# service-discovery plugin: remove_all_sd leaves them all out (1,044 packages to compile instead
# of 1,518), and without the builtinassets tag the web UI's assets are not embedded (the HTTP API
# is all the tests use).
prometheus_source=${KUBECTL_HPA_PROMETHEUS:-debian}
prometheus_deb=2.42.0+ds-5+b6
build_prometheus() {
  if [ "$prometheus_source" = debian ]; then
    fetch_prometheus_deb "$1" && return 0
    echo "build-testbin: Debian's prometheus $prometheus_deb could not be fetched (apt-get download); building Prometheus from its module" >&2
  fi
  (cd "$tools/prometheus" && env GOFLAGS= CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags remove_all_sd -ldflags "-s -w" \
    -o "$1/prometheus" github.com/prometheus/prometheus/cmd/prometheus)
}
fetch_prometheus_deb() { # OUT_DIR
  local tmp ok=1
  tmp=$(mktemp -d)
  chmod 0777 "$tmp" # apt downloads as its unprivileged user when it can write there
  if (cd "$tmp" && apt-get download -q "prometheus=$prometheus_deb" >&2) && dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"; then
    mv "$tmp/x/usr/bin/prometheus" "$1/prometheus" && ok=0
  fi
  rm -rf "$tmp"
  return $ok
}

# component NAME: binaries it provides, and the files that together with its build function
# (and, for the control plane, the version ldflags) decide its key.
components=(controlplane metricsserver custommetrics heapster prometheus)
binaries_controlplane=(kube-apiserver kube-controller-manager etcd)
inputs_controlplane=("$tools/go.mod" "$tools/go.sum" "$tools/tools.go" "$tools/cmd/etcd/main.go")
binaries_metricsserver=(metrics-server)
inputs_metricsserver=("$tools/metricsserver/go.mod" "$tools/metricsserver/go.sum")
binaries_custommetrics=(custom-metrics-adapter)
inputs_custommetrics=("$tools/custommetrics/go.mod" "$tools/custommetrics/go.sum")
binaries_heapster=(heapster)
inputs_heapster=("$root/hack/build-heapster.sh")
binaries_prometheus=(prometheus)
inputs_prometheus=("$tools/prometheus/go.mod" "$tools/prometheus/go.sum")

key_of() { # component
  local c=$1 inputs
  inputs="inputs_$c[@]"
  { cat "${!inputs}"; declare -f "build_$c"; if [ "$c" = controlplane ]; then echo "$k8s_ldflags"; fi
    if [ "$c" = heapster ]; then "$root/hack/build-heapster.sh" --source-hash; fi
    if [ "$c" = prometheus ]; then echo "$prometheus_source $prometheus_deb"; declare -f fetch_prometheus_deb; fi; } |
    sha256sum | cut -c1-12
}

have_all() { # dir component
  local b bins="binaries_$2[@]"
  for b in "${!bins}"; do [ -x "$1/$b" ] || return 1; done
}

# cpu_of FILE: "CPU Ns: Us user + Ss sys" from bash's `times` output in FILE (the shell's and its
# children's times, added).
cpu_of() {
  awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t[i] += a[1] * 60 + a[2] } }
    END { printf "CPU %ds: %ds user + %ds sys", t[1] + t[2] + 0.5, t[1] + 0.5, t[2] + 0.5 }' "$1"
}

# ensure component DIR: builds the component into DIR unless it is there already. One build
# per directory at a time: a second caller (make and a test binary, two worktrees) waits for
# the first and then finds the binaries.
ensure() {
  local c=$1 dir=$2 t0
  have_all "$dir" "$c" && return 0
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  if ! flock -n 9; then
    echo "build-testbin: another build of $c is running; waiting for it" >&2
    flock 9
  fi
  if ! have_all "$dir" "$c"; then
    command -v go >/dev/null || { echo "build-testbin: go not found on PATH" >&2; exit 1; }
    t0=$(date +%s)
    echo "build-testbin: building $c into $dir" >&2
    rm -rf "$dir.partial" "$dir.times" "$dir.failed" && mkdir -p "$dir.partial"
    building=$dir
    # KUBECTL_HPA_PROGRESS=SECONDS (make demo sets it): say every so often that the build goes on.
    if [ -n "${KUBECTL_HPA_PROGRESS:-}" ]; then
      ( while sleep "$KUBECTL_HPA_PROGRESS"; do echo "build-testbin: still building $c ($(( $(date +%s) - t0 ))s)" >&2; done ) &
      ticker=$!
    fi
    # In a subshell that writes its process tree's CPU time (bash's times) as it exits.
    ( trap 'times >"$dir.times"' EXIT; "build_$c" "$dir.partial" )
    [ -z "$ticker" ] || kill "$ticker" 2>/dev/null || true
    ticker=
    building=
    mkdir -p "$dir"
    local b bins="binaries_$c[@]"
    for b in "${!bins}"; do mv "$dir.partial/$b" "$dir/$b"; done
    rm -rf "$dir.partial"
    echo "build-testbin: $c built in $(( $(date +%s) - t0 ))s ($(cpu_of "$dir.times"))" >&2
    rm -f "$dir.times"
  fi
  exec 9>&-
}

# A build that fails (or is stopped) leaves DIR.failed, so that a test waiting for its binary
# stops waiting.
building=
ticker=
trap '[ -z "$ticker" ] || kill "$ticker" 2>/dev/null; [ -z "$building" ] || echo "build-testbin: building $building failed; see the output above" >"$building.failed"' EXIT

wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=("${components[@]}")
for c in "${wanted[@]}"; do
  case " ${components[*]} " in *" $c "*) ;; *) echo "build-testbin: unknown component $c (have: ${components[*]})" >&2; exit 2;; esac
done

if [ -n "${KUBECTL_HPA_TESTBIN:-}" ]; then
  for c in "${wanted[@]}"; do ensure "$c" "$KUBECTL_HPA_TESTBIN"; done
  echo "$KUBECTL_HPA_TESTBIN"
  exit 0
fi

# One component at a time: built side by side they took longer on 2 cores (at 0bf90fa, a fresh
# machine's make test had the control plane's first binary linked only after 43 minutes: the
# control plane, the longest, shared the cores with the three others and the steps, and every
# process's CPU time rose under the heavier contention; docs/log.md).
setkey=
for c in "${components[@]}"; do
  k=$(key_of "$c")
  case " ${wanted[*]} " in *" $c "*) ensure "$c" "$cache/components/$c-$k";; esac
  setkey+="$c-$k "
done
set_dir=$cache/testbin/$(echo "$setkey" | sha256sum | cut -c1-12)
if [ ! -d "$set_dir" ]; then
  mkdir -p "$set_dir.tmp.$$"
  for entry in $setkey; do
    c=${entry%-*}
    bins="binaries_$c[@]"
    for b in "${!bins}"; do ln -sfn "$cache/components/$entry/$b" "$set_dir.tmp.$$/$b"; done
  done
  mv -T "$set_dir.tmp.$$" "$set_dir" 2>/dev/null || rm -rf "$set_dir.tmp.$$"
fi
echo "$set_dir"
