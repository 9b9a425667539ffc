package explain

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// TextPrinter renders Explanations describe-style. It implements cli-runtime's
// printers.ResourcePrinter so commands treat it like the JSON and YAML printers.
type TextPrinter struct{}

// PrintObj renders obj, which must be an *Explanation.
func (TextPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	e, ok := obj.(*v1alpha1.Explanation)
	if !ok {
		return fmt.Errorf("the text printer renders %s objects, not %T", v1alpha1.KindExplanation, obj)
	}
	return RenderText(w, e)
}

// RenderText writes e for people: the verdict and its binding constraint first, then aligned
// sections, tables for metrics and pods, the arithmetic, the cluster's own view and the
// history used.
func RenderText(w io.Writer, e *v1alpha1.Explanation) error {
	var b bytes.Buffer
	r := &textRenderer{b: &b, now: e.Time.Time}
	r.render(e)
	_, err := w.Write(b.Bytes())
	return err
}

type textRenderer struct {
	b   *bytes.Buffer
	now time.Time
}

// kv prints an aligned "Key:  value" line at the given indent.
func (r *textRenderer) kv(indent int, key, format string, args ...any) {
	k := strings.Repeat("  ", indent) + key + ":"
	fmt.Fprintf(r.b, "%-22s %s\n", k, fmt.Sprintf(format, args...))
}

func (r *textRenderer) line(indent int, format string, args ...any) {
	fmt.Fprintf(r.b, "%s%s\n", strings.Repeat("  ", indent), fmt.Sprintf(format, args...))
}

// table is Table in the renderer's indentation, without the spaces that pad a line's last cell.
func (r *textRenderer) table(indent int, header string, rows [][]string) {
	var tb bytes.Buffer
	output.Table(&tb, "", header, rows)
	for _, l := range strings.Split(strings.TrimRight(tb.String(), "\n"), "\n") {
		r.line(indent, "%s", strings.TrimRight(l, " "))
	}
}

func (r *textRenderer) ago(t time.Time) string {
	if t.IsZero() {
		return "<never>"
	}
	if t.After(r.now) {
		return "in " + duration.HumanDuration(t.Sub(r.now))
	}
	return duration.HumanDuration(r.now.Sub(t)) + " ago"
}

// render leads with what a reader looks for first (which HPA, its target, the verdict and what
// binds it, and anything that makes the verdict surprising), then the details it came from.
func (r *textRenderer) render(e *v1alpha1.Explanation) {
	r.kv(0, "Name", "%s", e.Metadata.Name)
	r.kv(0, "Namespace", "%s", e.Metadata.Namespace)
	if e.Error != nil {
		r.kv(0, "Explained at", "%s", e.Time.UTC().Format(time.RFC3339))
		r.kv(0, "Error", "%s (exit code %d, %s)", e.Error.Message, e.Error.ExitCode, e.Error.Reason)
	}
	if e.Target == nil {
		return
	}
	t := e.Target
	r.kv(0, "Target", "%s/%s (%s)", t.Kind, t.Name, t.APIVersion)
	if v := e.Verdict; v != nil {
		r.kv(0, "Verdict", "%s", v.Sentence)
		r.kv(1, "Binding constraint", "%s", v.Constraint)
		for _, d := range v.Details {
			r.line(1, "%s", d)
		}
	}
	if len(e.WhatIf) > 0 {
		r.line(0, "What-if (inputs changed here only; the cluster was not touched):")
		for _, wi := range e.WhatIf {
			was := ""
			if wi.Was != "" {
				was = " (was " + wi.Was + ")"
			}
			r.line(1, "--%s %s=%s%s", wi.Flag, wi.Metric, wi.Value, was)
		}
	}
	if len(e.Warnings) > 0 {
		r.line(0, "Warnings:")
		for _, w := range e.Warnings {
			r.line(1, "%s: %s", w.Reason, w.Message)
		}
	}
	if k := e.KEDA; k != nil {
		r.renderKEDA(k)
	}
	if len(e.Findings) > 0 {
		r.line(0, "Findings (this decision's problems and kubectl hpa lint's rules, worst first):")
		for _, f := range e.Findings {
			output.WriteFinding(r.b, f, "")
		}
	}

	r.line(0, "")
	if e.Error == nil {
		r.kv(0, "Explained at", "%s", e.Time.UTC().Format(time.RFC3339))
	}
	if t.Error != "" {
		r.kv(0, "Scale", "<unreadable>: %s", t.Error)
	} else if t.SpecReplicas != nil {
		sel := t.Selector
		if sel == "" {
			sel = "<none>"
		}
		r.kv(0, "Scale", "spec %d, status %d replicas; selector %s", *t.SpecReplicas, *t.StatusReplicas, sel)
	}
	if e.Replicas != nil {
		r.kv(0, "Min/Max replicas", "%d / %d", e.Replicas.Min, e.Replicas.Max)
	}
	if tol := e.Tolerance; tol != nil {
		r.kv(0, "Tolerance", "scale-up +%s (%s), scale-down -%s (%s)", output.Percent(tol.ScaleUp.Value), tol.ScaleUp.Source, output.Percent(tol.ScaleDown.Value), tol.ScaleDown.Source)
	}
	r.renderBehavior(e)
	if e.MetricsSource != "" {
		r.kv(0, "Metrics source", "%s", e.MetricsSource)
	}
	r.renderMetrics(e)
	r.renderArithmetic(e)
	r.renderDecision(e)
	r.renderCluster(e)
	r.renderHistory(e)
	if len(e.Trace) > 0 {
		r.line(0, "")
		r.line(0, "Trace:")
		for _, s := range e.Trace {
			r.line(1, "[%s] %s", s.Stage, s.Text)
		}
	}
}

