package replicas

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestComputeMetricIsDecidesCalculator: for every metric Decide computes on the fuzz scenarios,
// ComputeMetric given the same metric, pods, scale and tolerances returns the same result and
// the same trace steps.
func TestComputeMetricIsDecidesCalculator(t *testing.T) {
	compared := 0
	for seed := uint64(0); seed < 3000; seed++ {
		in := scenario(seed)
		d := Decide(in)
		if d.Metrics == nil {
			continue
		}
		for i, want := range d.Metrics {
			got, steps := ComputeMetric(MetricInput{
				Index: i, Spec: in.HPA.Spec.Metrics[i], Data: in.Metrics[i], Pods: in.Pods, Scale: *in.Scale,
				Namespace: in.HPA.Namespace, Tolerances: &d.Tolerances, Now: in.Now, Config: in.Config,
			})
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })); diff != "" {
				t.Fatalf("seed %d metric %d (-Decide +ComputeMetric):\n%s", seed, i, diff)
			}
			var wantSteps []Step
			for _, s := range d.Trace {
				if s.Metric == i {
					wantSteps = append(wantSteps, s)
				}
			}
			if diff := cmp.Diff(wantSteps, steps); diff != "" {
				t.Fatalf("seed %d metric %d steps (-Decide +ComputeMetric):\n%s", seed, i, diff)
			}
			compared++
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d metrics compared", compared)
	}
}
