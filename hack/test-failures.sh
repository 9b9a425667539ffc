#!/usr/bin/env bash
# test-failures.sh LOG...: what the failed tests in `go test -v` logs said, in a few lines.
# CI shows only the tail of make test's output, and a failed e2e test's message is buried above
# the collected output of the processes it drove; this prints, per failed test, the last lines it
# logged at a _test.go:LINE: prefix (its t.Error/t.Fatal/t.Log messages, first line of each).
set -euo pipefail
awk '
  /^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; next }
  /^ *--- FAIL: / { failed[$3] = 1; order[++n] = $3; next }
  /^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
    line = $0; sub(/^ +/, "", line)
    if (length(line) > 300) line = substr(line, 1, 300) "..."
    k = ++count[cur]; said[cur, k] = line
  }
  END {
    for (i = 1; i <= n; i++) {
      t = order[i]; if (seen[t]++) continue
      print "--- FAIL: " t
      from = count[t] > 6 ? count[t] - 5 : 1
      for (k = from; k <= count[t]; k++) print "    " said[t, k]
    }
  }
' "$@"
