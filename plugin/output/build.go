package output

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Facts is everything an Explanation is built from: the core's input and decision plus
// what was read around them.
type Facts struct {
	// Input is what the core decided on (after any what-if change); Input.HPA is the HPA as
	// the core saw it.
	Input replicas.Input
	// Decision is replicas.Decide(Input).
	Decision replicas.Decision
	// Cluster is the HPA as read from the cluster (its status is the cluster controller's last
	// decision); nil when not read from a cluster.
	Cluster *autoscalingv2.HorizontalPodAutoscaler
	// RescaleEvents are the cluster's SuccessfulRescale events on the HPA, any order.
	RescaleEvents []corev1.Event
	// MetricsSource is metrics.Client.Source().
	MetricsSource string
	// HistorySource (HistoryReconstructed, HistoryRecorded, HistoryController) and
	// HistoryNote describe where Input.History came from.
	HistorySource, HistoryNote string
	// Replay is the replay from Prometheus, when one was asked for.
	Replay *Replay
	// HistoryHolder and HistoryRecordedAt say who recorded a HistoryRecorded history, and when.
	HistoryHolder     string
	HistoryRecordedAt time.Time
	// FreshDesired is the desired count with an empty (freshly seeded) history, when computed.
	FreshDesired *int32
	WhatIf       []WhatIf
	Warnings     []Warning
}

// Build turns facts into an Explanation. It is pure.
func Build(f Facts) *Explanation {
	in, d := f.Input, f.Decision
	hpa := in.HPA
	e := New(hpa.Namespace, hpa.Name)
	e.Metadata.UID = hpa.UID
	e.Metadata.Generation = hpa.Generation
	e.Metadata.ResourceVersion = hpa.ResourceVersion
	e.Time = metav1.NewTime(in.Now)
	e.MetricsSource = f.MetricsSource
	e.WhatIf = f.WhatIf
	e.Warnings = f.Warnings

	ref := hpa.Spec.ScaleTargetRef
	e.Target = &Target{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
	if in.Scale != nil {
		e.Target.SpecReplicas = ptr(in.Scale.SpecReplicas)
		e.Target.StatusReplicas = ptr(in.Scale.StatusReplicas)
		e.Target.Selector = in.Scale.Selector
	}
	if in.ScaleErr != nil {
		e.Target.Error = in.ScaleErr.Error()
	}
	e.Replicas = &Range{Min: d.MinReplicas, Max: d.MaxReplicas}
	e.Tolerance = &Tolerance{
		ScaleUp:   DirectionTolerance{Value: d.Tolerances.Up, Source: d.Tolerances.UpSource},
		ScaleDown: DirectionTolerance{Value: d.Tolerances.Down, Source: d.Tolerances.DownSource},
	}
	e.Behavior = behaviorOf(hpa.Spec.Behavior, in.Config)

	podByName := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		podByName[p.Name] = p
	}
	chosen := -1
	for i, m := range d.Metrics {
		if chosen < 0 && d.MetricName != "" && m.Name == d.MetricName && m.Err == nil {
			chosen = i
		}
	}
	for i, spec := range hpa.Spec.Metrics {
		var res *replicas.MetricResult
		if i < len(d.Metrics) {
			res = &d.Metrics[i]
		}
		e.Metrics = append(e.Metrics, metricOf(i, spec, res, i == chosen, podByName, in.Now))
	}

	if d.Phase != replicas.PhaseScaleFailed {
		// Without a scale there is no current count and nothing to compute.
		e.Arithmetic = arithmeticOf(d, e.Metrics, in.Now, in.Config)
	}
	e.Decision = decisionOf(d)
	e.Verdict = verdictOf(d, e)
	if f.FreshDesired != nil && *f.FreshDesired != d.DesiredReplicas {
		// The history is a reconstruction; say in the same sentence what none would give.
		e.Verdict.Sentence += fmt.Sprintf(" (a controller started now, with no history, would decide %d)", *f.FreshDesired)
	}
	e.Verdict.Details = verdictDetails(d, e)
	e.History = historyOf(f)
	if f.Cluster != nil {
		e.Cluster = clusterOf(f.Cluster, f.RescaleEvents, d)
	}
	for _, s := range d.Trace {
		st := Step{Stage: s.Stage, Text: s.Text}
		if s.Metric >= 0 {
			st.Metric = ptr(s.Metric)
		}
		e.Trace = append(e.Trace, st)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

// behaviorOf fills the API defaults the API server applies when behavior is set, and the
// cluster window the controller substitutes for a nil scaleDown window.
func behaviorOf(b *autoscalingv2.HorizontalPodAutoscalerBehavior, cfg replicas.Config) *Behavior {
	if b == nil {
		return &Behavior{Legacy: true}
	}
	eff, defaulted := replicas.EffectiveBehaviorDefaults(&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Behavior: b}}, cfg)
	out := &Behavior{ScaleUp: eff.ScaleUp, ScaleDown: eff.ScaleDown}
	for _, f := range defaulted {
		if f == replicas.ScaleDownWindow {
			f += " (cluster --horizontal-pod-autoscaler-downscale-stabilization)"
		}
		out.Defaulted = append(out.Defaulted, f)
	}
	return out
}

