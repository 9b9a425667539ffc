package sim

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func withMetric(h *autoscalingv2.HorizontalPodAutoscaler, m autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	h.Spec.Metrics = []autoscalingv2.MetricSpec{m}
	return h
}

func quantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestRunEveryMetricType(t *testing.T) {
	ingress := autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"}
	for _, tc := range []struct {
		name   string
		csv    string
		metric autoscalingv2.MetricSpec
		want   string
	}{
		{
			// The working set is a gauge: the scrape at the step's instant (after the step, by
			// the loop's order) sees it whole.
			name: "memory average value: the scrape at the step sees the new working sets",
			csv:  "time,memory\n0,400000000\n60,1600000000\n",
			metric: autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantity("200M")}}},
			want: "1m0s: 2->4; 1m15s: 4->8; ",
		},
		{
			name: "a Pods metric: the demand split over Ready pods, read at the sync",
			csv:  "time,qps\n0,20\n60,100\n",
			metric: autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantity("10")}}},
			want: "1m0s: 2->4; 1m15s: 4->8; 1m30s: 8->10; ",
		},
		{
			// The value does not fall as pods are added: the ratio stays 6 and only the
			// rate limits and maxReplicas slow it.
			name: "an Object metric's value",
			csv:  "time,requests\n0,100\n60,600\n",
			metric: autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: ingress, Metric: autoscalingv2.MetricIdentifier{Name: "requests"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: quantity("100")}}},
			want: "1m0s: 2->4; 1m15s: 4->8; 1m30s: 8->10; ",
		},
		{
			name: "an External metric's average value per pod",
			csv:  "time,queue\n0,20\n60,90\n",
			metric: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantity("10")}}},
			want: "1m0s: 2->4; 1m15s: 4->8; 1m30s: 8->9; ",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{
				Model:    DefaultModel(),
				Load:     curve(t, tc.csv),
				Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
				Variants: []Variant{{Name: "as is", HPA: withMetric(cpuHPA(50, 1, 10, nil), tc.metric)}},
				Duration: 3 * time.Minute,
			}
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(res.Variants[0]); got != tc.want {
				for _, st := range res.Variants[0].Steps {
					t.Logf("%6s %d->%d pods=%d ready=%d v=%v %s", st.At, st.Current, st.Replicas, st.Pods, st.Ready, st.Metrics, st.Constraint)
				}
				t.Errorf("scale changes %q, want %q", got, tc.want)
			}
		})
	}
}

func TestASidecarUsesTheIdleFloorAndContainerResourceReadsOneContainer(t *testing.T) {
	pod := corev1.PodSpec{Containers: []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}},
		{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
	}}
	fifty := int32(50)
	target := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &fifty}
	for _, tc := range []struct {
		name   string
		metric autoscalingv2.MetricSpec
		want   float64
	}{
		// (100m + the sidecar's 1m) of 250m requested.
		{"the pod's cpu: both containers over both requests", autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: target}}, 40},
		{"the app container's cpu over its request", autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU, Container: "app", Target: target}}, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,200\n60,200\n"), Workload: Workload{Replicas: 2, Pod: pod},
				Variants: []Variant{{Name: "v", HPA: withMetric(cpuHPA(50, 1, 10, nil), tc.metric)}}}
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Variants[0].Steps[0].Metrics[0]; got != tc.want {
				t.Errorf("utilization %v%%, want %v%%", got, tc.want)
			}
		})
	}
}
