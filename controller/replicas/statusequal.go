package replicas

import (
	"maps"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusEqual is equality.Semantic.DeepEqual on two HPA statuses, written out: quantities
// equal by value, times by instant, nil and empty slices and maps alike, nil and non-nil
// pointers not. Upstream skips the status write when the two are equal; the reflective
// comparison cost a simulation a fifth of its time. TestStatusEqualIsSemanticDeepEqual holds
// it to the original, and fails when autoscaling/v2 gains a field it does not compare.
func statusEqual(a, b *autoscalingv2.HorizontalPodAutoscalerStatus) bool {
	return eqPtr(a.ObservedGeneration, b.ObservedGeneration, eqInt64) &&
		eqPtr(a.LastScaleTime, b.LastScaleTime, eqTime) &&
		a.CurrentReplicas == b.CurrentReplicas &&
		a.DesiredReplicas == b.DesiredReplicas &&
		eqSlice(a.CurrentMetrics, b.CurrentMetrics, eqMetricStatus) &&
		eqSlice(a.Conditions, b.Conditions, eqCondition)
}

func eqTime(a, b metav1.Time) bool { return a.Equal(&b) }

func eqInt64(a, b int64) bool { return a == b }

func eqPtr[T any](a, b *T, eq func(x, y T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return eq(*a, *b)
}

// eqSlice equates nil and empty, as Semantic.DeepEqual does.
func eqSlice[T any](a, b []T, eq func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !eq(a[i], b[i]) {
			return false
		}
	}
	return true
}

func eqCondition(a, b autoscalingv2.HorizontalPodAutoscalerCondition) bool {
	return a.Type == b.Type && a.Status == b.Status && eqTime(a.LastTransitionTime, b.LastTransitionTime) &&
		a.Reason == b.Reason && a.Message == b.Message && eqPtr(a.ObservedGeneration, b.ObservedGeneration, eqInt64)
}

func eqQuantity(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }

func eqValue(a, b autoscalingv2.MetricValueStatus) bool {
	return eqPtr(a.Value, b.Value, eqQuantity) && eqPtr(a.AverageValue, b.AverageValue, eqQuantity) &&
		eqPtr(a.AverageUtilization, b.AverageUtilization, func(x, y int32) bool { return x == y })
}

func eqIdentifier(a, b autoscalingv2.MetricIdentifier) bool {
	return a.Name == b.Name && eqPtr(a.Selector, b.Selector, eqLabelSelector)
}

func eqLabelSelector(a, b metav1.LabelSelector) bool {
	return (len(a.MatchLabels) == 0 && len(b.MatchLabels) == 0 || maps.Equal(a.MatchLabels, b.MatchLabels)) &&
		eqSlice(a.MatchExpressions, b.MatchExpressions, func(x, y metav1.LabelSelectorRequirement) bool {
			return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
		})
}

func eqMetricStatus(a, b autoscalingv2.MetricStatus) bool {
	return a.Type == b.Type &&
		eqPtr(a.Object, b.Object, func(x, y autoscalingv2.ObjectMetricStatus) bool {
			return eqIdentifier(x.Metric, y.Metric) && eqValue(x.Current, y.Current) && x.DescribedObject == y.DescribedObject
		}) &&
		eqPtr(a.Pods, b.Pods, func(x, y autoscalingv2.PodsMetricStatus) bool {
			return eqIdentifier(x.Metric, y.Metric) && eqValue(x.Current, y.Current)
		}) &&
		eqPtr(a.Resource, b.Resource, func(x, y autoscalingv2.ResourceMetricStatus) bool {
			return x.Name == y.Name && eqValue(x.Current, y.Current)
		}) &&
		eqPtr(a.ContainerResource, b.ContainerResource, func(x, y autoscalingv2.ContainerResourceMetricStatus) bool {
			return x.Name == y.Name && x.Container == y.Container && eqValue(x.Current, y.Current)
		}) &&
		eqPtr(a.External, b.External, func(x, y autoscalingv2.ExternalMetricStatus) bool {
			return eqIdentifier(x.Metric, y.Metric) && eqValue(x.Current, y.Current)
		})
}
