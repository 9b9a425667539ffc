#!/usr/bin/env bash
# Lists the fuzz targets (func FuzzX(f *testing.F)) of the package in directory $1 from its
# test files. `go test -list` would say the same but compiles a test binary of its own (a plain
# build of the package's whole dependency tree, which nothing else in make test uses).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -h -o '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' "$1"/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/' | sort -u
