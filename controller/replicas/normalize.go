package replicas

import (
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// EffectiveBehavior returns the behavior the controller acts on: nil when spec.behavior is nil
// (legacy normalization), else a copy with the API defaults filled into unset fields (scaleUp:
// window 0, Max, [4 Pods / 15 s, 100 Percent / 15 s]; scaleDown: Max, [100 Percent / 15 s]) and
// an unset scaleDown window replaced by the controller's downscale stabilization window.
func EffectiveBehavior(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg Config) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	b, _ := EffectiveBehaviorDefaults(hpa, cfg)
	return b
}

// Fields of spec.behavior that EffectiveBehaviorDefaults reports as filled in.
const (
	ScaleUpWindow     = "scaleUp.stabilizationWindowSeconds"
	ScaleUpSelect     = "scaleUp.selectPolicy"
	ScaleUpPolicies   = "scaleUp.policies"
	ScaleDownWindow   = "scaleDown.stabilizationWindowSeconds" // from Config.DownscaleStabilizationWindow
	ScaleDownSelect   = "scaleDown.selectPolicy"
	ScaleDownPolicies = "scaleDown.policies"
)

// EffectiveBehaviorDefaults is EffectiveBehavior and the fields it filled in (ScaleUpWindow, ...,
// in that order), so that a caller can say which values the HPA did not set.
func EffectiveBehaviorDefaults(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg Config) (*autoscalingv2.HorizontalPodAutoscalerBehavior, []string) {
	if hpa == nil || hpa.Spec.Behavior == nil {
		return nil, nil
	}
	b := hpa.Spec.Behavior
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	upPolicies, n := defaultPolicies(true)
	upDefault := autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To(int32(0)),
		SelectPolicy:               &maxPolicy,
		Policies:                   slices.Clone(upPolicies[:n]),
	}
	downPolicies, n := defaultPolicies(false)
	downDefault := autoscalingv2.HPAScalingRules{
		SelectPolicy: &maxPolicy,
		Policies:     slices.Clone(downPolicies[:n]),
	}
	var defaulted []string
	out := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   fillRules(b.ScaleUp, upDefault, &defaulted, ScaleUpWindow, ScaleUpSelect, ScaleUpPolicies),
		ScaleDown: fillRules(b.ScaleDown, downDefault, &defaulted, ScaleDownWindow, ScaleDownSelect, ScaleDownPolicies),
	}
	if out.ScaleDown.StabilizationWindowSeconds == nil {
		out.ScaleDown.StabilizationWindowSeconds = ptr.To(int32(cfg.DownscaleStabilizationWindow.Seconds()))
	}
	return out, defaulted
}

// defaultPolicies are the API's default policies of a direction, the first n of the array:
// scaleUp 4 Pods / 15 s and 100 Percent / 15 s, scaleDown 100 Percent / 15 s. An array, so
// that the decision reads them without allocating.
func defaultPolicies(up bool) (p [2]autoscalingv2.HPAScalingPolicy, n int) {
	if up {
		return [2]autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}, 2
	}
	return [2]autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
	}, 1
}

// scalingRules is one direction of EffectiveBehavior as the decision reads it, without the copy
// EffectiveBehavior makes (normalizeWithBehavior runs at every sync): policies are the HPA's
// own, shared and only read, or nil for defaultPolicies.
type scalingRules struct {
	window       int32
	selectPolicy autoscalingv2.ScalingPolicySelect
	policies     []autoscalingv2.HPAScalingPolicy
}

// effectiveRules are the directions of EffectiveBehavior for a non-nil behavior: an unset
// window is 0 going up and the controller's downscale window going down, an unset
// selectPolicy Max, unset policies the defaults.
func effectiveRules(b *autoscalingv2.HorizontalPodAutoscalerBehavior, cfg Config) (up, down scalingRules) {
	of := func(from *autoscalingv2.HPAScalingRules, window int32) scalingRules {
		r := scalingRules{window: window, selectPolicy: autoscalingv2.MaxChangePolicySelect}
		if from == nil {
			return r
		}
		if from.StabilizationWindowSeconds != nil {
			r.window = *from.StabilizationWindowSeconds
		}
		if from.SelectPolicy != nil {
			r.selectPolicy = *from.SelectPolicy
		}
		r.policies = from.Policies
		return r
	}
	return of(b.ScaleUp, 0), of(b.ScaleDown, int32(cfg.DownscaleStabilizationWindow.Seconds()))
}