func formatRules(rules *autoscalingv2.HPAScalingRules) string {
	var parts []string
	if rules.StabilizationWindowSeconds != nil {
		parts = append(parts, fmt.Sprintf("stabilization window %ds", *rules.StabilizationWindowSeconds))
	}
	if rules.SelectPolicy != nil {
		parts = append(parts, "select "+string(*rules.SelectPolicy))
	}
	var ps []string
	for _, p := range rules.Policies {
		unit := ""
		if p.Type == autoscalingv2.PercentScalingPolicy {
			unit = "%"
		}
		ps = append(ps, fmt.Sprintf("%s=%d%s per %ds", p.Type, p.Value, unit, p.PeriodSeconds))
	}
	if len(ps) > 0 {
		parts = append(parts, "policies "+strings.Join(ps, ", "))
	}
	if rules.Tolerance != nil {
		parts = append(parts, "tolerance "+rules.Tolerance.String())
	}
	return strings.Join(parts, "; ")
}

func (r *textRenderer) renderBehavior(e *v1alpha1.Explanation) {
	b := e.Behavior
	if b == nil {
		return
	}
	if b.Legacy {
		r.kv(0, "Behavior", "none (legacy rules): scale-down stabilized over the cluster window, scale-up capped at max(2x current, 4) per sync")
		return
	}
	r.kv(0, "Behavior", "(API defaults filled in)")
	r.kv(1, "scaleUp", "%s", formatRules(b.ScaleUp))
	r.kv(1, "scaleDown", "%s", formatRules(b.ScaleDown))
	if len(b.Defaulted) > 0 {
		r.kv(1, "defaulted", "%s", strings.Join(b.Defaulted, ", "))
	}
}

func optInt32(p *int32) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func optRatio(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}

func isBinary(m v1alpha1.Metric) bool { return strings.HasPrefix(m.Short, "memory") }

