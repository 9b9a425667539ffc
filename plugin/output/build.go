package output

import (
	"fmt"
	"math"
	"sort"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
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
	Replay *v1alpha1.Replay
	// Memory is what a HistoryReconstructed history was inferred from.
	Memory *history.Memory
	// HistoryHolder and HistoryRecordedAt say who recorded a HistoryRecorded history, and when.
	HistoryHolder     string
	HistoryRecordedAt time.Time
	// FreshDesired is the desired count with an empty (freshly seeded) history, when computed.
	FreshDesired *int32
	// Alternatives are the counts under the memories the evidence leaves open (Memory), where
	// they differ from Decision's.
	Alternatives []v1alpha1.Alternative
	WhatIf       []v1alpha1.WhatIf
	Warnings     []v1alpha1.Warning
}

// Build turns facts into an Explanation. It is pure.
func Build(f Facts) *v1alpha1.Explanation {
	in, d := f.Input, f.Decision
	hpa := in.HPA
	e := v1alpha1.NewExplanation(hpa.Namespace, hpa.Name)
	e.Metadata.UID = hpa.UID
	e.Metadata.Generation = hpa.Generation
	e.Metadata.ResourceVersion = hpa.ResourceVersion
	e.Time = metav1.NewTime(in.Now)
	e.MetricsSource = f.MetricsSource
	e.WhatIf = f.WhatIf
	e.Warnings = f.Warnings

	ref := hpa.Spec.ScaleTargetRef
	e.Target = &v1alpha1.Target{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name}
	if in.Scale != nil {
		e.Target.SpecReplicas = ptr.To(in.Scale.SpecReplicas)
		e.Target.StatusReplicas = ptr.To(in.Scale.StatusReplicas)
		e.Target.Selector = in.Scale.Selector
	}
	if in.ScaleErr != nil {
		e.Target.Error = in.ScaleErr.Error()
	}
	e.Replicas = &v1alpha1.Range{Min: d.MinReplicas, Max: d.MaxReplicas}
	e.Tolerance = &v1alpha1.Tolerance{
		ScaleUp:   v1alpha1.DirectionTolerance{Value: d.Tolerances.Up, Source: d.Tolerances.UpSource},
		ScaleDown: v1alpha1.DirectionTolerance{Value: d.Tolerances.Down, Source: d.Tolerances.DownSource},
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
		e.Arithmetic = arithmeticOf(d, e.Metrics, e.Behavior, in.Now, in.Config)
	}
	e.Decision = decisionOf(d)
	e.Verdict = verdictOf(d, e)
	if f.FreshDesired != nil && *f.FreshDesired != d.DesiredReplicas {
		// The history is a reconstruction; say in the same sentence what none would give.
		e.Verdict.Sentence += fmt.Sprintf(" (a controller started now, with no history, would decide %d)", *f.FreshDesired)
	}
	if f.HistorySource == v1alpha1.HistoryReconstructed {
		// A recorded or replayed history is not the inference the alternatives are of.
		for _, a := range f.Alternatives {
			e.Verdict.Sentence += fmt.Sprintf(" (%d if %s)", a.DesiredReplicas, a.If)
		}
		e.Verdict.Alternatives = f.Alternatives
	}
	e.Verdict.Details = verdictDetails(d, e)
	e.History = historyOf(f)
	if f.Cluster != nil {
		e.Cluster = clusterOf(f.Cluster, f.RescaleEvents, d)
	}
	for _, s := range d.Trace {
		st := v1alpha1.Step{Stage: s.Stage, Text: s.Text}
		if s.Metric >= 0 {
			st.Metric = ptr.To(s.Metric)
		}
		e.Trace = append(e.Trace, st)
	}
	return e
}

