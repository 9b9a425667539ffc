package list

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

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
	if f := disagreement(in, d, e); f != nil {
		out = append(out, *f)
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return cmp.Compare(a.Severity, b.Severity) })
	return out
}

// Causes of a disagreement with the cluster's last decision (output.Cluster.Causes).
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
func disagreement(in replicas.Input, d replicas.Decision, e *output.Explanation) *Finding {
	c := e.Cluster
	if c == nil || !c.Comparable || c.Agrees {
		return nil
	}
	hpa := in.HPA
	lead := fmt.Sprintf("the cluster's controller last decided %d, this decision is %d", c.DesiredReplicas, d.DesiredReplicas)
	if g := hpa.Status.ObservedGeneration; g != nil && *g < hpa.Generation {
		c.Causes = []string{CauseGenerationNotObserved}
		return &Finding{FindingDisagrees, SeverityWarning, lead + ": " + c.Note}
	}
	now := e.Time.Time
	sev := SeverityWarning
	var why []string
	if len(c.StatusWriters) > 1 {
		c.Causes = append(c.Causes, CauseAnotherWriter)
		why = append(why, fmt.Sprintf("%s write its status, so one overwrites the other's decision: leave one controller in charge", writersText(c.StatusWriters, now)))
		sev = SeverityError
	}
	if written, sampled := lastStatusWrite(hpa, c.StatusWriters), newestSample(d); !written.IsZero() && written.Before(sampled) {
		c.Causes = append(c.Causes, CauseStaleMetrics)
		why = append(why, fmt.Sprintf("it has not written status since the metrics decided from were taken (its last write %s ago, the newest sample %s ago): it decided from older values",
			duration.HumanDuration(now.Sub(written)), duration.HumanDuration(now.Sub(sampled))))
	}
	if e.History != nil && e.History.Source != output.HistoryRecorded && historyCouldHold(in, d, c.DesiredReplicas) {
		c.Causes = append(c.Causes, CauseInMemoryHistory)
		why = append(why, fmt.Sprintf("the history here is %s, and recommendations or rescales the controller holds in memory could keep it at %d", e.History.Source, c.DesiredReplicas))
	}
	if len(why) == 0 {
		c.Causes = []string{CauseUnknown}
		why = []string{"cause unknown"}
	}
	return &Finding{FindingDisagrees, sev, lead + ": " + strings.Join(why, "; ")}
}

// writersText is "a (12s ago) and b (3m ago)".
func writersText(ws []output.StatusWriter, now time.Time) string {
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
func lastStatusWrite(hpa *autoscalingv2.HorizontalPodAutoscaler, writers []output.StatusWriter) time.Time {
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
