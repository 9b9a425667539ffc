//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/rerun"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// printedDecisions are the Explanations run -o json printed, in order (its notes and logs
// share the stream and are skipped).
func printedDecisions(t *testing.T, out string) []v1alpha1.Explanation {
	t.Helper()
	var got []v1alpha1.Explanation
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e v1alpha1.Explanation
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
// kubectl hpa simulate --from-recording -o json prints what run -o json printed, line for
// line, and every field of every sync's decision, outcome and kept history is equal. Each
// HPA's decisions are compared in their order: with several workers, run may print two HPAs'
// decisions in one order and record them in the other.
func checkRecordingReplays(t *testing.T, k cluster.Kubectl, path, out string) {
	t.Helper()
	runOut := filepath.Join(t.TempDir(), "run.out")
	if err := os.WriteFile(runOut, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := recording.Load(path, nil)
	if err != nil {
		t.Fatalf("reading the recording: %v", err)
	}
	_, simTook := checkSimulateReplays(t, k, path, runOut, len(rec.Syncs))
	printed := printedDecisions(t, out)
	start := time.Now()
	var syncs []rerun.Sync
	rep, err := rerun.Run(t.Context(), rec.Name, rec.Header, rec.All(), rerun.Options{Each: func(s rerun.Sync) error {
		syncs = append(syncs, s)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, d := range rep.Divergences {
		t.Errorf("replay: %s", d)
	}
	printedBy := map[string][]v1alpha1.Explanation{}
	for _, e := range printed {
		key := e.Metadata.Namespace + "/" + e.Metadata.Name
		printedBy[key] = append(printedBy[key], e)
	}
	seen := map[string]int{}
	ups, downs := 0, 0
	for _, s := range syncs {
		i := seen[s.Key]
		seen[s.Key]++
		if i >= len(printedBy[s.Key]) {
			t.Errorf("the recording holds more syncs of %s than run printed decisions of it (%d)", s.Key, len(printedBy[s.Key]))
			continue
		}
		e, r := printedBy[s.Key][i], s.Rerun
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
		rep.Syncs, path, len(rec.Terms), simTook.Round(time.Millisecond), took.Round(time.Millisecond), ups, downs, rep.Differing)
	if ups == 0 || downs == 0 {
		t.Errorf("the recording holds %d scale-ups and %d scale-downs, want both", ups, downs)
	}
}

// checkSimulateReplays is the part of checkRecordingReplays kubectl hpa simulate
// --from-recording does on its own: it replays every sync (exiting 1 on any field of a
// decision, outcome or kept history that differs from the recording's), and prints each
// decision as run printed it in the file runOut; recorded is how many syncs the recording
// holds, which the caller has read. It returns how many decisions run printed and how long
// simulate took. Every file is read as a stream: a soak's are gigabytes.
func checkSimulateReplays(t *testing.T, k cluster.Kubectl, path, runOut string, recorded int) (int, time.Duration) {
	t.Helper()
	ran, decisions := printedLines(t, runOut)
	simOut := filepath.Join(t.TempDir(), "simulate.out")
	f, err := os.Create(simOut)
	if err != nil {
		t.Fatal(err)
	}
	cmd := k.Command(t.Context(), "hpa", "simulate", "--from-recording", path, "-o", "json")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = f, &stderr
	simStart := time.Now()
	err = cmd.Run()
	simTook := time.Since(simStart)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("kubectl hpa simulate --from-recording: %v\nstderr (last 8 KiB):\n%s", err, tail(stderr.String(), 8192))
	}
	again, _ := printedLines(t, simOut)
	if n, m := ran.lines(), again.lines(); n != m {
		t.Errorf("run printed %d decisions, simulate --from-recording %d", n, m)
	}
	shown := 0
	for key, hashes := range ran {
		for i := range min(len(hashes), len(again[key])) {
			if hashes[i] != again[key][i] && shown < 5 {
				shown++
				t.Errorf("decision %d of %s: run printed\n%s\nsimulate --from-recording printed\n%s", i, key, lineOf(t, runOut, key, i), lineOf(t, simOut, key, i))
			}
		}
	}
	if recorded != decisions {
		t.Fatalf("run printed %d decisions and recorded %d syncs: a stop must lose none", decisions, recorded)
	}
	return decisions, simTook
}

// hashedLines are the lines of run -o json (or simulate --from-recording -o json) by the HPA
// ("namespace/name") each explains, in their order, each as its hash.
type hashedLines map[string][][sha256.Size]byte

func (h hashedLines) lines() int {
	n := 0
	for _, l := range h {
		n += len(l)
	}
	return n
}

// printedLines reads the Explanations of the -o json output in file, and counts those with
// a decision.
func printedLines(t *testing.T, file string) (hashedLines, int) {
	t.Helper()
	by, decisions := hashedLines{}, 0
	eachExplanation(t, file, func(key string, line []byte, decided bool) bool {
		by[key] = append(by[key], sha256.Sum256(line))
		if decided {
			decisions++
		}
		return true
	})
	return by, decisions
}

// lineOf is the i-th line of file explaining the HPA key.
func lineOf(t *testing.T, file, key string, i int) string {
	t.Helper()
	var found string
	eachExplanation(t, file, func(k string, line []byte, _ bool) bool {
		if k == key {
			if i == 0 {
				found = string(line)
				return false
			}
			i--
		}
		return true
	})
	return found
}

// eachExplanation calls f with each Explanation line of the -o json output in file (notes and
// logs share the stream and are skipped), its HPA and whether it holds a decision, until f
// returns false.
func eachExplanation(t *testing.T, file string, f func(key string, line []byte, decided bool) bool) {
	t.Helper()
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if bytes.HasPrefix(line, []byte("{")) {
			var e struct {
				Metadata v1alpha1.Metadata `json:"metadata"`
				Decision json.RawMessage   `json:"decision"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("a line of %s is not an Explanation: %v\n%.300s", file, err, line)
			}
			decided := len(e.Decision) > 0 && string(e.Decision) != "null"
			if !f(e.Metadata.Namespace+"/"+e.Metadata.Name, bytes.TrimSuffix(line, []byte("\n")), decided) {
				return
			}
		}
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }
