package replicas

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestStatusEqualKnowsEveryField fails when autoscaling/v2 gains a status field statusEqual
// does not compare: add it there, then here.
func TestStatusEqualKnowsEveryField(t *testing.T) {
	known := map[string][]string{
		"HorizontalPodAutoscalerStatus":    {"ObservedGeneration", "LastScaleTime", "CurrentReplicas", "DesiredReplicas", "CurrentMetrics", "Conditions"},
		"HorizontalPodAutoscalerCondition": {"Type", "Status", "LastTransitionTime", "Reason", "Message", "ObservedGeneration"},
		"MetricStatus":                     {"Type", "Object", "Pods", "Resource", "ContainerResource", "External"},
		"ObjectMetricStatus":               {"Metric", "Current", "DescribedObject"},
		"PodsMetricStatus":                 {"Metric", "Current"},
		"ResourceMetricStatus":             {"Name", "Current"},
		"ContainerResourceMetricStatus":    {"Name", "Current", "Container"},
		"ExternalMetricStatus":             {"Metric", "Current"},
		"MetricValueStatus":                {"Value", "AverageValue", "AverageUtilization"},
		"MetricIdentifier":                 {"Name", "Selector"},
		"CrossVersionObjectReference":      {"Kind", "Name", "APIVersion"},
		"LabelSelector":                    {"MatchLabels", "MatchExpressions"},
		"LabelSelectorRequirement":         {"Key", "Operator", "Values"},
	}
	leaves := map[reflect.Type]bool{reflect.TypeFor[metav1.Time](): true, reflect.TypeFor[resource.Quantity](): true}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || leaves[typ] || seen[typ] {
			return
		}
		seen[typ] = true
		want, ok := known[typ.Name()]
		if !ok {
			t.Errorf("statusEqual does not know type %s", typ)
			return
		}
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
			walk(typ.Field(i).Type)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %v, statusEqual compares %v", typ.Name(), got, want)
		}
	}
	walk(reflect.TypeFor[autoscalingv2.HorizontalPodAutoscalerStatus]())
}

func TestStatusEqualIsSemanticDeepEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 13))
	equal := 0
	for i := range 20000 {
		a := randomStatus(r)
		b := a.DeepCopy()
		for range r.IntN(3) {
			mutate(r, b)
		}
		want := equality.Semantic.DeepEqual(&a, b)
		if got := statusEqual(&a, b); got != want {
			t.Fatalf("case %d: statusEqual = %v, Semantic.DeepEqual = %v\na: %+v\nb: %+v", i, got, want, a, *b)
		}
		if want {
			equal++
		}
	}
	if equal < 2000 || equal > 18000 {
		t.Errorf("%d of 20000 pairs equal: the generator explores one side only", equal)
	}
}

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func randomStatus(r *rand.Rand) autoscalingv2.HorizontalPodAutoscalerStatus {
	s := autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: r.Int32N(3), DesiredReplicas: r.Int32N(3)}
	if r.IntN(2) == 0 {
		s.ObservedGeneration = ptr.To(int64(r.IntN(2)))
	}
	if r.IntN(2) == 0 {
		s.LastScaleTime = &metav1.Time{Time: t0.Add(time.Duration(r.IntN(2)) * time.Second)}
	}
	for range r.IntN(3) {
		s.CurrentMetrics = append(s.CurrentMetrics, randomMetric(r))
	}
	for range r.IntN(4) {
		s.Conditions = append(s.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
			Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "R", Message: "m",
			LastTransitionTime: metav1.Time{Time: t0},
		})
	}
	return s
}

func randomValue(r *rand.Rand) autoscalingv2.MetricValueStatus {
	var v autoscalingv2.MetricValueStatus
	switch r.IntN(4) {
	case 0:
		v.Value = ptr.To(resource.MustParse("1"))
	case 1:
		v.AverageValue = ptr.To(resource.MustParse("500m"))
	case 2:
		v.AverageUtilization = ptr.To(int32(50))
	}
	return v
}

