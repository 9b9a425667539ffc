package timeline

import (
	"fmt"
	"math"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// Flapping's thresholds. A rescale costs pods started or stopped and caches warmed for
// nothing when the next one undoes it: more than flapPerHour rescales within any hour (one
// every 10 minutes, twice upstream's default 5-minute scale-down window), or a rescale that
// reverses the previous one's direction within flapReversal, is flapping.
const (
	flapPerHour  = 6
	flapReversal = 10 * time.Minute
)

// findings judges the period [from, to] from every sync known (not only those shown), each
// sync's state lasting until the next one; metricsKnown is false when the source carries no
// metric (events), which leaves Blind and AboveTarget unknown.
func findings(syncs []v1alpha1.TimelineSync, rescales []v1alpha1.TimelineRescale, from, to time.Time, maxReplicas int32, metricsKnown bool) []v1alpha1.TimelineFinding {
	period := to.Sub(from)
	var capped, blind, above time.Duration
	for i, s := range syncs {
		end := to
		if i+1 < len(syncs) {
			end = syncs[i+1].Time.Time
		}
		d := max(0, end.Sub(s.Time.Time))
		if cappedAtMax(s, maxReplicas, metricsKnown) {
			capped += d
		}
		if isBlind(s) {
			blind += d
		}
		if aboveTarget(s) {
			above += d
		}
	}
	out := []v1alpha1.TimelineFinding{flapping(rescales)}
	share := func(d time.Duration) float64 {
		if period <= 0 {
			return 0
		}
		return math.Round(d.Seconds()/period.Seconds()*1000) / 10
	}
	timed := func(typ string, d time.Duration, what string) v1alpha1.TimelineFinding {
		f := v1alpha1.TimelineFinding{Type: typ, Found: d > 0, Seconds: d.Seconds(), Percent: share(d)}
		if d > 0 {
			f.Message = fmt.Sprintf("%s (%.1f%% of the period) %s", d.Round(time.Second), f.Percent, what)
		} else {
			f.Message = "never " + what
		}
		return f
	}
	if metricsKnown {
		out = append(out, timed(v1alpha1.FindingCappedAtMax, capped, fmt.Sprintf("held at maxReplicas %d while the metrics asked for more", maxReplicas)))
	} else {
		f := timed(v1alpha1.FindingCappedAtMax, capped, fmt.Sprintf("at maxReplicas %d (events do not say whether the metrics asked for more)", maxReplicas))
		out = append(out, f)
	}
	if !metricsKnown {
		out = append(out,
			v1alpha1.TimelineFinding{Type: v1alpha1.FindingBlind, Unknown: true, Message: "unknown: events carry no metric (--prometheus-url replays them)"},
			v1alpha1.TimelineFinding{Type: v1alpha1.FindingAboveTarget, Unknown: true, Message: "unknown: events carry no metric (--prometheus-url replays them)"})
		return out
	}
	return append(out,
		timed(v1alpha1.FindingBlind, blind, "blind: a metric could not be read, so the controller could not scale on it"),
		timed(v1alpha1.FindingAboveTarget, above, "above target: a metric over 100% of its target"))
}

// flapping counts the rescales in the busiest hour and the reversals.
func flapping(rescales []v1alpha1.TimelineRescale) v1alpha1.TimelineFinding {
	busiest, busiestAt := 0, time.Time{}
	reversals := 0
	for i, r := range rescales {
		n := 0
		for _, o := range rescales[i:] {
			if o.Time.Sub(r.Time.Time) >= time.Hour {
				break
			}
			n++
		}
		if n > busiest {
			busiest, busiestAt = n, r.Time.Time
		}
		if i > 0 {
			prev := rescales[i-1]
			if r.Direction != prev.Direction && r.Time.Sub(prev.Time.Time) <= flapReversal {
				reversals++
			}
		}
	}
	f := v1alpha1.TimelineFinding{Type: v1alpha1.FindingFlapping, Count: reversals, Found: busiest > flapPerHour || reversals > 0}
	rule := fmt.Sprintf("flapping is more than %d rescales within an hour, or a rescale undoing the previous one within %s", flapPerHour, flapReversal)
	switch {
	case len(rescales) == 0:
		f.Message = "no rescale; " + rule
	default:
		f.Message = fmt.Sprintf("%d rescale(s), at most %d within an hour (from %s), %d reversal(s) within %s; %s",
			len(rescales), busiest, busiestAt.UTC().Format("15:04:05"), reversals, flapReversal, rule)
	}
	return f
}

func cappedAtMax(s v1alpha1.TimelineSync, maxReplicas int32, metricsKnown bool) bool {
	if !metricsKnown {
		return s.Desired == maxReplicas
	}
	if s.Constraint == string(replicas.ConstraintMaxReplicas) && s.Desired == maxReplicas {
		return true
	}
	return s.Recommendation != nil && *s.Recommendation > maxReplicas && s.Desired == maxReplicas
}

func isBlind(s v1alpha1.TimelineSync) bool {
	if s.Constraint == string(replicas.ConstraintMetricsUnavailable) {
		return true
	}
	for _, m := range s.Metrics {
		if m.Error != "" {
			return true
		}
	}
	return false
}

func aboveTarget(s v1alpha1.TimelineSync) bool {
	for _, m := range s.Metrics {
		if m.PercentOfTarget != nil && *m.PercentOfTarget > 100 {
			return true
		}
	}
	return false
}
