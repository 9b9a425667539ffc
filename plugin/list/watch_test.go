package list

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
)

// watchTwoFrames runs list --watch over the shop cluster with args: the first frame, then, a
// sync period later, the second after web's pods went from 90% to 120% of their request, then
// Ctrl-C (ctx cancelled). It returns the output and the exit code.
func watchTwoFrames(t *testing.T, terminal bool, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := shop()
	f := c.build(t)
	clk := clocktesting.NewFakeClock(now)
	in := invocation{clock: clk, out: &cmdtest.SyncBuffer{}, errOut: &cmdtest.SyncBuffer{}, terminal: terminal}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- runIn(t, ctx, in, f, append([]string{"-n", "shop", "--watch"}, args...)...) }()
	// A frame is written whole once its reads are done; the ticker exists before the first.
	marker := "MIN/MAX"
	if strings.Contains(strings.Join(args, " "), "json") {
		marker = `"kind": "List"`
	}
	waitFor := func(frames int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for strings.Count(in.out.String(), marker) < frames || !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatalf("the watch never printed frame %d:\n%s\nstderr: %s", frames, in.out.String(), in.errOut.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1)
	for _, p := range []string{"web-0", "web-1"} {
		c.usage["shop/"+p] = "600m"
	}
	clk.Step(15 * time.Second)
	waitFor(2)
	cancel()
	code = <-done
	return in.out.String(), in.errOut.String(), code
}

func TestWatchMarksWhatChangedAndEndsCleanlyOnCtrlC(t *testing.T) {
	stdout, stderr, code := watchTwoFrames(t, false)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	cmdtest.CheckGolden(t, "watch", stdout)
	frames := strings.Split(stdout, "\n---\n")
	if len(frames) != 2 {
		t.Fatalf("%d frames, want 2 separated by ---:\n%s", len(frames), stdout)
	}
	if header, table, _ := strings.Cut(frames[0], "\n"); !strings.HasPrefix(header, "Every 15s, 2026-11-30T12:00:00Z;") || strings.Contains(table, "*") {
		t.Errorf("the first frame does not start with its time, or marks a change with nothing to compare with:\n%s", frames[0])
	}
	// web now asks for 4 at 120%: WOULD BE and METRIC changed; the times in HELD UNTIL and
	// CONTROLLER moved on by 15s but say nothing new, and no other row changed.
	var marked []string
	for _, l := range strings.Split(frames[1], "\n")[3:] {
		if strings.Contains(l, "*") {
			marked = append(marked, l)
		}
	}
	if len(marked) != 1 || !strings.Contains(marked[0], " 4* ") || !strings.Contains(marked[0], "cpu 120%/60%* ") || strings.Count(marked[0], "*") != 2 {
		t.Errorf("want only web's WOULD BE and METRIC marked, got:\n%s", strings.Join(marked, "\n"))
	}
	if !strings.Contains(frames[1], "in 3m45s ") || !strings.Contains(frames[1], "kube-controller-manager 2m15s ago ") {
		t.Errorf("the second frame's times are not relative to its own now:\n%s", frames[1])
	}
}

func TestWatchOnATerminalRedrawsInPlace(t *testing.T) {
	stdout, _, code := watchTwoFrames(t, true)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(stdout, "\x1b[H\x1b[2J"); n != 2 || !strings.HasPrefix(stdout, "\x1b[H\x1b[2J") || strings.Contains(stdout, "\n---\n") {
		t.Errorf("want each of the 2 frames after a clear screen, without separators; got %d clears:\n%q", n, stdout)
	}
}

func TestWatchWithJSONStreamsOneListPerFrame(t *testing.T) {
	stdout, _, code := watchTwoFrames(t, true, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(stdout, `"kind": "List"`); n != 2 || strings.Contains(stdout, "\x1b[") || strings.Contains(stdout, "Every ") {
		t.Errorf("want 2 Lists, nothing else (no redraw, no header); got %d:\n%.300s", n, stdout)
	}
}

func TestWatchFlags(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"-n", "shop", "--sync-period", "5s"}, "--sync-period only applies with --watch"},
		{[]string{"-n", "shop", "-w", "--sync-period", "0s"}, "--sync-period must be positive"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, shop().build(t), tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.stderr)
			}
		})
	}
}
