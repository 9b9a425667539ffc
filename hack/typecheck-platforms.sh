#!/usr/bin/env bash
# Type-checks the plugin (./cmd/kubectl-hpa and every package it imports, the standard library
# included, function bodies included) for each GOOS/GOARCH given, as the release build selects
# its files there (build constraints, _<os>_<arch>.go names, CGO_ENABLED=0, no tags), with
# hack/tools/platformcheck (golang.org/x/tools/go/packages and go/types). make verify runs it
# for the release platforms make test does not build (the Makefile's TEST_STANDIN_PLATFORMS;
# on linux/amd64 the other five): a platform-specific compile error (a type error in a
# _windows.go file, an identifier defined for Linux only) fails it as it would fail the cross
# build, for some 15 s of CPU a platform instead of a full compile. What only the compiler's
# back end and the linker see (assembly, //go:linkname) it does not check; make build-all does.
#
# Usage: hack/typecheck-platforms.sh OS/ARCH...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
[ $# -gt 0 ] || { echo "typecheck-platforms: no platform given, nothing to check"; exit 0; }
# go run caches the linked checker in Go's build cache; GOFLAGS as the release build has it.
GOFLAGS='' "$go" -C "$root/hack/tools" run -trimpath ./platformcheck -C "$root" -platforms "$*" ./cmd/kubectl-hpa
