# kubectl-hpa — build, test, benchmark, verify.
# `make test` is the one command that passes all tests (CI runs exactly it).

SHELL := /usr/bin/env bash
# A failing command anywhere in a pipeline fails the recipe.
.SHELLFLAGS := -eo pipefail -c
GO ?= go
# Semver with its leading v (krew requires it): the tag at HEAD, else v0.0.0-<commit> (hack/version.sh).
VERSION ?= $(shell hack/version.sh)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X github.com/kubectl-hpa/kubectl-hpa/plugin/version.version=$(VERSION) -X github.com/kubectl-hpa/kubectl-hpa/plugin/version.commit=$(COMMIT)
BIN := $(CURDIR)/bin

.PHONY: all help test verify update test-unit test-fuzz bench

all: build

## help: the targets and what each does (their ## comments in this Makefile)
help:
	@awk 'function flush() { if (t == "") return; n = split(d, w, " "); line = sprintf("  %-16s", t); \
	    for (i = 1; i <= n; i++) { if (length(line) + length(w[i]) > 98) { print line; line = sprintf("  %-16s", "") } line = line " " w[i] } \
	    print line; t = "" } \
	  /^## / && !inblock && /^## [a-z0-9-]+: / { flush(); t = $$2; sub(/:$$/, "", t); d = $$0; sub(/^## [^:]*: /, "", d); inblock = 1; next } \
	  /^## / && inblock { sub(/^## /, ""); d = d " " $$0; next } \
	  { inblock = 0; flush() } END { flush() }' $(MAKEFILE_LIST)

# The plugin is built once per platform into bin/<os>_<arch>/ with the release flags, and reused:
# build and the end-to-end tests take the host's, dist the six archives' and image linux's. A
# binary is relinked only when a product source or the link flags change (Go's build cache
# keeps the compiled packages).
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
HOST_PLATFORM := $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
# The image's platforms (make image).
IMAGE_PLATFORMS := linux/amd64 linux/arm64
# make test builds the plugin only for this machine: the e2e tests and the krew round trip run
# it. The other release platforms make verify type-checks instead, from source with every
# dependency (hack/typecheck-platforms.sh), and what make test only packs holds a stand-in
# payload: the krew round trip's archives (DIST_STANDIN; krew installs them, it cannot run them
# here) and the image's other platform in the image test (IMAGE_STANDIN; the image is built,
# validated and compared, not run). make build-all, dist, image and release always build every
# platform they ship.
TEST_PLATFORMS := $(HOST_PLATFORM)
TEST_STANDIN_PLATFORMS := $(filter-out $(TEST_PLATFORMS),$(PLATFORMS))
platform_bin = $(BIN)/$(subst /,_,$(1))/kubectl-hpa$(if $(filter windows/%,$(1)),.exe)
# The roles of deploy/rbac/ are sources too: kubectl hpa rbac embeds them (deploy/image is a module
# of its own).
GO_SOURCES := $(shell git ls-files -co --exclude-standard -- '*.go' go.mod go.sum 'deploy/rbac/*.yaml' | grep -v -e '_test\.go$$' -e '^test/' -e '^krew/' -e '^deploy/image/')
GOBUILD = env GOFLAGS= CGO_ENABLED=0 GOOS=$(word 1,$(subst _, ,$(1))) GOARCH=$(word 2,$(subst _, ,$(1))) GOAMD64=v1 GOARM64=v8.0 \
	$(GO) build -trimpath -buildvcs=false -ldflags "$(LDFLAGS)" -o $(2) ./cmd/kubectl-hpa

.PHONY: build build-all build-test-platforms FORCE

## build: bin/kubectl-hpa for this machine (the same file as bin/<os>_<arch>/kubectl-hpa)
build: $(call platform_bin,$(HOST_PLATFORM))
	ln -f $< $(BIN)/kubectl-hpa

## build-all: bin/<os>_<arch>/kubectl-hpa[.exe] of every release platform
build-all: $(foreach p,$(PLATFORMS),$(call platform_bin,$(p)))

