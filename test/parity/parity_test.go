package parity

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
)

var (
	seedFlag       = flag.Uint64("seed", 0, "replay only the scenario with this seed (or set PARITY_SEED)")
	masterSeedFlag = flag.Uint64("master-seed", 0, "seed of the scenario sequence (or set PARITY_MASTER_SEED); 0 draws one and logs it")
	scenariosFlag  = flag.Int("scenarios", 10000, "number of random scenarios")
)

// seedSetting reads a seed from its flag or, when the flag is unset, from an environment variable.
func seedSetting(t *testing.T, flagValue uint64, env string) uint64 {
	if flagValue != 0 {
		return flagValue
	}
	v := os.Getenv(env)
	if v == "" {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q is not an unsigned integer: %v", env, v, err)
	}
	return n
}

// scenarioSeeds returns the seeds to run: the one to replay, or a sequence drawn from a master seed.
func scenarioSeeds(t *testing.T) []uint64 {
	if seed := seedSetting(t, *seedFlag, "PARITY_SEED"); seed != 0 {
		t.Logf("replaying scenario seed %d", seed)
		return []uint64{seed}
	}
	master := seedSetting(t, *masterSeedFlag, "PARITY_MASTER_SEED")
	if master == 0 {
		master = rand.Uint64()
	}
	t.Logf("master seed %d (rerun this sequence with -master-seed=%d)", master, master)
	r := rand.New(rand.NewPCG(master, 0))
	seeds := make([]uint64, *scenariosFlag)
	for i := range seeds {
		seeds[i] = r.Uint64()
	}
	return seeds
}

// TestCalculatorParity requires our core to propose, for every random scenario, what upstream's
// replica calculator proposes: the same replica count, the same status (utilization, average or
// value, quantity format) and the same error with the same condition reason.
func TestCalculatorParity(t *testing.T) {
	byGate := map[bool][]*scenario{}
	for _, seed := range scenarioSeeds(t) {
		s := newScenario(seed)
		byGate[s.podLevelResources] = append(byGate[s.podLevelResources], s)
	}
	for _, gate := range []bool{true, false} {
		if len(byGate[gate]) == 0 {
			continue
		}
		t.Run(fmt.Sprintf("PodLevelResources=%t", gate), func(t *testing.T) {
			// Upstream reads the gate from the process-wide feature gate.
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.PodLevelResources, gate)
			runScenarios(t, byGate[gate])
		})
	}
}

const maxReportedMismatches = 5

func runScenarios(t *testing.T, scenarios []*scenario) {
	var mismatches []string
	stats := map[string]int{}
	for _, s := range scenarios {
		up, ours, err := decideBoth(s)
		if err != nil {
			t.Fatalf("scenario seed %d: %v\n%s", s.seed, err, s)
		}
		stats[outcomeClass(s, up)]++
		if diff := compare(up, ours); diff != "" {
			mismatches = append(mismatches, fmt.Sprintf("%s\n  upstream: %s\n  ours:     %s\n%s  replay: cd test/parity && go test -run TestCalculatorParity -seed=%d",
				diff, up, ours, s, s.seed))
		}
	}
	t.Logf("%d scenarios; upstream outcomes: %s", len(scenarios), formatStats(stats))
	if len(mismatches) == 0 {
		return
	}
	shown := mismatches[:min(len(mismatches), maxReportedMismatches)]
	t.Errorf("%d of %d scenarios disagree with upstream; first %d:\n\n%s", len(mismatches), len(scenarios), len(shown), strings.Join(shown, "\n\n"))
}

// decideBoth runs upstream and our core on the same pods and the same time.
func decideBoth(s *scenario) (up, ours result, err error) {
	// Upstream's groupPods reads time.Now() itself; scenario times are whole seconds away from
	// every boundary it checks, so a run that ends well within a second of `now` is exact. A run
	// descheduled for longer is simply repeated.
	for attempt := 0; ; attempt++ {
		now := time.Now()
		pods := s.buildPods(now)
		up, err = runUpstream(s, now, orderedPodLister(pods))
		if err != nil {
			return up, ours, err
		}
		if time.Since(now) < 500*time.Millisecond {
			ours, err = runOursSafely(s, now, pods)
			return up, ours, err
		}
		if attempt == 5 {
			return up, ours, fmt.Errorf("upstream's calculator took over 500ms five times in a row; cannot compare its time-dependent readiness rules")
		}
	}
}

// runOursSafely turns a panic of the core into a mismatch report instead of killing the run.
func runOursSafely(s *scenario, now time.Time, pods []*corev1.Pod) (r result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r = result{Err: fmt.Sprintf("panic: %v\n%s", p, debug.Stack()), Reason: "panic"}
			err = nil
		}
	}()
	return runOurs(s, now, pods)
}

// compare returns what differs, or "".
func compare(up, ours result) string {
	var diffs []string
	switch {
	case (up.Err == "") != (ours.Err == ""):
		diffs = append(diffs, "error-or-not differs")
	case up.Err != "":
		if up.Err != ours.Err {
			diffs = append(diffs, "error message differs")
		}
		if up.Reason != ours.Reason {
			diffs = append(diffs, "condition reason differs")
		}
	default:
		if up.Replicas != ours.Replicas {
			diffs = append(diffs, "replica count differs")
		}
		if up.Status != ours.Status {
			diffs = append(diffs, "metric status differs")
		}
	}
	return strings.Join(diffs, ", ")
}

// outcomeClass labels an upstream result, to show in the log which branches the run exercised.
func outcomeClass(s *scenario, r result) string {
	switch {
	case r.Err != "":
		return "error"
	case r.Replicas > s.specReplicas:
		return "up"
	case r.Replicas < s.specReplicas:
		return "down"
	default:
		return "hold"
	}
}

func formatStats(stats map[string]int) string {
	parts := make([]string, 0, len(stats))
	for _, k := range sortedKeys(stats) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, stats[k]))
	}
	return strings.Join(parts, " ")
}
