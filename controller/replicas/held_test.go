package replicas

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

func TestHeldUntilIsWhenTheHoldingHistoryExpires(t *testing.T) {
	// want is the external metric's total, in pods' worth: an average target of 1 per pod
	// proposes exactly want replicas.
	decide := func(want int32, current int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, h History) (Input, Decision) {
		opts := []testbuild.HPAOption{testbuild.Max(20), testbuild.Metrics(testbuild.ExternalAverage("qps", testExternalSelector, 1000))}
		if b != nil {
			opts = append(opts, testbuild.Behavior(b))
		}
		in := input(hpa(opts...), current, withData(MetricData{Values: []int64{int64(want) * 1000}}), withHistory(h))
		return in, Decide(in)
	}
	podsPerMinute := func(n int32) *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: 60}}}
	}
	window := func(seconds int32) *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(seconds)}
	}
	disabled := autoscalingv2.DisabledPolicySelect
	for _, tc := range []struct {
		name           string
		want, current  int32
		behavior       *autoscalingv2.HorizontalPodAutoscalerBehavior
		history        History
		wantConstraint Constraint
		wantHeld       bool
		wantUntil      time.Duration
	}{
		{name: "scale-down window: the highest recommendation leaves it, the next highest takes over",
			want: 2, current: 5, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: window(300)},
			history:        History{Recommendations: recsAgo(5, time.Minute, 4, 30*time.Second)},
			wantConstraint: ConstraintScaleDownStabilization, wantHeld: true, wantUntil: 4 * time.Minute},
		{name: "scale-down window without behavior: the cluster's window, which keeps a sample at its cutoff",
			want: 2, current: 5,
			history:        History{Recommendations: recsAgo(5, time.Minute, 4, 30*time.Second)},
			wantConstraint: ConstraintScaleDownStabilization, wantHeld: true, wantUntil: 4*time.Minute + time.Nanosecond},
		{name: "scale-up window: the lowest recommendation leaves it",
			want: 6, current: 2, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: window(120)},
			history:        History{Recommendations: recsAgo(2, 30*time.Second)},
			wantConstraint: ConstraintScaleUpStabilization, wantHeld: true, wantUntil: 90 * time.Second},
		{name: "a scale-down held partway moves on when the recommendation holding it leaves",
			want: 1, current: 8, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: window(300)},
			history:        History{Recommendations: recsAgo(4, 200*time.Second)},
			wantConstraint: ConstraintScaleDownStabilization, wantHeld: true, wantUntil: 100 * time.Second},
		{name: "a scale-up policy spent by a recent rescale: its period lets go of the rescale",
			want: 10, current: 4, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: podsPerMinute(2)},
			history:        History{Recommendations: []Recommendation{}, ScaleUpEvents: []ScaleEvent{{ReplicaChange: 2, Timestamp: testNow.Add(-20 * time.Second)}}},
			wantConstraint: ConstraintScaleUpLimit, wantHeld: true, wantUntil: 40 * time.Second},
		{name: "a scale-up policy that lets part of the way now: the rescale made now holds the rest a period",
			want: 10, current: 4, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: podsPerMinute(2)},
			history:        History{Recommendations: []Recommendation{}},
			wantConstraint: ConstraintScaleUpLimit, wantHeld: true, wantUntil: time.Minute},
		{name: "a disabled scale-down is never released",
			want: 2, current: 5, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: &disabled}},
			history:        History{Recommendations: []Recommendation{}},
			wantConstraint: ConstraintScaleDownLimit},
		{name: "the legacy scale-up cap grows at every sync: not held by time",
			want: 19, current: 2,
			history:        History{Recommendations: []Recommendation{}},
			wantConstraint: ConstraintScaleUpLimit},
		{name: "the metrics set the count: nothing holds it",
			want: 6, current: 2,
			history:        History{Recommendations: recsAgo(5, time.Minute)},
			wantConstraint: ConstraintNone},
		{name: "maxReplicas is not a window",
			want: 30, current: 20, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: window(0)},
			history:        History{Recommendations: []Recommendation{}},
			wantConstraint: ConstraintMaxReplicas},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, d := decide(tc.want, tc.current, tc.behavior, tc.history)
			if c := ConstraintOf(d); c != tc.wantConstraint {
				t.Fatalf("the fixture is bound by %s, want %s (desired %d)", c, tc.wantConstraint, d.DesiredReplicas)
			}
			until, held := HeldUntil(in, d)
			if held != tc.wantHeld || held && !until.Equal(testNow.Add(tc.wantUntil)) {
				t.Fatalf("HeldUntil = %v, %v; want %v, %v", until.Sub(testNow), held, tc.wantUntil, tc.wantHeld)
			}
			if !held {
				return
			}
			// The count moves at that instant and not a nanosecond before, on the history the
			// controller keeps after writing this decision.
			next := func(at time.Time) int32 {
				_, h := Settle(in, d, nil, true)
				again := in
				again.Now, again.History, again.Scale = at, h, &Scale{SpecReplicas: d.DesiredReplicas, StatusReplicas: d.DesiredReplicas, Selector: testSelector}
				return Decide(again).DesiredReplicas
			}
			if got := next(until.Add(-time.Nanosecond)); got != d.DesiredReplicas {
				t.Errorf("just before, the core already decides %d, not %d", got, d.DesiredReplicas)
			}
			if got := next(until); got == d.DesiredReplicas {
				t.Errorf("at %v the core still decides %d", tc.wantUntil, got)
			}
		})
	}
}
