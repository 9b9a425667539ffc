package replicas

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// Upstream seeds an HPA's recommendations with its current size at the start of its first sync
// (recordInitialRecommendation, time.Now()) and stabilizes later, against a later time.Now(), so
// the seed is always older than the decision: a zero-length window already leaves it behind.
func TestTheSeedIsMadeBeforeTheDecisionOfItsSync(t *testing.T) {
	zero := int32(0)
	bothZero := &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero},
	}
	cases := []struct {
		name     string
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		window   time.Duration
		want     int32
	}{
		{name: "no behavior and a zero downscale stabilization window: scales down at the first sync", window: 0, want: 2},
		{name: "both behavior windows zero: scales down at the first sync", behavior: bothZero, window: 5 * time.Minute, want: 2},
		{name: "no behavior and a 5m window: the seed holds the first sync", window: 5 * time.Minute, want: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := []testbuild.HPAOption{testbuild.Metrics(testbuild.CPUUtilization(50))}
			if tc.behavior != nil {
				opts = append(opts, testbuild.Behavior(tc.behavior))
			}
			in := input(hpa(opts...), 5, withPods(hzPods(5, 1000, nil)...), withData(hzCPU(200, 200, 200, 200, 200)), withHistory(History{}))
			in.Config.DownscaleStabilizationWindow = tc.window
			d := Decide(in)
			if d.DesiredReplicas != tc.want {
				t.Fatalf("desired = %d, want %d\ntrace:\n%s", d.DesiredReplicas, tc.want, traceText(d))
			}
		})
	}
}

// At a zero-length window the seed is replaced at the first sync, so widening the window (or
// removing the behavior) later cannot bring it back.
func TestASeedLeftBehindByAZeroWindowDoesNotComeBackWhenTheWindowWidens(t *testing.T) {
	in := input(hpa(testbuild.Metrics(testbuild.CPUUtilization(50))), 5, withPods(hzPods(5, 1000, nil)...), withData(hzCPU(200, 200, 200, 200, 200)), withHistory(History{}))
	in.Config.DownscaleStabilizationWindow = 0
	d := Decide(in)
	out := Apply(in, d, nil)
	for _, r := range out.History.Recommendations {
		if r.Replicas == 5 {
			t.Fatalf("history after the first sync keeps the seed of 5: %+v", out.History.Recommendations)
		}
	}
	// The next sync, 15 s later, under a 5 m window, with the load back: the seed must not hold it at 5.
	next := input(hpa(testbuild.Metrics(testbuild.CPUUtilization(50))), 2, withPods(hzPods(2, 1000, nil)...), withData(hzCPU(100, 100)), withHistory(out.History))
	next.Now = testNow.Add(15 * time.Second)
	next.Config.DownscaleStabilizationWindow = 5 * time.Minute
	if d := Decide(next); d.DesiredReplicas != 2 {
		t.Fatalf("desired = %d at the next sync, want 2 (the seed of 5 came back)\ntrace:\n%s", d.DesiredReplicas, traceText(d))
	}
}
