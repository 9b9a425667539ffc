package output

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// Sync is one decision of the loop as run prints it. run fills it from the controller's
// report of a reconcile; simulate --from-recording from a re-run's step, so that a recording's
// decisions print as run printed them.
type Sync struct {
	Key      string
	Input    replicas.Input
	Decision replicas.Decision
	// DryRunReason is empty when the loop wrote; otherwise why it did not.
	DryRunReason string
	// Err is the reconcile's error (the core's, a failed write's).
	Err error
}

// Explanation is the Explanation (same schema as explain -o json) of the sync, with what run
// did on top: a write failure in decision.error and dry-run in warnings.
func (s Sync) Explanation(metricsSource string) *v1alpha1.Explanation {
	e := Build(Facts{
		Input:         s.Input,
		Decision:      s.Decision,
		MetricsSource: metricsSource,
		HistorySource: v1alpha1.HistoryController,
		HistoryNote:   "the history kept in memory by this kubectl hpa run since it started",
	})
	if e.Decision != nil && s.Err != nil {
		e.Decision.Error = s.Err.Error()
	}
	if s.DryRunReason != "" {
		e.Warnings = append(e.Warnings, v1alpha1.Warning{Reason: "DryRun", Message: "this decision was not applied: " + s.DryRunReason})
	}
	return e
}

// Line is the sync as one line:
// TIME NAMESPACE/NAME CURRENT->DESIRED METRICS ACTION: REASON [error] [dry run].
func (s Sync) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s %s", s.Input.Now.UTC().Format(time.RFC3339), s.Key,
		ReplicaCounts(s.Decision, "->"), s.Metrics(), s.Action())
	if s.Err != nil {
		fmt.Fprintf(&b, " error=%q", s.Err.Error())
	}
	if s.DryRunReason != "" {
		fmt.Fprintf(&b, " (not written: %s)", s.DryRunReason)
	}
	return b.String()
}

// Action says what the decision was and why.
func (s Sync) Action() string {
	d := s.Decision
	switch {
	case d.Phase == replicas.PhaseScaleFailed:
		return "no-scale: target scale unreadable"
	case d.Phase == replicas.PhaseDisabled:
		return "no-scale: scaling disabled (target at 0 replicas)"
	case d.Phase == replicas.PhaseMetricsFailed:
		return "no-scale: " + firstFailedCondition(d)
	case d.Rescale && d.DesiredReplicas > d.CurrentReplicas:
		return "scale-up: " + d.Reason
	case d.Rescale:
		return "scale-down: " + d.Reason
	}
	if d.Stabilization != nil && d.Stabilization.Reason != "" && d.Stabilization.Reason != "ReadyForNewScale" {
		return "hold: " + d.Stabilization.Reason
	}
	if d.Limit != nil && d.Limit.Limited {
		return "hold: " + d.Limit.Reason
	}
	if h := s.rebalancedHold(); h != "" {
		return "hold: " + h
	}
	return "hold: recommended size matches current size"
}

// rebalancedHold says why the count stays when a pod metric would move it on the pods it
// measured, but upstream's second pass, which counts in the pods not yet ready or measured,
// brings it back to the current count; "" when that is not what holds it. Without this, the
// line shows a metric far from its target beside "recommended size matches current size".
// A scale-up held so on one metric holds the count (the highest proposal wins); a scale-down
// only when no other metric proposes the current count by itself.
func (s Sync) rebalancedHold() string {
	d := s.Decision
	if d.Phase != replicas.PhaseComputed || d.Rescale || s.Input.HPA == nil {
		return ""
	}
	up, down := -1, -1
	// above: a metric proposes more than the current count, so something else holds it;
	// plain: a metric proposes the current count without any pod counted in.
	above, plain := false, false
	for i, m := range d.Metrics {
		switch {
		case m.Err != nil || m.Replicas < d.CurrentReplicas:
		case m.Replicas > d.CurrentReplicas:
			above = true
		case m.RebalancedRatio == m.Ratio || d.Tolerances.Within(m.Ratio):
			plain = true
		case m.Ratio > 1 && up < 0:
			up = i
		case m.Ratio < 1 && down < 0:
			down = i
		}
	}
	i := up
	if i < 0 && !plain {
		i = down
	}
	if i < 0 || above || i >= len(s.Input.HPA.Spec.Metrics) {
		return ""
	}
	m, spec := d.Metrics[i], s.Input.HPA.Spec.Metrics[i]
	pods := "pods"
	if m.ReadyPods == 1 {
		pods = "pod"
	}
	measured := fmt.Sprintf("%s %s on the %d ready %s measured", ShortName(spec), strings.TrimSuffix(FormatCurrent(spec, m), " (avg)"), m.ReadyPods, pods)
	if i == up {
		return measured + ", but pods unready or not yet measured are counted as 0 on a scale-up"
	}
	// On a scale-down upstream fills a pod without a sample at max(100, target)% of its
	// request for a utilization target, at the target for the others; unready pods stay out.
	fill := "at the target"
	if u := TargetOf(spec).AverageUtilization; u != nil {
		fill = fmt.Sprintf("as %d%% of request", max(100, *u))
	}
	return measured + ", but pods not yet measured are counted " + fill + " on a scale-down"
}

func firstFailedCondition(d replicas.Decision) string {
	for _, c := range slices.Backward(d.Conditions) {
		if c.Status == "False" {
			return c.Reason
		}
	}
	return "metrics unavailable"
}

// Metrics is "cpu=142%/50%,qps=12/10" in spec order.
func (s Sync) Metrics() string {
	hpa := s.Input.HPA
	if hpa == nil || len(hpa.Spec.Metrics) == 0 {
		return "-"
	}
	parts := make([]string, len(hpa.Spec.Metrics))
	for i, spec := range hpa.Spec.Metrics {
		cur := "<unknown>"
		if i < len(s.Decision.Metrics) {
			cur = FormatCurrent(spec, s.Decision.Metrics[i])
		}
		parts[i] = ShortName(spec) + "=" + strings.ReplaceAll(cur+"/"+FormatTarget(TargetOf(spec)), " ", "")
	}
	return strings.Join(parts, ",")
}

// ReplicaCounts is "current<arrow>desired", or "?" when the target's scale was not read.
func ReplicaCounts(d replicas.Decision, arrow string) string {
	if d.Phase == replicas.PhaseScaleFailed {
		return "?" + arrow + "?"
	}
	return fmt.Sprintf("%d%s%d", d.CurrentReplicas, arrow, d.DesiredReplicas)
}

// ScaleTarget is the HPA's "Kind/name".
func ScaleTarget(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	if hpa == nil {
		return ""
	}
	return hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
}
