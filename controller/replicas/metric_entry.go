package replicas

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// MetricInput is one metric's calculation without a whole HPA: what upstream's replica
// calculator is given for one entry of spec.metrics.
type MetricInput struct {
	// Index of the metric in spec.metrics (it labels the result and the trace).
	Index int
	// Spec is the metric as written; Data what was fetched for it.
	Spec autoscalingv2.MetricSpec
	Data MetricData
	// Pods are the pods the target's selector matches; Scale the target's scale (SpecReplicas
	// is the current count, StatusReplicas divides per-pod Object and External values).
	Pods  []*corev1.Pod
	Scale Scale
	// Namespace of the HPA (Object metric errors name it).
	Namespace string
	// Tolerances in force; nil means Config.Tolerance in both directions.
	Tolerances *Tolerances
	Now        time.Time
	Config     Config
}

// ComputeMetric is the calculator for one metric: the proposal, status, pod treatments, error
// and condition reason exactly as Decide computes them for that metric, and the trace steps it
// adds.
func ComputeMetric(in MetricInput) (MetricResult, []Step) {
	tol := tolerancesFor(&autoscalingv2.HorizontalPodAutoscaler{}, in.Config)
	if in.Tolerances != nil {
		tol = *in.Tolerances
	}
	c := calcFor(in.Pods, in.Scale, in.Namespace, tol, in.Now, in.Config)
	var d decision
	d.init(6, false)
	var r MetricResult
	c.compute(&d, in.Index, &in.Spec, in.Data, &r)
	d.finish()
	return r, d.Trace
}

// Current is the metric's current value whichever of the five status members its type uses;
// false when the metric failed.
func (r *MetricResult) Current() (autoscalingv2.MetricValueStatus, bool) {
	s := r.Status
	switch {
	case s.Type == autoscalingv2.ResourceMetricSourceType && s.Resource != nil:
		return s.Resource.Current, true
	case s.Type == autoscalingv2.ContainerResourceMetricSourceType && s.ContainerResource != nil:
		return s.ContainerResource.Current, true
	case s.Type == autoscalingv2.PodsMetricSourceType && s.Pods != nil:
		return s.Pods.Current, true
	case s.Type == autoscalingv2.ObjectMetricSourceType && s.Object != nil:
		return s.Object.Current, true
	case s.Type == autoscalingv2.ExternalMetricSourceType && s.External != nil:
		return s.External.Current, true
	}
	return autoscalingv2.MetricValueStatus{}, false
}
