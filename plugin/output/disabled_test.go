package output

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// TestADisabledSelectPolicyIsExplainedAsSuch: an HPA whose behavior disables a direction
// (selectPolicy: Disabled) is held by that field, which explain's verdict and its binding
// policy name; the legacy scale-up cap, which only an HPA without a behavior has, is never
// mentioned.
func TestADisabledSelectPolicyIsExplainedAsSuch(t *testing.T) {
	disabled := autoscalingv2.DisabledPolicySelect
	pods := []*corev1.Pod{pod("web-a", true, time.Hour), pod("web-b", true, time.Hour), pod("web-c", true, time.Hour), pod("web-d", true, time.Hour)}
	// qps per pod against a target of 10 (avg): 20 asks for 8 replicas, 5 for 2.
	samples := func(milli int64) []replicas.MetricData {
		m := map[string]sampleset.Sample{}
		for _, p := range pods {
			m[p.Name] = sampleset.Sample{MilliValue: milli, Timestamp: sampleset.Timestamp(now.Add(-10 * time.Second)), Window: time.Minute}
		}
		return []replicas.MetricData{{PodSamples: sampleset.Of(m), Timestamp: now.Add(-10 * time.Second)}}
	}
	for _, tc := range []struct {
		name     string
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		milli    int64
		want     string
		golden   string
	}{
		{name: "a disabled scale-up is named by its field",
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}},
			milli:    20000,
			want:     "scaling up is disabled by behavior.scaleUp.selectPolicy: Disabled",
			golden:   "scale-up-disabled"},
		{name: "a disabled scale-down is named by its field",
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: &disabled}},
			milli:    5000,
			want:     "scaling down is disabled by behavior.scaleDown.selectPolicy: Disabled",
			golden:   "scale-down-disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := replicas.Input{
				HPA: hpa(testbuild.Behavior(tc.behavior), func(h *autoscalingv2.HorizontalPodAutoscaler) {
					h.Spec.Metrics = []autoscalingv2.MetricSpec{testbuild.PodsAverage("qps", 10000)}
				}),
				Scale:   &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"},
				Pods:    pods,
				Metrics: samples(tc.milli),
				History: replicas.History{Recommendations: []replicas.Recommendation{}},
				Now:     now, Config: replicas.DefaultConfig(),
			}
			d := replicas.Decide(in)
			if d.DesiredReplicas != 4 {
				t.Fatalf("the core decided %d, want 4 (held by the disabled direction)", d.DesiredReplicas)
			}
			e := Build(Facts{Input: in, Decision: d})
			if got := e.Verdict.Sentence; !strings.Contains(got, tc.want) || strings.Contains(got, "legacy") {
				t.Errorf("verdict %q, want it to say %q and not the legacy cap", got, tc.want)
			}
			if got := e.Arithmetic.Limits.BindingPolicy; !strings.Contains(got, "selectPolicy: Disabled") || strings.Contains(got, "legacy") {
				t.Errorf("binding policy %q, want it to name the disabled selectPolicy", got)
			}
			checkJSONGolden(t, tc.golden, e)
		})
	}
}