# build-test-platforms: the binaries make test runs or ships in a test (TEST_PLATFORMS).
build-test-platforms: $(foreach p,$(TEST_PLATFORMS),$(call platform_bin,$(p)))

# Rewritten only when the link flags (version, commit) change, so that the binaries relink then.
$(BIN)/.ldflags: FORCE
	@mkdir -p $(BIN) && { echo '$(LDFLAGS)' | cmp -s - $@ || echo '$(LDFLAGS)' >$@; }

$(BIN)/%/kubectl-hpa: $(GO_SOURCES) $(BIN)/.ldflags
	$(call GOBUILD,$*,$@)

$(BIN)/%/kubectl-hpa.exe: $(GO_SOURCES) $(BIN)/.ldflags
	$(call GOBUILD,$*,$@)

## verify: formatting, vet, golangci-lint (.golangci.yml), tidy modules, no committed binary, import rules and the
## package table of docs/development.md (hack/verify-imports.sh), the plugin type-checked for the release
## platforms make test does not build (hack/typecheck-platforms.sh). `make update` fixes what it can.
# vet builds with -race so that it shares every compiled package with the unit and end-to-end
# tests (a second, plain build of the whole dependency tree costs minutes on a cold machine).
# golangci-lint is built once per version and cached (hack/golangci-lint.sh); it runs last, so
# that on a cold machine make test's background build of it has the longest time to finish.
verify:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed (make update fixes it):"; echo "$$out"; exit 1; fi
	$(GO) vet -race -tags "e2e soak fidelity" ./...
	hack/verify-tidy.sh
	hack/verify-no-binaries.sh
	hack/verify-imports.sh
	GO="$(GO)" hack/typecheck-platforms.sh $(TEST_STANDIN_PLATFORMS)
	GO="$(GO)" hack/golangci-lint.sh run ./...

## update: go mod tidy in every module, gofmt, the golden files (tests run with -update)
update:
	GO="$(GO)" hack/update.sh

## test: everything CI runs: static checks, unit tests, bounded fuzzing, parity with upstream,
## the krew install round-trip and the end-to-end tests on a real control plane (needs root),
## in that order, then a table of each step's wall and CPU time (hack/test.sh). The end-to-end tests'
## components build in the background from the start.
test:
	@MAKE="$(MAKE)" hack/test.sh

# Test binaries are linked without DWARF (-ldflags=-w): about 30 % less CPU per link (a race
# build of plugin/list: 11.4 s against 16.0 s), and make test links about 55 of them; stack
# traces and the race detector's reports do not use it. A debugger does: make TESTLD= keeps it.
TESTLD ?= -ldflags=-w

## test-unit: go test -race of every package of the main module
test-unit:
	$(GO) test -race $(TESTLD) -count=1 -timeout 5m ./...

## test-fuzz: every fuzz target of the decision core for FUZZTIME, the metrics decoders' and sample set's for
## METRICS_FUZZTIME, the recording decoder's for RECORDING_FUZZTIME, the simulator's load parser
## for LOAD_FUZZTIME, the history record's for HISTORY_FUZZTIME and lint's manifest reader's for
## MANIFEST_FUZZTIME
test-fuzz: test-fuzz-core test-fuzz-history test-fuzz-metrics test-fuzz-recording test-fuzz-load test-fuzz-manifest

# The fuzz budgets are counts of executions (-fuzztime Nx), not durations. With a duration,
# Go 1.26's fuzzing coordinator can report "context deadline exceeded" as a failure when its
# deadline fires while a busy worker is still finishing an input (go.dev/issue/75804, fixed in
# Go 1.27): CI failed so once, with no failing input. A count has no deadline to race; on a
# loaded machine it takes longer instead. Each count is about what the target ran in 10 s (the
# loaders 3-5 s) on this 2-core machine under load. A duration (FUZZTIME=1m) still works for a
# longer local run, with that risk.
FUZZTIME ?= 10000x

