#!/usr/bin/env bash
# `make update`: fixes what make verify's checks can fix, in every module of the repository:
# go mod tidy, gofmt, then the golden files (each test package that defines an -update flag
# runs its tests once with -update; review the diff before committing it).
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
mods=$(git ls-files --cached --others --exclude-standard '*go.mod' | xargs -n1 dirname)
for dir in $mods; do
  echo "update: go mod tidy in $dir"
  (cd "$dir" && "$go" mod tidy)
done
files=$(git ls-files --cached --others --exclude-standard '*.go')
if out=$(gofmt -l $files) && [ -n "$out" ]; then echo "update: gofmt -w"; echo "$out" | sed 's/^/  /'; gofmt -w $out; fi
# Packages whose tests rewrite their golden files under -update, each in its own module.
for dir in $(grep -l --include='*_test.go' -r -E 'flag\.Bool\("update"' $(git ls-files --cached --others --exclude-standard '*_test.go') | xargs -n1 dirname | LC_ALL=C sort -u); do
  m=$dir; while [ "$m" != . ] && [ ! -f "$m/go.mod" ]; do m=$(dirname "$m"); done
  if [ "$m" = . ]; then rel=./$dir; elif [ "$m" = "$dir" ]; then rel=.; else rel=./${dir#"$m"/}; fi
  echo "update: golden files of $dir"
  (cd "$m" && "$go" test -count=1 -run . "$rel" -update)
done
