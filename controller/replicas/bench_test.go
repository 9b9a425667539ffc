package replicas

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas/benchload"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// BenchmarkDecide turns benchload's workload into an Input as run's controller does per sync
// (a pod slice from the informer cache, whose stripped pods share one container array; the
// PodSamples a metrics decoder fills, each time turned into Unix nanoseconds as the decoder
// does, which the core takes as it is) and decides as
// run does, without the per-pod account its line and table outputs never show; the parity
// module runs upstream's calculator on the same workload (make bench-compare). Not timed here,
// though run's gather does it per sync: listing the pods from the indexer (upstream's
// benchmark times its lister); controller's BenchmarkListAndDecide times that too. Without the
// account, run does not sort them.
func BenchmarkDecide(b *testing.B) { benchDecide(b, true) }

// BenchmarkDecideWithPodTreatments is BenchmarkDecide with the per-pod account that explain
// and run -o json show.
func BenchmarkDecideWithPodTreatments(b *testing.B) { benchDecide(b, false) }

func benchDecide(b *testing.B, omitPodTreatments bool) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w := benchload.New(n, testNow)
			h := hpa(testbuild.Max(int32(4*n)), testbuild.Metrics(testbuild.CPUUtilization(benchload.TargetUtilization)))
			cfg := DefaultConfig()
			scale := &Scale{SpecReplicas: int32(n), StatusReplicas: int32(n), Selector: benchload.Selector}
			b.ReportAllocs()
			cpu, _ := benchload.ProcessCPU()
			for b.Loop() {
				pods := make([]*corev1.Pod, len(w.Pods))
				for i := range w.Pods {
					pods[i] = &w.Pods[i]
				}
				m := sampleset.New(len(w.Samples))
				for _, s := range w.Samples {
					m.Add(s.Pod, sampleset.Sample{MilliValue: s.MilliValue, Timestamp: sampleset.Timestamp(s.Timestamp), Window: s.Window})
				}
				d := Decide(Input{
					HPA: h, Scale: scale, Pods: pods,
					Metrics: []MetricData{{PodSamples: m, Timestamp: testNow}},
					History: History{Recommendations: []Recommendation{}},
					Now:     testNow, Config: cfg,
					OmitPodTreatments: omitPodTreatments,
				})
				if d.Phase != PhaseComputed {
					b.Fatalf("phase %s: %v", d.Phase, d.Err)
				}
			}
			benchload.CPUPerOp(b, cpu)
		})
	}
}
