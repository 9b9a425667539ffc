package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// cpuHPA is an HPA on cpu utilization of 200m-request pods.
func cpuHPA(target int32, minR, maxR int32, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("sim", "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(minR), testbuild.Max(maxR),
		testbuild.Metrics(testbuild.CPUUtilization(target)), testbuild.Behavior(behavior))
}

func podSpec(cpu string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
	}}}
}

func curve(t *testing.T, csv string) load.Curve {
	t.Helper()
	c, err := load.Parse("load.csv", []byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// changes is the step series as "at: current->replicas" for every sync that scaled, at whole
// seconds (syncs drift by the model's SyncDuration, 15 ms each).
func changes(v VariantResult) string {
	var b strings.Builder
	for _, s := range v.Steps {
		if s.Scaled {
			fmt.Fprintf(&b, "%s: %d->%d; ", s.At.Truncate(time.Second), s.Current, s.Replicas)
		}
	}
	return b.String()
}

func TestRunStepSeries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		csv      string
		replicas int32
		duration time.Duration
		want     string
	}{
		{
			name: "a step up scales at the first sync after a scrape window sees it, by the legacy limit max(2x, 4), then again",
			csv:  "time,cpu\n0,150\n60,800\n", replicas: 2, duration: 3 * time.Minute,
			want: "1m15s: 2->4; 1m30s: 4->8; ",
		},
		{
			// The last high recommendation is the 1m0s sync's (its window ends at the step);
			// upstream drops a recommendation once it is older than the window, which it is
			// 20 syncs later (each 15 s plus the 15 ms a reconcile takes).
			name: "a step down waits until the last high recommendation is older than the 300 s downscale window",
			csv:  "time,cpu\n0,800\n60,100\n", replicas: 8, duration: 8 * time.Minute,
			want: "6m0s: 8->1; ",
		},
		{
			name: "a load inside the tolerance band never scales",
			csv:  "time,cpu\n0,200\n60,210\n", replicas: 2, duration: 5 * time.Minute,
			want: "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{
				Model:    DefaultModel(),
				Load:     curve(t, tc.csv),
				Workload: Workload{Replicas: tc.replicas, Pod: podSpec("200m")},
				Variants: []Variant{{Name: "as is", HPA: cpuHPA(50, 1, 10, nil)}},
				Duration: tc.duration,
			}
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(res.Variants[0]); got != tc.want {
				for _, st := range res.Variants[0].Steps {
					t.Logf("%6s %d->%d pods=%d ready=%d cpu=%v %s", st.At, st.Current, st.Replicas, st.Pods, st.Ready, st.Metrics, st.Constraint)
				}
				t.Errorf("scale changes %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRunRefusesASpecItCannotPlay(t *testing.T) {
	good := func() Spec {
		return Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,100\n60,200\n"), Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
			Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 10, nil)}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"a load without the metric an HPA reads", func(s *Spec) { s.Load = curve(t, "time,qps\n0,1\n60,2\n") },
			`simulation: variant "v": metric 0 reads "cpu" but the load gives no demand for it`},
		{"no variant", func(s *Spec) { s.Variants = nil }, "simulation: no variant to play"},
		{"a zero sync period", func(s *Spec) { s.Model.SyncPeriod = 0 }, "model: sync period 0s is not positive"},
		{"a one-point load without a duration", func(s *Spec) { s.Load = curve(t, "time,cpu\n0,1\n") },
			"simulation: the duration is zero: give one, or a load longer than one point"},
		{"a pod without containers", func(s *Spec) { s.Workload.Pod = corev1.PodSpec{} }, "simulation: the workload's pod has no container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.change(&s)
			_, err := Run(context.Background(), s)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %s", err, tc.want)
			}
		})
	}
}

func TestRunPlaysEveryVariantAsIfAlone(t *testing.T) {
	two := int32(2)
	policy := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: two, PeriodSeconds: 60}}}}
	variants := []Variant{
		{Name: "as is", HPA: cpuHPA(50, 1, 10, nil)},
		{Name: "two pods a minute", HPA: cpuHPA(50, 1, 10, policy)},
		{Name: "target 80%", HPA: cpuHPA(80, 1, 10, nil)},
	}
	spec := func(v ...Variant) Spec {
		return Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,150\n60,900\n300,100\n"), Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
			Variants: v, Duration: 12 * time.Minute}
	}
	all, err := Run(context.Background(), spec(variants...))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1m15s: 2->4; 1m30s: 4->8; 1m45s: 8->9; 10m0s: 9->1; ",
		"1m15s: 2->4; 2m15s: 4->6; 3m15s: 6->8; 4m15s: 8->9; 10m0s: 9->1; ",
		"1m15s: 2->4; 1m30s: 4->6; 10m0s: 6->1; ",
	}
	for i, v := range variants {
		alone, err := Run(context.Background(), spec(v))
		if err != nil {
			t.Fatal(err)
		}
		if got, gotAlone := changes(all.Variants[i]), changes(alone.Variants[0]); got != gotAlone || got != want[i] {
			t.Errorf("%s: beside the others %q, alone %q, want %q", v.Name, got, gotAlone, want[i])
		}
		if all.Variants[i].Name != v.Name {
			t.Errorf("variant %d is named %q, want %q", i, all.Variants[i].Name, v.Name)
		}
	}
}

