#!/usr/bin/env bash
# `make test`: every suite CI runs, one after another, then a table of each step's wall time
# and CPU time (printed on failure too). A row's CPU is the user and system time of the step's
# whole process tree (bash's `times` for the children of a subshell that runs it: every process
# it started and waited for, however deep), so unlike the wall time it barely changes with what
# else runs on the machine.
#
# What the later steps only wait for is built from the start in the background: the plugin for
# this machine, the one platform make test builds (the Makefile's TEST_PLATFORMS; verify
# type-checks the other release platforms instead, and the krew step packs stand-ins), the
# components of the end-to-end tests (control plane, metrics-server, Heapster, Prometheus) once
# this machine's plugin is built, and the release tools (krew, its manifest validator, the
# archive and image builders). A step that needs a background build waits for it first.
#
# The end-to-end tests wait on the cluster, not the CPU (the load average stays under 0.5 while
# they run alone), so they run alongside the other steps: they start as soon as what they need
# is built (the components but Prometheus, the plugin for this machine, the release tools) and
# the steps that compute run at nice 5 meanwhile, so that the cluster's processes come first
# when both want a core. Prometheus is built last, while they run: the two tests that use it
# wait for it (on a fresh machine that overlaps its 4 minutes of build with the tests instead of
# putting them before). Their output is kept in a file and printed when they end.
#
# Environment: MAKE (set by make); TEST_STEPS runs a subset, e.g. TEST_STEPS="verify test-unit".
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
steps=(${TEST_STEPS:-verify test-unit test-fuzz test-parity test-krew test-e2e})
# The end-to-end step, when asked for, runs alongside the others; steps holds those in front.
e2e=false
for i in "${!steps[@]}"; do [ "${steps[$i]}" = test-e2e ] && { e2e=true; unset "steps[$i]"; }; done
steps=("${steps[@]}")
# The background builds the end-to-end step needs before it starts (of plugin-test-platforms,
# only this machine's binary; of components, all but Prometheus and the custom metrics adapter):
# each is done, or ready for it
# (NAME.ready).
e2e_needs=(components release-tools plugin-test-platforms)
e2e_first_components="controlplane metricsserver heapster"
# How long the tests that use Prometheus or the custom metrics adapter wait for its build.
e2e_testbin_wait=20m
# The end-to-end step's session's nice (see Priorities below): the cluster first.
e2e_nice=-5

t0=$(date +%s)
tmp=$(mktemp -d -t kubectl-hpa-test.XXXXXX)
rows=()

# Background builds: NAME, the command, and the steps that wait for it (bg_for) or that use
# it and wait on the build's own lock if they need it before it ends (bg_with).
#
# Priorities (nice) follow the critical path. On a cold machine it is this machine's plugin, then
# the components, then the end-to-end tests (they wait on the cluster for about eight minutes),
# so these run at -5, ahead of the steps (0, 5 while the end-to-end tests run) and the builds
# nothing waits for soon (5); the steps take the CPU they leave, and finish beside the
# end-to-end tests. On a warm one it is the end-to-end tests alone. Each background build and
# the end-to-end step run in a session of their own, and Linux schedules sessions (autogroups)
# against each other by their own nice value, not their processes': each sets its session's
# too (/proc/self/autogroup; a negative one needs root, as the end-to-end tests do, and stays 0
# without). (The release's other platforms make test type-checks in verify instead of building
# them: see TEST_PLATFORMS in the Makefile.)
bg_names=(plugin-test-platforms components release-tools golangci-lint)
bg_nice_components=-5
# The end-to-end tests start when the components but Prometheus are built (components.ready).
bg_cmd_components="hack/build-testbin.sh $e2e_first_components && : >'$tmp/components.ready' && hack/build-testbin.sh"
bg_for_components=""
# The components start once this machine's plugin is built (or its build ended): built with the
# same flags, the control plane finds the standard library and the Kubernetes packages they
# share (k8s.io/api, apimachinery, client-go) compiled in Go's build cache, where building both
# at once would compile them twice, side by side.
bg_after_components=plugin-test-platforms
# The end-to-end tests and the components start when this machine's binary exists
# (plugin-test-platforms.ready).
bg_cmd_plugin_test_platforms="$make --no-print-directory build-test-platforms build && : >'$tmp/plugin-test-platforms.ready'"
bg_nice_plugin_test_platforms=-5
bg_for_plugin_test_platforms="test-krew"
# dist, the krew round trip and the e2e image all call hack/krew-tools.sh, which builds once.
bg_cmd_release_tools="hack/krew-tools.sh"
bg_nice_release_tools=5
bg_for_release_tools="test-krew"
# verify runs golangci-lint last, after vet, which compiles for minutes on a cold machine; this
# builds the linter meanwhile, and verify's run waits on hack/golangci-lint.sh's lock if it is
# not done. (The analysis itself runs in verify, after vet: it reads vet's compiled packages.)
bg_cmd_golangci_lint="hack/golangci-lint.sh build"
# verify's last command waits for it: the steps' priority (at 5, behind the components at -5, a
# fresh run's verify waited 25 minutes for it).
bg_nice_golangci_lint=0
bg_for_golangci_lint=""
bg_with_golangci_lint="verify"
declare -A bg_pid=()

