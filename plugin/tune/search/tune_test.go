package search

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

func withBehavior(h *autoscalingv2.HorizontalPodAutoscaler, b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscaler {
	h.Spec.Behavior = b
	return h
}

func podsHPA() *autoscalingv2.HorizontalPodAutoscaler {
	h := cpuHPA(50, 1, 10)
	h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("100"))},
	}}}
	return h
}

func TestTheCurrentPointIsTheHPAAsItIs(t *testing.T) {
	for _, tc := range []struct {
		name string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		// want are axes' current values, by name.
		want map[string]string
	}{
		{"no behavior: the API's and the controller's defaults", cpuHPA(50, 2, 20), map[string]string{
			"cpu": "50%", "min": "2", "max": "20", "scaleUp.tolerance": "0.1", "scaleDown.stabilizationWindowSeconds": "300",
			"scaleUp.policies": "Pods:4/15s;Percent:100/15s", "scaleDown.policies": "Percent:100/15s", "scaleDown.selectPolicy": "Max",
		}},
		{"a behavior off the axes' values joins them", withBehavior(cpuHPA(70, 1, 10), &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To(int32(45)), SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect),
				Policies:  []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 3, PeriodSeconds: 20}},
				Tolerance: ptr.To(resource.MustParse("0.07")),
			},
		}), map[string]string{
			"cpu": "70%", "scaleDown.stabilizationWindowSeconds": "45", "scaleDown.policies": "Pods:3/20s",
			"scaleDown.selectPolicy": "Disabled", "scaleDown.tolerance": "0.07", "scaleUp.stabilizationWindowSeconds": "0",
		}},
		{"an average value target", podsHPA(), map[string]string{"requests_per_second": "100", "min": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSpace(tc.hpa, replicas.DefaultConfig(), nil)
			if err != nil {
				t.Fatal(err)
			}
			cur := s.Current()
			if got := s.HPA(cur); !equality.Semantic.DeepEqual(tc.hpa, got) {
				t.Errorf("the current point's HPA differs from the HPA:\n got %+v\nwant %+v", got.Spec, tc.hpa.Spec)
			}
			if c := s.Changes(cur); len(c) != 0 {
				t.Errorf("the current point changes %v, want nothing", c)
			}
			got := map[string]string{}
			for _, a := range s.Axes {
				if a.Current < 0 || a.Current >= len(a.Values) {
					t.Fatalf("axis %s: current index %d outside its %d values", a.Name, a.Current, len(a.Values))
				}
				got[a.Name] = a.Values[a.Current]
			}
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("axis %s: current value %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

func TestKeepHoldsTheFieldsItNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    []string
		kept    []string // axes holding one value
		wantErr string
	}{
		{"min and max", []string{"min", "max"}, []string{"min", "max"}, ""},
		{"the targets", []string{"targets"}, []string{"cpu"}, ""},
		{"a metric by name", []string{"cpu"}, []string{"cpu"}, ""},
		{"a direction", []string{"scaleDown"}, []string{"scaleDown.tolerance", "scaleDown.stabilizationWindowSeconds", "scaleDown.policies", "scaleDown.selectPolicy"}, ""},
		{"both tolerances", []string{"tolerance"}, []string{"scaleUp.tolerance", "scaleDown.tolerance"}, ""},
		{"one field", []string{"scaleUp.selectPolicy"}, []string{"scaleUp.selectPolicy"}, ""},
		{"a field that does not exist", []string{"minimum"}, nil, "--keep minimum: no such field"},
		{"everything", []string{"targets", "min", "max", "scaleUp", "scaleDown"}, nil, "nothing is left to tune"},
		{"two names that overlap, neither within the other", []string{"tolerance", "scaleUp"}, []string{"scaleUp.tolerance", "scaleUp.stabilizationWindowSeconds", "scaleUp.policies", "scaleUp.selectPolicy", "scaleDown.tolerance"}, ""},
		{"a name twice", []string{"min", "min"}, nil, "--keep min: given twice"},
		{"an empty name", []string{"min", ""}, nil, "--keep: an empty field name"},
		{"a field within a direction", []string{"scaleDown", "scaleDown.selectPolicy"}, nil, "--keep scaleDown.selectPolicy: scaleDown holds it already"},
		{"the targets and the only metric", []string{"cpu", "targets"}, nil, "--keep targets: cpu holds it already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSpace(cpuHPA(50, 2, 20), replicas.DefaultConfig(), tc.keep)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, a := range s.Axes {
				if a.Kept() {
					kept = append(kept, a.Name)
				}
			}
			slices.Sort(kept)
			want := slices.Clone(tc.kept)
			slices.Sort(want)
			if !slices.Equal(kept, want) {
				t.Errorf("kept %v, want %v", kept, want)
			}
		})
	}
}

