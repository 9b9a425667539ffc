package replicas

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchSample is one metric as the metrics layer hands it over before it becomes a map entry.
type benchSample struct {
	pod    string
	sample Sample
}

// benchWorld is the prebuilt state a controller holds (informer cache, decoded metrics); each
// iteration turns it into an Input as the controller would and decides.
type benchWorld struct {
	pods    []corev1.Pod
	samples []benchSample
}

// newBenchWorld builds n pods with two containers (250m cpu request each); every tenth pod is
// unready (never became ready), every pod whose index is 3 mod 50, 17 mod 50 or 31 mod 50
// (6 %) has no metric; the others use 60 % of their request against a 50 % target.
func newBenchWorld(n int) benchWorld {
	w := benchWorld{pods: make([]corev1.Pod, n)}
	start := metav1.NewTime(testNow.Add(-time.Hour))
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	for i := range w.pods {
		ready := corev1.ConditionTrue
		if i%10 == 9 {
			ready = corev1.ConditionFalse
		}
		name := fmt.Sprintf("web-%d", i)
		w.pods[i] = corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}},
				{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: req}},
			}},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				StartTime:  &start,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: start}},
			},
		}
		if m := i % 50; m == 3 || m == 17 || m == 31 {
			continue
		}
		w.samples = append(w.samples, benchSample{pod: name, sample: Sample{MilliValue: 300, Timestamp: testNow.Add(-15 * time.Second), Window: 30 * time.Second}})
	}
	return w
}

func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w := newBenchWorld(n)
			h := hpa(withMax(int32(4*n)), withMetrics(cpuUtil(50)))
			cfg := DefaultConfig()
			scale := &Scale{SpecReplicas: int32(n), StatusReplicas: int32(n), Selector: testSelector}
			b.ReportAllocs()
			for b.Loop() {
				pods := make([]*corev1.Pod, len(w.pods))
				for i := range w.pods {
					pods[i] = &w.pods[i]
				}
				m := make(map[string]Sample, len(w.samples))
				for _, s := range w.samples {
					m[s.pod] = s.sample
				}
				d := Decide(Input{
					HPA: h, Scale: scale, Pods: pods,
					Metrics: []MetricData{{PodSamples: m, Timestamp: testNow}},
					History: History{Recommendations: []Recommendation{}},
					Now:     testNow, Config: cfg,
				})
				if d.Phase != PhaseComputed {
					b.Fatalf("phase %s: %v", d.Phase, d.Err)
				}
			}
		})
	}
}