test-fuzz-core:
	@targets=$$(hack/fuzz-targets.sh controller/replicas); \
	[ -n "$$targets" ] || { echo "no fuzz targets found in controller/replicas"; exit 1; }; \
	for target in $$targets; do \
		echo "fuzz $$target, -fuzztime $(FUZZTIME)"; \
		$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) ./controller/replicas || exit 1; \
	done

# The load parser is small and quick to explore: a few seconds find what there is to find.
LOAD_FUZZTIME ?= 20000x

.PHONY: test-fuzz-load
test-fuzz-load:
	@targets=$$(hack/fuzz-targets.sh plugin/sim/load); \
	[ -n "$$targets" ] || { echo "no fuzz targets found in plugin/sim/load"; exit 1; }; \
	for target in $$targets; do \
		echo "fuzz $$target, -fuzztime $(LOAD_FUZZTIME)"; \
		$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(LOAD_FUZZTIME) ./plugin/sim/load || exit 1; \
	done

# The persisted history record (controller/history/annotation) is a leaf too; a few seconds cover its
# decoder.
HISTORY_FUZZTIME ?= 20000x
.PHONY: test-fuzz-history
test-fuzz-history:
	@targets=$$(hack/fuzz-targets.sh controller/history/annotation); \
	[ -n "$$targets" ] || { echo "no fuzz targets found in controller/history/annotation"; exit 1; }; \
	for target in $$targets; do \
		echo "fuzz $$target, -fuzztime $(HISTORY_FUZZTIME)"; \
		$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(HISTORY_FUZZTIME) ./controller/history/annotation || exit 1; \
	done

# lint's manifest reader (internal/manifest, a leaf of the API types and yaml): never panics,
# every object it returns has a line inside its input, every failure names the file.
MANIFEST_FUZZTIME ?= 20000x
.PHONY: test-fuzz-manifest
test-fuzz-manifest:
	@targets=$$(hack/fuzz-targets.sh internal/manifest); \
	[ -n "$$targets" ] || { echo "no fuzz targets found in internal/manifest"; exit 1; }; \
	for target in $$targets; do \
		echo "fuzz $$target, -fuzztime $(MANIFEST_FUZZTIME)"; \
		$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(MANIFEST_FUZZTIME) ./internal/manifest || exit 1; \
	done

## bench: every Go benchmark of the main module, once
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# ---- decision core: parity with upstream (owner: parity) ----
.PHONY: test-parity bench-parity bench-compare

## test-parity: the core against upstream v1.37.2's replica calculator on 10,000 random scenarios
## (its own module, test/parity; replay one with: cd test/parity && go test -run TestCalculatorParity -seed=N)
test-parity:
	cd test/parity && $(GO) test -race $(TESTLD) -count=1 ./...

## bench-parity: upstream's calculator on BenchmarkDecide's workload, measured on this machine
bench-parity:
	cd test/parity && $(GO) test -run '^$$' -bench BenchmarkUpstream -benchmem ./...

## bench-compare: BenchmarkDecide (as run decides), BenchmarkDecideWithPodTreatments (as explain
## does) and BenchmarkListAndDecide (as run decides, its pod listing included) beside upstream's
## calculator on the one shared workload (controller/replicas/benchload), alternating COUNT runs
## of each, side by side with benchstat
bench-compare:
	GO=$(GO) COUNT=$(or $(COUNT),6) hack/bench-compare.sh

# ---- metrics: fuzzing (owner: metrics) ----
# Each decoder fuzz target of metrics/decode runs METRICS_FUZZTIME; the seed corpus is committed in
# metrics/decode/testdata/fuzz, and a failing input is written there too, to be committed with
# the fix. The decoders live in that leaf package so that -fuzz instruments api and
# apimachinery only (shared with the core's targets), not all of client-go.
METRICS_FUZZTIME ?= 30000x

.PHONY: test-fuzz-metrics

test-fuzz-metrics:
	@for pkg in metrics/decode metrics/sampleset; do \
		targets=$$(hack/fuzz-targets.sh $$pkg); \
		[ -n "$$targets" ] || { echo "no fuzz targets found in $$pkg"; exit 1; }; \
		for target in $$targets; do \
			echo "fuzz $$pkg $$target, -fuzztime $(METRICS_FUZZTIME)"; \
			$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(METRICS_FUZZTIME) -parallel 2 ./$$pkg || exit 1; \
		done; \
	done

