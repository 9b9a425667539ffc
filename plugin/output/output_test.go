package output

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// hpa is shop/web on Deployment web, 2..10 replicas, cpu at 80%, its status observed at 4
// replicas, then mods.
func hpa(mods ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("shop", "web", append([]testbuild.HPAOption{
		testbuild.UID("u-1"), testbuild.Generation(2), testbuild.ResourceVersion("100"),
		testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(2), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(80)), testbuild.ObservedGeneration(2), testbuild.Replicas(4, 4),
	}, mods...)...)
}

func pod(name string, ready bool, started time.Duration) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return testbuild.Pod("shop", name, testbuild.StartedAt(now.Add(-started)), testbuild.Ready(st))
}

func cpuStatus(util int32, avg string) autoscalingv2.MetricStatus {
	q := resource.MustParse(avg)
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: &q},
	}}
}

const cpuName = "cpu resource utilization (percentage of request)"

// scenarios are hand-built decisions: the output package must render whatever the core
// returns, so these do not depend on the core's arithmetic.
func scenarios() map[string]Facts {
	behavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}},
	}}
	return map[string]Facts{
		"scale-up-limited-by-policy": {
			Input: replicas.Input{
				HPA:   hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Behavior = behavior }),
				Scale: &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"},
				Pods:  []*corev1.Pod{pod("web-a", true, 10*time.Minute), pod("web-b", true, 10*time.Minute), pod("web-c", false, 20*time.Second), pod("web-d", true, 10*time.Minute)},
				Now:   now, Config: replicas.DefaultConfig(),
				History: replicas.History{Recommendations: []replicas.Recommendation{}},
			},
			Decision: replicas.Decision{
				Phase: replicas.PhaseComputed, CurrentReplicas: 4, MinReplicas: 2, MaxReplicas: 10,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.1, UpSource: "controller default", DownSource: "controller default"},
				Metrics: []replicas.MetricResult{{
					Index: 0, Type: autoscalingv2.ResourceMetricSourceType, Name: cpuName, Replicas: 8, Ratio: 1.775, RebalancedRatio: 1.775,
					Status: cpuStatus(142, "710m"), ReadyPods: 3, Timestamp: now.Add(-20 * time.Second),
					Pods: []replicas.PodTreatment{
						{Name: "web-a", Class: replicas.PodReady, Request: 500, Usage: 700, AssumedUsage: -1, HasSample: true},
						{Name: "web-b", Class: replicas.PodReady, Request: 500, Usage: 720, AssumedUsage: -1, HasSample: true},
						{Name: "web-c", Class: replicas.PodUnready, Why: "cpu: not ready within initialization period", Request: 500, Usage: 900, AssumedUsage: 0, HasSample: true},
						{Name: "web-d", Class: replicas.PodReady, Request: 500, Usage: 710, AssumedUsage: -1, HasSample: true},
					},
				}},
				MetricName: cpuName, MetricReplicas: 8,
				Stabilization: &replicas.Stabilization{UpWindow: 0, DownWindow: 5 * time.Minute, Recommendation: 8, UpRecommendation: 8, DownRecommendation: 8, Result: 8, Reason: "ReadyForNewScale"},
				Limit: &replicas.Limit{Input: 8, Result: 6, UpLimit: 6, DownLimit: 0, Reason: "ScaleUpLimit", Limited: true,
					Policies: []replicas.PolicyLimit{
						{Direction: "scaleUp", Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60, PeriodStart: 4, Proposal: 6},
						{Direction: "scaleDown", Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15, PeriodStart: 4, Proposal: 0},
					}},
				DesiredReplicas: 6, Rescale: true, Reason: cpuName + " above target",
				Conditions: []replicas.Condition{
					{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededGetScale", Message: "the HPA controller was able to get the target's current scale"},
					{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from " + cpuName},
					{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size"},
					{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: "ScaleUpLimit", Message: "the desired replica count is increasing faster than the maximum scale rate"},
				},
				Trace: []replicas.Step{{Stage: "scale", Metric: -1, Text: "Deployment/web: spec 4 replicas"}, {Stage: "metric", Metric: 0, Text: "cpu: 3 ready pods at 142% of request vs 80% -> 8"}},
			},
			Cluster:       hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.DesiredReplicas = 4 }),
			MetricsSource: "metrics.k8s.io/v1beta1",
			HistorySource: "reconstructed", HistoryNote: "the cluster controller's history lives in its memory",
			WhatIf:   []v1alpha1.WhatIf{{Flag: "set-target", Metric: "cpu", Value: "80%", Was: "60%"}},
			Warnings: []v1alpha1.Warning{{Reason: "RolloutInProgress", Message: "selected pods belong to 2 ReplicaSets"}},
		},
		"within-tolerance-legacy": {
			Input: replicas.Input{
				HPA:   hpa(),
				Scale: &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"},
				Pods:  []*corev1.Pod{pod("web-a", true, time.Hour)},
				Now:   now, Config: replicas.DefaultConfig(),
				History: replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: now.Add(-2 * time.Minute)}}},
			},
			Decision: replicas.Decision{
				Phase: replicas.PhaseComputed, CurrentReplicas: 4, MinReplicas: 2, MaxReplicas: 10,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.05, UpSource: "controller default", DownSource: "behavior.scaleDown.tolerance"},
				Metrics: []replicas.MetricResult{{
					Index: 0, Type: autoscalingv2.ResourceMetricSourceType, Name: cpuName, Replicas: 4, Ratio: 1.025, RebalancedRatio: 1.025, WithinTolerance: true,
					Status: cpuStatus(82, "410m"), ReadyPods: 1,
					Pods: []replicas.PodTreatment{{Name: "web-a", Class: replicas.PodReady, Request: 500, Usage: 410, AssumedUsage: -1, HasSample: true}},
				}},
				MetricName: cpuName, MetricReplicas: 4,
				Stabilization: &replicas.Stabilization{Legacy: true, DownWindow: 5 * time.Minute, Recommendation: 4, UpRecommendation: 4, DownRecommendation: 4, Result: 4, Reason: "ReadyForNewScale",
					Considered: []replicas.Recommendation{{Replicas: 4, Timestamp: now.Add(-2 * time.Minute)}}},
				Limit:           &replicas.Limit{Input: 4, Result: 4, UpLimit: 8, Reason: "DesiredWithinRange"},
				DesiredReplicas: 4,
			},
			Cluster: hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Status.LastScaleTime = ptr.To(metav1.NewTime(now.Add(-2 * time.Minute)))
				h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
			}),
			RescaleEvents: []corev1.Event{{Type: "Normal", Reason: "SuccessfulRescale", Message: "New size: 4; reason: " + cpuName + " above target", Count: 1, LastTimestamp: metav1.NewTime(now.Add(-2 * time.Minute))}},
			MetricsSource: "metrics.k8s.io/v1beta1",
			HistorySource: "reconstructed", HistoryNote: "rebuilt from 1 rescale event",
		},
		"metrics-failed": {
			Input: replicas.Input{
				HPA:   hpa(),
				Scale: &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"},
				Now:   now, Config: replicas.DefaultConfig(),
			},
			Decision: replicas.Decision{
				Phase: replicas.PhaseMetricsFailed, CurrentReplicas: 4, MinReplicas: 2, MaxReplicas: 10, MetricReplicas: -1,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.1, UpSource: "controller default", DownSource: "controller default"},
				Metrics: []replicas.MetricResult{{Index: 0, Type: autoscalingv2.ResourceMetricSourceType, Name: cpuName,
					Err: errors.New("unable to get metrics for resource cpu: the server could not find the requested resource"), Reason: "FailedGetResourceMetric"}},
				DesiredReplicas: 4,
				Err:             errors.New("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value"),
				Events:          []replicas.Event{{Type: "Warning", Reason: "FailedGetResourceMetric", Message: "unable to get metrics for resource cpu"}},
			},
			MetricsSource: "metrics.k8s.io/v1beta1",
			HistorySource: "reconstructed", HistoryNote: "no rescale events visible",
		},
		"scale-failed": {
			Input: replicas.Input{HPA: hpa(), ScaleErr: errors.New(`deployments.apps "web" not found`), Now: now, Config: replicas.DefaultConfig()},
			Decision: replicas.Decision{
				Phase: replicas.PhaseScaleFailed, MinReplicas: 2, MaxReplicas: 10, MetricReplicas: -1,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.1, UpSource: "controller default", DownSource: "controller default"},
				Err:        errors.New(`deployments.apps "web" not found`),
			},
			Cluster: hpa(),
		},
		"clamped-to-max": {
			Input: replicas.Input{HPA: hpa(), Scale: &replicas.Scale{SpecReplicas: 12, StatusReplicas: 12, Selector: "app=web"}, Now: now, Config: replicas.DefaultConfig()},
			Decision: replicas.Decision{
				Phase: replicas.PhaseClampedToRange, CurrentReplicas: 12, MinReplicas: 2, MaxReplicas: 10, MetricReplicas: -1,
				Tolerances:      replicas.Tolerances{Up: 0.1, Down: 0.1, UpSource: "controller default", DownSource: "controller default"},
				DesiredReplicas: 10, Rescale: true, Reason: "Current number of replicas above Spec.MaxReplicas",
			},
		},
	}
}

func TestRenderMatchesGolden(t *testing.T) {
	for name, f := range scenarios() {
		e := Build(f)
		for _, format := range []struct {
			ext     string
			printer printers.ResourcePrinter
		}{
			{"json", &printers.JSONPrinter{}},
			{"yaml", &YAMLPrinter{}},
		} {
			t.Run(name+"."+format.ext, func(t *testing.T) {
				var buf bytes.Buffer
				if err := format.printer.PrintObj(e, &buf); err != nil {
					t.Fatalf("printing: %v", err)
				}
				golden.Check(t, filepath.Join("testdata", name+"."+format.ext+".golden"), buf.Bytes())
			})
		}
	}
}

func TestVerdictNamesTheBindingConstraint(t *testing.T) {
	want := map[string]string{
		"scale-up-limited-by-policy": v1alpha1.ConstraintScaleUpLimit,
		"within-tolerance-legacy":    v1alpha1.ConstraintTolerance,
		"metrics-failed":             v1alpha1.ConstraintMetricsUnavailable,
		"scale-failed":               v1alpha1.ConstraintScaleUnavailable,
		"clamped-to-max":             v1alpha1.ConstraintMaxReplicas,
	}
	for name, f := range scenarios() {
		t.Run(name, func(t *testing.T) {
			if got := Build(f).Verdict.Constraint; got != want[name] {
				t.Errorf("constraint = %q, want %q", got, want[name])
			}
		})
	}
}

func TestDeepCopyObjectIsEqualAndIndependent(t *testing.T) {
	e := Build(scenarios()["scale-up-limited-by-policy"])
	c := e.DeepCopyObject().(*v1alpha1.Explanation)
	if diff := cmp.Diff(e, c); diff != "" {
		t.Fatalf("copy differs (-orig +copy):\n%s", diff)
	}
	c.Metrics[0].Pods[0].Name = "changed"
	if e.Metrics[0].Pods[0].Name == "changed" {
		t.Fatal("copy shares memory with the original")
	}
}

func TestBehaviorDefaultsAreFilledOnlyWhenBehaviorIsSet(t *testing.T) {
	cfg := replicas.DefaultConfig()
	if b := behaviorOf(nil, cfg); !b.Legacy || b.ScaleUp != nil {
		t.Errorf("nil behavior: got %+v, want legacy without rules", b)
	}
	b := behaviorOf(&autoscalingv2.HorizontalPodAutoscalerBehavior{}, cfg)
	want := &v1alpha1.Behavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0)), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Pods", Value: 4, PeriodSeconds: 15}, {Type: "Percent", Value: 100, PeriodSeconds: 15}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(300)), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}},
	}
	if diff := cmp.Diff(want, b, cmpIgnoreDefaulted()); diff != "" {
		t.Errorf("empty behavior (-want +got):\n%s", diff)
	}
}

func cmpIgnoreDefaulted() cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Defaulted" }, cmp.Ignore())
}

func TestClusterStatusNeverWrittenIsNotADisagreement(t *testing.T) {
	f := scenarios()["within-tolerance-legacy"]
	f.Cluster = hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	})
	f.RescaleEvents = nil
	e := Build(f)
	if e.Cluster.Comparable || !e.Cluster.StatusNeverWritten {
		t.Errorf("cluster view of an HPA without status: comparable %v, statusNeverWritten %v; want false, true", e.Cluster.Comparable, e.Cluster.StatusNeverWritten)
	}
	// plugin/explain renders it (TestTextOfAnHPAWithoutStatusSaysSo).
	checkJSONGolden(t, "cluster-status-never-written", e)
}

