package rules

import (
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// maxReachTime bounds TimeToReach: a policy slower than a day is reported as not reaching.
const maxReachTime = 24 * time.Hour

// TimeToReach is how long the controller, syncing every sync, takes to go from replicas from
// to replicas to under rules (effective: defaults filled in) when the demand moves to to at
// once and stays there: the stabilization window first (the recommendations of the window
// before the change still hold), then one step per sync as large as the policies allow, each
// policy counting the changes made within its period as upstream does. ok is false when
// rules are Disabled or it takes more than a day.
func TimeToReach(rules *autoscalingv2.HPAScalingRules, from, to int32, sync time.Duration) (took time.Duration, ok bool) {
	if from == to {
		return 0, true
	}
	if rules == nil || disabled(rules) || sync <= 0 {
		return 0, false
	}
	up := to > from
	var window time.Duration
	if rules.StabilizationWindowSeconds != nil {
		window = time.Duration(*rules.StabilizationWindowSeconds) * time.Second
	}
	type event struct {
		at     time.Duration
		change int32
	}
	var events []event
	var longest time.Duration
	for _, p := range rules.Policies {
		longest = max(longest, time.Duration(p.PeriodSeconds)*time.Second)
	}
	current := from
	// The first sync at or after the window's end decides with the new demand alone.
	start := time.Duration(math.Ceil(float64(window)/float64(sync))) * sync
	for t := start; t <= maxReachTime; t += sync {
		limit := stepLimit(rules, current, up, func(period int32) int32 {
			cutoff := t - time.Duration(period)*time.Second
			var n int32
			for _, e := range events {
				if e.at > cutoff {
					n += e.change
				}
			}
			return n
		})
		next := to
		if up {
			next = min(next, limit)
		} else {
			next = max(next, limit)
		}
		if next != current {
			events = append(events, event{at: t, change: next - current})
			current = next
		}
		// Events older than the longest period no policy counts any more.
		for len(events) > 0 && events[0].at <= t-longest {
			events = events[1:]
		}
		if current == to {
			return t, true
		}
	}
	return 0, false
}

// stepLimit is the furthest count the policies allow from current: upstream's
// calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors, where changed
// gives the net change (up minus down, as seen from the direction's side) within a period.
func stepLimit(rules *autoscalingv2.HPAScalingRules, current int32, up bool, changed func(period int32) int32) int32 {
	pickMax := selectsLargest(rules) == up
	result := int32(math.MinInt32)
	if !pickMax {
		result = math.MaxInt32
	}
	for _, p := range rules.Policies {
		// Changes are signed: a scale-up within the period is added back going up, a
		// scale-down subtracted going down; both give the count at the period's start.
		start := current - changed(p.PeriodSeconds)
		proposed := proposal(p, start, up)
		if pickMax {
			result = max(result, proposed)
		} else {
			result = min(result, proposed)
		}
	}
	return result
}

// proposal is one policy's limit from the count at its period's start, by the core's
// arithmetic; a type the API server would refuse proposes no change.
func proposal(p autoscalingv2.HPAScalingPolicy, start int32, up bool) int32 {
	if n, ok := replicas.PolicyProposal(p, start, up); ok {
		return n
	}
	return start
}

// selectsLargest: selectPolicy Max (the default) takes the largest change, Min the smallest.
func selectsLargest(r *autoscalingv2.HPAScalingRules) bool {
	return r.SelectPolicy == nil || *r.SelectPolicy != autoscalingv2.MinChangePolicySelect
}

// NeverBinds reports whether policy i of rules (effective) is never the one applied at any
// count from minR to maxR, and which policy of the same period always does better for the
// selectPolicy (larger changes with Max, smaller with Min). Policies of other periods are not
// compared: which binds then depends on the changes already made.
func NeverBinds(rules *autoscalingv2.HPAScalingRules, i int, minR, maxR int32, up bool) (by int, ok bool) {
	p := rules.Policies[i]
	largest := selectsLargest(rules)
	for j, q := range rules.Policies {
		if j == i || q.PeriodSeconds != p.PeriodSeconds {
			continue
		}
		always := true
		for _, n := range counts(minR, maxR) {
			if !always {
				break
			}
			if (up && n == maxR) || (!up && n == minR) {
				continue
			}
			a, b := proposal(p, n, up), proposal(q, n, up)
			// "Larger change" is a higher count going up, a lower one going down.
			qBigger := b > a
			if !up {
				qBigger = b < a
			}
			always = (largest && qBigger) || (!largest && a != b && !qBigger)
		}
		if always {
			return j, true
		}
	}
	return 0, false
}

// scanLimit bounds the counts NeverBinds compares policies at.
const scanLimit = 5000

// counts are the replica counts from minR to maxR, or, over a wider range, its first and last
// scanLimit counts: one policy's proposal minus another's is monotone in the count when a Pods
// policy is in the pair, so the ends decide; two Percent policies differ by rounding only in
// the middle of a wide range.
func counts(minR, maxR int32) []int32 {
	var out []int32
	// In int64: maxR may be the largest int32, past which an int32 counter wraps.
	lo, hi := int64(minR), int64(maxR)
	add := func(from, to int64) {
		for n := from; n <= to; n++ {
			out = append(out, int32(n))
		}
	}
	if hi-lo < 2*scanLimit {
		add(lo, hi)
		return out
	}
	add(lo, lo+scanLimit-1)
	add(hi-scanLimit+1, hi)
	return out
}

// DescribeRules says a direction's policies and window in a line: "10% per 60s after a 300s
// window".
func DescribeRules(r *autoscalingv2.HPAScalingRules) string {
	parts := make([]string, len(r.Policies))
	for i, p := range r.Policies {
		parts[i] = describePolicy(p)
	}
	s := strings.Join(parts, " or ")
	if len(r.Policies) > 1 {
		sel := "Max"
		if r.SelectPolicy != nil {
			sel = string(*r.SelectPolicy)
		}
		s += " (" + sel + ")"
	}
	if w := r.StabilizationWindowSeconds; w != nil && *w > 0 {
		s += fmt.Sprintf(" after a %ds window", *w)
	}
	return s
}

func describePolicy(p autoscalingv2.HPAScalingPolicy) string {
	if p.Type == autoscalingv2.PercentScalingPolicy {
		return fmt.Sprintf("%d%% per %ds", p.Value, p.PeriodSeconds)
	}
	if p.Value == 1 {
		return fmt.Sprintf("1 pod per %ds", p.PeriodSeconds)
	}
	return fmt.Sprintf("%d pods per %ds", p.Value, p.PeriodSeconds)
}
