package controller

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// series returns the value of the series of family name whose labels equal want.
func series(t *testing.T, m *monitor.Monitor, name string, want map[string]string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, s := range mf.GetMetric() {
			if len(s.GetLabel()) != len(want) {
				continue
			}
			for _, l := range s.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				return s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				return float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

func TestReconcileRecordsUpstreamMetrics(t *testing.T) {
	hpas := []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web"), newHPA("broken", testbuild.TargetName("gone"))}
	f := newFixture(t, DefaultOptions(), hpas, webPods(), map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	_ = f.sync(t, "web")
	_ = f.sync(t, "broken")
	m := f.c.Monitor()
	const p = "horizontal_pod_autoscaler_controller_"
	cases := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{p + "reconciliations_total", map[string]string{"action": "scale_up", "error": "none"}, 1},
		{p + "reconciliations_total", map[string]string{"action": "none", "error": "internal"}, 1},
		{p + "reconciliation_duration_seconds", map[string]string{"action": "scale_up", "error": "none"}, 1},
		{p + "metric_computation_total", map[string]string{"action": "scale_up", "error": "none", "metric_type": "Resource"}, 1},
		{p + "metric_computation_duration_seconds", map[string]string{"action": "scale_up", "error": "none", "metric_type": "Resource"}, 1},
		{p + "desired_replicas", map[string]string{"namespace": "default", "hpa_name": "web"}, 4},
		{p + "desired_replicas", map[string]string{"namespace": "default", "hpa_name": "broken"}, -1},
		{p + "num_horizontal_pod_autoscalers", map[string]string{}, 2},
		{"workqueue_adds_total", map[string]string{"name": "horizontalpodautoscaler"}, 2},
	}
	for _, tc := range cases {
		if got := series(t, m, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v (-1: absent)", tc.name, tc.labels, got, tc.want)
		}
	}
}
