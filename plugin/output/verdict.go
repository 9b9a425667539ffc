package output

import (
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// metricPhrase is "cpu 142% vs 80%" for the verdict.
func metricPhrase(m v1alpha1.Metric) string {
	return fmt.Sprintf("%s %s vs %s", m.Short, strings.TrimSuffix(m.Current, " (avg)"), strings.TrimSuffix(m.Target, " (avg)"))
}

// rebalancing is ", once 2 unready pods count as 0 (ratio 1.32 -> 0.99)" when the pods the
// calculator could not take at their sample (not ready yet, or without one) moved m's ratio,
// so that the verdict says why a metric far from its target asks for little; "" otherwise.
func rebalancing(m v1alpha1.Metric) string {
	if m.Ratio == nil || m.RebalancedRatio == nil || fmt.Sprintf("%.2f", *m.Ratio) == fmt.Sprintf("%.2f", *m.RebalancedRatio) {
		return ""
	}
	var unready, missingZero, missingTarget int
	for _, p := range m.Pods {
		if p.AssumedUsageMilli == nil {
			continue
		}
		switch {
		case p.Treatment == string(replicas.PodUnready):
			unready++
		case p.Treatment == string(replicas.PodMissing) && *p.AssumedUsageMilli == 0:
			missingZero++
		case p.Treatment == string(replicas.PodMissing):
			missingTarget++
		}
	}
	pods := func(n int, what, as string) string {
		if n == 1 {
			return "1 " + what + " pod counts " + as
		}
		return fmt.Sprintf("%d %s pods count %s", n, what, as)
	}
	var parts []string
	if unready > 0 {
		parts = append(parts, pods(unready, "unready", "as 0"))
	}
	if missingZero > 0 {
		parts = append(parts, pods(missingZero, "unmeasured", "as 0"))
	}
	if missingTarget > 0 {
		parts = append(parts, pods(missingTarget, "unmeasured", "at the target"))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(", once %s (ratio %.2f -> %.2f)", strings.Join(parts, " and "), *m.Ratio, *m.RebalancedRatio)
}

// verdictOf says the decision in a sentence; its constraint is the core's ConstraintOf, which
// the simulator's summary counts too.
func verdictOf(d replicas.Decision, e *v1alpha1.Explanation) *v1alpha1.Verdict {
	c := replicas.ConstraintOf(d)
	v := &v1alpha1.Verdict{Constraint: string(c)}
	from, to := d.CurrentReplicas, d.DesiredReplicas
	var chosen *v1alpha1.Metric
	for i := range e.Metrics {
		if e.Metrics[i].Chosen {
			chosen = &e.Metrics[i]
		}
	}
	move := fmt.Sprintf("would stay at %d", from)
	if d.Rescale {
		move = fmt.Sprintf("would scale %d -> %d", from, to)
	}
	why := ""
	switch {
	case chosen != nil:
		why = ": " + metricPhrase(*chosen) + rebalancing(*chosen)
	case c == replicas.ConstraintTolerance:
		// Within tolerance no metric sets the count: name the one the pods' treatment moved.
		for _, m := range e.Metrics {
			if r := rebalancing(m); r != "" {
				why = ": " + metricPhrase(m) + r
				break
			}
		}
	}
	switch {
	case c == replicas.ConstraintScaleUnavailable:
		msg := e.Target.Error
		if msg == "" {
			msg = errText(d.Err, "unknown error")
		}
		v.Sentence = "would not scale: the target's scale could not be read: " + msg
	case c == replicas.ConstraintScalingDisabled:
		v.Sentence = "would not scale: the target has 0 replicas and this HPA may not scale it from zero"
	case d.Phase == replicas.PhaseClampedToRange:
		bound := fmt.Sprintf("maxReplicas %d", d.MaxReplicas)
		if c == replicas.ConstraintMinReplicas {
			bound = fmt.Sprintf("minReplicas %d", d.MinReplicas)
		}
		v.Sentence = fmt.Sprintf("%s: the current count is outside the range, so it is set to %s without consulting metrics", move, bound)
	case c == replicas.ConstraintSelector:
		for _, cond := range d.Conditions {
			if cond.Reason == "InvalidSelector" || cond.Reason == "AmbiguousSelector" {
				v.Sentence = "would not scale: " + cond.Message
				break
			}
		}
	case c == replicas.ConstraintMetricsUnavailable:
		v.Sentence = "would not scale: no usable metric: " + errText(d.Err, "unknown error")
		for _, m := range e.Metrics {
			if m.Error != "" {
				v.Sentence = fmt.Sprintf("would not scale: metric %s failed: %s", m.Short, m.Error)
				break
			}
		}
	case DisabledBy(c, e.Behavior) != "":
		v.Sentence = fmt.Sprintf("%s%s, proposing %d, but %s", move, why, d.MetricReplicas, DisabledBy(c, e.Behavior))
	case d.Limit != nil && d.Limit.Limited:
		by := fmt.Sprintf("maxReplicas %d", d.MaxReplicas)
		switch c {
		case replicas.ConstraintMinReplicas:
			by = fmt.Sprintf("minReplicas %d", d.MinReplicas)
		case replicas.ConstraintScaleUpLimit, replicas.ConstraintScaleDownLimit:
			by = e.Arithmetic.Limits.BindingPolicy
		}
		v.Sentence = fmt.Sprintf("%s%s, proposing %d, limited by %s", move, why, d.MetricReplicas, by)
	case c == replicas.ConstraintScaleUpStabilization:
		s := d.Stabilization
		v.Sentence = fmt.Sprintf("%s%s, proposing %d, held at %d by the lowest recommendation of the last %s (scaleUp stabilization window)", move, why, s.Recommendation, s.Result, s.UpWindow)
	case c == replicas.ConstraintScaleDownStabilization:
		s := d.Stabilization
		v.Sentence = fmt.Sprintf("%s%s, proposing %d, held at %d by the highest recommendation of the last %s (scaleDown stabilization window)", move, why, s.Recommendation, s.Result, s.DownWindow)
	case c == replicas.ConstraintTolerance:
		v.Sentence = fmt.Sprintf("%s: every metric is within tolerance (-%s/+%s)%s", move, Percent(d.Tolerances.Down), Percent(d.Tolerances.Up), strings.Replace(why, ":", ", e.g.", 1))
	case !d.Rescale:
		v.Sentence = fmt.Sprintf("%s%s proposes the current count", move, why)
	default:
		v.Sentence = fmt.Sprintf("%s%s, nothing limits it", move, why)
	}
	return v
}

// DisabledBy is "scaling up is disabled by behavior.scaleUp.selectPolicy: Disabled" when the
// rate limit c is a direction the behavior b disables, else "".
func DisabledBy(c replicas.Constraint, b *v1alpha1.Behavior) string {
	dir, way := disabledDirectionOf(c, b)
	if dir == "" {
		return ""
	}
	return "scaling " + way + " is disabled by " + DisabledPolicy(dir)
}

// disabledDirectionOf is the direction ("scaleUp", "up") the behavior b disables when the
// rate limit c is that direction's, else "".
func disabledDirectionOf(c replicas.Constraint, b *v1alpha1.Behavior) (dir, way string) {
	if b == nil || b.Legacy {
		return "", ""
	}
	switch {
	case c == replicas.ConstraintScaleUpLimit && disabledDirection(b.ScaleUp):
		return "scaleUp", "up"
	case c == replicas.ConstraintScaleDownLimit && disabledDirection(b.ScaleDown):
		return "scaleDown", "down"
	}
	return "", ""
}

func errText(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

// Percent prints a ratio as a percentage, to two decimals at most ("12.5%").
func Percent(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f*100), "0"), ".") + "%"
}