// fillRules copies the set fields of from over def, as the API's defaulting does, and appends
// the names of the fields it left at def's value (a scaleDown window still nil in def is
// filled from the Config by the caller).
func fillRules(from *autoscalingv2.HPAScalingRules, def autoscalingv2.HPAScalingRules, defaulted *[]string, window, selectPolicy, policies string) *autoscalingv2.HPAScalingRules {
	if from == nil {
		from = &autoscalingv2.HPAScalingRules{}
	}
	from = from.DeepCopy()
	if from.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	} else {
		*defaulted = append(*defaulted, window)
	}
	if from.SelectPolicy != nil {
		def.SelectPolicy = from.SelectPolicy
	} else {
		*defaulted = append(*defaulted, selectPolicy)
	}
	if from.Policies != nil {
		def.Policies = from.Policies
	} else {
		*defaulted = append(*defaulted, policies)
	}
	if from.Tolerance != nil {
		def.Tolerance = from.Tolerance
	}
	return &def
}

// normalizeLegacy is upstream's normalizeDesiredReplicas: downscale stabilization over the
// controller window, then the max(factor x current, minimum) scale-up cap and min/max.
func normalizeLegacy(d *decision, in Input, current, desired int32) int32 {
	window := in.Config.DownscaleStabilizationWindow
	cutoff := in.Now.Add(-window)
	st := &Stabilization{Legacy: true, DownWindow: window, Recommendation: desired, UpRecommendation: desired}
	maxRec := desired
	old := -1
	recs := d.History.Recommendations
	for i, rec := range recs {
		if rec.Timestamp.Before(cutoff) {
			old = i
			continue
		}
		if !in.OmitTrace {
			st.Considered = consider(st.Considered, rec, len(recs)-i)
		}
		if rec.Replicas > maxRec {
			maxRec = rec.Replicas
		}
	}
	d.History.Recommendations = record(recs, old, Recommendation{Replicas: desired, Timestamp: in.Now})
	st.DownRecommendation, st.Result = maxRec, maxRec
	if maxRec != desired {
		st.Reason = "ScaleDownStabilized"
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, st.Reason, msgScaleDownStabilized)
	} else {
		st.Reason = "ReadyForNewScale"
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, st.Reason, msgReadyForNewScale)
	}
	d.Stabilization = st
	d.line().s("no behavior: highest of ").i(int64(desired)).s(" and ").i(int64(len(st.Considered))).s(" recommendations within the last ").dur(window).
		s(" -> ").i(int64(maxRec)).s(" (").s(st.Reason).s(")").end("stabilization", -1)

	upLimit := int32(math.Max(in.Config.LegacyScaleUpFactor*float64(current), in.Config.LegacyScaleUpMinimum))
	lim := &Limit{Input: maxRec, UpLimit: upLimit, DownLimit: d.MinReplicas}
	result, reason, message := rulesLimit(maxRec, d.MinReplicas, d.MaxReplicas, upLimit)
	lim.Result, lim.Reason, lim.Limited = result, reason, result != maxRec
	d.Limit = lim
	d.setCondition(autoscalingv2.ScalingLimited, limitedStatus(lim.Limited), reason, message)
	d.line().s("no behavior: scale-up limit max(").g(in.Config.LegacyScaleUpFactor).s(" x ").i(int64(current)).s(", ").g(in.Config.LegacyScaleUpMinimum).s(") = ").i(int64(upLimit)).
		s(", range [").i(int64(d.MinReplicas)).s(", ").i(int64(d.MaxReplicas)).s("]: ").i(int64(maxRec)).s(" -> ").i(int64(result)).s(" (").s(reason).s(")").end("limits", -1)
	return result
}

// rulesLimit is upstream's convertDesiredReplicasWithRules with the scale-up limit computed.
func rulesLimit(desired, minR, maxR, upLimit int32) (int32, string, string) {
	maxAllowed, reason, message := maxR, "TooManyReplicas", msgTooMany
	if maxR > upLimit {
		maxAllowed, reason, message = upLimit, "ScaleUpLimit", msgScaleUpLimit
	}
	if desired < minR {
		return minR, "TooFewReplicas", msgTooFew
	}
	if desired > maxAllowed {
		return maxAllowed, reason, message
	}
	return desired, "DesiredWithinRange", msgWithinRange
}

