package list

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/lint"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// Severity orders findings: the worst first.
type Severity int

// Severities, from the worst.
const (
	SeverityError Severity = iota
	SeverityWarning
	SeverityInfo
)

func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	}
	return "info"
}

// Finding is one problem of an HPA, as the PROBLEMS column shows it (its ID) and -o wide
// (with its message).
type Finding struct {
	ID       string
	Severity Severity
	Message  string
}

// IDs of the findings list makes from an evaluation.
const (
	// FindingNotEvaluated: the HPA could not be evaluated (its target's scale unreadable,
	// the HPA named but not found).
	FindingNotEvaluated = "NotEvaluated"
	// FindingBlind: no metric could be used, so the controller scales nothing.
	FindingBlind = "Blind"
	// FindingMetricFailing: a metric failed while others were used (a failing metric blocks
	// a scale-down).
	FindingMetricFailing = "MetricFailing"
	// FindingCannotCompute: the metrics were read but give no count (ScalingActive=False).
	FindingCannotCompute = "CannotCompute"
	// FindingAmbiguousSelector: other HPAs select some of the same pods, so upstream's
	// controller scales none of them (its AmbiguousSelector condition).
	FindingAmbiguousSelector = "AmbiguousSelector"
	// FindingCappedAtMax: the metrics want more than maxReplicas.
	FindingCappedAtMax = "CappedAtMax"
	// FindingDisagrees: the decision now differs from status.desiredReplicas, which the
	// cluster's controller last wrote.
	FindingDisagrees = "DisagreesWithCluster"
)

// findingsOf are the problems the evaluation itself shows, worst first.
func findingsOf(in replicas.Input, d replicas.Decision, e *output.Explanation) []Finding {
	var out []Finding
	if in.ScaleErr != nil {
		out = append(out, Finding{FindingNotEvaluated, SeverityError, "the target's scale cannot be read: " + in.ScaleErr.Error()})
	}
	// unread are the metrics that could not be read; a metric read whose values give no count
	// (a pod without the request a Utilization target divides by, an invalid spec) is not.
	var failing, unread []string
	for i, m := range d.Metrics {
		if m.Err != nil && i < len(in.HPA.Spec.Metrics) {
			msg := fmt.Sprintf("%s: %v", output.ShortName(in.HPA.Spec.Metrics[i]), m.Err)
			failing = append(failing, msg)
			var reqErr *replicas.RequestError
			var specErr *replicas.SpecError
			if !errors.As(m.Err, &reqErr) && !errors.As(m.Err, &specErr) {
				unread = append(unread, msg)
			}
		}
	}
	switch {
	case len(in.OtherHPAsSelectingPods) > 0:
		out = append(out, Finding{FindingAmbiguousSelector, SeverityError, fmt.Sprintf(
			"its pods are also selected by %s, so the controller scales none of them: give each workload's pods labels only its own HPA's target selects",
			strings.Join(in.OtherHPAsSelectingPods, ", "))})
	case d.Phase == replicas.PhaseMetricsFailed && len(unread) > 0:
		out = append(out, Finding{FindingBlind, SeverityError, "no metric can be used, so nothing would be scaled: " + strings.Join(unread, "; ")})
	case d.Phase == replicas.PhaseMetricsFailed:
		out = append(out, Finding{FindingCannotCompute, SeverityError, cannotCompute(d)})
	case len(failing) > 0:
		out = append(out, Finding{FindingMetricFailing, SeverityWarning, "a metric fails (it blocks a scale-down): " + strings.Join(failing, "; ")})
	}
	if replicas.ConstraintOf(d) == replicas.ConstraintMaxReplicas && d.DesiredReplicas == d.MaxReplicas {
		out = append(out, Finding{FindingCappedAtMax, SeverityWarning, fmt.Sprintf("the metrics ask for more than maxReplicas %d", d.MaxReplicas)})
	}
	if c := e.Cluster; c != nil && c.Comparable && !c.Agrees {
		out = append(out, Finding{FindingDisagrees, SeverityWarning, c.Note})
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return cmp.Compare(a.Severity, b.Severity) })
	return out
}

// lintOptions are the lint rules' settings: the cluster's controller configuration, objects
// read from a cluster (Manifests false), and the APIs it serves (HPA017; not checked when
// discovery knew nothing).
func (o *Options) lintOptions(served map[string]bool) lint.Options {
	opts := lint.DefaultOptions()
	if len(served) > 0 {
		opts.ServedAPIs = served
	}
	opts.Tolerance = o.Config.Tolerance
	opts.DownscaleStabilizationWindow = o.Config.DownscaleStabilizationWindow
	opts.PodLevelResources = o.Config.PodLevelResources
	return opts
}

// lintFindings are the lint rules' findings by HPA name, as list's (ID and message).
func lintFindings(found []lint.Finding) map[string][]Finding {
	out := map[string][]Finding{}
	for _, f := range found {
		sev := SeverityInfo
		switch f.Severity {
		case lint.SeverityError:
			sev = SeverityError
		case lint.SeverityWarning:
			sev = SeverityWarning
		}
		out[f.HPA.Name] = append(out[f.HPA.Name], Finding{ID: f.ID, Severity: sev, Message: f.Message})
	}
	return out
}

// merged are list's own findings and the lint rules', worst first, list's first among equals.
func merged(own, linted []Finding) []Finding {
	out := append(slices.Clone(own), linted...)
	slices.SortStableFunc(out, func(a, b Finding) int { return cmp.Compare(a.Severity, b.Severity) })
	return out
}

// cannotCompute is why the metrics read give no count: the ScalingActive=False condition.
func cannotCompute(d replicas.Decision) string {
	for _, c := range d.Conditions {
		if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("no replica count can be computed (ScalingActive=False, %s): %s", c.Reason, c.Message)
		}
	}
	if d.Err != nil {
		return "no replica count can be computed: " + d.Err.Error()
	}
	return "no replica count can be computed"
}

// worst is the severity of the worst finding (SeverityInfo+1 without any), for sorting.
func worst(fs []Finding) Severity {
	if len(fs) == 0 {
		return SeverityInfo + 1
	}
	return fs[0].Severity
}