// verdictDetails are the verdict's follow-up answers (see Verdict.Details).
func verdictDetails(d replicas.Decision, e *v1alpha1.Explanation) []string {
	var out []string
	var failed, valid []v1alpha1.Metric
	var chosen *v1alpha1.Metric
	for i, m := range e.Metrics {
		switch {
		case !m.Computed:
		case m.Error != "":
			failed = append(failed, m)
		default:
			valid = append(valid, m)
			if m.Chosen {
				chosen = &e.Metrics[i]
			}
		}
	}
	if len(failed) > 0 {
		var names []string
		for _, m := range failed {
			names = append(names, m.Short)
		}
		out = append(out, fmt.Sprintf("kubectl get hpa shows <unknown> for %s: the metric could not be read or computed", strings.Join(names, ", ")))
	}
	if d.Phase == replicas.PhaseMetricsFailed && len(valid) > 0 {
		var lower []string
		for _, m := range valid {
			if m.Proposal != nil && *m.Proposal < d.CurrentReplicas {
				lower = append(lower, fmt.Sprintf("%s alone proposes %d", m.Short, *m.Proposal))
			}
		}
		if len(lower) > 0 {
			out = append(out, fmt.Sprintf("a failing metric blocks scale-down: %s, but the controller never scales down while any metric is invalid (it would still scale up)", strings.Join(lower, ", ")))
		}
	}
	if d.Phase == replicas.PhaseDisabled {
		out = append(out, "scale to zero: an HPA scales a target up from 0 only when it scaled it to 0 itself (status condition ScaledToZero=True, feature gate HPAScaleToZero); a target set to 0 by anyone else stays there until it is scaled up by hand")
	}
	if dir, way := disabledDirectionOf(replicas.ConstraintOf(d), e.Behavior); dir != "" {
		out = append(out, fmt.Sprintf("%s: the controller never scales it %s, however long the metrics ask; no window or policy period releases it, only another %s.selectPolicy (Max or Min) would", DisabledPolicy(dir), way, dir))
	}
	if w := windowRelease(d, e.Time.Time); w != "" {
		out = append(out, w)
	}
	if chosen == nil {
		return out
	}
	if len(valid) > 1 {
		var ps []string
		for _, m := range valid {
			ps = append(ps, fmt.Sprintf("%s %d", m.Short, *m.Proposal))
		}
		out = append(out, fmt.Sprintf("driving metric: %s (the highest proposal wins: %s)", chosen.Short, strings.Join(ps, ", ")))
	}
	if p := podSummary(*chosen); p != "" {
		out = append(out, p)
	}
	if t := thresholds(d, *chosen, e); t != "" {
		out = append(out, t)
	}
	return out
}

