package parity

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// benchWorkload mirrors BenchmarkDecide's workload in controller/replicas: n pods with two
// containers requesting 250m cpu each, every tenth pod never became ready, 6 % of the pods
// (index 3, 17 or 31 mod 50) have no sample, the others use 300m against a 50 % target.
type benchWorkload struct {
	pods    []*corev1.Pod
	names   []string // pods with a sample
	sampled metricsclient.PodMetric
}

func newBenchWorkload(n int, now time.Time) benchWorkload {
	w := benchWorkload{sampled: metricsclient.PodMetric{Value: 300, Timestamp: now.Add(-15 * time.Second), Window: 30 * time.Second}}
	start := metav1.NewTime(now.Add(-time.Hour))
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	for i := range n {
		ready := corev1.ConditionTrue
		if i%10 == 9 {
			ready = corev1.ConditionFalse
		}
		name := fmt.Sprintf("web-%d", i)
		w.pods = append(w.pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{podLabelKey: podLabelValue}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}},
				{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: req}},
			}},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				StartTime:  &start,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: start}},
			},
		})
		if m := i % 50; m == 3 || m == 17 || m == 31 {
			continue
		}
		w.names = append(w.names, name)
	}
	return w
}

// benchMetrics builds the sample map on every call, as upstream's metrics client does from the
// metrics API response.
type benchMetrics struct {
	fakeMetrics
	w *benchWorkload
}

func (m benchMetrics) GetResourceMetric(context.Context, corev1.ResourceName, string, labels.Selector, string) (metricsclient.PodMetricsInfo, time.Time, error) {
	info := make(metricsclient.PodMetricsInfo, len(m.w.names))
	for _, name := range m.w.names {
		info[name] = m.w.sampled
	}
	return info, m.w.sampled.Timestamp, nil
}

// BenchmarkUpstreamResourceReplicas measures upstream v1.37.2's GetResourceReplicas (informer
// indexer lister, cpu utilization) on BenchmarkDecide's workload, so both figures come from the
// same machine.
func BenchmarkUpstreamResourceReplicas(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			now := time.Now()
			w := newBenchWorkload(n, now)
			lister, err := indexerPodLister(w.pods)
			if err != nil {
				b.Fatal(err)
			}
			tol, err := newTolerances(0.1, 0.1)
			if err != nil {
				b.Fatal(err)
			}
			calc := podautoscaler.NewReplicaCalculator(benchMetrics{w: &w}, lister, 5*time.Minute, 30*time.Second)
			selector := labels.SelectorFromSet(labels.Set{podLabelKey: podLabelValue})
			ctx := context.Background()

			want, err := oursOnBenchWorkload(&w, now)
			if err != nil {
				b.Fatal(err)
			}
			got, _, _, _, err := calc.GetResourceReplicas(ctx, int32(n), 50, corev1.ResourceCPU, tol, namespace, selector, "")
			if err != nil || got != want {
				b.Fatalf("upstream proposes %d replicas (err %v), our core %d: the benchmarks would not measure the same decision", got, err, want)
			}

			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, _, err := calc.GetResourceReplicas(ctx, int32(n), 50, corev1.ResourceCPU, tol, namespace, selector, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// oursOnBenchWorkload is our core's proposal for the benchmark workload.
func oursOnBenchWorkload(w *benchWorkload, now time.Time) (int32, error) {
	target := int32(50)
	samples := make(map[string]replicas.Sample, len(w.names))
	for _, name := range w.names {
		samples[name] = replicas.Sample{MilliValue: w.sampled.Value, Timestamp: w.sampled.Timestamp, Window: w.sampled.Window}
	}
	d := replicas.Decide(replicas.Input{
		HPA: &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MaxReplicas:    int32(4 * len(w.pods)),
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
				}}},
			},
		},
		Scale:   &replicas.Scale{SpecReplicas: int32(len(w.pods)), StatusReplicas: int32(len(w.pods)), Selector: podLabelKey + "=" + podLabelValue},
		Pods:    w.pods,
		Metrics: []replicas.MetricData{{PodSamples: samples, Timestamp: w.sampled.Timestamp}},
		Now:     now,
		Config:  replicas.DefaultConfig(),
	})
	if len(d.Metrics) != 1 || d.Metrics[0].Err != nil {
		return 0, fmt.Errorf("our core did not compute the metric: phase %s, err %v", d.Phase, d.Err)
	}
	return d.Metrics[0].Replicas, nil
}