func (r *textRenderer) renderMetrics(e *v1alpha1.Explanation) {
	if len(e.Metrics) == 0 {
		return
	}
	r.line(0, "")
	r.line(0, "Metrics:")
	var rows [][]string
	for _, m := range e.Metrics {
		tol := "-"
		if m.Ratio != nil {
			tol = "outside"
			if m.WithinTolerance {
				tol = "within"
			}
		}
		ratio := optRatio(m.Ratio)
		if m.RebalancedRatio != nil {
			ratio += " -> " + optRatio(m.RebalancedRatio)
		}
		note := ""
		switch {
		case !m.Computed:
			note = "not computed on this path"
		case m.Error != "":
			note = "error: " + m.Error
		case m.Chosen:
			note = "sets the count"
		}
		rows = append(rows, []string{fmt.Sprint(m.Index), m.Short, string(m.Type), m.Target, m.Current, ratio, tol, optInt32(m.Proposal), note})
	}
	r.table(1, "#\tMETRIC\tTYPE\tTARGET\tCURRENT\tRATIO\tTOLERANCE\tPROPOSAL\tNOTE", rows)
	for _, m := range e.Metrics {
		if len(m.Pods) == 0 {
			continue
		}
		r.line(0, "")
		r.line(0, "Pods for metric %d (%s), %d ready pods counted:", m.Index, m.Short, m.ReadyPods)
		var prow [][]string
		for _, p := range m.Pods {
			q := func(v *int64) string {
				if v == nil {
					return "-"
				}
				return output.Quantity(*v, isBinary(m))
			}
			util := "-"
			if p.Utilization != nil {
				util = fmt.Sprintf("%d%%", *p.Utilization)
			}
			treat := p.Treatment
			if p.AssumedUsageMilli != nil && p.Treatment != "ready" {
				treat += " (as " + q(p.AssumedUsageMilli) + ")"
			}
			phase, age := p.Phase, p.Age
			if phase == "" {
				phase = "-"
			}
			if age == "" {
				age = "-"
			}
			why := p.Why
			if why == "" {
				why = "-"
			}
			prow = append(prow, []string{p.Name, phase, fmt.Sprint(p.Ready), age, q(p.RequestMilli), q(p.UsageMilli), util, treat, why})
		}
		r.table(1, "POD\tPHASE\tREADY\tAGE\tREQUEST\tUSAGE\tUTIL\tTREATMENT\tWHY", prow)
	}
}

func (r *textRenderer) renderArithmetic(e *v1alpha1.Explanation) {
	a := e.Arithmetic
	if a == nil {
		return
	}
	r.line(0, "")
	r.line(0, "Arithmetic:")
	if a.Clamp != "" {
		r.kv(1, "clamp", "%s (metrics and behavior are not consulted on this path)", a.Clamp)
		r.kv(1, "desired", "%d", a.Desired)
		return
	}
	var ps []string
	for _, p := range a.Proposals {
		if p.Replicas != nil {
			ps = append(ps, fmt.Sprintf("%s -> %d", p.Metric, *p.Replicas))
		} else {
			ps = append(ps, p.Metric+" -> <error>")
		}
	}
	if len(ps) > 0 {
		r.kv(1, "proposals", "%s", strings.Join(ps, ", "))
	}
	if a.MetricReplicas != nil {
		r.kv(1, "max over metrics", "%d (%s)", *a.MetricReplicas, a.ChosenMetric)
	}
	if s := a.Stabilization; s != nil {
		if s.Legacy {
			r.kv(1, "stabilization", "legacy: max(%d, recommendations of the last %ds) = %d (%s)", s.Recommendation, s.DownWindowSeconds, s.Result, s.Reason)
		} else {
			r.kv(1, "stabilization", "up: min(%d, last %ds) = %d; down: max(%d, last %ds) = %d; result %d (%s)",
				s.Recommendation, s.UpWindowSeconds, s.UpRecommendation, s.Recommendation, s.DownWindowSeconds, s.DownRecommendation, s.Result, s.Reason)
		}
		var cs []string
		for _, c := range s.Considered {
			cs = append(cs, fmt.Sprintf("%d (%s ago)", c.Replicas, c.Age))
		}
		if len(cs) > 0 {
			r.kv(2, "samples in window", "%s", strings.Join(cs, ", "))
		}
	}
	if l := a.Limits; l != nil {
		for _, p := range l.Policies {
			unit := ""
			if p.Type == string(autoscalingv2.PercentScalingPolicy) {
				unit = "%"
			}
			r.kv(1, "policy", "%s %s=%d%s per %ds: start of period %d -> %d", p.Direction, p.Type, p.Value, unit, p.PeriodSeconds, p.PeriodStart, p.Proposal)
		}
		r.kv(1, "limits", "%d -> %d (up limit %s, down limit %s; %s)", l.Input, l.Result, limitText(l.UpLimit), limitText(l.DownLimit), l.Reason)
		if l.BindingPolicy != "" {
			r.kv(2, "binding", "%s", l.BindingPolicy)
		}
	}
	r.kv(1, "desired", "%d", a.Desired)
}