// podSummary counts the pods a pod metric did not take as measured, with what that means.
func podSummary(m v1alpha1.Metric) string {
	var unready, missing, ignored int
	for _, p := range m.Pods {
		switch p.Treatment {
		case string(replicas.PodUnready):
			unready++
		case string(replicas.PodMissing):
			missing++
		case string(replicas.PodReady):
		default:
			ignored++
		}
	}
	if unready+missing+ignored == 0 {
		return ""
	}
	var parts []string
	if missing > 0 {
		parts = append(parts, fmt.Sprintf("%d missing metrics (new pods metrics-server has not measured yet: counted as 0 on a scale-up, as 100%% of target on a scale-down)", missing))
	}
	if unready > 0 {
		parts = append(parts, fmt.Sprintf("%d unready or still initializing (counted as 0 on a scale-up)", unready))
	}
	if ignored > 0 {
		parts = append(parts, fmt.Sprintf("%d ignored (deleting or failed)", ignored))
	}
	return fmt.Sprintf("pods: %d ready counted; %s", m.ReadyPods, strings.Join(parts, "; "))
}

// thresholds says, for a count that stays, where a Utilization metric would have to go for
// the count to move: down needs the ratio below both the tolerance and (n-1)/n, up above
// the tolerance.
func thresholds(d replicas.Decision, m v1alpha1.Metric, e *v1alpha1.Explanation) string {
	if d.Rescale || d.Phase != replicas.PhaseComputed || m.TargetSpec.Type != autoscalingv2.UtilizationMetricType || m.TargetSpec.AverageUtilization == nil ||
		m.Proposal == nil || *m.Proposal != d.CurrentReplicas || podSummary(m) != "" {
		// Only the metric, measured on every pod, holds the count here: a window or a limit
		// says its own why, and pods not yet measured move the ratio by rebalancing.
		return ""
	}
	target := float64(*m.TargetSpec.AverageUtilization)
	n := d.CurrentReplicas
	up := fmt.Sprintf("above %.0f%% (tolerance +%s)", math.Floor(target*(1+d.Tolerances.Up)), Percent(d.Tolerances.Up))
	down := fmt.Sprintf("it cannot scale below minReplicas %d", d.MinReplicas)
	if n > d.MinReplicas && n > 0 {
		ratio := math.Min(1-d.Tolerances.Down, float64(n-1)/float64(n))
		down = fmt.Sprintf("scales down only once %s averages below %g%% of request (%s x min(1 - tolerance %s, %d/%d replicas))", m.Short, math.Floor(target*ratio*10)/10, m.Target, Percent(d.Tolerances.Down), n-1, n)
	}
	s := fmt.Sprintf("what would move it: %s; scales up %s", down, up)
	if strings.HasPrefix(m.Short, "memory") {
		s += "; memory use rarely falls when load does (caches, heaps), so a memory HPA may never scale down"
	}
	return s
}

