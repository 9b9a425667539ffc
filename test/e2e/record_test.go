//go:build e2e

package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/recording"
	"github.com/kubectl-hpa/kubectl-hpa/controller/rerun"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// printedDecisions are the Explanations run -o json printed, in order, and their lines (its
// notes and logs share the stream and are skipped).
func printedDecisions(t *testing.T, out string) ([]output.Explanation, []string) {
	t.Helper()
	var (
		got   []output.Explanation
		lines []string
	)
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		lines = append(lines, line)
		var e output.Explanation
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("a line of run -o json is not an Explanation: %v\n%s", err, line)
		}
		if e.Decision != nil {
			got = append(got, e)
		}
	}
	return got, lines
}

// checkRecordingReplays requires the recording run wrote (and closed when Ctrl-C stopped it)
// to hold every decision run printed, and a replay of it to reproduce every one exactly:
// kubectl hpa simulate --from-recording -o json prints what run -o json printed, line for
// line, and every field of every sync's decision, outcome and kept history is equal. Each
// HPA's decisions are compared in their order: with several workers, run may print two HPAs'
// decisions in one order and record them in the other.
func checkRecordingReplays(t *testing.T, k cluster.Kubectl, path, out string) {
	t.Helper()
	rec, printed, simTook := checkSimulateReplays(t, k, path, out)
	start := time.Now()
	rep, err := rerun.Run(t.Context(), rec, rerun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, d := range rep.Divergences {
		t.Errorf("replay: %s", d)
	}
	printedBy := map[string][]output.Explanation{}
	for _, e := range printed {
		key := e.Metadata.Namespace + "/" + e.Metadata.Name
		printedBy[key] = append(printedBy[key], e)
	}
	seen := map[string]int{}
	ups, downs := 0, 0
	for _, s := range rep.Syncs {
		i := seen[s.Key]
		seen[s.Key]++
		if i >= len(printedBy[s.Key]) {
			t.Errorf("the recording holds more syncs of %s than run printed decisions of it (%d)", s.Key, len(printedBy[s.Key]))
			continue
		}
		e, r := printedBy[s.Key][i], s.Replayed
		got := []any{e.Metadata.Namespace + "/" + e.Metadata.Name, e.Time.UTC().Format(time.RFC3339), e.Decision.Phase, e.Decision.CurrentReplicas, e.Decision.DesiredReplicas, e.Decision.Rescale, e.Decision.Reason}
		want := []any{s.Key, s.Now.UTC().Format(time.RFC3339), r.Phase, r.CurrentReplicas, r.DesiredReplicas, r.Rescale, r.Reason}
		for j := range got {
			if got[j] != want[j] {
				t.Errorf("decision %d of %s: run printed %v, the replay decided %v", i, s.Key, got, want)
				break
			}
		}
		if r.Rescale && r.DesiredReplicas > r.CurrentReplicas {
			ups++
		} else if r.Rescale {
			downs++
		}
	}
	t.Logf("replayed %d syncs of %s (%d terms): kubectl hpa simulate --from-recording took %v, the replay in the test %v; %d scale-ups, %d scale-downs, %d divergences",
		len(rep.Syncs), path, len(rec.Terms), simTook.Round(time.Millisecond), took.Round(time.Millisecond), ups, downs, len(rep.Divergences))
	if ups == 0 || downs == 0 {
		t.Errorf("the recording holds %d scale-ups and %d scale-downs, want both", ups, downs)
	}
}

// checkSimulateReplays is the part of checkRecordingReplays kubectl hpa simulate
// --from-recording does on its own: it replays every sync (exiting 1 on any field of a
// decision, outcome or kept history that differs from the recording's), and prints each
// decision as run printed it. It returns the recording, run's printed decisions and how long
// simulate took.
func checkSimulateReplays(t *testing.T, k cluster.Kubectl, path, out string) (*recording.Recording, []output.Explanation, time.Duration) {
	t.Helper()
	printed, lines := printedDecisions(t, out)
	simStart := time.Now()
	replayed, err := k.Run(t.Context(), "hpa", "simulate", "--from-recording", path, "-o", "json")
	simTook := time.Since(simStart)
	if err != nil {
		t.Fatalf("kubectl hpa simulate --from-recording: %v", err)
	}
	again := slices.Collect(strings.Lines(replayed))
	if len(again) != len(lines) {
		t.Errorf("run printed %d decisions, simulate --from-recording %d", len(lines), len(again))
	}
	ranLines, againLines := linesByHPA(t, lines), linesByHPA(t, again)
	for key, ran := range ranLines {
		for i := range min(len(ran), len(againLines[key])) {
			if ran[i] != againLines[key][i] {
				t.Errorf("decision %d of %s: run printed\n%s\nsimulate --from-recording printed\n%s", i, key, ran[i], againLines[key][i])
			}
		}
	}
	rec, err := recording.Open(path)
	if err != nil {
		t.Fatalf("reading the recording: %v", err)
	}
	if len(rec.Syncs) != len(printed) {
		t.Fatalf("run printed %d decisions and recorded %d syncs: a stop must lose none", len(printed), len(rec.Syncs))
	}
	return rec, printed, simTook
}

// linesByHPA groups lines of run -o json (or simulate --from-recording -o json) by the HPA
// ("namespace/name") each explains, in their order.
func linesByHPA(t *testing.T, lines []string) map[string][]string {
	t.Helper()
	by := map[string][]string{}
	for _, line := range lines {
		var e struct {
			Metadata output.Metadata `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("a line of -o json is not an Explanation: %v\n%s", err, line)
		}
		key := e.Metadata.Namespace + "/" + e.Metadata.Name
		by[key] = append(by[key], line)
	}
	return by
}
