#!/usr/bin/env bash
# Fails when go.mod/go.sum of any module in the repository is not tidy.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
for mod in $(git ls-files --cached --others --exclude-standard '*go.mod'); do
  dir=$(dirname "$mod")
  before=$(cat "$dir/go.mod" "$dir/go.sum" 2>/dev/null | sha256sum)
  cp "$dir/go.mod" "$dir/go.mod.verify-bak"; [ -f "$dir/go.sum" ] && cp "$dir/go.sum" "$dir/go.sum.verify-bak"
  if ! out=$(cd "$dir" && go mod tidy 2>&1); then echo "go mod tidy failed in $dir:"; echo "$out"; status=1; fi
  after=$(cat "$dir/go.mod" "$dir/go.sum" 2>/dev/null | sha256sum)
  if [ "$before" != "$after" ]; then echo "$dir: go.mod/go.sum not tidy (run: cd $dir && go mod tidy, or make update)"; status=1; fi
  mv "$dir/go.mod.verify-bak" "$dir/go.mod"; [ -f "$dir/go.sum.verify-bak" ] && mv "$dir/go.sum.verify-bak" "$dir/go.sum"
done
exit $status
