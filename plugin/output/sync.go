package output

import (
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
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
func (s Sync) Explanation(metricsSource string) *Explanation {
	e := Build(Facts{
		Input:         s.Input,
		Decision:      s.Decision,
		MetricsSource: metricsSource,
		HistorySource: HistoryController,
		HistoryNote:   "the history kept in memory by this kubectl hpa run since it started",
	})
	if e.Decision != nil && s.Err != nil {
		e.Decision.Error = s.Err.Error()
	}
	if s.DryRunReason != "" {
		e.Warnings = append(e.Warnings, Warning{Reason: "DryRun", Message: "this decision was not applied: " + s.DryRunReason})
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
