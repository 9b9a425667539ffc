package timeline

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

func pct(v float64) *float64 { return &v }

func i32(v int32) *int32 { return &v }

func rescale(d time.Duration, dir string) v1alpha1.TimelineRescale {
	return v1alpha1.TimelineRescale{Time: at(d), Direction: dir}
}

func TestFlappingCountsTheBusiestHourAndTheReversals(t *testing.T) {
	every := func(n int, gap time.Duration, dir string) []v1alpha1.TimelineRescale {
		var out []v1alpha1.TimelineRescale
		for i := range n {
			out = append(out, rescale(time.Duration(i)*gap, dir))
		}
		return out
	}
	tests := []struct {
		name      string
		rescales  []v1alpha1.TimelineRescale
		found     bool
		reversals int
	}{
		{"no rescale is no flapping", nil, false, 0},
		{"six rescales up in an hour, one way, are not flapping", every(6, 10*time.Minute, "up"), false, 0},
		{"seven rescales up within an hour are flapping", every(7, 9*time.Minute, "up"), true, 0},
		{"seven rescales spread over more than an hour each are not", every(7, 11*time.Minute, "up"), false, 0},
		{"a scale-down 5 minutes after a scale-up is a reversal", []v1alpha1.TimelineRescale{rescale(0, "up"), rescale(5*time.Minute, "down")}, true, 1},
		{"a scale-down 10 minutes after a scale-up is one still", []v1alpha1.TimelineRescale{rescale(0, "up"), rescale(10*time.Minute, "down")}, true, 1},
		{"a scale-down 11 minutes after a scale-up is not", []v1alpha1.TimelineRescale{rescale(0, "up"), rescale(11*time.Minute, "down")}, false, 0},
		{"two scale-ups in a row are no reversal", []v1alpha1.TimelineRescale{rescale(0, "up"), rescale(time.Minute, "up")}, false, 0},
		{"up, down, up within minutes are two reversals", []v1alpha1.TimelineRescale{rescale(0, "up"), rescale(2*time.Minute, "down"), rescale(4*time.Minute, "up")}, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := flapping(tc.rescales)
			if f.Found != tc.found || f.Count != tc.reversals {
				t.Errorf("found %v with %d reversal(s), want %v with %d: %s", f.Found, f.Count, tc.found, tc.reversals, f.Message)
			}
		})
	}
}

func TestTimedFindingsLastUntilTheNextSync(t *testing.T) {
	metric := func(p *float64, err string) []v1alpha1.TimelineMetric {
		return []v1alpha1.TimelineMetric{{Name: "cpu", PercentOfTarget: p, Error: err}}
	}
	// Syncs at 0, 10m, 30m over a period of an hour: they last 10m, 20m and 30m.
	sync := func(d time.Duration, desired int32, rec *int32, constraint string, m []v1alpha1.TimelineMetric) v1alpha1.TimelineSync {
		return v1alpha1.TimelineSync{Time: at(d), Replicas: desired, Desired: desired, Recommendation: rec, Constraint: constraint, Metrics: m}
	}
	tests := []struct {
		name                string
		syncs               []v1alpha1.TimelineSync
		metricsKnown        bool
		capped, blind, over time.Duration
	}{
		{
			name: "capped while the proposal is above max and the count at max",
			syncs: []v1alpha1.TimelineSync{
				sync(0, 4, i32(4), "Tolerance", metric(pct(100), "")),
				sync(10*time.Minute, 10, i32(14), "MaxReplicas", metric(pct(140), "")),
				sync(30*time.Minute, 10, i32(10), "None", metric(pct(95), "")),
			},
			metricsKnown: true, capped: 20 * time.Minute, over: 20 * time.Minute,
		},
		{
			name: "a rate limit short of max is not capped at max",
			syncs: []v1alpha1.TimelineSync{
				sync(0, 6, i32(14), "ScaleUpLimit", metric(pct(250), "")),
				sync(10*time.Minute, 6, i32(6), "Tolerance", metric(pct(100), "")),
			},
			metricsKnown: true, over: 10 * time.Minute,
		},
		{
			name: "blind while a metric fails, whatever held the count",
			syncs: []v1alpha1.TimelineSync{
				sync(0, 4, i32(-1), "MetricsUnavailable", metric(nil, "no metrics returned")),
				sync(10*time.Minute, 4, i32(4), "Tolerance", metric(pct(102), "")),
				sync(30*time.Minute, 4, i32(3), "ScaleDownStabilization", metric(nil, "no samples")),
			},
			metricsKnown: true, blind: 40 * time.Minute, over: 20 * time.Minute,
		},
		{
			name: "from events, only the time at max is known",
			syncs: []v1alpha1.TimelineSync{
				sync(0, 4, nil, "", nil),
				sync(45*time.Minute, 10, nil, "", nil),
			},
			capped: 15 * time.Minute,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]v1alpha1.TimelineFinding{}
			for _, f := range findings(tc.syncs, nil, t0, t0.Add(time.Hour), 10, tc.metricsKnown) {
				got[f.Type] = f
			}
			for typ, want := range map[string]time.Duration{v1alpha1.FindingCappedAtMax: tc.capped, v1alpha1.FindingBlind: tc.blind, v1alpha1.FindingAboveTarget: tc.over} {
				f := got[typ]
				if f.Seconds != want.Seconds() || f.Found != (want > 0) {
					t.Errorf("%s: %vs (found %v), want %s: %s", typ, f.Seconds, f.Found, want, f.Message)
				}
			}
			if unknown := got[v1alpha1.FindingBlind].Unknown && got[v1alpha1.FindingAboveTarget].Unknown; unknown == tc.metricsKnown {
				t.Errorf("Blind and AboveTarget unknown: %v, want %v (metrics known: %v)", unknown, !tc.metricsKnown, tc.metricsKnown)
			}
		})
	}
}

func TestChangesKeepTheSyncsWhereSomethingOtherThanValuesChanged(t *testing.T) {
	base := v1alpha1.TimelineSync{Replicas: 4, Desired: 4, Recommendation: i32(4), Constraint: "Tolerance", Metrics: []v1alpha1.TimelineMetric{{Name: "cpu", PercentOfTarget: pct(95)}}}
	with := func(d time.Duration, f func(*v1alpha1.TimelineSync)) v1alpha1.TimelineSync {
		s := base
		s.Time = at(d)
		s.Metrics = []v1alpha1.TimelineMetric{base.Metrics[0]}
		if f != nil {
			f(&s)
		}
		return s
	}
	syncs := []v1alpha1.TimelineSync{
		with(0, nil),
		with(15*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(97) }),  // a value only
		with(30*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(105) }), // crosses the target
		with(45*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(108) }), // a value only
		with(60*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(108); s.Constraint = "None" }),
		with(75*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(108); s.Constraint = "None" }),
		with(90*time.Second, func(s *v1alpha1.TimelineSync) {
			s.Metrics[0] = v1alpha1.TimelineMetric{Name: "cpu", Error: "no samples"}
			s.Constraint = "None"
		}),
		with(105*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(108); s.Constraint = "None" }),
		with(120*time.Second, func(s *v1alpha1.TimelineSync) { s.Metrics[0].PercentOfTarget = pct(108); s.Constraint = "None" }),
	}
	var kept []time.Duration
	for _, s := range changes(syncs) {
		kept = append(kept, s.Time.Sub(t0))
	}
	want := []time.Duration{0, 30 * time.Second, 60 * time.Second, 90 * time.Second, 105 * time.Second, 120 * time.Second}
	if len(kept) != len(want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Fatalf("kept %v, want %v", kept, want)
		}
	}
}
