#!/usr/bin/env bash
# The import rules golangci-lint's depguard cannot express (.golangci.yml has the direct ones),
# from `go list` (with the e2e, soak and fidelity tags, so that every package of the module is seen):
#  - the decision core controller/replicas depends, transitively, on no client-go, cli-runtime,
#    kubectl, metrics, cobra/pflag, nor any other package of this module than metrics/sampleset
#    (the per-pod samples it reads, a leaf of the standard library);
#  - product code depends, transitively, on nothing of k8s.io/kubernetes;
#  - the Layout table of docs/development.md lists every package of the main module, no other,
#    and for each exactly its imports of this module (tests' imports aside), and those imports point
#    cmd -> plugin -> controller -> metrics (test/ packages may import anything; product code
#    never imports test/ nor the tests' internal/testbuild, internal/cmdtest and internal/golden; the product's other
#    internal/ helpers and deploy/rbac, the roles kubectl hpa rbac embeds, rank with metrics, as
#    leaves any package may import).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/kubectl-hpa/kubectl-hpa
tags='e2e soak fidelity'
status=0
fail() { echo "import check: $*"; status=1; }

impure=()
for dep in $(go list -tags "$tags" -deps "$mod/controller/replicas"); do
  case "$dep" in
    "$mod/controller/replicas"|"$mod/metrics/sampleset") ;;
    "$mod"/*|k8s.io/client-go/*|github.com/spf13/*|k8s.io/cli-runtime/*|k8s.io/kubectl/*|k8s.io/metrics/*) impure+=("$dep");;
  esac
done
if [ ${#impure[@]} -gt 0 ]; then
  fail "controller/replicas depends on ${#impure[@]} packages it must not (${impure[*]:0:3} ...): the core stays pure, stdlib + k8s.io/api + k8s.io/apimachinery + metrics/sampleset; which import pulls one in: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./controller/replicas | grep ${impure[0]}"
fi
if bad=$(go list -tags "$tags" -deps ./cmd/... ./plugin/... ./controller/... ./metrics/... | grep '^k8s.io/kubernetes/'); then
  fail "product code depends on k8s.io/kubernetes ($(echo $bad | cut -d' ' -f1-3) ...); only the test/parity module may"
fi

# The evaluation path and what decides through it without the loop (the simulator, the re-run
# of a recording, tune's search) compile none of client-go: no informer, work queue or leader election, and
# not the loop (controller); the live source (controller/evaluation/live) is where client-go starts.
if bad=$(go list -tags "$tags" -deps ./controller/evaluation ./controller/history/... ./plugin/sim/... ./plugin/rerun/... ./plugin/tune/search | grep -E "^k8s.io/client-go/|^$mod/controller\$|^$mod/metrics\$"); then
  fail "the evaluation path, history, sim, rerun or tune's search depends on $(echo $bad | cut -d' ' -f1-3) ...; which import pulls it in: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./plugin/sim/... | grep $(echo $bad | cut -d' ' -f1)"
fi

# --- The Layout table (docs/development.md) against the code.
layoutdoc=docs/development.md
layout=$(awk '/^## Layout/{on=1; next} /^## /{on=0} on && /^\| *`/' "$layoutdoc")
[ -n "$layout" ] || { fail "$layoutdoc has no package rows under its '## Layout' heading; the table moved or its heading changed"; exit 1; }
declare -A doc=() real=()
while IFS='|' read -r _ pkg _ imps _; do
  pkg=$(echo "$pkg" | tr -d '` ')
  doc[$pkg]=$(echo "$imps" | { grep -o '`[^`]*`' || true; } | tr -d '`' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
done <<<"$layout"
while read -r pkg imps; do
  pkg=${pkg#"$mod"}; pkg=${pkg#/}; [ -n "$pkg" ] || pkg=.
  real[$pkg]=$(for i in $imps; do case "$i" in "$mod"/*) echo "${i#"$mod"/}";; esac; done | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')
done < <(go list -tags "$tags" -f '{{.ImportPath}} {{join .Imports " "}}' ./...)

cell() { if [ $# = 0 ]; then echo '—'; else printf '`%s` ' "$@" | sed 's/ $//'; fi; }
# rank: cmd 4 > plugin 3 > controller 2 > metrics, the product's internal helpers and the embedded
# roles (deploy/rbac) 1; test/ packages and the tests' internal/testbuild and internal/cmdtest 0
# (outside the layering: tests only).
rank() {
  case "$1" in
    cmd|cmd/*) echo 4;; plugin|plugin/*) echo 3;; controller|controller/*) echo 2;;
    internal/testbuild|internal/testbuild/*|internal/cmdtest|internal/cmdtest/*|internal/golden) echo 0;;
    metrics|metrics/*|internal/*|deploy/rbac) echo 1;; *) echo 0;;
  esac
}
for pkg in $(printf '%s\n' "${!real[@]}" | LC_ALL=C sort); do
  if [ -z "${doc[$pkg]+set}" ]; then
    fail "$layoutdoc, section Layout: package $pkg is missing; add a row: | \`$pkg\` | its one job | $(cell ${real[$pkg]}) |"
    continue
  fi
  if [ "${doc[$pkg]}" != "${real[$pkg]}" ]; then
    fail "$layoutdoc, section Layout: the row of $pkg lists imports [${doc[$pkg]}] but it imports [${real[$pkg]}] of this module; make its imports cell: $(cell ${real[$pkg]}) (if that direction is right; see the rules above the table)"
  fi
  rp=$(rank "$pkg")
  [ "$rp" -gt 0 ] || continue
  for imp in ${real[$pkg]}; do
    ri=$(rank "$imp")
    if [ "$ri" = 0 ]; then
      fail "$pkg imports $imp: product code never imports test/ packages, internal/testbuild, internal/cmdtest nor internal/golden (tests only)"
    elif [ "$ri" -gt "$rp" ]; then
      fail "$pkg imports $imp: imports point cmd -> plugin -> controller -> metrics; pass what $pkg needs from $imp in from above instead"
    fi
  done
done
for pkg in "${!doc[@]}"; do
  [ -n "${real[$pkg]+set}" ] || fail "$layoutdoc, section Layout: lists $pkg, which is not a package of the main module (go list -tags '$tags' ./...); remove its row or fix its path"
done
exit $status
