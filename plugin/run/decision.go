package run

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// How one decision of the loop reads: as one line, or as an Explanation. simulate
// --from-recording prints the decisions it replays with these, as run printed them.

// ExplanationOf is the Explanation (same schema as explain -o json) of one reconcile, with
// what run did on top: a write failure in decision.error and dry-run in warnings.
func ExplanationOf(rep controller.Report, metricsSource string) *output.Explanation {
	e := output.Build(output.Facts{
		Input:         rep.Input,
		Decision:      rep.Decision,
		MetricsSource: metricsSource,
		HistorySource: output.HistoryController,
		HistoryNote:   "the history kept in memory by this kubectl hpa run since it started",
	})
	if e.Decision != nil && rep.Err != nil {
		e.Decision.Error = rep.Err.Error()
	}
	if rep.DryRunReason != "" {
		e.Warnings = append(e.Warnings, output.Warning{Reason: "DryRun", Message: "this decision was not applied: " + rep.DryRunReason})
	}
	return e
}

// DecisionLine is one reconcile as one line:
// TIME NAMESPACE/NAME CURRENT->DESIRED METRICS ACTION: REASON [error] [dry run].
func DecisionLine(rep controller.Report) string {
	d := rep.Decision
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s %s", rep.Input.Now.UTC().Format(time.RFC3339), rep.Key,
		replicaCounts(d, "->"), metricsSummary(rep), actionOf(rep))
	if rep.Err != nil {
		fmt.Fprintf(&b, " error=%q", rep.Err.Error())
	}
	if rep.DryRunReason != "" {
		fmt.Fprintf(&b, " (not written: %s)", rep.DryRunReason)
	}
	return b.String()
}

// actionOf says what the decision was and why.
func actionOf(rep controller.Report) string {
	d := rep.Decision
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
	return "hold: recommended size matches current size"
}

func firstFailedCondition(d replicas.Decision) string {
	for _, c := range slices.Backward(d.Conditions) {
		if c.Status == "False" {
			return c.Reason
		}
	}
	return "metrics unavailable"
}

// metricsSummary is "cpu=142%/50%,qps=12/10" in spec order.
func metricsSummary(rep controller.Report) string {
	hpa := rep.Input.HPA
	if hpa == nil || len(hpa.Spec.Metrics) == 0 {
		return "-"
	}
	parts := make([]string, len(hpa.Spec.Metrics))
	for i, spec := range hpa.Spec.Metrics {
		cur := "<unknown>"
		if i < len(rep.Decision.Metrics) {
			cur = output.FormatCurrent(spec, rep.Decision.Metrics[i])
		}
		parts[i] = output.ShortName(spec) + "=" + strings.ReplaceAll(cur+"/"+output.FormatTarget(output.TargetOf(spec)), " ", "")
	}
	return strings.Join(parts, ",")
}

// replicaCounts is "current<arrow>desired", or "?" when the target's scale was not read.
func replicaCounts(d replicas.Decision, arrow string) string {
	if d.Phase == replicas.PhaseScaleFailed {
		return "?" + arrow + "?"
	}
	return fmt.Sprintf("%d%s%d", d.CurrentReplicas, arrow, d.DesiredReplicas)
}

func targetOf(hpa *autoscalingv2.HorizontalPodAutoscaler) string {
	if hpa == nil {
		return ""
	}
	return hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
}