func TestSummaryFigures(t *testing.T) {
	// 2 pods until the first scale-up's pods exist (write at 75.075 s plus 1 s), 4 until the
	// second's (90.09 s plus 1 s), then 8 until the end; above target from the step at 60 s
	// until the 8th pod is Ready (created at 91.09 s, started 2 s after its creation second,
	// at 93 s, and Ready 5 s later), when each Ready pod's share is exactly the target.
	s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,200\n60,800\n"), Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
		Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 10, nil)}}, Duration: 3 * time.Minute}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Variants[0].Summary
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if want := 2*76.075 + 4*15.015 + 8*(180-91.09); !near(sum.PodSeconds, want) {
		t.Errorf("pod-seconds %v, want %v", sum.PodSeconds, want)
	}
	if want := 98.0 - 60; !near(sum.SecondsAboveTarget, want) || !near(sum.LongestAboveTarget, want) {
		t.Errorf("seconds above target %v, longest stretch %v, want %v for both (one stretch)", sum.SecondsAboveTarget, sum.LongestAboveTarget, want)
	}
	if sum.PeakReplicas != 8 || sum.PeakAt != 90*time.Second+90*time.Millisecond {
		t.Errorf("peak %d at %s, want 8 at 1m30.09s", sum.PeakReplicas, sum.PeakAt)
	}
	if sum.ScaleUps != 2 || sum.ScaleDowns != 0 {
		t.Errorf("%d scale-ups and %d scale-downs, want 2 and 0", sum.ScaleUps, sum.ScaleDowns)
	}
	want := map[replicas.Constraint]int{replicas.ConstraintTolerance: 9, replicas.ConstraintScaleUpLimit: 1, replicas.ConstraintScaleDownStabilization: 1}
	if fmt.Sprint(sum.HeldBackBy) != fmt.Sprint(want) {
		t.Errorf("held back by %v, want %v", sum.HeldBackBy, want)
	}
	if n := len(res.Variants[0].Steps); n != 12 {
		t.Errorf("%d steps, want 12 (a sync every 15.015 s from 0 to 2m45.165s)", n)
	}
	s.SummaryOnly = true
	only, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := only.Variants[0]; len(got.Steps) != 0 || fmt.Sprint(got.Summary) != fmt.Sprint(sum) {
		t.Errorf("SummaryOnly: %d steps and summary %+v, want none and %+v", len(got.Steps), got.Summary, sum)
	}
}

func TestRiskAgainstMeasuresTheTimeAboveTargetAgainstAnotherSpecsTargets(t *testing.T) {
	// 2 pods of 200m under 300m: 75% each, above a 50% target, under a 90% one.
	s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,300\n"), Workload: Workload{Replicas: 2, Pod: podSpec("200m")}, Duration: time.Minute,
		Variants: []Variant{
			{Name: "own 90%", HPA: cpuHPA(90, 2, 2, nil)},
			{Name: "90% against 50%", HPA: cpuHPA(90, 2, 2, nil), RiskAgainst: cpuHPA(50, 2, 2, nil)},
		}}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if own, against := res.Variants[0].Summary.SecondsAboveTarget, res.Variants[1].Summary.SecondsAboveTarget; own != 0 || against != 60 {
		t.Errorf("above target %v s against its own 90%%, %v s against 50%%; want 0 and 60", own, against)
	}
}

func TestLongestAboveTargetIsTheLongestOfSeveralStretches(t *testing.T) {
	// Two steps up from 200m to 800m on 2 pods of 200m at a 50% target, each answered by a
	// scale-up; the second step (to 1600m) needs more pods and so stays above target longer.
	s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,200\n60,800\n300,200\n600,1600\n"), Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
		Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 40, nil)}}, Duration: 15 * time.Minute, SummaryOnly: true}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Variants[0].Summary
	if sum.LongestAboveTarget <= 0 || sum.LongestAboveTarget >= sum.SecondsAboveTarget {
		t.Errorf("longest stretch %v s of %v s above target: want a part of it (two stretches)", sum.LongestAboveTarget, sum.SecondsAboveTarget)
	}
}

func TestScrapesFollowTheGivenInstantsAndTheGridAroundThem(t *testing.T) {
	m := DefaultModel()
	m.ScrapeInterval, m.ScrapeOffset = 15*time.Second, 5*time.Second
	grid := m
	m.Scrapes = []time.Duration{14 * time.Second, 29050 * time.Millisecond, 44 * time.Second}
	for _, tc := range []struct {
		name    string
		model   Model
		t, want time.Duration
	}{
		{"the grid without instants", grid, 6 * time.Second, 20 * time.Second},
		{"the grid before the first instant", m, -20 * time.Second, -16 * time.Second},
		{"the first instant", m, 0, 14 * time.Second},
		{"an instant off the grid (a late scrape)", m, 14*time.Second + 1, 29050 * time.Millisecond},
		{"an instant itself", m, 44 * time.Second, 44 * time.Second},
		{"the grid after the last instant", m, 44*time.Second + 1, 59 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.model.scrapeAtOrAfter(tc.t); got != tc.want {
				t.Errorf("first scrape at or after %s = %s, want %s", tc.t, got, tc.want)
			}
		})
	}
	m.Scrapes = []time.Duration{2 * time.Second, 2 * time.Second}
	if err := m.Validate(); err == nil {
		t.Error("Validate accepted scrape instants that are not strictly ascending")
	}
}
