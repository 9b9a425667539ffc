package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
)

// TestHalfADayOfTheBenchmarkLoadPlaysAsBefore holds every figure and every sync of the
// benchmark's load (half a day: the wave's rise and three spikes) for specs that take each
// path of the decision (legacy, windows, Pods and Percent policies, Min and Disabled select
// policies, tolerances per direction, the risk against another spec's target): work on the
// simulator's speed must not move a single decision. The golden was written before that work;
// -update rewrites it, which a change that means to move decisions says why it does.
func TestHalfADayOfTheBenchmarkLoadPlaysAsBefore(t *testing.T) {
	pods := func(v, period int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
	}
	percent := func(v, period int32) autoscalingv2.HPAScalingPolicy {
		return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
	}
	minSelect, disabled := autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect
	tolerance := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	s := Spec{
		Model:    DefaultModel(),
		Load:     dayLoad(t),
		Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
		Variants: []Variant{
			{Name: "legacy", HPA: cpuHPA(50, 1, 40, nil)},
			{Name: "legacy at 70%", HPA: cpuHPA(70, 1, 40, nil)},
			{Name: "slow down", HPA: cpuHPA(50, 2, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(300)), Policies: []autoscalingv2.HPAScalingPolicy{pods(4, 60)}},
			})},
			{Name: "fast down", HPA: cpuHPA(50, 1, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(60))},
			})},
			{Name: "min up, never down", HPA: cpuHPA(50, 1, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(30)), SelectPolicy: &minSelect, Policies: []autoscalingv2.HPAScalingPolicy{percent(50, 60), pods(2, 30)}},
				ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled},
			})},
			{Name: "tolerances", HPA: cpuHPA(50, 1, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{Tolerance: tolerance("0.05")},
				ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: tolerance("0.2"), StabilizationWindowSeconds: ptr.To(int32(120)), Policies: []autoscalingv2.HPAScalingPolicy{percent(20, 60), pods(1, 15)}},
			})},
			{Name: "80% against 50%", HPA: cpuHPA(80, 1, 40, nil), RiskAgainst: cpuHPA(50, 1, 40, nil)},
		},
		Duration: 12 * time.Hour,
	}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	s.SummaryOnly = true
	only, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, v := range res.Variants {
		sum := v.Summary
		fmt.Fprintf(&b, "%s: %d syncs (steps %016x); peak %d at %s; pod-seconds %v; above target %v s, longest %v s; %d up, %d down; held back by %v\n",
			v.Name, len(v.Steps), stepsDigest(v.Steps), sum.PeakReplicas, sum.PeakAt, sum.PodSeconds, sum.SecondsAboveTarget, sum.LongestAboveTarget,
			sum.ScaleUps, sum.ScaleDowns, sum.HeldBackBy)
		if got := only.Variants[i].Summary; fmt.Sprint(got) != fmt.Sprint(sum) {
			t.Errorf("%s: SummaryOnly gives %+v, the full run %+v", v.Name, got, sum)
		}
	}
	golden.Check(t, filepath.Join("testdata", "benchmark-load.golden"), []byte(b.String()))
}

// stepsDigest is an FNV-1a hash of every field of every step.
func stepsDigest(steps []Step) uint64 {
	h := fnv.New64a()
	for _, s := range steps {
		fmt.Fprintf(h, "%d %d %d %d %d %d %v %s %t\n", s.At, s.Current, s.Desired, s.Replicas, s.Pods, s.Ready, s.Metrics, s.Constraint, s.Scaled)
	}
	return h.Sum64()
}
