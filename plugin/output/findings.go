package output

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/lint"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Finding is one problem of an HPA: one its decision shows (Blind, CappedAtMax, ...) or one
// of kubectl hpa lint's rules (HPA001, ...). list shows their IDs in PROBLEMS, explain prints
// them, and both carry them in Explanation.Findings, worst first.
type Finding struct {
	ID       string        `json:"id"`
	Severity lint.Severity `json:"severity"`
	// Object is the object whose field Path names when it is not the HPA (its workload, a
	// PodDisruptionBudget, another HPA, ...).
	Object *lint.ObjectRef `json:"object,omitempty"`
	// Path is the field path (spec.minReplicas); empty for the object as a whole.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Why it matters and the fix, for a lint rule's finding.
	Why string `json:"why,omitempty"`
	Fix string `json:"fix,omitempty"`
}

// IDs of the findings an evaluation shows.
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

// DecisionFindings are the problems the evaluation itself shows, worst first; e is the
// Explanation built from in and d (its Cluster section says whether the cluster agrees).
func DecisionFindings(in replicas.Input, d replicas.Decision, e *Explanation) []Finding {
	var out []Finding
	if in.ScaleErr != nil {
		out = append(out, Finding{ID: FindingNotEvaluated, Severity: lint.SeverityError, Message: "the target's scale cannot be read: " + in.ScaleErr.Error()})
	}
	// unread are the metrics that could not be read; a metric read whose values give no count
	// (a pod without the request a Utilization target divides by, an invalid spec) is not.
	var failing, unread []string
	for i, m := range d.Metrics {
		if m.Err != nil && i < len(in.HPA.Spec.Metrics) {
			msg := fmt.Sprintf("%s: %v", ShortName(in.HPA.Spec.Metrics[i]), m.Err)
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
		out = append(out, Finding{ID: FindingAmbiguousSelector, Severity: lint.SeverityError, Message: fmt.Sprintf(
			"its pods are also selected by %s, so the controller scales none of them: give each workload's pods labels only its own HPA's target selects",
			strings.Join(in.OtherHPAsSelectingPods, ", "))})
	case d.Phase == replicas.PhaseMetricsFailed && len(unread) > 0:
		out = append(out, Finding{ID: FindingBlind, Severity: lint.SeverityError, Message: "no metric can be used, so nothing would be scaled: " + strings.Join(unread, "; ")})
	case d.Phase == replicas.PhaseMetricsFailed:
		out = append(out, Finding{ID: FindingCannotCompute, Severity: lint.SeverityError, Message: cannotCompute(d)})
	case len(failing) > 0:
		out = append(out, Finding{ID: FindingMetricFailing, Severity: lint.SeverityWarning, Message: "a metric fails (it blocks a scale-down): " + strings.Join(failing, "; ")})
	}
	if replicas.ConstraintOf(d) == replicas.ConstraintMaxReplicas && d.DesiredReplicas == d.MaxReplicas {
		out = append(out, Finding{ID: FindingCappedAtMax, Severity: lint.SeverityWarning, Message: fmt.Sprintf("the metrics ask for more than maxReplicas %d", d.MaxReplicas)})
	}
	if c := e.Cluster; c != nil && c.Comparable && !c.Agrees {
		out = append(out, Finding{ID: FindingDisagrees, Severity: lint.SeverityWarning, Message: c.Note})
	}
	return MergeFindings(out, nil)
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

// LintFindings are the lint rules' findings on the HPA named name (of namespace), as
// Findings, in the rules' order (worst first).
func LintFindings(found []lint.Finding, namespace, name string) []Finding {
	var out []Finding
	for _, f := range found {
		if f.HPA.Namespace != namespace || f.HPA.Name != name {
			continue
		}
		out = append(out, FindingOfLint(f))
	}
	return out
}

// FindingOfLint is a lint rule's finding as a Finding.
func FindingOfLint(f lint.Finding) Finding {
	out := Finding{ID: f.ID, Severity: f.Severity, Path: f.Path, Message: f.Message, Why: f.Why, Fix: f.Fix}
	if f.Object != f.HPA {
		obj := f.Object
		out.Object = &obj
	}
	return out
}

// MergeFindings are the evaluation's findings and the lint rules', worst first, the
// evaluation's first among equals.
func MergeFindings(own, linted []Finding) []Finding {
	out := append(slices.Clone(own), linted...)
	slices.SortStableFunc(out, func(a, b Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	return out
}

// WriteFinding writes f as lint's text and explain's Findings show it: the severity, ID and
// where (source, when known, is where that is in the manifests), and beneath, the message and,
// for a lint rule's finding, why it matters and the fix.
func WriteFinding(w io.Writer, f Finding, source string) {
	at := f.Path
	if f.Object != nil {
		at = f.Object.Kind + " " + f.Object.Name + " " + f.Path
	}
	head := strings.TrimRight(fmt.Sprintf("  %-7s %s  %s", f.Severity, f.ID, strings.TrimSpace(at)), " ")
	if source != "" {
		head += "  (" + source + ")"
	}
	fmt.Fprintf(w, "%s\n          %s\n", head, f.Message)
	if f.Why != "" {
		fmt.Fprintf(w, "          why: %s\n", f.Why)
	}
	if f.Fix != "" {
		fmt.Fprintf(w, "          fix: %s\n", f.Fix)
	}
}