func (r *textRenderer) renderDecision(e *v1alpha1.Explanation) {
	d := e.Decision
	if d == nil {
		return
	}
	r.line(0, "")
	r.line(0, "This decision (phase %s) would set conditions:", d.Phase)
	var rows [][]string
	for _, c := range d.Conditions {
		rows = append(rows, []string{c.Type, c.Status, c.Reason, c.Message})
	}
	if len(rows) > 0 {
		r.table(1, "TYPE\tSTATUS\tREASON\tMESSAGE", rows)
	}
	if d.Rescale {
		r.kv(1, "scale write", "New size: %d; reason: %s", d.DesiredReplicas, d.Reason)
	} else {
		r.kv(1, "scale write", "none")
	}
	for _, ev := range d.Events {
		r.kv(1, "event", "%s %s: %s", ev.Type, ev.Reason, ev.Message)
	}
	if d.Error != "" {
		r.kv(1, "error", "%s", d.Error)
	}
}

func (r *textRenderer) renderCluster(e *v1alpha1.Explanation) {
	c := e.Cluster
	if c == nil {
		return
	}
	r.line(0, "")
	r.line(0, "The cluster's controller last decided (HPA status):")
	agree := "agrees with this decision"
	switch {
	case c.StatusNeverWritten:
		r.kv(1, "desiredReplicas", "- (no controller has written status yet)")
		r.kv(1, "note", "%s", c.Note)
		return
	case !c.Comparable:
		agree = "nothing to compare"
	case !c.Agrees:
		agree = "DISAGREES with this decision"
	}
	r.kv(1, "desiredReplicas", "%d (%s)", c.DesiredReplicas, agree)
	if c.Note != "" {
		r.kv(1, "note", "%s", c.Note)
	}
	r.kv(1, "currentReplicas", "%d", c.CurrentReplicas)
	if c.LastScaleTime != nil {
		r.kv(1, "lastScaleTime", "%s (%s)", c.LastScaleTime.UTC().Format(time.RFC3339), r.ago(c.LastScaleTime.Time))
	} else {
		r.kv(1, "lastScaleTime", "<never>")
	}
	if len(c.Conditions) > 0 {
		r.line(1, "Conditions:")
		var rows [][]string
		for _, cond := range c.Conditions {
			since := "-"
			if cond.LastTransitionTime != nil && !cond.LastTransitionTime.IsZero() {
				since = r.ago(cond.LastTransitionTime.Time)
			}
			rows = append(rows, []string{cond.Type, cond.Status, cond.Reason, since, cond.Message})
		}
		r.table(2, "TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE", rows)
	}
	if len(c.RecentRescales) == 0 {
		r.kv(1, "recent rescales", "none visible (events expire, 1h by default)")
		return
	}
	r.line(1, "Recent rescales:")
	for _, ev := range c.RecentRescales {
		when := "-"
		if ev.Time != nil {
			when = r.ago(ev.Time.Time)
		}
		count := ""
		if ev.Count > 1 {
			count = fmt.Sprintf(" (x%d)", ev.Count)
		}
		r.line(2, "%s: %s%s", when, ev.Message, count)
	}
}

func (r *textRenderer) renderHistory(e *v1alpha1.Explanation) {
	h := e.History
	if h == nil {
		return
	}
	r.line(0, "")
	if h.Source == v1alpha1.HistoryRecorded {
		holder := h.Holder
		if holder == "" {
			holder = "without a Lease"
		}
		when := "time unknown"
		if h.RecordedAt != nil {
			when = r.ago(h.RecordedAt.Time)
		}
		r.kv(0, "History", "recorded by kubectl hpa run (%s, %s)", holder, when)
	} else {
		r.kv(0, "History", "%s", historySourceText(h.Source))
	}
	r.line(1, "%s", h.Note)
	var rs []string
	if h.Replay != nil && h.Replay.Error == "" {
		rs = recommendationRuns(h.Recommendations)
	} else {
		for i, rec := range h.Recommendations {
			if h.Source == v1alpha1.HistoryRecorded && i == len(h.Recommendations)-1 && !rec.Time.Time.Before(r.now) {
				rs = append(rs, fmt.Sprintf("%d (still current)", rec.Replicas))
				continue
			}
			rs = append(rs, fmt.Sprintf("%d (%s ago)", rec.Replicas, rec.Age))
		}
	}
	if len(rs) > 0 {
		r.kv(1, "recommendations", "%s", strings.Join(rs, ", "))
	} else {
		r.kv(1, "recommendations", "none")
	}
	for _, ev := range h.ScaleUpEvents {
		r.kv(1, "scale-up event", "+%d %s", ev.ReplicaChange, r.ago(ev.Time.Time))
	}
	for _, ev := range h.ScaleDownEvents {
		r.kv(1, "scale-down event", "-%d %s", ev.ReplicaChange, r.ago(ev.Time.Time))
	}
	if h.FreshControllerDesired != nil {
		r.kv(1, "fresh controller", "a controller started now (its only sample: the current size) would decide %d", *h.FreshControllerDesired)
	}
	r.renderReplay(e)
}