// behaviorOf fills the API defaults the API server applies when behavior is set, and the
// cluster window the controller substitutes for a nil scaleDown window.
func behaviorOf(b *autoscalingv2.HorizontalPodAutoscalerBehavior, cfg replicas.Config) *v1alpha1.Behavior {
	if b == nil {
		return &v1alpha1.Behavior{Legacy: true}
	}
	eff, defaulted := replicas.EffectiveBehaviorDefaults(&autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Behavior: b}}, cfg)
	out := &v1alpha1.Behavior{ScaleUp: eff.ScaleUp, ScaleDown: eff.ScaleDown}
	for _, f := range defaulted {
		if f == replicas.ScaleDownWindow {
			f += " (cluster --horizontal-pod-autoscaler-downscale-stabilization)"
		}
		out.Defaulted = append(out.Defaulted, f)
	}
	return out
}

func metricOf(i int, spec autoscalingv2.MetricSpec, r *replicas.MetricResult, chosen bool, pods map[string]*corev1.Pod, now time.Time) v1alpha1.Metric {
	t := TargetOf(spec)
	m := v1alpha1.Metric{
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
		m.Timestamp = ptr.To(metav1.NewTime(r.Timestamp))
	}
	if r.Err != nil {
		m.Error = r.Err.Error()
	} else {
		m.Ratio = ptr.To(round4(r.Ratio))
		if r.RebalancedRatio != r.Ratio {
			m.RebalancedRatio = ptr.To(round4(r.RebalancedRatio))
		}
		m.WithinTolerance = r.WithinTolerance
		m.Proposal = ptr.To(r.Replicas)
		st := r.Status
		m.Status = &st
		m.Current = FormatCurrent(spec, *r)
	}
	utilization := t.Type == autoscalingv2.UtilizationMetricType
	for _, pt := range r.Pods {
		p := v1alpha1.Pod{Name: pt.Name, Treatment: string(pt.Class), Why: pt.Why}
		if pod, ok := pods[pt.Name]; ok {
			p.Phase = string(pod.Status.Phase)
			p.Ready = replicas.PodIsReady(pod)
			if pod.Status.StartTime != nil {
				p.Age = age(now, pod.Status.StartTime.Time)
			}
		}
		if pt.Request > 0 {
			p.RequestMilli = ptr.To(pt.Request)
		}
		if pt.HasSample {
			p.UsageMilli = ptr.To(pt.Usage)
			if utilization && pt.Request > 0 {
				p.Utilization = ptr.To(pt.Usage * 100 / pt.Request)
			}
		}
		if pt.AssumedUsage >= 0 {
			p.AssumedUsageMilli = ptr.To(pt.AssumedUsage)
		}
		m.Pods = append(m.Pods, p)
	}
	return m
}

func round4(f float64) float64 { return math.Round(f*10000) / 10000 }

func age(now, t time.Time) string {
	if t.After(now) {
		return "0s"
	}
	return duration.HumanDuration(now.Sub(t))
}

