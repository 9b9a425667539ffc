//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// listWatchFrame is one frame of `kubectl hpa list -n NS -w` with one HPA: its time and its
// row's cells by column, as printed (with their * marks).
type listWatchFrame struct {
	at    time.Time
	cells map[string]string
}

// listWatchFrames parses list -w's output with stdout not a terminal: frames separated by
// "---" lines, each its time line, a blank line, the header and one row. A frame that is not
// whole fails the test.
func listWatchFrames(t *testing.T, out string, period time.Duration) []listWatchFrame {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("list -w's output does not end with a whole line:\n%s", out)
	}
	head := regexp.MustCompile(`^Every ` + regexp.QuoteMeta(period.String()) + `, (\S+); \* marks what changed since the frame before$`)
	sep := regexp.MustCompile(`\s{2,}`)
	columns := []string{"NAME", "TARGET", "MIN/MAX", "CURRENT", "WOULD BE", "METRIC", "BINDING", "HELD UNTIL", "HISTORY", "CONTROLLER", "PROBLEMS"}
	var frames []listWatchFrame
	for i, f := range strings.Split(strings.TrimSuffix(out, "\n"), "\n---\n") {
		lines := strings.Split(f, "\n")
		if len(lines) != 4 || lines[1] != "" {
			t.Fatalf("frame %d is not a time line, a blank line, the header and one row:\n%s", i, f)
		}
		m := head.FindStringSubmatch(lines[0])
		if m == nil {
			t.Fatalf("frame %d starts with %q, want %q", i, lines[0], head)
		}
		at, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			t.Fatalf("frame %d's time: %v", i, err)
		}
		if diff := cmp.Diff(columns, sep.Split(lines[2], -1)); diff != "" {
			t.Fatalf("frame %d's header (-want +got):\n%s", i, diff)
		}
		row := sep.Split(lines[3], -1)
		if len(row) != len(columns) {
			t.Fatalf("frame %d's row %q has %d cells, want %d", i, lines[3], len(row), len(columns))
		}
		cells := map[string]string{}
		for j, c := range columns {
			cells[c] = row[j]
		}
		frames = append(frames, listWatchFrame{at: at, cells: cells})
	}
	return frames
}