func limitedStatus(limited bool) corev1.ConditionStatus {
	if limited {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

// consider appends rec to the recommendations a window considered, allocating at the first
// for the left entries at most: one allocation per decision rather than one per doubling, and
// still nil when none is considered.
func consider(considered []Recommendation, rec Recommendation, left int) []Recommendation {
	if considered == nil {
		considered = make([]Recommendation, 0, left)
	}
	return append(considered, rec)
}

// record stores rec over the slot at index old (an expired entry) or appends it, without
// touching the caller's backing array (recs is already Decide's own copy).
func record(recs []Recommendation, old int, rec Recommendation) []Recommendation {
	if old >= 0 {
		recs[old] = rec
		return recs
	}
	return append(recs, rec)
}

// normalizeWithBehavior is upstream's normalizeDesiredReplicasWithBehaviors.
func normalizeWithBehavior(d *decision, in Input, current, desired int32) int32 {
	up, down := effectiveRules(in.HPA.Spec.Behavior, in.Config)
	upWindow, downWindow := seconds(up.window), seconds(down.window)
	upCutoff, downCutoff := in.Now.Add(-upWindow), in.Now.Add(-downWindow)
	st := &Stabilization{UpWindow: upWindow, DownWindow: downWindow, Recommendation: desired, UpRecommendation: desired, DownRecommendation: desired}
	old := -1
	recs := d.History.Recommendations
	for i, rec := range recs {
		inUp, inDown := rec.Timestamp.After(upCutoff), rec.Timestamp.After(downCutoff)
		if inUp {
			st.UpRecommendation = min(rec.Replicas, st.UpRecommendation)
		}
		if inDown {
			st.DownRecommendation = max(rec.Replicas, st.DownRecommendation)
		}
		if (inUp || inDown) && !in.OmitTrace {
			st.Considered = consider(st.Considered, rec, len(recs)-i)
		}
		if rec.Timestamp.Before(upCutoff) && rec.Timestamp.Before(downCutoff) {
			old = i
		}
	}
	stabilized := current
	if stabilized < st.UpRecommendation {
		stabilized = st.UpRecommendation
	}
	if stabilized > st.DownRecommendation {
		stabilized = st.DownRecommendation
	}
	st.Result = stabilized
	d.History.Recommendations = record(recs, old, Recommendation{Replicas: desired, Timestamp: in.Now})
	switch {
	case stabilized == desired:
		st.Reason = "ReadyForNewScale"
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, st.Reason, msgReadyForNewScale)
	case desired >= current:
		st.Reason = "ScaleUpStabilized"
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, st.Reason, msgScaleUpStabilized)
	default:
		st.Reason = "ScaleDownStabilized"
		d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, st.Reason, msgScaleDownStabilized)
	}
	d.Stabilization = st
	d.line().s("behavior: lowest recommendation over the last ").dur(upWindow).s(" is ").i(int64(st.UpRecommendation)).s(", highest over the last ").dur(downWindow).
		s(" is ").i(int64(st.DownRecommendation)).s("; current ").i(int64(current)).s(" kept between them -> ").i(int64(stabilized)).s(" (").s(st.Reason).s(")").end("stabilization", -1)

	lim, message := behaviorRateLimit(&up, &down, current, stabilized, d.MinReplicas, d.MaxReplicas, d.History, in.Now)
	reason, result := lim.Reason, lim.Result
	d.Limit = lim
	d.setCondition(autoscalingv2.ScalingLimited, limitedStatus(lim.Limited), reason, message)
	d.line().s("behavior: rate limit up ").limit(lim.UpLimit).s(", down ").limit(lim.DownLimit).s(", range [").i(int64(d.MinReplicas)).s(", ").i(int64(d.MaxReplicas)).
		s("]: ").i(int64(stabilized)).s(" -> ").i(int64(result)).s(" (").s(reason).s(")").end("limits", -1)
	return result
}