func TestMergePatchHoldsOnlyWhatChanged(t *testing.T) {
	base := cpuHPA(50, 2, 20)
	s, err := NewSpace(base, replicas.DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	set := func(changes map[string]string) Coord {
		p := s.Current()
		for i, a := range s.Axes {
			if v, ok := changes[a.Name]; ok {
				p[i] = slices.Index(a.Values, v)
			}
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		changes map[string]string
		want    string
	}{
		{"nothing", nil, "null"},
		{"a window, behavior unset before", map[string]string{"scaleDown.stabilizationWindowSeconds": "120"}, `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":120}}}}`},
		{"the target and max: the metrics list whole", map[string]string{"cpu": "60%", "max": "25"},
			`{"spec":{"maxReplicas":25,"metrics":[{"resource":{"name":"cpu","target":{"averageUtilization":60,"type":"Utilization"}},"type":"Resource"}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := MergePatch(base, s.HPA(set(tc.changes)))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(patch)
			if string(got) != tc.want {
				t.Errorf("patch %s, want %s", got, tc.want)
			}
		})
	}
}

// windowOf is the scale-down stabilization window a candidate sets (-1: unset).
func windowOf(c *Candidate) int32 {
	if b := c.HPA.Spec.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
		return *b.ScaleDown.StabilizationWindowSeconds
	}
	return -1
}

// onlyScaleDownWindow is the space of the scale-down window alone.
func onlyScaleDownWindow(t *testing.T, h *autoscalingv2.HorizontalPodAutoscaler) *Space {
	t.Helper()
	s, err := NewSpace(h, replicas.DefaultConfig(), []string{"targets", "min", "max", "scaleUp", "scaleDown.tolerance", "scaleDown.policies", "scaleDown.selectPolicy"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func search(t *testing.T, p Problem) *Result {
	t.Helper()
	p.Validation = validation.DefaultOptions()
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheCheapestSafeScaleDownWindowOutlastsTheDip(t *testing.T) {
	// 16 pods at 1600m are at the 50% target exactly. The demand dips to 200m for 90 s and
	// comes back. A window shorter than the dip lets the controller remove pods during it,
	// and the demand then finds too few pods until new ones are Ready: time above target. A
	// window longer than the dip (120 s, the first on the axis) keeps the pods through it
	// and never goes above target; longer windows keep the same pods (the demand stays high
	// after the dip), so they tie on every figure and the tie goes to the first on the axis.
	spec := simSpec(t, steps(1600, 10*time.Minute, 200, 90*time.Second, 1600, 10*time.Minute), 16)
	h := withBehavior(cpuHPA(50, 1, 40), &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}})
	res := search(t, Problem{Space: onlyScaleDownWindow(t, h), Spec: spec, Objective: Cost, Constraints: Constraints{MaxAboveFraction: 0, MaxRescalesPerHour: -1}})
	for _, c := range res.Candidates {
		t.Logf("window %d: %+v", windowOf(c), c.Scores)
	}
	if !res.Met || windowOf(res.Best) != 120 {
		t.Errorf("recommended window %d s (meets the constraints: %v), want 120 s: the shortest outlasting the 90 s dip", windowOf(res.Best), res.Met)
	}
}

func TestASpikeTrainFlapsUnderAShortWindowAndTheRecommendationStopsIt(t *testing.T) {
	// Spikes of 1600m for 60 s every 3 minutes over 200m, an hour long. With no scale-down
	// window each spike is a scale-up and a scale-down: 40 rescales an hour. A window longer
	// than the 120 s between spikes holds the pods between them: the rescales stop after the
	// first. At most 4 rescales an hour, the cheapest window is the shortest that holds.
	var pairs []any
	for range 20 {
		pairs = append(pairs, 1600, time.Minute, 200, 2*time.Minute)
	}
	spec := simSpec(t, steps(pairs...), 2)
	h := withBehavior(cpuHPA(50, 1, 40), &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}})
	res := search(t, Problem{Space: onlyScaleDownWindow(t, h), Spec: spec, Objective: Cost, Constraints: Constraints{MaxAboveFraction: -1, MaxRescalesPerHour: 4}})
	for _, c := range res.Candidates {
		t.Logf("window %d: %+v", windowOf(c), c.Scores)
	}
	if cur := res.Current().Scores; cur.RescalesPerHour < 30 {
		t.Errorf("the current spec rescales %.1f times an hour, want it to flap (30 or more)", cur.RescalesPerHour)
	}
	if !res.Met || windowOf(res.Best) != 180 {
		t.Errorf("recommended window %d s (meets the constraints: %v), want 180 s: the shortest longer than the 120 s between spikes", windowOf(res.Best), res.Met)
	}
}

func TestAnObjectiveNoCandidateMeetsGivesTheClosest(t *testing.T) {
	// A step the pods cannot follow at once: some time above target is unavoidable.
	spec := simSpec(t, steps(200, 5*time.Minute, 1600, 10*time.Minute), 2)
	res := search(t, Problem{Space: onlyScaleDownWindow(t, cpuHPA(50, 2, 20)), Spec: spec, Objective: Cost, Constraints: Constraints{MaxAboveFraction: 0, MaxRescalesPerHour: -1}})
	if res.Met {
		t.Fatalf("the recommendation meets 0 s above target on a step: %+v", res.Best.Scores)
	}
	for _, c := range res.Candidates {
		if c.Scores.AboveTarget < res.Best.Scores.AboveTarget {
			t.Errorf("%v is closer to the constraint (%s above target) than the closest shown (%s)", c.Changes, c.Scores.AboveTarget, res.Best.Scores.AboveTarget)
		}
	}
}

// searchGap is how far the search's best may be from the exhaustive best on
// TestSearchComesCloseToExhaustiveSearch's grid, as a share of the exhaustive best's cost.
const searchGap = 0.05

func TestSearchComesCloseToExhaustiveSearch(t *testing.T) {
	// A diurnal-like hour: up from 200m to 1800m and back, in 5-minute steps. The grid: the
	// cpu target (10 values) and the scale-down window (8), 80 points; the search plays 25.
	// The constraint is the median time above target of the grid: half of it meets it.
	var pairs []any
	for i := range 12 {
		pairs = append(pairs, int(200+1600*math.Sin(math.Pi*float64(i)/11)), 5*time.Minute)
	}
	spec := simSpec(t, steps(pairs...), 2)
	s, err := NewSpace(cpuHPA(50, 2, 20), replicas.DefaultConfig(), []string{"min", "max", "scaleUp", "scaleDown.tolerance", "scaleDown.policies", "scaleDown.selectPolicy"})
	if err != nil {
		t.Fatal(err)
	}
	p := Problem{Space: s, Spec: spec, Objective: Cost, Constraints: NoConstraints, Exhaustive: true}
	var fractions []float64
	for _, c := range search(t, p).Candidates {
		fractions = append(fractions, c.Scores.AboveFraction)
	}
	slices.Sort(fractions)
	p.Constraints.MaxAboveFraction = fractions[len(fractions)/2]
	all := search(t, p)
	p.Exhaustive, p.Budget = false, 25
	got := search(t, p)
	if len(got.Candidates) > 25 {
		t.Errorf("the search played %d candidates, over its budget of 25", len(got.Candidates))
	}
	t.Logf("exhaustive (%d played): %v %+v; search (%d played): %v %+v", len(all.Candidates), all.Best.Changes, all.Best.Scores, len(got.Candidates), got.Best.Changes, got.Best.Scores)
	if !all.Met || !got.Met {
		t.Fatalf("met the constraints: exhaustive %v, search %v; want both", all.Met, got.Met)
	}
	if gap := got.Best.Scores.PodHours/all.Best.Scores.PodHours - 1; gap > searchGap {
		t.Errorf("the search's best costs %.2f pod-hours, %.1f%% over the exhaustive best's %.2f: want at most %.0f%%",
			got.Best.Scores.PodHours, gap*100, all.Best.Scores.PodHours, searchGap*100)
	}
}

func TestParetoFrontHoldsNoDominatedCandidate(t *testing.T) {
	spec := simSpec(t, steps(200, 5*time.Minute, 1600, 5*time.Minute, 400, 10*time.Minute), 2)
	s, err := NewSpace(cpuHPA(50, 2, 20), replicas.DefaultConfig(), []string{"max", "scaleUp", "min"})
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, Problem{Space: s, Spec: spec, Objective: Balanced, Constraints: NoConstraints, Budget: 40})
	if len(res.Pareto) == 0 {
		t.Fatal("empty front")
	}
	for _, f := range res.Pareto {
		for _, c := range res.Candidates {
			if c.Scores.dominates(f.Scores) {
				t.Errorf("%v on the front is dominated by %v", f.Changes, c.Changes)
			}
		}
	}
	for i := 1; i < len(res.Pareto); i++ {
		if res.Pareto[i].Scores.PodHours < res.Pareto[i-1].Scores.PodHours {
			t.Errorf("the front is not cheapest first at %d", i)
		}
	}
}

func TestSensitivityScalesTheLoadAndSlowsThePods(t *testing.T) {
	spec := simSpec(t, steps(200, 5*time.Minute, 1600, 10*time.Minute), 2)
	h := cpuHPA(50, 2, 40)
	got, err := Sensitivity(context.Background(), spec, 2, h, []*autoscalingv2.HorizontalPodAutoscaler{h})
	if err != nil {
		t.Fatal(err)
	}
	base, err := Play(context.Background(), spec, h, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(Cases) {
		t.Fatalf("%d cases, want %d", len(got), len(Cases))
	}
	x15, x2, slow := got[0][0], got[1][0], got[2][0]
	if !(base.PodHours < x15.PodHours && x15.PodHours < x2.PodHours) {
		t.Errorf("pod-hours %.2f, x1.5 %.2f, x2 %.2f: want more demand to cost more", base.PodHours, x15.PodHours, x2.PodHours)
	}
	if slow.AboveTarget <= base.AboveTarget {
		t.Errorf("above target %s with pods twice as slow, %s as tuned: want longer", slow.AboveTarget, base.AboveTarget)
	}
	if s := Scaled(spec.Load, 2); s.Points[1].Values["cpu"] != 3200 || spec.Load.Points[1].Values["cpu"] != 1600 {
		t.Errorf("Scaled: %v, original now %v; want 3200 and the original unchanged", s.Points[1].Values, spec.Load.Points[1].Values)
	}
}
