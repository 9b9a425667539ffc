package search

import (
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// cpuHPA is web in shop on a cpu target of pct%, min and max as given, behavior unset.
func cpuHPA(pct, minR, maxR int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(minR),
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(pct)},
			}}},
		},
	}
}

// simSpec plays csv (time in seconds, cpu in millicores) on pods of 200m, replicas at the start.
func simSpec(t testing.TB, csv string, replicas int32) sim.Spec {
	t.Helper()
	c, err := load.Parse("load.csv", []byte("time,cpu\n"+csv))
	if err != nil {
		t.Fatal(err)
	}
	pod := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}}}}
	return sim.Spec{Model: sim.DefaultModel(), Load: c, Workload: sim.Workload{Replicas: replicas, Pod: pod}, Duration: c.End()}
}

// steps is a load of cpu millicores held for each duration in turn, then an end point.
func steps(pairs ...any) string {
	var b strings.Builder
	var at time.Duration
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "%d,%d\n", int(at.Seconds()), pairs[i].(int))
		at += pairs[i+1].(time.Duration)
	}
	fmt.Fprintf(&b, "%d,%d\n", int(at.Seconds()), pairs[len(pairs)-2].(int))
	return b.String()
}