// behaviorRateLimit is upstream's convertDesiredReplicasWithBehaviorRate: the policy limit in the
// direction of travel (never past current) combined with min/max.
func behaviorRateLimit(up, down *scalingRules, current, stabilized, minR, maxR int32, h History, now time.Time) (*Limit, string) {
	lim := &Limit{Input: stabilized, UpLimit: -1, DownLimit: -1}
	result, reason, message := stabilized, "DesiredWithinRange", msgWithinRange
	switch {
	case stabilized > current:
		limit := policyLimit(lim, "scaleUp", up, current, h, now, true)
		if limit < current {
			limit = current
		}
		lim.UpLimit = limit
		maxAllowed, r, m := maxR, "TooManyReplicas", msgTooMany
		if maxAllowed > limit {
			maxAllowed, r, m = limit, "ScaleUpLimit", msgScaleUpLimit
		}
		if stabilized > maxAllowed {
			result, reason, message = maxAllowed, r, m
		}
	case stabilized < current:
		limit := policyLimit(lim, "scaleDown", down, current, h, now, false)
		if limit > current {
			limit = current
		}
		lim.DownLimit = limit
		minAllowed, r, m := minR, "TooFewReplicas", msgTooFew
		if minAllowed < limit {
			minAllowed, r, m = limit, "ScaleDownLimit", msgScaleDownLimit
		}
		if stabilized < minAllowed {
			result, reason, message = minAllowed, r, m
		}
	}
	lim.Result, lim.Reason, lim.Limited = result, reason, result != stabilized
	return lim, message
}

func (l line) limit(v int32) line {
	if v < 0 {
		return l.s("not applied")
	}
	return l.i(int64(v))
}

// policyLimit is upstream's calculateScaleUpLimitWithScalingRules (up) or
// calculateScaleDownLimitWithBehaviors (down); every policy's proposal is recorded in lim.
func policyLimit(lim *Limit, direction string, r *scalingRules, current int32, h History, now time.Time, up bool) int32 {
	if r.selectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	useMin := r.selectPolicy == autoscalingv2.MinChangePolicySelect
	// "Max" means the largest change: the highest count going up, the lowest going down.
	pickMax := up != useMin
	result := int32(math.MinInt32)
	if !pickMax {
		result = math.MaxInt32
	}
	policies := r.policies
	if policies == nil {
		defaults, n := defaultPolicies(up)
		policies = defaults[:n]
	}
	if len(policies) > 0 {
		lim.Policies = make([]PolicyLimit, 0, len(policies))
	}
	for _, p := range policies {
		added := changeInPeriod(p.PeriodSeconds, h.ScaleUpEvents, now)
		removed := changeInPeriod(p.PeriodSeconds, h.ScaleDownEvents, now)
		start := current - added + removed
		proposed, ok := PolicyProposal(p, start, up)
		if !ok {
			// Upstream leaves the previous policy's proposal in place for an unknown type.
			proposed = lastProposal(lim)
		}
		lim.Policies = append(lim.Policies, PolicyLimit{Direction: direction, Type: p.Type, Value: p.Value, PeriodSeconds: p.PeriodSeconds, PeriodStart: start, Proposal: proposed})
		if pickMax {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// PolicyProposal is the count one scaling policy allows from start, the count at its period's
// start: start plus or minus Value pods, or Value percent of start (rounded up going up, down
// going down, as upstream's float arithmetic does). It is false for a type it does not know.
func PolicyProposal(p autoscalingv2.HPAScalingPolicy, start int32, up bool) (int32, bool) {
	switch {
	case up && p.Type == autoscalingv2.PodsScalingPolicy:
		return start + p.Value, true
	case up && p.Type == autoscalingv2.PercentScalingPolicy:
		return int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100))), true
	case p.Type == autoscalingv2.PodsScalingPolicy:
		return start - p.Value, true
	case p.Type == autoscalingv2.PercentScalingPolicy:
		return int32(float64(start) * (1 - float64(p.Value)/100)), true
	}
	return 0, false
}

func lastProposal(lim *Limit) int32 {
	if n := len(lim.Policies); n > 0 {
		return lim.Policies[n-1].Proposal
	}
	return 0
}

// changeInPeriod sums the replica changes of events strictly newer than now - period.
func changeInPeriod(periodSeconds int32, events []ScaleEvent, now time.Time) int32 {
	cutoff := now.Add(-seconds(periodSeconds))
	var n int32
	for _, e := range events {
		if e.Timestamp.After(cutoff) {
			n += e.ReplicaChange
		}
	}
	return n
}