// ShortName is the name people use for a metric spec; --set-target and --assume accept it.
func ShortName(spec autoscalingv2.MetricSpec) string {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource != nil {
			return string(spec.Resource.Name)
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource != nil {
			return string(spec.ContainerResource.Name) + "/" + spec.ContainerResource.Container
		}
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods != nil {
			return spec.Pods.Metric.Name
		}
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object != nil {
			return spec.Object.Metric.Name
		}
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External != nil {
			return spec.External.Metric.Name
		}
	}
	return strings.ToLower(string(spec.Type))
}

// TargetOf returns the metric target of spec (zero value for an unknown type).
func TargetOf(spec autoscalingv2.MetricSpec) autoscalingv2.MetricTarget {
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		return spec.Resource.Target
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		return spec.ContainerResource.Target
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		return spec.Pods.Target
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		return spec.Object.Target
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		return spec.External.Target
	}
	return autoscalingv2.MetricTarget{}
}

// FormatTarget prints a target the way kubectl describe does.
func FormatTarget(t autoscalingv2.MetricTarget) string {
	switch {
	case t.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *t.AverageUtilization)
	case t.AverageValue != nil:
		return t.AverageValue.String() + " (avg)"
	case t.Value != nil:
		return t.Value.String()
	}
	return "<none>"
}

// formatCurrent prints the current value in the unit of the target.
func formatCurrent(t autoscalingv2.MetricTarget, c autoscalingv2.MetricValueStatus) string {
	switch {
	case t.AverageUtilization != nil && c.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *c.AverageUtilization)
	case t.AverageValue != nil && c.AverageValue != nil:
		return c.AverageValue.String() + " (avg)"
	case t.Value != nil && c.Value != nil:
		return c.Value.String()
	case c.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *c.AverageUtilization)
	case c.AverageValue != nil:
		return c.AverageValue.String() + " (avg)"
	case c.Value != nil:
		return c.Value.String()
	}
	return "<unknown>"
}

// FormatCurrent prints a metric result's current value in the unit of its target
// ("142%", "250m (avg)"), or "<unknown>" when it failed.
func FormatCurrent(spec autoscalingv2.MetricSpec, r replicas.MetricResult) string {
	if r.Err != nil {
		return "<unknown>"
	}
	if c, ok := r.Current(); ok {
		return formatCurrent(TargetOf(spec), c)
	}
	return "<unknown>"
}

