#!/usr/bin/env bash
# `make test`: every suite CI runs, one after another, and a table of each step's wall time at
# the end (on failure too). The components the end-to-end tests need (control plane,
# metrics-server, ...) are built from the start in the background at the lowest CPU priority:
# the steps before the end-to-end tests leave a core idle often (links, tests that wait), and
# the build takes those cycles without slowing them. The end-to-end step waits for it.
#
# Environment: MAKE (set by make), TEST_STEPS to run a subset (e.g. "verify test-unit").
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
steps=(${TEST_STEPS:-verify test-unit test-fuzz test-parity test-krew test-e2e})

log=$(mktemp -t kubectl-hpa-testbin.XXXXXX)
t0=$(date +%s)
rows=()
bg_pid= bg_rows=()

needs_testbin=
for s in "${steps[@]}"; do [ "$s" = test-e2e ] && needs_testbin=1; done
if [ -n "$needs_testbin" ]; then
  # Its own session, so that a stop ends the whole build (go and its compilers) at once.
  setsid bash -c 's=$(date +%s); nice -n 19 hack/build-testbin.sh >"$1" 2>&1; rc=$?
    echo "$rc $(( $(date +%s) - s ))" >"$1.done"; exit $rc' build-testbin "$log" &
  bg_pid=$!
fi

table() {
  local total=$(( $(date +%s) - t0 )) r
  echo
  echo "make test: wall time per step (2 cores; total ${total}s = $(( total / 60 ))m$(( total % 60 ))s)"
  printf '  %-28s %8s  %s\n' STEP SECONDS RESULT
  for r in "${rows[@]}" "${bg_rows[@]}"; do printf '  %s\n' "$r"; done
}

cleanup() {
  if [ -n "$bg_pid" ] && kill -0 "$bg_pid" 2>/dev/null; then
    kill -TERM -- "-$bg_pid" 2>/dev/null
  fi
  rm -f "$log" "$log.done"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_testbin() {
  local w0 rc secs
  w0=$(date +%s)
  wait "$bg_pid"
  bg_pid=
  read -r rc secs <"$log.done" || { rc=1 secs=?; }
  local waited=$(( $(date +%s) - w0 ))
  if [ "$rc" != 0 ]; then
    cat "$log" >&2
    bg_rows+=("$(printf '%-28s %8s  %s' 'components (background)' "$secs" "FAILED (exit $rc)")")
    return 1
  fi
  grep '^build-testbin: .* built in' "$log" | sed 's/^/  /' || true
  bg_rows+=("$(printf '%-28s %8s  %s' 'components (background)' "$secs" "ok, from the start; test-e2e waited ${waited}s")")
}

for s in "${steps[@]}"; do
  if [ "$s" = test-e2e ] && [ -n "$bg_pid" ]; then
    echo "make test: waiting for the background build of the test components"
    if ! wait_testbin; then table; echo "make test: FAILED: building the test components"; exit 1; fi
  fi
  echo "make test: === $s"
  s0=$(date +%s)
  "$make" --no-print-directory "$s"
  rc=$?
  rows+=("$(printf '%-28s %8d  %s' "$s" $(( $(date +%s) - s0 )) "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  if [ $rc != 0 ]; then table; echo "make test: FAILED: $s"; exit $rc; fi
done
table
echo "make test: all suites passed"
