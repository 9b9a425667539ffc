#!/usr/bin/env bash
# Runs BenchmarkDecide (ours as run decides, controller/replicas), BenchmarkDecideWithPodTreatments
# (ours with the per-pod account explain shows), BenchmarkListAndDecide (ours as run decides, the
# pod list from its indexer included, as upstream's benchmark includes its lister; controller)
# and BenchmarkUpstreamResourceReplicas (upstream v1.37.2's calculator, test/parity) on
# benchload's workload, alternating them COUNT times so
# that all see the same machine load, and prints them side by side with benchstat under one
# name per size (Calculator/pods=N), upstream first.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
COUNT=${COUNT:-6}
BENCHSTAT=${BENCHSTAT:-"$GO run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

$GO test -c -o "$out/ours.test" ./controller/replicas
$GO test -c -o "$out/controller.test" ./controller
(cd test/parity && $GO test -c -o "$out/upstream.test" .)
for i in $(seq "$COUNT"); do
  echo "run $i of $COUNT (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  "$out/ours.test" -test.run '^$' -test.bench '^BenchmarkDecide$/^pods=(1000|10000)$' -test.benchmem -test.count 1 |
    sed -n 's/^BenchmarkDecide\//BenchmarkCalculator\//p' >>"$out/ours.txt"
  "$out/ours.test" -test.run '^$' -test.bench '^BenchmarkDecideWithPodTreatments/pods=(1000|10000)$' -test.benchmem -test.count 1 |
    sed -n 's/^BenchmarkDecideWithPodTreatments\//BenchmarkCalculator\//p' >>"$out/ours-pods.txt"
  "$out/controller.test" -test.run '^$' -test.bench '^BenchmarkListAndDecide/pods=(1000|10000)$' -test.benchmem -test.count 1 |
    sed -n 's/^BenchmarkListAndDecide\//BenchmarkCalculator\//p' >>"$out/ours-list.txt"
  (cd test/parity && "$out/upstream.test" -test.run '^$' -test.bench '^BenchmarkUpstreamResourceReplicas/pods=(1000|10000)$' -test.benchmem -test.count 1) |
    sed -n 's/^BenchmarkUpstreamResourceReplicas\//BenchmarkCalculator\//p' >>"$out/upstream.txt"
done
cd "$out" && $BENCHSTAT upstream=upstream.txt ours=ours.txt ours+pods=ours-pods.txt ours+list=ours-list.txt