// TestListWatchMarksWhatChangedAndStopsOnCtrlCWithWholeFramesAndNoWrites runs `kubectl hpa
// list -n NS -w` through kubectl, with stdout a pipe, over one HPA: 2 pods at 60% of their cpu
// request against 50%, so 3 (set by the metric), its status written by the test's client as a
// controller deciding 3 would. Once the first frame is out, maxReplicas goes from 10 to 2: the
// frame that first sees it marks MIN/MAX, WOULD BE, BINDING and PROBLEMS with a *, the frame
// after marks none of them; a cell is marked exactly when it changed since the frame before,
// except that CONTROLLER's age moves on unmarked. Then SIGINT: exit code 0, nothing on stderr,
// every frame whole, and the audit log shows that list only read, each list once per frame.
func TestListWatchMarksWhatChangedAndStopsOnCtrlCWithWholeFramesAndNoWrites(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "list-watch")
	loadedWorkload(t, ns, 2, 120)
	createHPA(t, ns, hpaSpec{})
	waitMetricsAfterReadiness(t, ns)
	listWriteStatus(t, ns, 2, 3, nil)
	manager, _, _ := strings.Cut(shared.RESTConfig().UserAgent, "/")

	const user = "e2e:kubectl-hpa-list-watch"
	// A frame every 2 s rather than the default 15 s (the controller's sync period): the
	// same watch, sooner.
	const period = 2 * time.Second
	k := pluginAs(t, user)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// kubectl execs the plugin in its own place, so the process signalled below is list itself.
	cmd := k.Command(ctx, "hpa", "list", "-n", ns, "-w", "--sync-period", period.String())
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	framesOut := func(n int, what string) {
		t.Helper()
		eventually(t, 2*time.Minute, what, func(context.Context) error {
			if got := strings.Count(stdout.String(), "MIN/MAX"); got < n {
				return fmt.Errorf("%d frames so far; stderr %q", got, stderr.String())
			}
			return nil
		})
	}
	framesOut(1, "list -w printed its first frame")
	patch := []byte(`{"spec":{"maxReplicas":2}}`)
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a frame shows maxReplicas 2", func(context.Context) error {
		if !strings.Contains(stdout.String(), " 1/2") {
			return fmt.Errorf("no frame with MIN/MAX 1/2 yet; stderr %q", stderr.String())
		}
		return nil
	})
	framesOut(strings.Count(stdout.String(), "MIN/MAX")+1, "list -w printed a frame after the change's")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("list -w ended with %v after SIGINT, want exit code 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("list -w still running 30s after SIGINT; output:\n%s", stdout.String())
	}
	out := stdout.String()
	t.Logf("kubectl hpa list -n %s -w --sync-period %s:\n%s", ns, period, out)
	if s := stderr.String(); s != "" {
		t.Errorf("list -w wrote to stderr:\n%s", s)
	}

	frames := listWatchFrames(t, out, period)
	changed := 0
	for changed < len(frames) && strings.TrimSuffix(frames[changed].cells["MIN/MAX"], "*") == "1/10" {
		changed++
	}
	if changed == 0 || changed >= len(frames)-1 {
		t.Fatalf("frame %d of %d is the first with another MIN/MAX than 1/10; want one frame before it and one after", changed, len(frames))
	}
	// The cells before and after the change, unmarked; in the change's frame those that changed
	// carry a *. After: the metric asks for 3, max is 2; PROBLEMS are the two warnings
	// (CappedAtMax first) and then lint's, DisagreesWithCluster as status.desiredReplicas is
	// still the 3 decided for the spec before.
	before := map[string]string{"NAME": "web", "TARGET": "Deployment/web", "MIN/MAX": "1/10", "CURRENT": "2", "WOULD BE": "3", "BINDING": "None", "HELD UNTIL": "<none>", "HISTORY": "reconstructed", "PROBLEMS": "HPA003"}
	after := map[string]string{"NAME": "web", "TARGET": "Deployment/web", "MIN/MAX": "1/2", "CURRENT": "2", "WOULD BE": "2", "BINDING": "MaxReplicas", "HELD UNTIL": "<none>", "HISTORY": "reconstructed", "PROBLEMS": "CappedAtMax,DisagreesWithCluster,HPA003"}
	controller := regexp.MustCompile(`^` + regexp.QuoteMeta(manager) + ` (?:\d+[hms])+ ago$`)
	metric := regexp.MustCompile(`^cpu \d+%/50%$`)
	ages := map[string]bool{}
	for i, f := range frames {
		want := before
		if i >= changed {
			want = after
		}
		for col, v := range want {
			if i == changed && v != before[col] {
				v += "*"
			}
			if f.cells[col] != v {
				t.Errorf("frame %d: %s %q, want %q", i, col, f.cells[col], v)
			}
		}
		// The metric is read anew each frame (metrics-server's rates may move by a
		// millicore): marked exactly when it differs from the frame before's.
		m := f.cells["METRIC"]
		value := strings.TrimSuffix(m, "*")
		moved := i > 0 && value != strings.TrimSuffix(frames[i-1].cells["METRIC"], "*")
		if !metric.MatchString(value) || strings.HasSuffix(m, "*") != moved {
			t.Errorf("frame %d: METRIC %q (frame before: %q): want cpu N%%/50%%, marked exactly when it changed", i, m, frames[max(i-1, 0)].cells["METRIC"])
		}
		if c := f.cells["CONTROLLER"]; !controller.MatchString(c) {
			t.Errorf("frame %d: CONTROLLER %q, want %q (unmarked: only its age moves on)", i, c, controller)
		}
		ages[f.cells["CONTROLLER"]] = true
		// In whole seconds: a frame whose reads took long can be followed within the second.
		if i > 0 && f.at.Before(frames[i-1].at) {
			t.Errorf("frame %d's time %s is before frame %d's %s", i, f.at, i-1, frames[i-1].at)
		}
	}
	if len(ages) < 2 {
		t.Errorf("CONTROLLER was %v in all %d frames, %s apart: its age never moved on", ages, len(frames), period)
	}

	// Only reads, each frame's batched: every list once per frame, or once more for a frame
	// whose reads Ctrl-C cut short; events twice (the HPAs' rescales, the Deployments' resizes).
	reqs := completedSince(t, mark, user)
	lists := map[string]int{}
	for _, r := range reqs {
		if r.IsWrite() {
			t.Errorf("list -w wrote: %s", r)
		}
		if r.Verb == "list" {
			lists[r.Resource+"."+r.APIGroup]++
		}
	}
	for res, n := range lists {
		per := 1
		if res == "events." {
			per = 2
		}
		if n != per*len(frames) && n != per*(len(frames)+1) {
			t.Errorf("%d lists of %s over %d frames, want %d per frame", n, res, len(frames), per)
		}
	}
	t.Logf("list -w over %d frames: %d requests\n%s", len(frames), len(reqs), cluster.SummarizeAudit(reqs))
}
