package replicas

import (
	"slices"
	"time"
)

// HeldUntil is when the decision d, made from in, would move if the metrics kept asking for
// what they ask now: the first instant at which a recommendation holding it leaves its
// stabilization window, or a rescale a scaling policy counts leaves the policy's period, and
// the count the core then decides differs from d's. The cluster's controller moves at its
// first sync from then on.
//
// It is false unless a stabilization window or a scaling policy's period binds d
// (ConstraintOf), for a rate limit without spec.behavior (its cap grows with the count at
// every sync, nothing expires), and when nothing in the history ever releases d (a disabled
// direction). The history is the one the core decided from (in.History), with this decision's
// own recommendation and, for a rescale, its scale event, as the controller keeps them once
// it has written the count.
func HeldUntil(in Input, d Decision) (time.Time, bool) {
	st := d.Stabilization
	if d.Phase != PhaseComputed || st == nil || in.HPA == nil {
		return time.Time{}, false
	}
	switch ConstraintOf(d) {
	case ConstraintScaleUpStabilization, ConstraintScaleDownStabilization:
	case ConstraintScaleUpLimit, ConstraintScaleDownLimit:
		if st.Legacy {
			return time.Time{}, false
		}
	default:
		return time.Time{}, false
	}
	_, h := Settle(in, d, nil, true)
	// From now on the target runs d's count; the metrics keep proposing st.Recommendation.
	current, raw := d.DesiredReplicas, st.Recommendation
	at := func(now time.Time) int32 {
		scratch := decision{Decision: Decision{MinReplicas: d.MinReplicas, MaxReplicas: d.MaxReplicas, History: ownRecommendations(h)}}
		next := in
		next.Now = now
		if st.Legacy {
			return normalizeLegacy(&scratch, next, current, raw)
		}
		return normalizeWithBehavior(&scratch, next, current, raw)
	}
	// The replay must find d's own count now, or it does not model this decision.
	if at(in.Now) != d.DesiredReplicas {
		return time.Time{}, false
	}
	for _, t := range releases(in, h, st) {
		if at(t) != d.DesiredReplicas {
			return t, true
		}
	}
	return time.Time{}, false
}

// releases are the instants after in.Now at which something of h stops counting, in order: a
// recommendation leaving a window, a scale event leaving a policy's period.
func releases(in Input, h History, st *Stabilization) []time.Time {
	var out []time.Time
	add := func(t time.Time) {
		if t.After(in.Now) {
			out = append(out, t)
		}
	}
	for _, r := range h.Recommendations {
		if st.Legacy {
			// The legacy window keeps a recommendation at exactly its cutoff (Before, not After).
			add(r.Timestamp.Add(st.DownWindow + time.Nanosecond))
			continue
		}
		add(r.Timestamp.Add(st.UpWindow))
		add(r.Timestamp.Add(st.DownWindow))
	}
	if !st.Legacy {
		b := EffectiveBehavior(in.HPA, in.Config)
		for _, p := range b.ScaleUp.Policies {
			for _, e := range h.ScaleUpEvents {
				add(e.Timestamp.Add(seconds(p.PeriodSeconds)))
			}
		}
		for _, p := range b.ScaleDown.Policies {
			for _, e := range h.ScaleDownEvents {
				add(e.Timestamp.Add(seconds(p.PeriodSeconds)))
			}
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.Compact(out)
}