func arithmeticOf(d replicas.Decision, ms []v1alpha1.Metric, b *v1alpha1.Behavior, now time.Time, cfg replicas.Config) *v1alpha1.Arithmetic {
	a := &v1alpha1.Arithmetic{ChosenMetric: d.MetricName, Desired: d.DesiredReplicas}
	for _, m := range ms {
		if m.Computed {
			a.Proposals = append(a.Proposals, v1alpha1.Proposal{Metric: m.Short, Replicas: m.Proposal, Error: m.Error})
		}
	}
	if d.MetricReplicas >= 0 && d.Phase == replicas.PhaseComputed {
		a.MetricReplicas = ptr.To(d.MetricReplicas)
	}
	if d.Phase == replicas.PhaseClampedToRange {
		a.Clamp = d.Reason
	}
	if s := d.Stabilization; s != nil {
		st := &v1alpha1.Stabilization{
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
			st.Considered = append(st.Considered, v1alpha1.Recommendation{Replicas: r.Replicas, Time: metav1.NewTime(r.Timestamp), Age: age(now, r.Timestamp)})
		}
		a.Stabilization = st
	}
	if l := d.Limit; l != nil {
		lim := &v1alpha1.Limits{Input: l.Input, Result: l.Result, UpLimit: l.UpLimit, DownLimit: l.DownLimit, Reason: l.Reason, Limited: l.Limited}
		for _, p := range l.Policies {
			lim.Policies = append(lim.Policies, v1alpha1.PolicyLimit{Direction: p.Direction, Type: string(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds, PeriodStart: p.PeriodStart, Proposal: p.Proposal})
		}
		lim.BindingPolicy = bindingPolicy(l, b, cfg)
		a.Limits = lim
	}
	return a
}

// bindingPolicy names the rate limit that capped the count ("scaleUp Pods=2 per 60s"): a
// direction a behavior disables by its field, the legacy cap only for an HPA without one (b
// is the behavior in force, nil or Legacy without spec.behavior).
func bindingPolicy(l *replicas.Limit, b *v1alpha1.Behavior, cfg replicas.Config) string {
	var dir string
	var limit int32
	var rules *autoscalingv2.HPAScalingRules
	switch l.Reason {
	case "ScaleUpLimit":
		dir, limit = "scaleUp", l.UpLimit
		if b != nil {
			rules = b.ScaleUp
		}
	case "ScaleDownLimit":
		dir, limit = "scaleDown", l.DownLimit
		if b != nil {
			rules = b.ScaleDown
		}
	default:
		return ""
	}
	if b == nil || b.Legacy {
		return fmt.Sprintf("the legacy scale-up cap max(%gx current, %g) = %d", cfg.LegacyScaleUpFactor, cfg.LegacyScaleUpMinimum, limit)
	}
	if disabledDirection(rules) {
		return DisabledPolicy(dir)
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

// DisabledPolicy is the binding policy of a direction its behavior disables
// ("behavior.scaleUp.selectPolicy: Disabled"); dir is scaleUp or scaleDown.
func DisabledPolicy(dir string) string {
	return "behavior." + dir + ".selectPolicy: " + string(autoscalingv2.DisabledPolicySelect)
}

func disabledDirection(r *autoscalingv2.HPAScalingRules) bool {
	return r != nil && r.SelectPolicy != nil && *r.SelectPolicy == autoscalingv2.DisabledPolicySelect
}

// effectiveConditions keeps the last value of each condition type, in first-seen order,
// as applying them in sequence would leave them.
func effectiveConditions(cs []replicas.Condition) []v1alpha1.Condition {
	var order []string
	last := map[string]replicas.Condition{}
	for _, c := range cs {
		t := string(c.Type)
		if _, ok := last[t]; !ok {
			order = append(order, t)
		}
		last[t] = c
	}
	out := make([]v1alpha1.Condition, 0, len(order))
	for _, t := range order {
		c := last[t]
		out = append(out, v1alpha1.Condition{Type: t, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func decisionOf(d replicas.Decision) *v1alpha1.Decision {
	out := &v1alpha1.Decision{
		Phase:           string(d.Phase),
		CurrentReplicas: d.CurrentReplicas,
		DesiredReplicas: d.DesiredReplicas,
		Rescale:         d.Rescale,
		Reason:          d.Reason,
		Conditions:      effectiveConditions(d.Conditions),
	}
	for _, ev := range d.Events {
		out.Events = append(out.Events, v1alpha1.Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message})
	}
	if d.Err != nil {
		out.Error = d.Err.Error()
	}
	return out
}

func historyOf(f Facts) *v1alpha1.History {
	h := &v1alpha1.History{Source: f.HistorySource, Note: f.HistoryNote, FreshControllerDesired: f.FreshDesired, Replay: f.Replay, Holder: f.HistoryHolder}
	if f.Memory != nil && f.HistorySource == v1alpha1.HistoryReconstructed {
		h.Memory = memoryOf(*f.Memory)
	}
	if !f.HistoryRecordedAt.IsZero() {
		at := metav1.NewTime(f.HistoryRecordedAt)
		h.RecordedAt = &at
	}
	now := f.Input.Now
	for _, r := range f.Input.History.Recommendations {
		h.Recommendations = append(h.Recommendations, v1alpha1.Recommendation{Replicas: r.Replicas, Time: metav1.NewTime(r.Timestamp), Age: age(now, r.Timestamp)})
	}
	for _, ev := range f.Input.History.ScaleUpEvents {
		h.ScaleUpEvents = append(h.ScaleUpEvents, v1alpha1.ScaleEvent{ReplicaChange: ev.ReplicaChange, Time: metav1.NewTime(ev.Timestamp)})
	}
	for _, ev := range f.Input.History.ScaleDownEvents {
		h.ScaleDownEvents = append(h.ScaleDownEvents, v1alpha1.ScaleEvent{ReplicaChange: ev.ReplicaChange, Time: metav1.NewTime(ev.Timestamp)})
	}
	return h
}

// maxRecentRescales bounds how many cluster rescale events are shown.
const maxRecentRescales = 5

func clusterOf(hpa *autoscalingv2.HorizontalPodAutoscaler, events []corev1.Event, d replicas.Decision) *v1alpha1.Cluster {
	st := hpa.Status
	c := &v1alpha1.Cluster{
		CurrentReplicas:    st.CurrentReplicas,
		DesiredReplicas:    st.DesiredReplicas,
		LastScaleTime:      st.LastScaleTime,
		ObservedGeneration: st.ObservedGeneration,
	}
	for _, cond := range st.Conditions {
		c.Conditions = append(c.Conditions, v1alpha1.Condition{Type: string(cond.Type), Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message, LastTransitionTime: ptr.To(cond.LastTransitionTime)})
	}
	evs := append([]corev1.Event(nil), events...)
	sort.SliceStable(evs, func(i, j int) bool { return history.EventTime(evs[i]).After(history.EventTime(evs[j])) })
	if len(evs) > maxRecentRescales {
		evs = evs[:maxRecentRescales]
	}
	for _, ev := range evs {
		c.RecentRescales = append(c.RecentRescales, v1alpha1.Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: ev.Count, Time: ptr.To(metav1.NewTime(history.EventTime(ev)))})
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

func memoryOf(m history.Memory) *v1alpha1.Memory {
	out := &v1alpha1.Memory{Controller: m.Controller, StartEvidence: m.StartEvidence, NeverSynced: m.NeverSynced}
	if !m.Start.IsZero() {
		out.Start = ptr.To(metav1.NewTime(m.Start))
	}
	if l := m.Leader; l != nil {
		out.Leader = &v1alpha1.Leader{Lease: l.Lease, Holder: l.Holder, Since: metav1.NewTime(l.Since), Transitions: l.Transitions}
	}
	if m.LeaderErr != nil {
		out.LeaderError = m.LeaderErr.Error()
	}
	if m.TargetErr != nil {
		out.TargetEventsError = m.TargetErr.Error()
	}
	if s := m.Seed; s != nil {
		out.Seed = &v1alpha1.MemorySeed{Replicas: s.Replicas, Time: metav1.NewTime(s.At), Evidence: s.Evidence}
	}
	for _, r := range m.Rescales {
		out.Rescales = append(out.Rescales, v1alpha1.Rescaled{Time: metav1.NewTime(r.At), From: r.From, To: r.To, FromEvidence: r.FromEvidence, Direction: r.Direction})
	}
	return out
}

// AlternativesOf decides in again under each memory the evidence leaves open, and keeps those
// whose count differs from d's.
func AlternativesOf(in replicas.Input, d replicas.Decision, open []history.Alternative) []v1alpha1.Alternative {
	var out []v1alpha1.Alternative
	for _, a := range open {
		alt := in
		alt.History, alt.OmitTrace, alt.OmitPodTreatments = a.History, true, true
		if n := replicas.Decide(alt).DesiredReplicas; n != d.DesiredReplicas {
			out = append(out, v1alpha1.Alternative{DesiredReplicas: n, If: a.Open})
		}
	}
	return out
}