// windowRelease says which recommendation a stabilization window holds the count with and
// when it leaves the window: the window counts recommendations, not the time since the last
// scale, which is what makes a window seem not to hold (or to hold too long).
func windowRelease(d replicas.Decision, now time.Time) string {
	s := d.Stabilization
	if s == nil || s.Legacy || s.Result == s.Recommendation {
		return ""
	}
	window, dir, beyond, holds := s.DownWindow, "scaleDown", "above", func(r int32) bool { return r > s.Recommendation }
	if s.Reason == "ScaleUpStabilized" {
		window, dir, beyond, holds = s.UpWindow, "scaleUp", "below", func(r int32) bool { return r < s.Recommendation }
	}
	// The count is held by the latest recommendation equal to it; when that leaves the
	// window, the next one beyond the proposal (if any) holds a count of its own.
	var last, next *replicas.Recommendation
	for i, r := range s.Considered {
		if r.Replicas == s.Result && (last == nil || r.Timestamp.After(last.Timestamp)) {
			last = &s.Considered[i]
		}
	}
	if last == nil {
		return ""
	}
	for i, r := range s.Considered {
		// Only newer recommendations are still in the window when it leaves.
		if holds(r.Replicas) && r.Replicas != s.Result && r.Timestamp.After(last.Timestamp) && (next == nil || beyondOf(r.Replicas, next.Replicas, dir) || r.Replicas == next.Replicas && r.Timestamp.After(next.Timestamp)) {
			next = &s.Considered[i]
		}
	}
	left := max(last.Timestamp.Add(window).Sub(now), 0).Round(time.Second)
	then := fmt.Sprintf("if no recommendation %s %d comes meanwhile", beyond, s.Recommendation)
	if next != nil {
		then = fmt.Sprintf("then the recommendation of %d made %s ago holds until it leaves too", next.Replicas, now.Sub(next.Timestamp).Round(time.Second))
	}
	return fmt.Sprintf("stabilization window: the recommendation of %d made %s ago holds the count until it leaves the %s %s window, in %s (%s); the window counts recommendations, not the time since the last scale",
		last.Replicas, now.Sub(last.Timestamp).Round(time.Second), window, dir, left, then)
}

// beyondOf reports whether recommendation a holds a count further from the proposal than
// b does in direction dir (higher for scaleDown, lower for scaleUp).
func beyondOf(a, b int32, dir string) bool {
	if dir == "scaleUp" {
		return a < b
	}
	return a > b
}