// checkJSONGolden holds e to testdata/NAME.json.golden, which plugin/explain's tests render
// as text.
func checkJSONGolden(t *testing.T, name string, e *v1alpha1.Explanation) {
	t.Helper()
	var buf bytes.Buffer
	if err := (&printers.JSONPrinter{}).PrintObj(e, &buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", name+".json.golden"), buf.Bytes())
}

func TestVerdictDetailsAnswerTheUsualFollowUps(t *testing.T) {
	mem := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(80))}}}
	twoMetrics := func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = append(h.Spec.Metrics, mem) }
	base := func(phase replicas.Phase, desired int32, results ...replicas.MetricResult) Facts {
		return Facts{
			Input: replicas.Input{HPA: hpa(twoMetrics), Scale: &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4}, Now: now, Config: replicas.DefaultConfig()},
			Decision: replicas.Decision{Phase: phase, CurrentReplicas: 4, MinReplicas: 2, MaxReplicas: 10, DesiredReplicas: desired, Rescale: desired != 4,
				Tolerances: replicas.Tolerances{Up: 0.1, Down: 0.1}, Metrics: results, MetricName: cpuName, MetricReplicas: desired},
		}
	}
	cpuOK := func(proposal int32) replicas.MetricResult {
		return replicas.MetricResult{Index: 0, Type: autoscalingv2.ResourceMetricSourceType, Name: cpuName, Replicas: proposal, Ratio: float64(proposal) / 4, Status: cpuStatus(80*proposal/4, "100m")}
	}
	cases := []struct {
		name string
		f    Facts
		want string
	}{
		{"the metric with the highest proposal drives", base(replicas.PhaseComputed, 8, cpuOK(8),
			replicas.MetricResult{Index: 1, Type: autoscalingv2.ResourceMetricSourceType, Name: "memory", Replicas: 3, Ratio: 0.7}),
			"driving metric: cpu (the highest proposal wins: cpu 8, memory 3)"},
		{"a failing metric blocks a scale-down", base(replicas.PhaseMetricsFailed, 4, cpuOK(2),
			replicas.MetricResult{Index: 1, Type: autoscalingv2.ResourceMetricSourceType, Name: "memory", Err: errors.New("no metrics")}),
			"a failing metric blocks scale-down: cpu alone proposes 2"},
		{"a failing metric shows as <unknown>", base(replicas.PhaseMetricsFailed, 4, cpuOK(2),
			replicas.MetricResult{Index: 1, Type: autoscalingv2.ResourceMetricSourceType, Name: "memory", Err: errors.New("no metrics")}),
			"kubectl get hpa shows <unknown> for memory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Build(tc.f).Verdict.Details
			if !strings.Contains(strings.Join(d, "\n"), tc.want) {
				t.Errorf("verdict details %q lack %q", d, tc.want)
			}
		})
	}
}

// TestLegacyScaleUpCapComesFromTheConfig: the binding legacy cap is named with the controller's
// factor and minimum, not upstream's defaults written into the text.
func TestLegacyScaleUpCapComesFromTheConfig(t *testing.T) {
	l := &replicas.Limit{Reason: "ScaleUpLimit", UpLimit: 9}
	cfg := replicas.DefaultConfig()
	if got, want := bindingPolicy(l, &v1alpha1.Behavior{Legacy: true}, cfg), "the legacy scale-up cap max(2x current, 4) = 9"; got != want {
		t.Errorf("default config: %q, want %q", got, want)
	}
	cfg.LegacyScaleUpFactor, cfg.LegacyScaleUpMinimum = 3, 8
	if got, want := bindingPolicy(l, &v1alpha1.Behavior{Legacy: true}, cfg), "the legacy scale-up cap max(3x current, 8) = 9"; got != want {
		t.Errorf("factor 3, minimum 8: %q, want %q", got, want)
	}
}

// TestDefaultedBehaviorFieldsAreTheCoresReport: explain lists exactly the fields the core
// filled in, which for an empty policy list is none (the core acts on no policies, as upstream).
func TestDefaultedBehaviorFieldsAreTheCoresReport(t *testing.T) {
	cfg := replicas.DefaultConfig()
	b := behaviorOf(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}},
	}, cfg)
	want := []string{"scaleUp.stabilizationWindowSeconds", "scaleUp.selectPolicy",
		"scaleDown.stabilizationWindowSeconds (cluster --horizontal-pod-autoscaler-downscale-stabilization)", "scaleDown.selectPolicy", "scaleDown.policies"}
	if diff := cmp.Diff(want, b.Defaulted); diff != "" {
		t.Errorf("defaulted (-want +got):\n%s", diff)
	}
	if len(b.ScaleUp.Policies) != 0 {
		t.Errorf("scaleUp policies = %v, want the empty list the HPA sets", b.ScaleUp.Policies)
	}
}

func TestWindowReleaseNamesTheRecommendationHoldingTheCountAndTheNextOne(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rec := func(n int32, ago time.Duration) replicas.Recommendation {
		return replicas.Recommendation{Replicas: n, Timestamp: now.Add(-ago)}
	}
	d := replicas.Decision{Stabilization: &replicas.Stabilization{
		DownWindow: time.Minute, Recommendation: 2, Result: 6, Reason: "ScaleDownStabilized",
		// 6 holds the count; when it leaves, the latest 5 (newer than it) holds 5.
		Considered: []replicas.Recommendation{rec(6, 50*time.Second), rec(6, 30*time.Second), rec(4, 25*time.Second), rec(5, 20*time.Second), rec(5, 10*time.Second), rec(2, 5*time.Second)},
	}}
	want := "stabilization window: the recommendation of 6 made 30s ago holds the count until it leaves the 1m0s scaleDown window, in 30s (then the recommendation of 5 made 10s ago holds until it leaves too)"
	if got := windowRelease(d, now); !strings.HasPrefix(got, want) {
		t.Errorf("windowRelease:\n got %s\nwant %s...", got, want)
	}
}
