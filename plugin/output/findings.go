package output

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// DecisionFindings are the problems the evaluation itself shows, worst first; e is the
// Explanation built from in and d (its Cluster section says whether the cluster agrees).
func DecisionFindings(in replicas.Input, d replicas.Decision, e *v1alpha1.Explanation) []v1alpha1.Finding {
	var out []v1alpha1.Finding
	if in.ScaleErr != nil {
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingNotEvaluated, Severity: rules.SeverityError, Message: "the target's scale cannot be read: " + in.ScaleErr.Error()})
	}
	// unread are the metrics that could not be read; a metric read whose values give no count
	// (a pod without the request a Utilization target divides by, an invalid spec) is not.
	// used says one metric gave a count: a failing metric then blocks its scale-down (the
	// phase MetricsFailed too), which is MetricFailing, not Blind nor CannotCompute.
	var failing, unread []string
	used := false
	for i, m := range d.Metrics {
		used = used || m.Err == nil
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
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingAmbiguousSelector, Severity: rules.SeverityError, Message: fmt.Sprintf(
			"its pods are also selected by %s, so the controller scales none of them: give each workload's pods labels only its own HPA's target selects",
			strings.Join(in.OtherHPAsSelectingPods, ", "))})
	case d.Phase == replicas.PhaseMetricsFailed && !used && len(unread) > 0:
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingBlind, Severity: rules.SeverityError, Message: "no metric can be used, so nothing would be scaled: " + strings.Join(unread, "; ")})
	case d.Phase == replicas.PhaseMetricsFailed && !used:
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingCannotCompute, Severity: rules.SeverityError, Message: cannotCompute(d)})
	case len(failing) > 0:
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingMetricFailing, Severity: rules.SeverityWarning, Message: "a metric fails (it blocks a scale-down): " + strings.Join(failing, "; ")})
	}
	if replicas.ConstraintOf(d) == replicas.ConstraintMaxReplicas && d.DesiredReplicas == d.MaxReplicas {
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingCappedAtMax, Severity: rules.SeverityWarning, Message: fmt.Sprintf("the metrics ask for more than maxReplicas %d", d.MaxReplicas)})
	}
	if f := disagreement(in, d, e); f != nil {
		out = append(out, *f)
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
func LintFindings(found []rules.Finding, namespace, name string) []v1alpha1.Finding {
	var out []v1alpha1.Finding
	for _, f := range found {
		if f.HPA.Namespace != namespace || f.HPA.Name != name {
			continue
		}
		out = append(out, FindingOfLint(f))
	}
	return out
}

// FindingOfLint is a lint rule's finding as a Finding.
func FindingOfLint(f rules.Finding) v1alpha1.Finding {
	out := v1alpha1.Finding{ID: f.ID, Severity: f.Severity, Path: f.Path, Message: f.Message, Why: f.Why, Fix: f.Fix}
	if f.Object != f.HPA {
		obj := f.Object
		out.Object = &obj
	}
	return out
}

// MergeFindings are the evaluation's findings and the lint rules', worst first, the
// evaluation's first among equals.
func MergeFindings(own, linted []v1alpha1.Finding) []v1alpha1.Finding {
	out := append(slices.Clone(own), linted...)
	slices.SortStableFunc(out, func(a, b v1alpha1.Finding) int { return b.Severity.Rank() - a.Severity.Rank() })
	return out
}

// WriteFinding writes f as lint's text and explain's Findings show it: the severity, ID and
// where (source, when known, is where that is in the manifests), and beneath, the message and,
// for a lint rule's finding, why it matters and the fix.
func WriteFinding(w io.Writer, f v1alpha1.Finding, source string) {
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

// Causes of a disagreement with the cluster's last decision (Cluster.Causes).
const (
	// CauseGenerationNotObserved: the cluster's controller has not seen the HPA's latest spec.
	CauseGenerationNotObserved = "GenerationNotObserved"
	// CauseAnotherWriter: more than one field manager writes the HPA's status.
	CauseAnotherWriter = "AnotherWriter"
	// CauseStaleMetrics: the controller last wrote status before the metrics decided from were
	// taken.
	CauseStaleMetrics = "StaleMetrics"
	// CauseInMemoryHistory: the count the controller wrote is one that recommendations or
	// rescales it holds in memory, which a reconstructed history does not see, could hold.
	CauseInMemoryHistory = "InMemoryHistory"
	// CauseUnknown: none of the above is supported by what was read.
	CauseUnknown = "Unknown"
)

// disagreement is the DisagreesWithCluster finding when the decision differs from the
// status.desiredReplicas the cluster's controller last wrote, with each cause what was read
// supports (also set in e.Cluster.Causes): an unobserved generation alone when it is one (the
// controller has not decided on this spec yet); else two status writers, status older than
// the metrics, a history it may hold differently; else "cause unknown". A fight is an error,
// the rest warnings.
func disagreement(in replicas.Input, d replicas.Decision, e *v1alpha1.Explanation) *v1alpha1.Finding {
	c := e.Cluster
	if c == nil || !c.Comparable || c.Agrees {
		return nil
	}
	hpa := in.HPA
	lead := fmt.Sprintf("the cluster's controller last decided %d, this decision is %d", c.DesiredReplicas, d.DesiredReplicas)
	if g := hpa.Status.ObservedGeneration; g != nil && *g < hpa.Generation {
		c.Causes = []string{CauseGenerationNotObserved}
		return &v1alpha1.Finding{ID: v1alpha1.FindingDisagrees, Severity: rules.SeverityWarning, Message: lead + ": " + c.Note}
	}
	now := e.Time.Time
	sev := rules.SeverityWarning
	var why []string
	if len(c.StatusWriters) > 1 {
		c.Causes = append(c.Causes, CauseAnotherWriter)
		why = append(why, fmt.Sprintf("%s write its status, so one overwrites the other's decision: leave one controller in charge", writersText(c.StatusWriters, now)))
		sev = rules.SeverityError
	}
	if written, sampled := lastStatusWrite(hpa, c.StatusWriters), newestSample(d); !written.IsZero() && written.Before(sampled) {
		c.Causes = append(c.Causes, CauseStaleMetrics)
		why = append(why, fmt.Sprintf("it has not written status since the metrics decided from were taken (its last write %s ago, the newest sample %s ago): it decided from older values",
			duration.HumanDuration(now.Sub(written)), duration.HumanDuration(now.Sub(sampled))))
	}
	if e.History != nil && e.History.Source != v1alpha1.HistoryRecorded && historyCouldHold(in, d, c.DesiredReplicas) {
		c.Causes = append(c.Causes, CauseInMemoryHistory)
		why = append(why, inMemoryCause(e.History, c.DesiredReplicas))
	}
	if len(why) == 0 {
		c.Causes = []string{CauseUnknown}
		why = []string{"cause unknown"}
	}
	return &v1alpha1.Finding{ID: v1alpha1.FindingDisagrees, Severity: sev, Message: lead + ": " + strings.Join(why, "; ")}
}

// writersText is "a (12s ago) and b (3m ago)".
func writersText(ws []v1alpha1.StatusWriter, now time.Time) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Manager
		if w.Time != nil {
			parts[i] += " (" + duration.HumanDuration(now.Sub(w.Time.Time)) + " ago)"
		}
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// lastStatusWrite is the latest time the HPA's status is known to have been written: a status
// writer's managedFields time, status.lastScaleTime or a condition's lastTransitionTime (each
// a sync of its controller's); zero when none is known.
func lastStatusWrite(hpa *autoscalingv2.HorizontalPodAutoscaler, writers []v1alpha1.StatusWriter) time.Time {
	var at time.Time
	later := func(t time.Time) {
		if t.After(at) {
			at = t
		}
	}
	for _, w := range writers {
		if w.Time != nil {
			later(w.Time.Time)
		}
	}
	if t := hpa.Status.LastScaleTime; t != nil {
		later(t.Time)
	}
	for _, cond := range hpa.Status.Conditions {
		later(cond.LastTransitionTime.Time)
	}
	return at
}

// newestSample is the newest timestamp of the metrics the decision used.
func newestSample(d replicas.Decision) time.Time {
	var at time.Time
	for _, m := range d.Metrics {
		if m.Err == nil && m.Timestamp.After(at) {
			at = m.Timestamp
		}
	}
	return at
}

// historyCouldHold says whether a history other than the one this evaluation decided from
// could make the core decide cluster from the same metrics: a history only holds a count back,
// so cluster must lie from the current count to what the metrics ask for (within min and max),
// in a direction where a stabilization window or a scaling policy's period remembers (without
// spec.behavior: only scale-down's window; the scale-up cap depends on the count alone).
// inMemoryCause says which part of the controller's memory the evidence leaves open, and could
// keep the count at cluster.
func inMemoryCause(h *v1alpha1.History, cluster int32) string {
	m := h.Memory
	if m == nil {
		return fmt.Sprintf("the history here is %s, and recommendations or rescales the controller holds in memory could keep it at %d", h.Source, cluster)
	}
	var open []string
	if m.LeaderError != "" {
		open = append(open, "when it last started (its leader Lease could not be read), whose first sync seeded every HPA")
	}
	for _, r := range m.Rescales {
		if r.FromEvidence == "" {
			open = append(open, fmt.Sprintf("the size its rescale to %d at %s came from (counted as one pod)", r.To, r.Time.UTC().Format(time.RFC3339)))
			break
		}
	}
	open = append(open, "the recommendations it made between rescales, which nothing in the cluster keeps")
	since := ""
	if m.StartEvidence != "" {
		since = " since " + m.StartEvidence
	}
	return fmt.Sprintf("the controller's memory%s is inferred from the cluster's evidence, which leaves open %s: those could keep it at %d", since, strings.Join(open, "; "), cluster)
}

func historyCouldHold(in replicas.Input, d replicas.Decision, cluster int32) bool {
	st := d.Stabilization
	if st == nil {
		return false
	}
	cur, asked := d.CurrentReplicas, min(max(st.Recommendation, d.MinReplicas), d.MaxReplicas)
	if asked == cur || cluster < min(cur, asked) || cluster > max(cur, asked) {
		return false
	}
	up := asked > cur
	if in.HPA.Spec.Behavior == nil {
		return !up && in.Config.DownscaleStabilizationWindow > 0
	}
	b := replicas.EffectiveBehavior(in.HPA, in.Config)
	rules := b.ScaleDown
	if up {
		rules = b.ScaleUp
	}
	if rules.StabilizationWindowSeconds != nil && *rules.StabilizationWindowSeconds > 0 {
		return true
	}
	return slices.ContainsFunc(rules.Policies, func(p autoscalingv2.HPAScalingPolicy) bool { return p.PeriodSeconds > 0 })
}
