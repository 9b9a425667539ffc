package parity

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas/benchload"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// benchMetrics builds the sample map on every call, as upstream's metrics client does from the
// metrics API response.
type benchMetrics struct {
	fakeMetrics
	w *benchload.Workload
}

func (m benchMetrics) GetResourceMetric(context.Context, corev1.ResourceName, string, labels.Selector, string) (metricsclient.PodMetricsInfo, time.Time, error) {
	info := make(metricsclient.PodMetricsInfo, len(m.w.Samples))
	var ts time.Time
	for _, s := range m.w.Samples {
		info[s.Pod] = metricsclient.PodMetric{Value: s.MilliValue, Timestamp: s.Timestamp, Window: s.Window}
		ts = s.Timestamp
	}
	return info, ts, nil
}

// BenchmarkUpstreamResourceReplicas measures upstream v1.37.2's GetResourceReplicas (informer
// indexer lister, cpu utilization) on benchload's workload, the one BenchmarkDecide decides on,
// so both figures come from the same machine and the same pods (make bench-compare).
func BenchmarkUpstreamResourceReplicas(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			now := time.Now()
			w := benchload.New(n, now)
			pods := make([]*corev1.Pod, len(w.Pods))
			for i := range w.Pods {
				pods[i] = &w.Pods[i]
			}
			lister, err := indexerPodLister(pods)
			if err != nil {
				b.Fatal(err)
			}
			tol, err := newTolerances(0.1, 0.1)
			if err != nil {
				b.Fatal(err)
			}
			calc := podautoscaler.NewReplicaCalculator(benchMetrics{w: &w}, lister, 5*time.Minute, 30*time.Second)
			selector := labels.SelectorFromSet(labels.Set{benchload.LabelKey: benchload.LabelValue})
			ctx := context.Background()

			want, err := oursOnBenchWorkload(&w, pods, now)
			if err != nil {
				b.Fatal(err)
			}
			got, _, _, _, err := calc.GetResourceReplicas(ctx, int32(n), benchload.TargetUtilization, corev1.ResourceCPU, tol, benchload.Namespace, selector, "")
			if err != nil || got != want {
				b.Fatalf("upstream proposes %d replicas (err %v), our core %d: the benchmarks would not measure the same decision", got, err, want)
			}

			b.ReportAllocs()
			cpu, _ := benchload.ProcessCPU()
			for b.Loop() {
				if _, _, _, _, err := calc.GetResourceReplicas(ctx, int32(n), benchload.TargetUtilization, corev1.ResourceCPU, tol, benchload.Namespace, selector, ""); err != nil {
					b.Fatal(err)
				}
			}
			benchload.CPUPerOp(b, cpu)
		})
	}
}

// oursOnBenchWorkload is our core's proposal for the benchmark workload.
func oursOnBenchWorkload(w *benchload.Workload, pods []*corev1.Pod, now time.Time) (int32, error) {
	target := int32(benchload.TargetUtilization)
	samples := sampleset.New(len(w.Samples))
	for _, s := range w.Samples {
		samples.Add(s.Pod, sampleset.Sample{MilliValue: s.MilliValue, Timestamp: sampleset.Timestamp(s.Timestamp), Window: s.Window})
	}
	d := replicas.Decide(replicas.Input{
		HPA: &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: benchload.Namespace},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MaxReplicas:    int32(4 * len(pods)),
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
				}}},
			},
		},
		Scale:   &replicas.Scale{SpecReplicas: int32(len(pods)), StatusReplicas: int32(len(pods)), Selector: benchload.Selector},
		Pods:    pods,
		Metrics: []replicas.MetricData{{PodSamples: samples, Timestamp: now}},
		Now:     now,
		Config:  replicas.DefaultConfig(),
	})
	if len(d.Metrics) != 1 || d.Metrics[0].Err != nil {
		return 0, fmt.Errorf("our core did not compute the metric: phase %s, err %v", d.Phase, d.Err)
	}
	return d.Metrics[0].Replicas, nil
}