func historySourceText(source string) string {
	if source == "prometheus" {
		return "replayed from Prometheus"
	}
	return source
}

// recommendationRuns prints a replayed history (one recommendation per sync) as runs of
// equal counts, oldest first: "6 x8 (1m20s to 45s ago), 2 x9 (40s ago to 0s ago)".
func recommendationRuns(recs []v1alpha1.Recommendation) []string {
	sorted := slices.Clone(recs)
	slices.SortStableFunc(sorted, func(a, b v1alpha1.Recommendation) int { return a.Time.Compare(b.Time.Time) })
	var out []string
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1].Replicas == sorted[i].Replicas {
			j++
		}
		if j == i {
			out = append(out, fmt.Sprintf("%d (%s ago)", sorted[i].Replicas, sorted[i].Age))
		} else {
			out = append(out, fmt.Sprintf("%d x%d (%s to %s ago)", sorted[i].Replicas, j-i+1, sorted[i].Age, sorted[j].Age))
		}
		i = j + 1
	}
	return out
}

func (r *textRenderer) renderReplay(e *v1alpha1.Explanation) {
	rp := e.History.Replay
	if rp == nil {
		return
	}
	if rp.Error != "" {
		r.kv(1, "prometheus", "%s: replay unavailable (see the warning above), history reconstructed", rp.Prometheus)
		return
	}
	r.kv(1, "prometheus", "%s: %d syncs replayed per sync phase, samples every %s aligned to the live samples, cpu averaged over %s",
		rp.Prometheus, rp.Syncs, output.Seconds(rp.StepSeconds), output.Seconds(rp.RateWindowSeconds))
	if ph := rp.SyncPhase; ph != nil {
		anchor := "unknown: every phase"
		if ph.Anchor != "" {
			anchor = "from " + ph.Anchor + ", written to the second"
		}
		r.kv(1, "controller syncs", "every %s, at %s to %s past each period (%s)", output.Seconds(rp.SyncPeriodSeconds), output.Seconds(ph.FromSeconds), output.Seconds(ph.ToSeconds), anchor)
	}
	if n := rp.NextSync; n != nil {
		r.kv(1, "next sync", "between %s and %s", n.From.UTC().Format(time.TimeOnly), n.To.UTC().Format(time.TimeOnly))
	}
	desired := int32(0)
	if e.Decision != nil {
		desired = e.Decision.DesiredReplicas
	}
	switch {
	case rp.HoldEnds != nil && rp.HoldEndsAt != nil:
		r.kv(1, "hold", "%d until a sync between %s and %s, which writes %d (if the metrics stay as they are now)",
			desired, rp.HoldEnds.From.UTC().Format(time.TimeOnly), rp.HoldEnds.To.UTC().Format(time.TimeOnly), *rp.HoldEndsAt)
	default:
		r.kv(1, "hold", "%d: no sync within the window would write another count if the metrics stay as they are now", desired)
	}
	for _, n := range rp.Notes {
		r.kv(1, "note", "%s", n)
	}
}

// limitText prints a rate limit; the core reports -1 for a direction it did not evaluate.
func limitText(n int32) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

// renderKEDA says what KEDA adds around the HPA: its ScaledObject's conditions, the trigger
// behind each metric (and which one is KEDA's fallback), and what KEDA decides itself.
func (r *textRenderer) renderKEDA(k *v1alpha1.KEDA) {
	r.kv(0, "KEDA", "ScaledObject %s owns this HPA", k.ScaledObject)
	if len(k.Conditions) > 0 {
		var cs []string
		for _, c := range k.Conditions {
			s := c.Type + "=" + c.Status
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			cs = append(cs, s)
		}
		r.kv(1, "Conditions", "%s", strings.Join(cs, ", "))
	}
	for _, m := range k.Metrics {
		fb := ""
		if m.Fallback != nil {
			fb = ": KEDA's fallback, not measured"
		}
		r.line(1, "metric %s <- %s%s", m.Metric, m.Trigger, fb)
	}
	for _, n := range k.Notes {
		r.line(1, "%s", n)
	}
}
