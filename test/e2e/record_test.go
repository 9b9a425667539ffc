//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/recording"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replay"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// printedDecisions are the Explanations run -o json printed, in order (its notes and logs
// share the stream and are skipped).
func printedDecisions(t *testing.T, out string) []output.Explanation {
	t.Helper()
	var got []output.Explanation
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e output.Explanation
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("a line of run -o json is not an Explanation: %v\n%s", err, line)
		}
		if e.Decision != nil {
			got = append(got, e)
		}
	}
	return got
}

// checkRecordingReplays requires the recording run wrote (and closed when Ctrl-C stopped it)
// to hold every decision run printed, and a replay of it to reproduce every one exactly:
// every field of every sync's decision, outcome and kept history, and what run printed.
func checkRecordingReplays(t *testing.T, path, out string) {
	t.Helper()
	printed := printedDecisions(t, out)
	rec, err := recording.Open(path)
	if err != nil {
		t.Fatalf("reading the recording: %v", err)
	}
	if len(rec.Syncs) != len(printed) {
		t.Fatalf("run printed %d decisions and recorded %d syncs: a stop must lose none", len(printed), len(rec.Syncs))
	}
	start := time.Now()
	rep, err := replay.Run(t.Context(), rec, replay.Options{})
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
	t.Logf("replayed %d syncs of %s (%d terms) in %v: %d scale-ups, %d scale-downs, %d divergences", len(rep.Syncs), path, len(rec.Terms), took.Round(time.Millisecond), ups, downs, len(rep.Divergences))
	if ups == 0 || downs == 0 {
		t.Errorf("the recording holds %d scale-ups and %d scale-downs, want both", ups, downs)
	}
}
