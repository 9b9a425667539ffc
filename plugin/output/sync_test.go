package output

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// TestSyncActionSaysWhatHoldsTheCount: a count held because the pods not yet ready or
// measured were counted in (the rebalancing pass) says so, in explain's words, rather than
// the bare "recommended size matches current size" beside a metric far above its target.
func TestSyncActionSaysWhatHoldsTheCount(t *testing.T) {
	cpu := func(ratio, rebalanced float64, proposal int32, ready int, util int32) replicas.MetricResult {
		return replicas.MetricResult{Index: 0, Type: autoscalingv2.ResourceMetricSourceType, Name: cpuName, Replicas: proposal,
			Ratio: ratio, RebalancedRatio: rebalanced, WithinTolerance: replicas.Tolerances{Up: 0.1, Down: 0.1}.Within(rebalanced),
			ReadyPods: ready, Status: cpuStatus(util, "100m")}
	}
	qps := func(ratio, rebalanced float64, proposal int32, ready int, avg string) replicas.MetricResult {
		q := resource.MustParse(avg)
		return replicas.MetricResult{Index: 1, Type: autoscalingv2.PodsMetricSourceType, Name: "pods metric qps", Replicas: proposal,
			Ratio: ratio, RebalancedRatio: rebalanced, ReadyPods: ready,
			Status: autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
				Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Current: autoscalingv2.MetricValueStatus{AverageValue: &q}}}}
	}
	// sync is demo/web at 6 replicas, cpu at 50%, plus qps at 10 when results has two entries.
	sync := func(results ...replicas.MetricResult) Sync {
		specs := []autoscalingv2.MetricSpec{testbuild.CPUUtilization(50), testbuild.PodsAverage("qps", 10_000)}[:len(results)]
		return Sync{
			Key:   "demo/web",
			Input: replicas.Input{HPA: hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = specs }), Scale: &replicas.Scale{SpecReplicas: 6, StatusReplicas: 6}, Now: now, Config: replicas.DefaultConfig()},
			Decision: replicas.Decision{Phase: replicas.PhaseComputed, CurrentReplicas: 6, MinReplicas: 1, MaxReplicas: 10,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.1}, Metrics: results, MetricName: cpuName, MetricReplicas: 6, DesiredReplicas: 6,
				Stabilization: &replicas.Stabilization{DownWindow: 5 * time.Minute, Recommendation: 6, UpRecommendation: 6, DownRecommendation: 6, Result: 6, Reason: "ReadyForNewScale"},
				Limit:         &replicas.Limit{Input: 6, Result: 6, UpLimit: 12, Reason: "DesiredWithinRange"}},
		}
	}
	cases := []struct {
		name string
		s    Sync
		want string
	}{
		{"a scale-up held by unready and unmeasured pods counted as 0 says so",
			sync(cpu(3.3, 1.1, 6, 2, 165)),
			"hold: cpu 165% on the 2 ready pods measured, but pods unready or not yet measured are counted as 0 on a scale-up"},
		{"a scale-up held by rebalancing that flipped the direction says so",
			sync(cpu(1.5, 0.75, 6, 1, 75)),
			"hold: cpu 75% on the 1 ready pod measured, but pods unready or not yet measured are counted as 0 on a scale-up"},
		{"a scale-down held by unmeasured pods counted as 100% of request says so",
			sync(cpu(0.4, 0.95, 6, 3, 20)),
			"hold: cpu 20% on the 3 ready pods measured, but pods not yet measured are counted as 100% of request on a scale-down"},
		{"a pods metric held on a scale-down says its pods not yet measured count at the target",
			sync(cpu(0.5, 0.5, 3, 6, 25), qps(0.5, 0.92, 6, 4, "5")),
			"hold: qps 5 on the 4 ready pods measured, but pods not yet measured are counted at the target on a scale-down"},
		{"a pods metric held on a scale-up names the metric and its value",
			sync(cpu(1, 1, 6, 6, 50), qps(3, 1.05, 6, 2, "30")),
			"hold: qps 30 on the 2 ready pods measured, but pods unready or not yet measured are counted as 0 on a scale-up"},
		{"a scale-down held by rebalancing while another metric holds the count anyway is the plain hold",
			sync(cpu(0.4, 0.95, 6, 3, 20), qps(1, 1, 6, 6, "10")),
			"hold: recommended size matches current size"},
		{"a metric within tolerance on every pod is the plain hold",
			sync(cpu(1.05, 1.05, 6, 6, 52)),
			"hold: recommended size matches current size"},
		{"a first pass out of tolerance without rebalancing is the plain hold",
			sync(cpu(1.5, 1.5, 6, 4, 75)),
			"hold: recommended size matches current size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Action(); got != tc.want {
				t.Errorf("Action():\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
