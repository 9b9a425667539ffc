package simulate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// testdata/simulate/run.jsonl is a recording of the real controller (informers on a fake
// clientset) through a rising load, a metrics outage and a falling load: 17 syncs of shop/web
// (controller/replay's recordRun).
var recordedRun = td("run.jsonl")

func TestSimulateFromARecordingReplaysRunsDecisionsExactly(t *testing.T) {
	r := runSimulate(t, nil, "--from-recording", recordedRun)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	cmdtest.CheckGolden(t, "simulate-replay.txt", r.stdout)

	r = runSimulate(t, nil, "web", "-n", "shop", "--from-recording", recordedRun, "-o", "json")
	if r.code != 0 {
		t.Fatalf("-o json: exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 17 {
		t.Fatalf("-o json printed %d lines, want one Explanation per sync (17)", len(lines))
	}
	for i, l := range lines {
		var e v1alpha1.Explanation
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Kind != "Explanation" || e.Decision == nil {
			t.Errorf("line %d is not an Explanation with a decision (%v): %.100s", i+1, err, l)
		}
	}
	if want := "replayed 17 syncs of shop/web from " + recordedRun + ": every decision, outcome and history kept is run's\n"; r.stderr != want {
		t.Errorf("-o json: stderr %q, want the verdict %q", r.stderr, want)
	}
}

// TestSimulateFromARecordingCutShortReplaysTheLinesBefore replays the recording of a run killed
// while it wrote its last sync: the 16 whole syncs are replayed, and the cut line is named.
func TestSimulateFromARecordingCutShortReplaysTheLinesBefore(t *testing.T) {
	data, err := os.ReadFile(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	whole := strings.TrimSuffix(string(data), "\n")
	last := strings.LastIndex(whole, "\n") + 1
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, []byte(whole[:last+(len(whole)-last)/2]), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(whole, "\n") + 1
	r := runSimulate(t, nil, "--from-recording", cut)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := fmt.Sprintf("warning: %s:%d: the last line was cut short (run was stopped while writing it), so it is left out\n", cut, lines); r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if want := "replayed 16 syncs of shop/web from " + cut + ": every decision, outcome and history kept is run's\n"; !strings.HasSuffix(r.stdout, want) {
		t.Errorf("stdout ends:\n%s\nwant:\n%s", r.stdout[max(0, len(r.stdout)-300):], want)
	}
}

func TestSimulateFromARecordingSaysWhatDiffers(t *testing.T) {
	data, err := os.ReadFile(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	// The fourth sync (line 6), as if run had decided 7 replicas instead.
	lines[5] = strings.Replace(lines[5], `"result":{"phase":"Computed","currentReplicas":4,"desiredReplicas":4`, `"result":{"phase":"Computed","currentReplicas":4,"desiredReplicas":7`, 1)
	changed := filepath.Join(t.TempDir(), "changed.jsonl")
	if err := os.WriteFile(changed, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSimulate(t, nil, "--from-recording", changed)
	if r.code != cmdutil.ExitFailure {
		t.Fatalf("exit %d, want %d: %s", r.code, cmdutil.ExitFailure, r.stderr)
	}
	want := "sync 3 (line 6, shop/web): result.desiredReplicas: recorded 7, replayed 4\n" +
		"error: replayed 17 syncs of shop/web from " + changed + ": 1 fields differ from what run recorded (listed above)\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
}

func TestSimulateFromARecordingPlaysItsDemandForVariants(t *testing.T) {
	r := runSimulate(t, nil, "--from-recording", recordedRun, "--variant", "eager=cpu=30%", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var s v1alpha1.Simulation
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Source != "recording "+recordedRun || s.Load.File != recordedRun || s.Load.Points != 17 || len(s.Variants) != 2 {
		t.Errorf("simulation source %q, load %+v, %d variants; want the recording's demand for current and eager", s.Source, s.Load, len(s.Variants))
	}
}

func TestSimulateFromARecordingRefusesWhatTheRecordingGives(t *testing.T) {
	newer := filepath.Join(t.TempDir(), "newer.jsonl")
	if err := os.WriteFile(newer, []byte(`{"apiVersion":"hpa.kubectl-hpa.io/v1alpha1","kind":"Recording","version":2}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"a load beside it", []string{"--from-recording", recordedRun, "--load", td("load.csv")}, "error: --from-recording and --load both give the demand: give one\n"},
		{"an HPA file beside it", []string{"--from-recording", recordedRun, "-f", td("hpa.yaml")}, "error: --from-recording and -f both give the HPA: give one\n"},
		{"a format a replay does not print", []string{"--from-recording", recordedRun, "-o", "yaml"}, "error: --from-recording without a variant replays run's decisions: -o json prints them as run -o json did; -o yaml is for simulations\n"},
		{"an HPA the recording does not hold", []string{"api", "--from-recording", recordedRun}, "error: " + recordedRun + " holds no sync of HPA api (it holds shop/web)\n"},
		{"a newer schema version", []string{"--from-recording", newer}, "error: " + newer + ":1: field version: recording written by a newer kubectl-hpa: schema version 2 is newer than this kubectl-hpa reads (1); replay it with a newer kubectl-hpa\n"},
		{"no such file", []string{"--from-recording", "nosuch.jsonl"}, "error: --from-recording: opening the recording: open nosuch.jsonl: no such file or directory\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runSimulate(t, nil, tt.args...)
			if r.code != cmdutil.ExitUsage || r.stderr != tt.want || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", r.code, r.stdout, r.stderr, cmdutil.ExitUsage, tt.want)
			}
		})
	}
}

// TestSimulateFromARecordingWithABadLineSaysWhere: a replay of every HPA reads the file as it
// replays it, so the syncs before a line that does not decode are printed, then the line is
// named as bad input.
func TestSimulateFromARecordingWithABadLineSaysWhere(t *testing.T) {
	data, err := os.ReadFile(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[5] = "{\"kind\":\"Sync\",\"term\":1,\n"
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSimulate(t, nil, "--from-recording", bad)
	if want := "error: " + bad + ":6: not valid JSON at byte 24: unexpected end of JSON input\n"; r.code != cmdutil.ExitUsage || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, want)
	}
	if got := strings.Count(r.stdout, "\n"); got != 3 {
		t.Errorf("printed %d decisions before the bad line, want the 3 before it:\n%s", got, r.stdout)
	}
}

// TestSimulateFromAFleetRecordingNamesSomeHPAsAndCountsTheRest: a recording of many HPAs
// asks for one by NAME in a line that names ten of them, not every one.
func TestSimulateFromAFleetRecordingNamesSomeHPAsAndCountsTheRest(t *testing.T) {
	fleet := fleetRecording(t, 12)
	some := "shop/web-0, shop/web-1, shop/web-10, shop/web-11, shop/web-2, shop/web-3, shop/web-4, shop/web-5, shop/web-6, shop/web-7 and 2 more"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"variants without a NAME", []string{"--from-recording", fleet, "--variant", "eager=cpu=30%"}, "error: " + fleet + " holds 12 HPAs (" + some + "): name the one to simulate\n"},
		{"a NAME it does not hold", []string{"api", "--from-recording", fleet}, "error: " + fleet + " holds no sync of HPA api (it holds " + some + ")\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runSimulate(t, nil, tt.args...)
			if r.code != cmdutil.ExitUsage || r.stderr != tt.want {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, tt.want)
			}
		})
	}
	r := runSimulate(t, nil, "--from-recording", fleet)
	if want := "replayed 204 syncs of 12 HPAs from " + fleet + ": every decision, outcome and history kept is run's\n"; r.code != 0 || !strings.HasSuffix(r.stdout, want) {
		t.Errorf("exit %d, stdout ends %q; want 0 and %q", r.code, r.stdout[max(0, len(r.stdout)-200):], want)
	}
}
