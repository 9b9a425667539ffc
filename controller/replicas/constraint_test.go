package replicas

import (
	"errors"
	"testing"
)

func TestConstraintOfNamesWhatHeldTheDecisionBack(t *testing.T) {
	within := []MetricResult{{WithinTolerance: true}, {Err: errors.New("no metric")}}
	outside := []MetricResult{{WithinTolerance: false}}
	for _, tc := range []struct {
		name string
		d    Decision
		want Constraint
	}{
		{"an unreadable scale", Decision{Phase: PhaseScaleFailed}, ConstraintScaleUnavailable},
		{"a target at zero that may not scale from it", Decision{Phase: PhaseDisabled}, ConstraintScalingDisabled},
		{"a count below the range", Decision{Phase: PhaseClampedToRange, CurrentReplicas: 1, MinReplicas: 2}, ConstraintMinReplicas},
		{"a count above the range", Decision{Phase: PhaseClampedToRange, CurrentReplicas: 12, MinReplicas: 2, MaxReplicas: 10}, ConstraintMaxReplicas},
		{"an ambiguous selector", Decision{Phase: PhaseMetricsFailed, Conditions: []Condition{{Reason: "AmbiguousSelector"}}}, ConstraintSelector},
		{"failed metrics", Decision{Phase: PhaseMetricsFailed, Conditions: []Condition{{Reason: "FailedGetResourceMetric"}}}, ConstraintMetricsUnavailable},
		{"a scale-up policy", Decision{Phase: PhaseComputed, Rescale: true, Limit: &Limit{Limited: true, Reason: "ScaleUpLimit"}}, ConstraintScaleUpLimit},
		{"a scale-down policy", Decision{Phase: PhaseComputed, Rescale: true, Limit: &Limit{Limited: true, Reason: "ScaleDownLimit"}}, ConstraintScaleDownLimit},
		{"maxReplicas", Decision{Phase: PhaseComputed, Limit: &Limit{Limited: true, Reason: "TooManyReplicas"}}, ConstraintMaxReplicas},
		{"minReplicas", Decision{Phase: PhaseComputed, Limit: &Limit{Limited: true, Reason: "TooFewReplicas"}}, ConstraintMinReplicas},
		{"the scale-down window", Decision{Phase: PhaseComputed, Limit: &Limit{}, Stabilization: &Stabilization{Recommendation: 2, Result: 5, Reason: "ScaleDownStabilized"}}, ConstraintScaleDownStabilization},
		{"the scale-up window", Decision{Phase: PhaseComputed, Limit: &Limit{}, Stabilization: &Stabilization{Recommendation: 9, Result: 5, Reason: "ScaleUpStabilized"}}, ConstraintScaleUpStabilization},
		{"a rate limit before the window", Decision{Phase: PhaseComputed, Limit: &Limit{Limited: true, Reason: "ScaleUpLimit"}, Stabilization: &Stabilization{Recommendation: 9, Result: 5, Reason: "ScaleUpStabilized"}}, ConstraintScaleUpLimit},
		{"every usable metric within tolerance", Decision{Phase: PhaseComputed, Metrics: within, Stabilization: &Stabilization{Recommendation: 3, Result: 3}}, ConstraintTolerance},
		{"a metric outside tolerance proposing the current count", Decision{Phase: PhaseComputed, Metrics: outside, Stabilization: &Stabilization{Recommendation: 3, Result: 3}}, ConstraintNone},
		{"a free rescale", Decision{Phase: PhaseComputed, Rescale: true, Metrics: outside, Limit: &Limit{}, Stabilization: &Stabilization{Recommendation: 4, Result: 4}}, ConstraintNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConstraintOf(tc.d); got != tc.want {
				t.Errorf("ConstraintOf = %s, want %s", got, tc.want)
			}
		})
	}
}
