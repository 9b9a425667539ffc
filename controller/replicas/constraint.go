package replicas

// Constraint names what held a decision back from the count its metrics proposed, or why
// metrics were not consulted. explain's verdict and the simulator's summary both read it.
type Constraint string

// Constraints ConstraintOf returns.
const (
	ConstraintNone                   Constraint = "None"                   // metrics set the count and nothing held it back
	ConstraintTolerance              Constraint = "Tolerance"              // every usable ratio was inside the tolerance band
	ConstraintScaleUpStabilization   Constraint = "ScaleUpStabilization"   // the scale-up window held the count
	ConstraintScaleDownStabilization Constraint = "ScaleDownStabilization" // the scale-down window held the count
	ConstraintScaleUpLimit           Constraint = "ScaleUpLimit"           // a scale-up policy (or legacy 2x/4 cap) bound
	ConstraintScaleDownLimit         Constraint = "ScaleDownLimit"         // a scale-down policy bound
	ConstraintMaxReplicas            Constraint = "MaxReplicas"            // spec.maxReplicas bound
	ConstraintMinReplicas            Constraint = "MinReplicas"            // spec.minReplicas bound
	ConstraintMetricsUnavailable     Constraint = "MetricsUnavailable"     // no usable metric (or a failure blocked a scale-down)
	ConstraintSelector               Constraint = "Selector"               // invalid or ambiguous selector
	ConstraintScaleUnavailable       Constraint = "ScaleUnavailable"       // the target's scale could not be read
	ConstraintScalingDisabled        Constraint = "ScalingDisabled"        // target at 0 replicas, scaling from zero not allowed
)

// ConstraintOf is the constraint that bound d: the first of the range, a rate limit, a
// stabilization window and the tolerance band that made the result differ from (or, for the
// tolerance, kept it at) what the metrics alone asked for.
func ConstraintOf(d Decision) Constraint {
	switch d.Phase {
	case PhaseScaleFailed:
		return ConstraintScaleUnavailable
	case PhaseDisabled:
		return ConstraintScalingDisabled
	case PhaseClampedToRange:
		if d.CurrentReplicas < d.MinReplicas {
			return ConstraintMinReplicas
		}
		return ConstraintMaxReplicas
	case PhaseMetricsFailed:
		for _, c := range d.Conditions {
			if c.Reason == "InvalidSelector" || c.Reason == "AmbiguousSelector" {
				return ConstraintSelector
			}
		}
		return ConstraintMetricsUnavailable
	}
	if d.Limit != nil && d.Limit.Limited {
		switch d.Limit.Reason {
		case "TooFewReplicas":
			return ConstraintMinReplicas
		case "ScaleUpLimit":
			return ConstraintScaleUpLimit
		case "ScaleDownLimit":
			return ConstraintScaleDownLimit
		}
		return ConstraintMaxReplicas
	}
	if s := d.Stabilization; s != nil && s.Result != s.Recommendation {
		if s.Reason == "ScaleUpStabilized" {
			return ConstraintScaleUpStabilization
		}
		return ConstraintScaleDownStabilization
	}
	if !d.Rescale && len(d.Metrics) > 0 {
		for _, m := range d.Metrics {
			if m.Err == nil && !m.WithinTolerance {
				return ConstraintNone
			}
		}
		return ConstraintTolerance
	}
	return ConstraintNone
}