# ---- recordings: fuzzing the decoder of run --record files ----
# A few seconds: the format is plain JSON Lines over encoding/json, and its round trip of every
# kind of sync is a unit test as well; the seed corpus is the unit tests' recordings.
RECORDING_FUZZTIME ?= 3000x

.PHONY: test-fuzz-recording

test-fuzz-recording:
	@targets=$$(hack/fuzz-targets.sh plugin/recording); \
	[ -n "$$targets" ] || { echo "no fuzz targets found in plugin/recording"; exit 1; }; \
	for target in $$targets; do \
		echo "fuzz $$target, -fuzztime $(RECORDING_FUZZTIME)"; \
		$(GO) test $(TESTLD) -run '^$$' -fuzz "^$$target\$$" -fuzztime $(RECORDING_FUZZTIME) ./plugin/recording || exit 1; \
	done

# ---- real cluster: e2e and demo (owner: cluster) ----
# The control-plane binaries are cached by hack/build-testbin.sh (cold: ~15 min on 2 cores);
# the e2e test binary is compiled here (Go build cache) and re-executes itself inside a private
# network namespace, where the module proxy is unreachable; it needs root.
E2E_TIMEOUT ?= 15m
E2E_RUN ?= .
# E2E_COMPONENTS: the components test-e2e builds before the tests start (default all of them).
# make test names all but Prometheus and the custom metrics adapter, which it builds meanwhile:
# the tests that use them wait for them up to E2E_TESTBIN_WAIT (a Go duration; 0 does not wait).
E2E_COMPONENTS ?=
E2E_TESTBIN_WAIT ?= 0
# E2E_TAGS lets work in progress add its own build tag next to e2e.
E2E_TAGS ?= e2e
# KEDA's module, whose ScaledObject CRD the e2e tests install (its source, not its operator):
# the newest v2.20, as v2.21 needs Go 1.27.4. Downloaded before the tests enter their network
# namespace: 0.6 s and 14 MB of module cache on a fresh machine.
KEDA_VERSION ?= v2.20.2
# Parallel e2e tests mostly wait on the cluster (metrics windows, sync periods), so more of
# them than cores run side by side: with 6 the one-minute load average on 2 cores was 0.3 as the run ended, and
# the step took 481 s in a warm make test against 528 s with 4.
E2E_PARALLEL ?= 6
# The tests that restart a component of the cluster (the API server, metrics-server,
# kube-controller-manager) or deploy into it run one after another, and Go runs such tests
# before it lets any parallel one start: in a warm run they held the other 30 back for 280 s of
# the step's 719 s. So a full run starts the e2e binary twice at once, each process with its own
# cluster in its own network namespace: these tests in one, in sequence, the others in the
# other. (A sequential test missing here still passes, in the second process, ahead of its
# parallel tests.)
E2E_SERIAL := TestDeployInClusterManifestsAutoscaleAsTheServiceAccount|TestChurnAndFaultsEveryLiveHPADecidedEachPeriodAndEveryWriteExplained|TestFaultAPIServerOutageRunResumesAndDecidesAsUpstream|TestFaultMetricsAPIUnavailableStopsScalingUntilItIsBack|TestAPIServerRestartKeepsTheClusterWorking|TestOutageLongerThanTheRenewDeadlineRunCampaignsAgainAndWritesAgain|TestOutageMetricsServerDownIsReportedUnavailableNotUninstalled|TestRunLeavesHPAsOfTheUpstreamControllerAlone|TestTimelineAndTuneFromPrometheusFollowTheUpstreamController

.PHONY: testbin test-e2e demo

testbin:
	hack/build-testbin.sh

