#!/usr/bin/env bash
# `make test`: every suite CI runs, one after another, then a table of each step's wall time
# (printed on failure too).
#
# What the later steps only wait for is built from the start in the background at the lowest
# CPU priority: the components of the end-to-end tests (control plane, metrics-server, Heapster,
# ...), the plugin for every release platform, and the release tools (krew, its manifest
# validator, the archive and image builders). The steps in front leave a core idle often
# (links, tests that wait on timers), and nice 19 hands those cycles to the builds without
# slowing the steps. A step that needs a background build waits for it first.
#
# Environment: MAKE (set by make); TEST_STEPS runs a subset, e.g. TEST_STEPS="verify test-unit".
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
steps=(${TEST_STEPS:-verify test-unit test-fuzz test-parity test-krew test-e2e})

t0=$(date +%s)
tmp=$(mktemp -d -t kubectl-hpa-test.XXXXXX)
rows=()

# Background builds: NAME, the command, and the steps that wait for it (bg_for) or that use
# it and wait on the build's own lock if they need it before it ends (bg_with).
bg_names=(components plugin-all-platforms release-tools golangci-lint)
bg_cmd_components="hack/build-testbin.sh"
bg_for_components="test-e2e"
bg_cmd_plugin_all_platforms="$make --no-print-directory build-all"
# Both write bin/: neither may run while the background build relinks the same files.
bg_for_plugin_all_platforms="test-e2e test-krew"
# dist, the krew round trip and the e2e image all call hack/krew-tools.sh, which builds once.
bg_cmd_release_tools="hack/krew-tools.sh"
bg_for_release_tools="test-krew test-e2e"
# verify runs golangci-lint last, after vet, which compiles for minutes on a cold machine; this
# builds the linter meanwhile, and verify's run waits on hack/golangci-lint.sh's lock if it is
# not done. (The analysis itself runs in verify, after vet: it reads vet's compiled packages.)
bg_cmd_golangci_lint="hack/golangci-lint.sh build"
bg_for_golangci_lint=""
bg_with_golangci_lint="verify"
declare -A bg_pid=()

var() { local v="${1//-/_}"; v="bg_$2_$v"; echo "${!v:-}"; }
wanted() { # NAME: is a step that waits for it among those to run?
  local s w
  for s in "${steps[@]}"; do for w in $(var "$1" for) $(var "$1" with); do [ "$s" = "$w" ] && return 0; done; done
  return 1
}

for n in "${bg_names[@]}"; do
  wanted "$n" || continue
  # Its own session, so that a stop ends the whole build (go and its compilers) at once.
  setsid bash -c 's=$(date +%s); nice -n 19 '"$(var "$n" cmd)"' >"$1.log" 2>&1; rc=$?
    echo "$rc $(( $(date +%s) - s ))" >"$1.done"; exit $rc' build "$tmp/$n" &
  bg_pid[$n]=$!
done

table() {
  local total=$(( $(date +%s) - t0 )) r
  echo
  echo "make test: wall time per step (total ${total}s = $(( total / 60 ))m$(( total % 60 ))s)"
  printf '  %-44s %8s  %s\n' STEP SECONDS RESULT
  for r in "${rows[@]}"; do printf '  %s\n' "$r"; done
}
# row records a step's figure for the table and prints it at once (a run cut short by a
# time limit still shows the steps it finished).
row() {
  rows+=("$(printf '%-44s %8s  %s' "$1" "$2" "$3")")
  echo "make test: $1: $2s, $3"
}

cleanup() {
  local n
  for n in "${!bg_pid[@]}"; do kill -TERM -- "-${bg_pid[$n]}" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_bg() { # NAME STEP [after]
  local n=$1 w0 rc secs waited
  [ -n "${bg_pid[$n]:-}" ] || return 0
  [ "${3:-}" = after ] || echo "make test: $2 waits for the background build: $n"
  w0=$(date +%s)
  wait "${bg_pid[$n]}"
  unset "bg_pid[$n]"
  read -r rc secs <"$tmp/$n.done" || { rc=1 secs=?; }
  waited=$(( $(date +%s) - w0 ))
  grep -E ' built in [0-9]+s' "$tmp/$n.log" | sed 's/^/  /' || true
  if [ "$rc" != 0 ]; then
    cat "$tmp/$n.log" >&2
    row "$n (background)" "$secs" "FAILED (exit $rc)"
    return 1
  fi
  if [ "${3:-}" = after ]; then
    row "$n (background, nice 19)" "$secs" "ok; $2 used it"
  else
    row "$n (background, nice 19)" "$secs" "ok; $2 waited ${waited}s for it"
  fi
}

for s in "${steps[@]}"; do
  for n in "${bg_names[@]}"; do
    for w in $(var "$n" for); do
      [ "$w" = "$s" ] || continue
      if ! wait_bg "$n" "$s"; then table; echo "make test: FAILED: background build $n"; exit 1; fi
    done
  done
  echo "make test: === $s"
  s0=$(date +%s)
  "$make" --no-print-directory "$s"
  rc=$?
  row "$s" $(( $(date +%s) - s0 )) "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")"
  for n in "${bg_names[@]}"; do
    for w in $(var "$n" with); do
      [ "$w" = "$s" ] && [ $rc = 0 ] || continue
      if ! wait_bg "$n" "$s" after; then table; echo "make test: FAILED: background build $n"; exit 1; fi
    done
  done
  if [ $rc != 0 ]; then table; echo "make test: FAILED: $s"; exit $rc; fi
done
table
echo "make test: all suites passed"