func metricOf(i int, spec autoscalingv2.MetricSpec, r *replicas.MetricResult, chosen bool, pods map[string]*corev1.Pod, now time.Time) Metric {
	t := TargetOf(spec)
	m := Metric{
		Index:      i,
		Type:       string(spec.Type),
		Short:      ShortName(spec),
		Target:     FormatTarget(t),
		Current:    "<unknown>",
		TargetSpec: t,
		Chosen:     chosen,
	}
	if r == nil {
		return m
	}
	m.Computed = true
	m.Name = r.Name
	m.ReadyPods = r.ReadyPods
	m.Reason = r.Reason
	if !r.Timestamp.IsZero() {
		m.Timestamp = ptr(metav1.NewTime(r.Timestamp))
	}
	if r.Err != nil {
		m.Error = r.Err.Error()
	} else {
		m.Ratio = ptr(round4(r.Ratio))
		if r.RebalancedRatio != r.Ratio {
			m.RebalancedRatio = ptr(round4(r.RebalancedRatio))
		}
		m.WithinTolerance = r.WithinTolerance
		m.Proposal = ptr(r.Replicas)
		st := r.Status
		m.Status = &st
		m.Current = FormatCurrent(spec, *r)
	}
	utilization := t.Type == autoscalingv2.UtilizationMetricType
	for _, pt := range r.Pods {
		p := Pod{Name: pt.Name, Treatment: string(pt.Class), Why: pt.Why}
		if pod, ok := pods[pt.Name]; ok {
			p.Phase = string(pod.Status.Phase)
			p.Ready = podReady(pod)
			if pod.Status.StartTime != nil {
				p.Age = age(now, pod.Status.StartTime.Time)
			}
		}
		if pt.Request > 0 {
			p.RequestMilli = ptr(pt.Request)
		}
		if pt.HasSample {
			p.UsageMilli = ptr(pt.Usage)
			if utilization && pt.Request > 0 {
				p.Utilization = ptr(pt.Usage * 100 / pt.Request)
			}
		}
		if pt.AssumedUsage >= 0 {
			p.AssumedUsageMilli = ptr(pt.AssumedUsage)
		}
		m.Pods = append(m.Pods, p)
	}
	return m
}

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func age(now, t time.Time) string {
	if t.After(now) {
		return "0s"
	}
	return duration.HumanDuration(now.Sub(t))
}