# The demo the tests drive is built with -race too: it then shares every compiled package with
# the test binary instead of compiling the harness's dependencies once more.
## test-e2e: the end-to-end tests on a real control plane in a private network namespace (needs root;
## E2E_RUN=REGEX runs some)
test-e2e: build e2e-image
	@testbin=$$(hack/build-testbin.sh $(E2E_COMPONENTS) | tail -n1) && \
	keda=$$($(GO) mod download -json github.com/kedacore/keda/v2@$(KEDA_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
	$(GO) test -c -race $(TESTLD) -tags '$(E2E_TAGS)' -o $(BIN)/e2e.test ./test/e2e && \
	$(GO) build -race -o $(BIN)/e2e-demo ./test/e2e/demo && \
	cd test/e2e && export KUBECTL_HPA_TESTBIN=$$testbin KUBECTL_HPA_KEDA_DIR=$$keda KUBECTL_HPA_TESTBIN_WAIT=$(E2E_TESTBIN_WAIT) KUBECTL_HPA_PLUGIN_DIR=$(BIN) KUBECTL_HPA_DEMO=$(BIN)/e2e-demo KUBECTL_HPA_IMAGE_DIR=$(BIN)/e2e-image && \
	e2e() { $(BIN)/e2e.test -test.v -test.parallel $(E2E_PARALLEL) -test.timeout $(E2E_TIMEOUT) "$$@"; } && \
	if [ '$(E2E_RUN)' != . ]; then e2e -test.run '$(E2E_RUN)'; exit; fi && \
	{ e2e -test.run '^($(E2E_SERIAL))$$' >$(BIN)/e2e-serial.log 2>&1 & } && serial=$$! && \
	{ e2e -test.skip '^($(E2E_SERIAL))$$' 2>&1 | tee $(BIN)/e2e-parallel.log; rc=$${PIPESTATUS[0]}; } && \
	{ wait $$serial && src=0 || src=$$?; } && \
	echo "=== the tests that restart a component, on their own cluster alongside the others (exit $$src):" && \
	cat $(BIN)/e2e-serial.log && \
	if [ $$rc != 0 ] || [ $$src != 0 ]; then echo "=== what the failed tests said:"; \
	  $(CURDIR)/hack/test-failures.sh $(BIN)/e2e-parallel.log $(BIN)/e2e-serial.log; exit 1; fi

## demo: the main job on an embedded default: a real cluster, explain, then run until Ctrl-C (needs root)
## The harness is built with -race, as test-e2e builds it: after a make test nothing is compiled
## again (a build without -race compiled its dependencies anew, minutes on 2 cores).
demo: build
	@echo "demo: the cluster's components (kube-apiserver, etcd, kube-controller-manager, metrics-server, Heapster): cached after the first build, which took 14 minutes on 2 cores in a fresh run"
	@testbin=$$(KUBECTL_HPA_PROGRESS=15 hack/build-testbin.sh | tail -n1) && \
	echo "demo: the demo's harness (seconds after a make test, minutes on a fresh machine)" && \
	$(GO) build -race -o $(BIN)/e2e-demo ./test/e2e/demo && \
	KUBECTL_HPA_TESTBIN=$$testbin KUBECTL_HPA_PLUGIN_DIR=$(BIN) $(BIN)/e2e-demo

# ---- krew: dist, manifest, install round-trip (owner: krew) ----
DIST ?= $(CURDIR)/dist

.PHONY: dist krew-manifest krew-local krew-index test-krew image release e2e-image krew

## krew: krew v0.4.3, built from the modules krew/tools pins, installed into KREW_ROOT (default
## ~/.krew) offline as krew's own offline installation does (hack/krew-install.sh); `kubectl krew`
## then works with $KREW_ROOT/bin on PATH. A krew already installed there is kept.
krew:
	GO="$(GO)" hack/krew-install.sh

## image: the container image of linux/amd64 and linux/arm64 as one OCI index, without a Docker
## daemon: $(DIST)/image (OCI layout), $(DIST)/kubectl-hpa_$(VERSION)_image.tar, $(DIST)/image.digest
image: $(foreach p,$(filter-out $(IMAGE_STANDIN),$(IMAGE_PLATFORMS)),$(call platform_bin,$(p)))
	VERSION="$(VERSION)" BIN="$(BIN)" DIST="$(DIST)" IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" STANDIN="$(IMAGE_STANDIN)" hack/image.sh

# IMAGE_STANDIN: platforms whose image layer make image fills with a stand-in payload instead of
# building the binary, as DIST_STANDIN does for dist. Only make test's image test sets it, on
# make's command line, for the image platforms it does not build; make release refuses it.
IMAGE_STANDIN :=

# DIST_STANDIN: platforms whose archive make dist packs with a stand-in payload (a text file
# under the binary's name saying what it stands for) instead of building the binary. Only the
# krew round trip sets it, on make's command line (a plain assignment: the environment cannot
# set it), for TEST_STANDIN_PLATFORMS; make release refuses it.
DIST_STANDIN :=

## dist: reproducible release archives of every platform and checksums.txt in $(DIST)
dist: $(foreach p,$(filter-out $(DIST_STANDIN),$(PLATFORMS)),$(call platform_bin,$(p)))
	GO="$(GO)" VERSION="$(VERSION)" BIN="$(BIN)" DIST="$(DIST)" PLATFORMS="$(PLATFORMS)" STANDIN="$(DIST_STANDIN)" hack/dist.sh

## e2e-image: the image of this machine's platform, validated and unpacked into $(BIN)/e2e-image
## for the in-cluster end-to-end test
e2e-image: $(call platform_bin,$(HOST_PLATFORM))
	VERSION="$(VERSION)" BIN="$(BIN)" HOST_PLATFORM="$(HOST_PLATFORM)" OUT="$(BIN)/e2e-image" hack/e2e-image.sh

## release: archives, checksums.txt, hpa.yaml, the image and kubectl-hpa.yaml (deploy/ with the
## image's digest) in $(DIST), all or nothing; refuses a dirty tree or a VERSION that is not semver
release:
	@[ -z "$(DIST_STANDIN)" ] || { echo "release: DIST_STANDIN is for the krew round trip only; a release packs every binary"; exit 1; }
	@[ -z "$(IMAGE_STANDIN)" ] || { echo "release: IMAGE_STANDIN is for make test's image test only; a release packs every binary"; exit 1; }
	@MAKE="$(MAKE)" VERSION="$(VERSION)" DIST="$(DIST)" hack/release.sh

## krew-manifest: $(DIST)/hpa.yaml for VERSION=vX.Y.Z from krew/hpa.yaml, validated by krew
krew-manifest: dist
	GO="$(GO)" VERSION="$(VERSION)" DIST="$(DIST)" hack/krew-manifest.sh

## krew-local: this machine's archive alone and a krew manifest for it in $(DIST), to install from
## source with kubectl krew install --manifest --archive (docs/install.md): one build, not six
krew-local: $(call platform_bin,$(HOST_PLATFORM))
	GO="$(GO)" VERSION="$(VERSION)" BIN="$(BIN)" DIST="$(DIST)" PLATFORMS="$(HOST_PLATFORM)" STANDIN= hack/dist.sh
	GO="$(GO)" VERSION="$(VERSION)" DIST="$(DIST)" KREW_PLATFORMS="$(HOST_PLATFORM)" hack/krew-manifest.sh

## krew-index: krew/index/plugins/hpa.yaml for VERSION (the project's own krew index, see krew/index)
krew-index: krew-manifest
	mkdir -p krew/index/plugins && cp "$(DIST)/hpa.yaml" krew/index/plugins/hpa.yaml

## test-krew: the release round trip, offline: make dist + krew-manifest into a temp dir, krew
## install of every platform, the upgrade through the index; make release's refusals; the image
## (deploy/image) and its reproducibility. The binaries of build-test-platforms and krew's tools
## (cached by hack/krew-tools.sh) are built once and reused; the archives and image layers of the
## platforms make test does not build (TEST_STANDIN_PLATFORMS, type-checked by make verify) hold a
## stand-in payload (KREW_ROUNDTRIP_STANDIN: see krew/tools/roundtrip and krew/tools/scripts).
test-krew: build-test-platforms
	cd krew/tools && VERSION="$(VERSION)" KREW_ROUNDTRIP_STANDIN="$(TEST_STANDIN_PLATFORMS)" $(GO) test -race $(TESTLD) -count=1 -timeout 45m ./...
	cd deploy/image && $(GO) test -race $(TESTLD) -count=1 ./...

# ---- fidelity: recordings of upstream's HPA controller (owner: fidelity) ----
# `make record-fidelity` runs TestRecordFidelity alone on the real cluster (build tags e2e and
# fidelity: `make test` never builds it): kube-controller-manager's own HPA controller under
# three scripted loads side by side (about 11 minutes), written to
# plugin/sim/testdata/upstream/*.json, which plugin/sim's fidelity test (in make test)
# requires the simulation to reproduce. Built without -race, like the soak test: the node
# stand-in and the load model run in the test process, and their timing is what is recorded.
FIDELITY_OUT ?= $(CURDIR)/plugin/sim/testdata/upstream

.PHONY: record-fidelity

## record-fidelity: records upstream's HPA controller on the real cluster for the simulator's fidelity test
record-fidelity: build
	@testbin=$$(hack/build-testbin.sh | tail -n1) && mkdir -p $(FIDELITY_OUT) && \
	$(GO) test -c -tags 'e2e fidelity' -o $(BIN)/e2e-fidelity.test ./test/e2e && \
	cd test/e2e && KUBECTL_HPA_TESTBIN=$$testbin KUBECTL_HPA_PLUGIN_DIR=$(BIN) KUBECTL_HPA_DEMO=$(BIN)/e2e-demo \
		KUBECTL_HPA_FIDELITY_OUT=$(FIDELITY_OUT) \
		$(BIN)/e2e-fidelity.test -test.v -test.parallel 3 -test.timeout 30m -test.run '^TestRecordFidelity$$'

# ---- soak (owner: soak) ----
# `make soak` runs, on the real cluster (build tags e2e and soak: `make test` never builds
# them), TestSoak, then TestSoakChurnAndFaults (SOAK_RUN picks). TestSoak: SOAK_HPAS HPAs,
# each on its own Deployment, over SOAK_PODS pods in SOAK_NAMESPACES namespaces, SOAK_DURATION
# of steady state; it prints its figures (SOAK FIGURES: sync pass time, API requests per HPA
# and sync, RSS of run and its growth, load change to scale write) and asserts only
# correctness; then kube-controller-manager's own HPA controller decides the same HPAs for
# SOAK_REFERENCE (0: not at all), and both are printed side by side (SIDE BY SIDE: pass time,
# requests, metrics-server's CPU beyond its rate over SOAK_BASELINE with no HPA controller,
# the controller's CPU, bytes read and RSS).
# TestSoakChurnAndFaults: as many HPAs and pods over SOAK_NAMESPACES namespaces, run -A, for
# SOAK_DURATION of churn at SOAK_CHURN_RATE changes a second and four faults (CHURN FIGURES);
# it asserts that every live HPA is decided each 1.5 sync periods outside the faults, no
# decision on stale samples, no write for a deleted HPA or without the Lease, and every scale
# write a recorded decision's, whose replay is exact (test/e2e/churn_test.go);
# (its short version, 200 HPAs for 2 minutes, is in test-e2e). SOAK_SIZE picks
# the size: 1k (1,000 HPAs over 10,000 pods) or 5k (5,000 over 50,000); SOAK_HPAS and
# SOAK_PODS override it. Its cluster runs without Heapster (-e2e.heapster=false), as the
# soak reads metrics.k8s.io alone, and spreads the pods over SOAK_NODES nodes. Built without
# -race by default: the node stand-in and the load model run in the test process, and the
# race detector would multiply their CPU on a shared machine (SOAK_GOFLAGS=-race for a small
# run).
SOAK_SIZE ?= 1k
soak_hpas_1k := 1000
soak_pods_1k := 10000
soak_hpas_5k := 5000
soak_pods_5k := 50000
ifeq ($(soak_hpas_$(SOAK_SIZE)),)
$(error SOAK_SIZE=$(SOAK_SIZE): want 1k or 5k)
endif
SOAK_HPAS ?= $(soak_hpas_$(SOAK_SIZE))
SOAK_PODS ?= $(soak_pods_$(SOAK_SIZE))
# SOAK_NODES: the nodes the node stand-in plays, 100 pods each by default.
SOAK_NODES ?= $(shell echo $$(( ($(SOAK_PODS) + 99) / 100 )))
SOAK_NAMESPACES ?= 50
SOAK_CHURN_RATE ?= 5
# SOAK_KUBE_API_QPS: TestSoakChurnAndFaults's run --kube-api-qps (burst twice that); 0 keeps run's default.
SOAK_KUBE_API_QPS ?= 0
# SOAK_CHURN_WORKERS: TestSoakChurnAndFaults's run --workers.
SOAK_CHURN_WORKERS ?= 5
SOAK_DURATION ?= 10m
SOAK_TIMEOUT ?= 180m
SOAK_GOFLAGS ?=
SOAK_METRICS_READS ?= per-namespace
SOAK_REFERENCE ?= 5m
SOAK_BASELINE ?= 1m
SOAK_RUN ?= ^(TestSoak|TestSoakChurnAndFaults)$$

.PHONY: soak soak-list

## soak: SOAK_SIZE=1k|5k HPAs and pods on the real cluster for SOAK_DURATION, steady then under churn and faults, with its figures
soak: build
	@testbin=$$(hack/build-testbin.sh | tail -n1) && \
	$(GO) test -c $(SOAK_GOFLAGS) -tags 'e2e soak' -o $(BIN)/e2e-soak.test ./test/e2e && \
	cd test/e2e && KUBECTL_HPA_TESTBIN=$$testbin KUBECTL_HPA_PLUGIN_DIR=$(BIN) \
		$(BIN)/e2e-soak.test -test.v -test.timeout $(SOAK_TIMEOUT) -test.run '$(SOAK_RUN)' \
		-soak.hpas=$(SOAK_HPAS) -soak.pods=$(SOAK_PODS) -soak.duration=$(SOAK_DURATION) -soak.metrics-reads=$(SOAK_METRICS_READS) \
		-soak.namespaces=$(SOAK_NAMESPACES) -soak.churn-rate=$(SOAK_CHURN_RATE) -soak.kube-api-qps=$(SOAK_KUBE_API_QPS) -soak.churn-workers=$(SOAK_CHURN_WORKERS) \
		-soak.reference=$(SOAK_REFERENCE) -soak.baseline=$(SOAK_BASELINE) -e2e.heapster=false -e2e.nodes=$(SOAK_NODES)

# soak-list: TestSoakList, `kubectl hpa list -A` over SOAK_LIST_HPAS HPAs on as many Deployments,
# SOAK_LIST_PODS pods, in SOAK_LIST_NAMESPACES namespaces, beside kubectl get and describe hpa -A.
SOAK_LIST_NAMESPACES ?= 100
SOAK_LIST_HPAS ?= 1000
SOAK_LIST_PODS ?= 10000

## soak-list: list -A over SOAK_LIST_HPAS HPAs in SOAK_LIST_NAMESPACES namespaces on the real cluster, timed
## beside kubectl get and describe hpa -A, its requests per namespace counted from the audit log
soak-list: build
	@testbin=$$(hack/build-testbin.sh | tail -n1) && \
	$(GO) test -c $(SOAK_GOFLAGS) -tags 'e2e soak' -o $(BIN)/e2e-soak.test ./test/e2e && \
	cd test/e2e && KUBECTL_HPA_TESTBIN=$$testbin KUBECTL_HPA_PLUGIN_DIR=$(BIN) \
		$(BIN)/e2e-soak.test -test.v -test.timeout $(SOAK_TIMEOUT) -test.run '^TestSoakList$$' \
		-soak.list-namespaces=$(SOAK_LIST_NAMESPACES) -soak.list-hpas=$(SOAK_LIST_HPAS) -soak.list-pods=$(SOAK_LIST_PODS)
