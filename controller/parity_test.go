package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakesource"
)

// TestRunAndLiveSnapshotDecideAlike feeds one fixture to run's reconcile (informer caches,
// stripped pods, selector tracker) and to evaluation.Evaluate over the live source (what explain
// uses) and requires the same Decision.
func TestRunAndLiveSnapshotDecideAlike(t *testing.T) {
	unready := newPod("web-3", "web", testbuild.StartedAt(t0.Add(-time.Minute)), testbuild.ReadySince(corev1.ConditionFalse, t0.Add(-50*time.Second)))
	pending := newPod("web-4", "web", testbuild.Phase(corev1.PodPending))
	deleting := newPod("web-5", "web", testbuild.DeletedAt(t0.Add(-time.Second)))
	other := newPod("db-1", "db")

	cases := []struct {
		name    string
		hpa     *autoscalingv2.HorizontalPodAutoscaler
		pods    []*corev1.Pod
		metrics *fakemetrics.Client
	}{
		{"scale up on cpu", newHPA("web"), webPods(), cpuMetrics(cpuAt(100, "web-1", "web-2"))},
		{"within tolerance", newHPA("web"), webPods(), cpuMetrics(cpuAt(52, "web-1", "web-2"))},
		{"scale down held by a fresh history", newHPA("web"), webPods(), cpuMetrics(cpuAt(10, "web-1", "web-2"))},
		{"unready, pending, deleting and missing pods", newHPA("web"),
			append(webPods(), unready, pending, deleting, other), cpuMetrics(cpuAt(90, "web-1", "web-3", "web-5", "db-1"))},
		{"metrics API down", newHPA("web"), webPods(), failingMetrics(errMetricsDown)},
		{"missing target", newHPA("web", testbuild.TargetName("gone")), webPods(), cpuMetrics(cpuAt(100, "web-1", "web-2"))},
		{"behavior with a scale-up policy", newHPA("web", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}},
			}}
		}), webPods(), cpuMetrics(cpuAt(200, "web-1", "web-2"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.DryRun = DryRunClient
			f := newFixture(t, opts, []*autoscalingv2.HorizontalPodAutoscaler{tc.hpa}, tc.pods, map[string]int32{"web": 2}, tc.metrics)

			scales := &live.ScaleClient{Scales: f.scales, Mapper: testMapper()}
			live := evaluation.Readers{
				HPAReader: live.HPAs{Client: f.kube}, HistoryReader: fakesource.NoHistory{},
				ScaleReader: scales, PodReader: live.Pods{Client: f.kube}, MetricsReader: tc.metrics,
			}
			ev, err := evaluation.Evaluate(context.Background(), live, ns, tc.hpa.Name, evaluation.Options{Now: t0, Config: opts.Config})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			want := ev.Decision

			_ = f.sync(t, tc.hpa.Name)
			if len(f.reports) != 1 {
				t.Fatalf("got %d reports, want 1", len(f.reports))
			}
			if diff := cmp.Diff(want, f.reports[0].Decision, cmp.Comparer(sameError)); diff != "" {
				t.Errorf("run's decision differs from the live snapshot's (-live +run):\n%s", diff)
			}
		})
	}
}

var errMetricsDown = &metricsDownError{}

type metricsDownError struct{}

func (*metricsDownError) Error() string {
	return "unable to fetch metrics from resource metrics API: the server is currently unable to handle the request"
}

func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}