func arithmeticOf(d replicas.Decision, ms []Metric, now time.Time, cfg replicas.Config) *Arithmetic {
	a := &Arithmetic{ChosenMetric: d.MetricName, Desired: d.DesiredReplicas}
	for _, m := range ms {
		if m.Computed {
			a.Proposals = append(a.Proposals, Proposal{Metric: m.Short, Replicas: m.Proposal, Error: m.Error})
		}
	}
	if d.MetricReplicas >= 0 && d.Phase == replicas.PhaseComputed {
		a.MetricReplicas = ptr(d.MetricReplicas)
	}
	if d.Phase == replicas.PhaseClampedToRange {
		a.Clamp = d.Reason
	}
	if s := d.Stabilization; s != nil {
		st := &Stabilization{
			Legacy:             s.Legacy,
			UpWindowSeconds:    int64(s.UpWindow / time.Second),
			DownWindowSeconds:  int64(s.DownWindow / time.Second),
			Recommendation:     s.Recommendation,
			UpRecommendation:   s.UpRecommendation,
			DownRecommendation: s.DownRecommendation,
			Result:             s.Result,
			Reason:             s.Reason,
		}
		for _, r := range s.Considered {
			st.Considered = append(st.Considered, Recommendation{Replicas: r.Replicas, Time: metav1.NewTime(r.Timestamp), Age: age(now, r.Timestamp)})
		}
		a.Stabilization = st
	}
	if l := d.Limit; l != nil {
		lim := &Limits{Input: l.Input, Result: l.Result, UpLimit: l.UpLimit, DownLimit: l.DownLimit, Reason: l.Reason, Limited: l.Limited}
		for _, p := range l.Policies {
			lim.Policies = append(lim.Policies, PolicyLimit{Direction: p.Direction, Type: string(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds, PeriodStart: p.PeriodStart, Proposal: p.Proposal})
		}
		lim.BindingPolicy = bindingPolicy(l, d.Stabilization == nil || !d.Stabilization.Legacy, cfg)
		a.Limits = lim
	}
	return a
}

// bindingPolicy names the rate limit that capped the count ("scaleUp Pods=2 per 60s").
func bindingPolicy(l *replicas.Limit, withBehavior bool, cfg replicas.Config) string {
	var dir string
	var limit int32
	switch l.Reason {
	case "ScaleUpLimit":
		dir, limit = "scaleUp", l.UpLimit
	case "ScaleDownLimit":
		dir, limit = "scaleDown", l.DownLimit
	default:
		return ""
	}
	if !withBehavior || len(l.Policies) == 0 {
		return fmt.Sprintf("the legacy scale-up cap max(%gx current, %g) = %d", cfg.LegacyScaleUpFactor, cfg.LegacyScaleUpMinimum, limit)
	}
	for _, p := range l.Policies {
		if p.Direction == dir && p.Proposal == limit {
			unit := ""
			if p.Type == autoscalingv2.PercentScalingPolicy {
				unit = "%"
			}
			return fmt.Sprintf("%s %s=%d%s per %ds", dir, p.Type, p.Value, unit, p.PeriodSeconds)
		}
	}
	return fmt.Sprintf("%s policies (limit %d)", dir, limit)
}

// effectiveConditions keeps the last value of each condition type, in first-seen order,
// as applying them in sequence would leave them.
func effectiveConditions(cs []replicas.Condition) []Condition {
	var order []string
	last := map[string]replicas.Condition{}
	for _, c := range cs {
		t := string(c.Type)
		if _, ok := last[t]; !ok {
			order = append(order, t)
		}
		last[t] = c
	}
	out := make([]Condition, 0, len(order))
	for _, t := range order {
		c := last[t]
		out = append(out, Condition{Type: t, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func decisionOf(d replicas.Decision) *Decision {
	out := &Decision{
		Phase:           string(d.Phase),
		CurrentReplicas: d.CurrentReplicas,
		DesiredReplicas: d.DesiredReplicas,
		Rescale:         d.Rescale,
		Reason:          d.Reason,
		Conditions:      effectiveConditions(d.Conditions),
	}
	for _, ev := range d.Events {
		out.Events = append(out.Events, Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message})
	}
	if d.Err != nil {
		out.Error = d.Err.Error()
	}
	return out
}

// metricPhrase is "cpu 142% vs 80%" for the verdict.
func metricPhrase(m Metric) string {
	return fmt.Sprintf("%s %s vs %s", m.Short, strings.TrimSuffix(m.Current, " (avg)"), strings.TrimSuffix(m.Target, " (avg)"))
}

// verdictOf says the decision in a sentence; its constraint is the core's ConstraintOf, which
// the simulator's summary counts too.
func verdictOf(d replicas.Decision, e *Explanation) *Verdict {
	c := replicas.ConstraintOf(d)
	v := &Verdict{Constraint: string(c)}
	from, to := d.CurrentReplicas, d.DesiredReplicas
	var chosen *Metric
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
	if chosen != nil {
		why = ": " + metricPhrase(*chosen)
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
		v.Sentence = fmt.Sprintf("%s: every metric is within tolerance (-%s/+%s)%s", move, pct(d.Tolerances.Down), pct(d.Tolerances.Up), strings.Replace(why, ":", ", e.g.", 1))
	case !d.Rescale:
		v.Sentence = fmt.Sprintf("%s%s proposes the current count", move, why)
	default:
		v.Sentence = fmt.Sprintf("%s%s, nothing limits it", move, why)
	}
	return v
}

func errText(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

func pct(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f*100), "0"), ".") + "%"
}

func historyOf(f Facts) *History {
	h := &History{Source: f.HistorySource, Note: f.HistoryNote, FreshControllerDesired: f.FreshDesired, Replay: f.Replay, Holder: f.HistoryHolder}
	if !f.HistoryRecordedAt.IsZero() {
		at := metav1.NewTime(f.HistoryRecordedAt)
		h.RecordedAt = &at
	}
	now := f.Input.Now
	for _, r := range f.Input.History.Recommendations {
		h.Recommendations = append(h.Recommendations, Recommendation{Replicas: r.Replicas, Time: metav1.NewTime(r.Timestamp), Age: age(now, r.Timestamp)})
	}
	for _, ev := range f.Input.History.ScaleUpEvents {
		h.ScaleUpEvents = append(h.ScaleUpEvents, ScaleEvent{ReplicaChange: ev.ReplicaChange, Time: metav1.NewTime(ev.Timestamp)})
	}
	for _, ev := range f.Input.History.ScaleDownEvents {
		h.ScaleDownEvents = append(h.ScaleDownEvents, ScaleEvent{ReplicaChange: ev.ReplicaChange, Time: metav1.NewTime(ev.Timestamp)})
	}
	return h
}

// EventTime is the latest time an event was seen.
func EventTime(ev corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

// maxRecentRescales bounds how many cluster rescale events are shown.
const maxRecentRescales = 5

func clusterOf(hpa *autoscalingv2.HorizontalPodAutoscaler, events []corev1.Event, d replicas.Decision) *Cluster {
	st := hpa.Status
	c := &Cluster{
		CurrentReplicas:    st.CurrentReplicas,
		DesiredReplicas:    st.DesiredReplicas,
		LastScaleTime:      st.LastScaleTime,
		ObservedGeneration: st.ObservedGeneration,
	}
	for _, cond := range st.Conditions {
		c.Conditions = append(c.Conditions, Condition{Type: string(cond.Type), Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message, LastTransitionTime: ptr(cond.LastTransitionTime)})
	}
	evs := append([]corev1.Event(nil), events...)
	sort.SliceStable(evs, func(i, j int) bool { return EventTime(evs[i]).After(EventTime(evs[j])) })
	if len(evs) > maxRecentRescales {
		evs = evs[:maxRecentRescales]
	}
	for _, ev := range evs {
		c.RecentRescales = append(c.RecentRescales, Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: ev.Count, Time: ptr(metav1.NewTime(EventTime(ev)))})
	}
	if st.ObservedGeneration == nil && len(st.Conditions) == 0 && st.LastScaleTime == nil && st.CurrentReplicas == 0 && st.DesiredReplicas == 0 {
		c.StatusNeverWritten = true
		c.Note = "no controller has written status yet: no HPA controller (kube-controller-manager's, or a kubectl hpa run) has reconciled this HPA"
		return c
	}
	switch d.Phase {
	case replicas.PhaseScaleFailed:
		c.Note = "this decision could not read the target's scale, so it has no count to compare; the controller leaves desiredReplicas as it was"
		return c
	case replicas.PhaseMetricsFailed:
		c.Note = "this decision has no usable metric, so it has no count to compare; the controller leaves desiredReplicas as it was"
		return c
	}
	c.Comparable = true
	c.Agrees = st.DesiredReplicas == d.DesiredReplicas
	switch {
	case !c.Agrees && st.ObservedGeneration != nil && *st.ObservedGeneration < hpa.Generation:
		c.Note = fmt.Sprintf("the cluster controller has not yet seen generation %d of this HPA (it last saw %d)", hpa.Generation, *st.ObservedGeneration)
	case !c.Agrees:
		c.Note = fmt.Sprintf("the cluster controller last decided %d, this decision is %d: metrics may have moved since its last sync, or its in-memory history (not visible here) holds different recommendations", st.DesiredReplicas, d.DesiredReplicas)
	}
	return c
}

// Quantity formats milli-units as a quantity for people ("250m", "128Mi").
func Quantity(milli int64, binary bool) string {
	q := resource.NewMilliQuantity(milli, resource.DecimalSI)
	if binary && milli%1000 == 0 {
		q = resource.NewQuantity(milli/1000, resource.BinarySI)
	}
	return q.String()
}

// verdictDetails are the verdict's follow-up answers (see Verdict.Details).
func verdictDetails(d replicas.Decision, e *Explanation) []string {
	var out []string
	var failed, valid []Metric
	var chosen *Metric
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
func podSummary(m Metric) string {
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
func thresholds(d replicas.Decision, m Metric, e *Explanation) string {
	if d.Rescale || d.Phase != replicas.PhaseComputed || m.TargetSpec.Type != autoscalingv2.UtilizationMetricType || m.TargetSpec.AverageUtilization == nil ||
		m.Proposal == nil || *m.Proposal != d.CurrentReplicas || podSummary(m) != "" {
		// Only the metric, measured on every pod, holds the count here: a window or a limit
		// says its own why, and pods not yet measured move the ratio by rebalancing.
		return ""
	}
	target := float64(*m.TargetSpec.AverageUtilization)
	n := d.CurrentReplicas
	up := fmt.Sprintf("above %.0f%% (tolerance +%s)", math.Floor(target*(1+d.Tolerances.Up)), pct(d.Tolerances.Up))
	down := fmt.Sprintf("it cannot scale below minReplicas %d", d.MinReplicas)
	if n > d.MinReplicas && n > 0 {
		ratio := math.Min(1-d.Tolerances.Down, float64(n-1)/float64(n))
		down = fmt.Sprintf("scales down only once %s averages below %g%% of request (%s x min(1 - tolerance %s, %d/%d replicas))", m.Short, math.Floor(target*ratio*10)/10, m.Target, pct(d.Tolerances.Down), n-1, n)
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
