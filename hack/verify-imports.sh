#!/usr/bin/env bash
# Enforces the import direction of docs: cmd -> plugin -> controller -> metrics, and a pure
# decision core: controller/replicas may import the standard library, k8s.io/api and
# k8s.io/apimachinery only (no client-go, klog, cobra, nor any package of this module).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/kubectl-hpa/kubectl-hpa
status=0
fail() { echo "import check: $*"; status=1; }

# Every dependency, transitive, of the core (tests excluded).
for dep in $(go list -deps "$mod/controller/replicas"); do
  case "$dep" in
    "$mod/controller/replicas") ;;
    "$mod"/*) fail "controller/replicas depends on $dep (the core imports nothing of this module)";;
    k8s.io/client-go/*|github.com/spf13/*|k8s.io/cli-runtime/*|k8s.io/kubectl/*|k8s.io/metrics/*)
      fail "controller/replicas depends on $dep (the core must stay pure)";;
  esac
done
# Direct imports of the core must be stdlib, k8s.io/api, k8s.io/apimachinery (these two pull in
# klog themselves, so klog is checked here, on the core's own imports).
for imp in $(go list -f '{{join .Imports "\n"}}' "$mod/controller/replicas"); do
  case "$imp" in
    k8s.io/api/*|k8s.io/apimachinery/*) ;;
    *.*/*) fail "controller/replicas imports $imp";;
  esac
done

# The Heapster and metrics API decoders stay a leaf too: their fuzz targets would otherwise
# instrument, and compile once more, everything the leaf imports.
for imp in $(go list -f '{{join .Imports "\n"}}' "$mod/metrics/samples"); do
  case "$imp" in
    k8s.io/api/*|k8s.io/apimachinery/*) ;;
    *.*/*) fail "metrics/samples imports $imp (a leaf: standard library, k8s.io/api, k8s.io/apimachinery only)";;
  esac
done

# Layering: a package may not import a layer above it.
check_layer() { # pkg-pattern forbidden-prefix...
  local pattern=$1; shift
  for pkg in $(go list "$mod/$pattern" 2>/dev/null); do
    for imp in $(go list -f '{{join .Imports "\n"}}' "$pkg"); do
      for bad in "$@"; do
        case "$imp" in "$mod/$bad"|"$mod/$bad"/*) fail "$pkg imports $imp (imports point cmd -> plugin -> controller -> metrics)";; esac
      done
    done
  done
}
check_layer 'metrics/...' controller plugin cmd
check_layer 'controller/...' plugin cmd
check_layer 'plugin/...' cmd
# The controller's rooms with one job each (the core above, the metrics, the event sink,
# leader election) import nothing of this module: the controller uses them, not the reverse.
for leaf in controller/monitor controller/eventsink controller/lease; do
  for imp in $(go list -f '{{join .Imports "\n"}}' "$mod/$leaf"); do
    case "$imp" in "$mod"|"$mod"/*) fail "$leaf imports $imp (it has one job and imports nothing of this module)";; esac
  done
done

# Product code never imports k8s.io/kubernetes.
if go list -deps ./... | grep -q '^k8s.io/kubernetes/'; then fail "product code depends on k8s.io/kubernetes"; fi
exit $status
