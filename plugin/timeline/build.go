package timeline

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// newTimeline is the frame of hpa's timeline over [from, to]: its spec's range and targets.
func newTimeline(hpa *autoscalingv2.HorizontalPodAutoscaler, from, to time.Time, source v1alpha1.TimelineSource) *v1alpha1.Timeline {
	t := v1alpha1.NewTimeline()
	t.Metadata = v1alpha1.Metadata{Name: hpa.Name, Namespace: hpa.Namespace, UID: hpa.UID}
	t.From, t.To = metav1.NewTime(from.UTC()), metav1.NewTime(to.UTC())
	t.Source = source
	t.MinReplicas, t.MaxReplicas = 1, hpa.Spec.MaxReplicas
	if hpa.Spec.MinReplicas != nil {
		t.MinReplicas = *hpa.Spec.MinReplicas
	}
	t.Targets = []v1alpha1.SimTarget{}
	for _, spec := range hpa.Spec.Metrics {
		t.Targets = append(t.Targets, v1alpha1.SimTarget{Metric: output.ShortName(spec), Target: output.FormatTarget(output.TargetOf(spec))})
	}
	t.Syncs, t.Rescales, t.Findings = []v1alpha1.TimelineSync{}, []v1alpha1.TimelineRescale{}, []v1alpha1.TimelineFinding{}
	return t
}

// syncOf is one decision d of hpa at now as a timeline row: each metric against its target,
// what the metrics proposed, the constraint that held the count (the core's ConstraintOf)
// and the pods the core counted as unready or missing where that changed a ratio.
func syncOf(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time, d replicas.Decision) v1alpha1.TimelineSync {
	s := v1alpha1.TimelineSync{Time: metav1.NewTime(now.UTC()), Replicas: d.CurrentReplicas, Desired: d.DesiredReplicas,
		Constraint: string(replicas.ConstraintOf(d)), Rescale: d.Rescale}
	if d.Rescale {
		s.Reason = d.Reason
	}
	if d.Phase == replicas.PhaseComputed || d.Phase == replicas.PhaseMetricsFailed {
		rec := d.MetricReplicas
		s.Recommendation = &rec
	}
	for i, spec := range hpa.Spec.Metrics {
		if i >= len(d.Metrics) {
			break
		}
		r := d.Metrics[i]
		m := v1alpha1.TimelineMetric{Name: output.ShortName(spec), Current: output.FormatCurrent(spec, r), Target: output.FormatTarget(output.TargetOf(spec))}
		if r.Err != nil {
			m.Error = r.Err.Error()
		} else {
			pct := math.Round(r.Ratio*1000) / 10
			m.PercentOfTarget = &pct
		}
		s.Metrics = append(s.Metrics, m)
		if r.Err == nil && r.RebalancedRatio != r.Ratio {
			n := 0
			for _, p := range r.Pods {
				if p.Class == replicas.PodUnready || p.Class == replicas.PodMissing {
					n++
				}
			}
			s.UnreadyPods = max(s.UnreadyPods, n)
		}
	}
	return s
}

// rescalesOf are the syncs that rescaled, with their cause and the constraint that shaped
// the size.
func rescalesOf(syncs []v1alpha1.TimelineSync) []v1alpha1.TimelineRescale {
	out := []v1alpha1.TimelineRescale{}
	for _, s := range syncs {
		if !s.Rescale {
			continue
		}
		from := s.Replicas
		out = append(out, v1alpha1.TimelineRescale{Time: s.Time, Direction: direction(s.Replicas, s.Desired), From: &from, To: s.Desired, Cause: s.Reason, Constraint: s.Constraint})
	}
	return out
}

// changes keeps the syncs where something other than the metrics' values changed: the
// replicas, the decision, the proposal, the constraint, the unready pods, a metric turning
// blind or crossing its target, what kube-state-metrics saw; and the first and the last.
func changes(syncs []v1alpha1.TimelineSync) []v1alpha1.TimelineSync {
	out := []v1alpha1.TimelineSync{}
	for i, s := range syncs {
		if i == 0 || i == len(syncs)-1 || s.Rescale || differs(syncs[i-1], s) {
			out = append(out, s)
		}
	}
	return out
}

func differs(a, b v1alpha1.TimelineSync) bool {
	if a.Replicas != b.Replicas || a.Desired != b.Desired || a.Constraint != b.Constraint || a.UnreadyPods != b.UnreadyPods ||
		int32Of(a.Recommendation) != int32Of(b.Recommendation) || int32Of(a.Observed) != int32Of(b.Observed) {
		return true
	}
	return isBlind(a) != isBlind(b) || aboveTarget(a) != aboveTarget(b)
}

func int32Of(p *int32) int64 {
	if p == nil {
		return math.MinInt64
	}
	return int64(*p)
}

func direction(from, to int32) string {
	if to > from {
		return "up"
	}
	return "down"
}
