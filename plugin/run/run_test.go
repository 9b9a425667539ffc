package run

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testHPA(name, target string) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("shop", name, testbuild.Generation(1), testbuild.Target("apps/v1", "Deployment", target),
		testbuild.Min(1), testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(50)))
}

func testPod(name string) *corev1.Pod {
	return startedPod(name, 10*time.Minute, corev1.ConditionTrue)
}

// startedPod is a pod of app=web that started ago and has been ready (or not) since.
func startedPod(name string, ago time.Duration, ready corev1.ConditionStatus) *corev1.Pod {
	start := now.Add(-ago)
	return testbuild.Pod("shop", name, testbuild.Labels("app", "web"),
		testbuild.Containers(testbuild.Container("app", testbuild.Requests("cpu", "100m"))),
		testbuild.StartedAt(start), testbuild.ReadySince(ready, start))
}

// testReports are a scale-up written in dry-run, a hold, a target that is missing, and a
// hold by the pods not yet ready or measured (counted as 0 on a scale-up) while the 2 measured
// ready pods are far above the target. omit decides without the per-pod account, as run does
// in line and table mode.
func testReports(omit bool) []controller.Report {
	sample := func(milli int64) sampleset.Sample {
		return sampleset.Sample{MilliValue: milli, Timestamp: sampleset.Timestamp(now.Add(-10 * time.Second)), Window: 30 * time.Second}
	}
	pods := []*corev1.Pod{testPod("web-1"), testPod("web-2")}
	mk := func(key string, in replicas.Input, dry string, err error) controller.Report {
		in.OmitPodTreatments = omit
		d := replicas.Decide(in)
		out := replicas.Apply(in, d, nil)
		if err == nil {
			err = out.Err
		}
		return controller.Report{Key: key, Input: in, Decision: d, Outcome: out, DryRunReason: dry, Err: err}
	}
	base := func(hpa *autoscalingv2.HorizontalPodAutoscaler, milli int64) replicas.Input {
		return replicas.Input{HPA: hpa, Scale: &replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"}, Pods: pods,
			Metrics: []replicas.MetricData{{PodSamples: sampleset.Of(map[string]sampleset.Sample{"web-1": sample(milli), "web-2": sample(milli)}), Timestamp: now, Source: "metrics.k8s.io/v1beta1"}},
			Now:     now, Config: replicas.DefaultConfig()}
	}
	missing := replicas.Input{HPA: testHPA("gone", "gone"), Now: now, Config: replicas.DefaultConfig(),
		ScaleErr: &replicas.ScaleError{Stage: replicas.ScaleErrorGet, Err: errors.New(`deployments.apps "gone" not found`)}}
	// 2 ready pods at 160% of request, 2 started 20s ago and not ready yet, 2 metrics-server
	// has not measured: rebalanced, 320m over 600m requested = 53%, within tolerance.
	warming := base(testHPA("warming", "web"), 160)
	warming.Scale = &replicas.Scale{SpecReplicas: 6, StatusReplicas: 6, Selector: "app=web"}
	warming.Pods = append(slices.Clone(pods), startedPod("web-3", 20*time.Second, corev1.ConditionFalse), startedPod("web-4", 20*time.Second, corev1.ConditionFalse),
		startedPod("web-5", 20*time.Second, corev1.ConditionTrue), startedPod("web-6", 20*time.Second, corev1.ConditionTrue))
	warming.Metrics = []replicas.MetricData{{PodSamples: sampleset.Of(map[string]sampleset.Sample{"web-1": sample(160), "web-2": sample(160), "web-3": sample(300), "web-4": sample(300)}),
		Timestamp: now, Source: "metrics.k8s.io/v1beta1"}}
	return []controller.Report{
		mk("shop/web", base(testHPA("web", "web"), 100), "--dry-run=client", nil),
		mk("shop/calm", base(testHPA("calm", "web"), 50), "", nil),
		mk("shop/gone", missing, "", nil),
		mk("shop/warming", warming, "", nil),
	}
}

func TestRunRendering(t *testing.T) {
	cases := []struct {
		name   string
		output string
		tty    bool
		golden string
	}{
		{"not a terminal: one line per decision", "", false, "run-lines.golden"},
		{"-o json: one Explanation per decision", "json", false, "run-json.golden"},
		{"-o json wins over a terminal", "json", true, "run-json.golden"},
		{"terminal: a table of the last decisions", "", true, "run-table.golden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{Out: &out})
			o.Output = tc.output
			o.isTerminal = func() bool { return tc.tty }
			r := newRenderer(o, "metrics.k8s.io/v1beta1", func() {})
			omit := tc.output != "json"
			for _, rep := range testReports(omit) {
				r.report(rep)
			}
			// A second decision for the same HPA extends its trace.
			r.report(testReports(omit)[0])
			if r.mode == "table" {
				r.writeTable(&out, now.Add(5*time.Second))
			}
			golden.Check(t, filepath.Join("testdata", tc.golden), out.Bytes())
		})
	}
}