var() { local v="${1//-/_}"; v="bg_$2_$v"; echo "${!v:-}"; }
wanted() { # NAME: is a step that waits for it among those to run?
  local s w
  if $e2e; then for w in "${e2e_needs[@]}"; do [ "$1" = "$w" ] && return 0; done; fi
  for s in "${steps[@]}"; do for w in $(var "$1" for) $(var "$1" with); do [ "$s" = "$w" ] && return 0; done; done
  return 1
}

# cpu_of FILE: "USER SYS" in whole seconds from bash's `times` output in FILE (the shell's own
# line and its children's, added), or "? ?" when there is none.
cpu_of() {
  awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t[i] += a[1] * 60 + a[2] } }
    END { if (NR) printf "%d %d\n", t[1] + 0.5, t[2] + 0.5; else print "? ?" }' "$1" 2>/dev/null || echo "? ?"
}

for n in "${bg_names[@]}"; do
  wanted "$n" || continue
  cmd=$(var "$n" cmd)
  after=$(var "$n" after)
  if [ -n "$after" ] && [ -n "${bg_pid[$after]:-}" ]; then
    # plugin-test-platforms.ready: it has built this machine's binary.
    cmd="w=\$(date +%s); until [ -e '$tmp/$after.ready' ] || [ -e '$tmp/$after.done' ]; do sleep 1; done
      echo \"$n: waited \$(( \$(date +%s) - w ))s for $after\"; $cmd"
  fi
  # Its own session, so that a stop ends the whole build (go and its compilers) at once.
  setsid bash -c 's=$(date +%s); renice -n '"$(var "$n" nice)"' $$ >/dev/null 2>&1; echo '"$(var "$n" nice)"' >/proc/self/autogroup 2>/dev/null
    { '"$cmd"'; } >"$1.log" 2>&1; rc=$?
    times >"$1.times"; echo "$rc $(( $(date +%s) - s ))" >"$1.done"; exit $rc' build "$tmp/$n" &
  bg_pid[$n]=$!
done

# run_e2e runs in its own session: it waits for e2e_needs' done (or ready) files, then runs the
# step; its output goes to test-e2e.log, "RC SECONDS WAITED" to test-e2e.done and the step's CPU
# (bash's times) to test-e2e.times.
run_e2e() { # TMP MAKE FIRST-COMPONENTS WAIT NEEDS...
  local tmp=$1 make=$2 first=$3 wait=$4 n rc secs w0 s0
  shift 4
  w0=$(date +%s)
  for n in "$@"; do
    until [ -e "$tmp/$n.done" ] || [ -e "$tmp/$n.ready" ]; do sleep 1; done
    [ -e "$tmp/$n.done" ] || continue
    read -r rc secs <"$tmp/$n.done"
    if [ "$rc" != 0 ]; then
      echo "make test: test-e2e not run: the background build $n failed"
      echo "1 0 $(( $(date +%s) - w0 ))" >"$tmp/test-e2e.done"
      return 1
    fi
  done
  s0=$(date +%s)
  echo "make test: === test-e2e (alongside the other steps, after waiting $(( s0 - w0 ))s for its builds)"
  ( trap 'times >"$tmp/test-e2e.times"' EXIT; "$make" --no-print-directory test-e2e E2E_COMPONENTS="$first" E2E_TESTBIN_WAIT="$wait" )
  rc=$?
  echo "$rc $(( $(date +%s) - s0 )) $(( s0 - w0 ))" >"$tmp/test-e2e.done"
  return $rc
}
e2e_pid=
if $e2e; then
  setsid bash -c "echo $e2e_nice >/proc/self/autogroup 2>/dev/null; $(declare -f run_e2e); run_e2e \"\$@\" >'$tmp/test-e2e.log' 2>&1" e2e "$tmp" "$make" "$e2e_first_components" "$e2e_testbin_wait" "${e2e_needs[@]}" &
  e2e_pid=$!