func randomIdentifier(r *rand.Rand) autoscalingv2.MetricIdentifier {
	id := autoscalingv2.MetricIdentifier{Name: "qps"}
	if r.IntN(2) == 0 {
		id.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	}
	return id
}

func randomMetric(r *rand.Rand) autoscalingv2.MetricStatus {
	switch r.IntN(5) {
	case 0:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: randomValue(r)}}
	case 1:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: corev1.ResourceCPU, Container: "app", Current: randomValue(r)}}
	case 2:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: randomIdentifier(r), Current: randomValue(r)}}
	case 3:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{Metric: randomIdentifier(r), Current: randomValue(r),
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "main", APIVersion: "networking.k8s.io/v1"}}}
	}
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{Metric: randomIdentifier(r), Current: randomValue(r)}}
}

// mutate changes one thing in s: a value (unequal), or only its form (equal: nil for
// empty, another format of a quantity, another location of a time).
func mutate(r *rand.Rand, s *autoscalingv2.HorizontalPodAutoscalerStatus) {
	switch r.IntN(17) {
	case 0:
		s.CurrentReplicas++
	case 1:
		s.ObservedGeneration = nil
	case 2:
		if s.LastScaleTime != nil {
			s.LastScaleTime = &metav1.Time{Time: s.LastScaleTime.In(time.FixedZone("x", 3600))}
		}
	case 3:
		if s.LastScaleTime != nil {
			s.LastScaleTime = &metav1.Time{Time: s.LastScaleTime.Add(time.Nanosecond)}
		}
	case 4:
		if len(s.Conditions) == 0 {
			s.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{}
		} else {
			s.Conditions[r.IntN(len(s.Conditions))].Message += "!"
		}
	case 5:
		if len(s.CurrentMetrics) == 0 {
			s.CurrentMetrics = nil
		} else {
			s.CurrentMetrics = s.CurrentMetrics[:len(s.CurrentMetrics)-1]
		}
	case 6:
		if len(s.Conditions) > 0 {
			c := &s.Conditions[r.IntN(len(s.Conditions))]
			c.LastTransitionTime = metav1.Time{Time: c.LastTransitionTime.Add(time.Second)}
		}
	case 7:
		if len(s.Conditions) > 0 {
			s.Conditions[r.IntN(len(s.Conditions))].ObservedGeneration = ptr.To(int64(1))
		}
	default:
		if len(s.CurrentMetrics) == 0 {
			return
		}
		m := &s.CurrentMetrics[r.IntN(len(s.CurrentMetrics))]
		var v *autoscalingv2.MetricValueStatus
		var id *autoscalingv2.MetricIdentifier
		switch {
		case m.Resource != nil:
			v = &m.Resource.Current
		case m.ContainerResource != nil:
			v = &m.ContainerResource.Current
			if r.IntN(3) == 0 {
				m.ContainerResource.Container = "side"
			}
		case m.Pods != nil:
			v, id = &m.Pods.Current, &m.Pods.Metric
		case m.Object != nil:
			v, id = &m.Object.Current, &m.Object.Metric
			if r.IntN(3) == 0 {
				m.Object.DescribedObject.Name = "other"
			}
		case m.External != nil:
			v, id = &m.External.Current, &m.External.Metric
		}
		switch r.IntN(7) {
		case 0:
			if v.Value != nil {
				v.Value = ptr.To(resource.MustParse("1000m")) // the same value
			}
		case 1:
			if v.AverageValue != nil {
				v.AverageValue = ptr.To(resource.MustParse("0.5")) // the same value
			}
		case 2:
			if v.AverageUtilization != nil {
				*v.AverageUtilization++
			}
		case 3:
			v.Value = ptr.To(resource.MustParse("2"))
		case 4:
			if id != nil && id.Selector != nil {
				id.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{} // empty is nil
			}
		case 5:
			if id != nil && id.Selector != nil {
				id.Selector.MatchLabels = nil
			}
		case 6:
			if id != nil {
				id.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}}}
			}
		}
	}
}
