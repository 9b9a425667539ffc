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
// line, and every field of every sync's decision, outcome and kept history is equal.
func checkRecordingReplays(t *testing.T, k cluster.Kubectl, path, out string) {
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
	for i := range min(len(lines), len(again)) {
		if lines[i] != again[i] {
			t.Errorf("decision %d: run printed\n%s\nsimulate --from-recording printed\n%s", i, lines[i], again[i])
		}
	}
	rec, err := recording.Open(path)
	if err != nil {
		t.Fatalf("reading the recording: %v", err)
	}
	if len(rec.Syncs) != len(printed) {
		t.Fatalf("run printed %d decisions and recorded %d syncs: a stop must lose none", len(printed), len(rec.Syncs))
	}
	start := time.Now()
	rep, err := rerun.Run(t.Context(), rec, rerun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, d := range rep.Divergences {
		t.Errorf("replay: %s", d)
	}
	ups, downs := 0, 0
	for i, s := range rep.Syncs {
		e, r := printed[i], s.Replayed
		got := []any{e.Metadata.Namespace + "/" + e.Metadata.Name, e.Time.UTC().Format(time.RFC3339), e.Decision.Phase, e.Decision.CurrentReplicas, e.Decision.DesiredReplicas, e.Decision.Rescale, e.Decision.Reason}
		want := []any{s.Key, s.Now.UTC().Format(time.RFC3339), r.Phase, r.CurrentReplicas, r.DesiredReplicas, r.Rescale, r.Reason}
		for j := range got {
			if got[j] != want[j] {
				t.Errorf("decision %d: run printed %v, the replay decided %v", i, got, want)
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