func TestRunValidate(t *testing.T) {
	cases := []struct {
		name    string
		mod     func(*Options)
		wantErr bool
	}{
		{"defaults are valid", func(*Options) {}, false},
		{"dry-run server is valid", func(o *Options) { o.DryRun = "server" }, false},
		{"unknown dry-run", func(o *Options) { o.DryRun = "maybe" }, true},
		{"unknown output", func(o *Options) { o.Output = "yaml" }, true},
		{"no workers", func(o *Options) { o.Workers = 0 }, true},
		{"non-positive sync period", func(o *Options) { o.Controller.SyncPeriod = 0 }, true},
		{"bad selector", func(o *Options) { o.Selector = "a in (" }, true},
		{"leader election without a lease namespace", func(o *Options) { o.LeaseNamespace = "" }, true},
		{"no lease needed when writing nothing", func(o *Options) { o.LeaseNamespace = ""; o.DryRun = "client" }, false},
		{"zero api qps", func(o *Options) { o.KubeAPIQPS = 0 }, true},
		{"zero api burst", func(o *Options) { o.KubeAPIBurst = 0 }, true},
		{"bad metrics source", func(o *Options) { o.Metrics.Source = "carrier-pigeon" }, true},
		{"profiling without an address to serve it on", func(o *Options) { o.Profiling = true }, true},
		{"profiling beside /metrics", func(o *Options) { o.Profiling = true; o.MetricsBindAddress = "127.0.0.1:0" }, false},
		{"lease timings a standby could beat by its whole-second view", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
		}, true},
		{"the same lease timings are not checked when writing nothing", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
			o.DryRun = "client"
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{})
			o.LeaseNamespace = "shop"
			tc.mod(o)
			err := o.Validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("Validate() = %v, want error: %v", err, tc.wantErr)
			}
			if err != nil && cmdutil.ExitCode(err) != cmdutil.ExitUsage {
				t.Errorf("exit code = %d, want %d", cmdutil.ExitCode(err), cmdutil.ExitUsage)
			}
		})
	}
}

func TestRunDecidesWithoutPodTreatmentsUnlessJSON(t *testing.T) {
	cases := []struct {
		name string
		args []string
		omit bool
	}{
		{"lines and the table never show them", nil, true},
		{"-o json shows them", []string{"-o", "json"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := preflightOptions(t, tc.args...).Controller.OmitPodTreatments; got != tc.omit {
				t.Errorf("Controller.OmitPodTreatments = %v, want %v", got, tc.omit)
			}
		})
	}
}

func TestRunSparkline(t *testing.T) {
	cases := []struct {
		in   []int32
		want string
	}{
		{nil, ""},
		{[]int32{0, 0}, "▁▁"},
		{[]int32{1, 2, 4, 8}, "▁▂▄█"},
		{[]int32{5, 5, 5}, "███"},
	}
	for _, tc := range cases {
		if got := sparkline(tc.in); got != tc.want {
			t.Errorf("sparkline(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRunTableRedrawsInPlaceAndLeavesASummary: on a terminal the table is drawn over its
// previous frame (never clearing the screen, which would wipe what was printed before run and
// fill the scrollback with frames), and when run stops the last table stays on screen with
// the time it stopped and the cursor shown again.
func TestRunTableRedrawsInPlaceAndLeavesASummary(t *testing.T) {
	var out cmdtest.SyncBuffer
	o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{Out: &out})
	o.isTerminal = func() bool { return true }
	r := newRenderer(o, "metrics.k8s.io/v1beta1", func() {})
	r.refresh = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	wait := r.start(ctx)
	for _, rep := range testReports(true) {
		r.report(rep)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\x1b[?7h") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wait()
	got := out.String()
	for _, banned := range []string{"\x1b[2J", "\x1b[H", "\x1b[?1049h"} {
		if strings.Contains(got, banned) {
			t.Errorf("output clears the screen or switches to the alternate screen (%q): %q", banned, got)
		}
	}
	frames := strings.Split(got, "\x1b[J")
	if len(frames) < 3 {
		t.Fatalf("want at least two redraws and a final frame, got %d frames: %q", len(frames)-1, got)
	}
	// Every frame after the first moves back over the previous one's lines (header, blank
	// line, column names and one line per HPA drawn so far).
	for i := 1; i < len(frames)-1; i++ {
		if !strings.HasSuffix(frames[i], "\x1b[?7h\r\x1b["+strconv.Itoa(strings.Count(frames[i], "\n"))+"A") {
			t.Errorf("frame %d does not move back over its %d lines before the next: %q", i, strings.Count(frames[i], "\n"), frames[i])
		}
	}
	last := frames[len(frames)-1]
	if !strings.Contains(last, "shop/web") || !strings.Contains(last, "kubectl hpa run stopped at ") || !strings.HasSuffix(last, "\x1b[?25h") {
		t.Errorf("final frame lacks the table, the stop line or the cursor: %q", last)
	}
}

func TestRunTableFrameFitsTheTerminal(t *testing.T) {
	var out bytes.Buffer
	o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{Out: &out})
	o.isTerminal = func() bool { return true }
	r := newRenderer(o, "metrics.k8s.io/v1beta1", func() {})
	for _, rep := range testReports(true) {
		r.report(rep)
	}
	r.termRows = func() int { return 24 }
	r.redraw(now.Add(5 * time.Second))
	r.termRows = func() int { return 5 } // shrunk: 3 header lines and 3 HPAs do not fit
	r.redraw(now.Add(6 * time.Second))
	r.termRows = func() int { return 24 }
	// A decision during the stop gets a frame of its own below the last one.
	<-r.dirty
	r.report(testReports(true)[1])
	r.finish(now.Add(7 * time.Second))
	// Without one, only the stop line is added under the last frame.
	r.finish(now.Add(8 * time.Second))
	golden.Check(t, filepath.Join("testdata", "run-table-frames.golden"), []byte(strings.ReplaceAll(out.String(), "\x1b", "<ESC>")))
}