fi
# The steps that compute yield to the end-to-end tests' cluster when both want a core.
nice_steps=()
$e2e && nice_steps=(nice -n 5)

# The table: SECONDS is a row's wall time, CPU its process tree's user+sys seconds (USER and
# SYS apart). The rows' CPU adds up to nearly all of make test's: the steps run one after
# another, the background builds and the end-to-end step beside them.
table() {
  local total=$(( $(date +%s) - t0 )) r u=0 y=0 cu cy
  echo
  echo "make test: wall time and CPU time per step (total ${total}s = $(( total / 60 ))m$(( total % 60 ))s)"
  printf '  %-44s %8s %7s %7s %6s  %s\n' STEP SECONDS CPU USER SYS RESULT
  for r in "${rows[@]}"; do printf '  %s\n' "$r"; done
  for r in "${cpus[@]}"; do read -r cu cy <<<"$r"; [ "$cu" = '?' ] || { u=$(( u + cu )); y=$(( y + cy )); }; done
  printf '  %-44s %8s %7s %7s %6s\n' "CPU of all rows" "" $(( u + y )) "$u" "$y"
}
# row NAME SECONDS CPU-FILE RESULT records a step's figures for the table and prints them at
# once (a run cut short by a time limit still shows the steps it finished).
cpus=()
row() {
  local cu cy
  read -r cu cy <<<"$(cpu_of "$3")"
  cpus+=("$cu $cy")
  rows+=("$(printf '%-44s %8s %7s %7s %6s  %s' "$1" "$2" "$([ "$cu" = '?' ] && echo '?' || echo $(( cu + cy )))" "$cu" "$cy" "$4")")
  echo "make test: $1: $2s, CPU ${cu}s user ${cy}s sys, $4"
}

cleanup() {
  local n
  for n in "${!bg_pid[@]}"; do kill -TERM -- "-${bg_pid[$n]}" 2>/dev/null; done
  [ -z "$e2e_pid" ] || kill -TERM -- "-$e2e_pid" 2>/dev/null
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
  grep -E ' built in [0-9]+s|: waited [0-9]+s for ' "$tmp/$n.log" | sed 's/^/  /' || true
  if [ "$rc" != 0 ]; then
    cat "$tmp/$n.log" >&2
    row "$n (background)" "$secs" "$tmp/$n.times" "FAILED (exit $rc)"
    return 1
  fi
  if [ "${3:-}" = after ]; then
    row "$n (background, nice $(var "$n" nice))" "$secs" "$tmp/$n.times" "ok; $2 used it"
  else
    row "$n (background, nice $(var "$n" nice))" "$secs" "$tmp/$n.times" "ok; $2 waited ${waited}s for it"
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
  ( trap 'times >"$tmp/$s.times"' EXIT; "${nice_steps[@]}" "$make" --no-print-directory "$s" )
  rc=$?
  row "$s" $(( $(date +%s) - s0 )) "$tmp/$s.times" "$([ $rc = 0 ] && echo ok || echo "FAILED (exit $rc)")"
  for n in "${bg_names[@]}"; do
    for w in $(var "$n" with); do
      [ "$w" = "$s" ] && [ $rc = 0 ] || continue
      if ! wait_bg "$n" "$s" after; then table; echo "make test: FAILED: background build $n"; exit 1; fi
    done
  done
  if [ $rc != 0 ]; then table; echo "make test: FAILED: $s"; exit $rc; fi
done
if $e2e; then
  echo "make test: waiting for test-e2e, which runs alongside"
  wait "$e2e_pid"
  e2e_pid=
  cat "$tmp/test-e2e.log"
  read -r rc secs waited <"$tmp/test-e2e.done" || { rc=1 secs=? waited=?; }
  # The builds it used, for the table (done by now).
  for n in "${bg_names[@]}"; do
    if ! wait_bg "$n" test-e2e after; then table; echo "make test: FAILED: background build $n"; exit 1; fi
  done
  row "test-e2e (alongside, started at ${waited}s)" "$secs" "$tmp/test-e2e.times" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")"
  if [ "$rc" != 0 ]; then
    table
    # Last, where a CI log's tail shows it: what the failed e2e tests said.
    echo "make test: FAILED: test-e2e; what the failed tests said:"
    hack/test-failures.sh bin/e2e-parallel.log bin/e2e-serial.log 2>/dev/null || true
    exit "$rc"
  fi
fi
table
echo "make test: all suites passed"
