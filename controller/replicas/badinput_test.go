package replicas

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

func TestBadInputFailsTheMetricLikeUpstream(t *testing.T) {
	noTarget := func(typ autoscalingv2.MetricSourceType) autoscalingv2.MetricSpec {
		switch typ {
		case autoscalingv2.ResourceMetricSourceType:
			return autoscalingv2.MetricSpec{Type: typ, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}
		case autoscalingv2.ObjectMetricSourceType:
			return autoscalingv2.MetricSpec{Type: typ, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: testDeployment, Metric: autoscalingv2.MetricIdentifier{Name: "qps"}}}
		case autoscalingv2.ExternalMetricSourceType:
			return autoscalingv2.MetricSpec{Type: typ, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}}}
		case autoscalingv2.PodsMetricSourceType:
			return autoscalingv2.MetricSpec{Type: typ, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"}}}
		}
		return autoscalingv2.MetricSpec{Type: typ}
	}
	badSelector := testbuild.ObjectValue(testDeployment, "qps", 1000)
	badSelector.Object.Metric.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}
	withoutRequests := []*corev1.Pod{pod(podName(0)), pod(podName(1))}
	cases := []struct {
		name        string
		spec        autoscalingv2.MetricSpec
		pods        []*corev1.Pod
		data        MetricData
		wantReason  string
		wantMessage string
	}{
		{name: "unknown metric type", spec: cheddar(), wantReason: "InvalidMetricSourceType",
			wantMessage: `the HPA was unable to compute the replica count: unknown metric source type "CheddarCheese"`},
		{name: "resource metric without a target", spec: noTarget(autoscalingv2.ResourceMetricSourceType), wantReason: "FailedGetResourceMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid resource metric source: neither an average utilization target nor an average value (usage) target was set"},
		{name: "object metric without a target", spec: noTarget(autoscalingv2.ObjectMetricSourceType), wantReason: "FailedGetObjectMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid object metric source: neither a value target nor an average value target was set"},
		{name: "external metric without a target", spec: noTarget(autoscalingv2.ExternalMetricSourceType), wantReason: "FailedGetExternalMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid external metric source: neither a value target nor an average value target was set"},
		{name: "pods metric without a target (upstream panics)", spec: noTarget(autoscalingv2.PodsMetricSourceType), wantReason: "FailedGetPodsMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid pods metric source: no average value target was set"},
		{name: "resource type without its member (upstream panics)", spec: autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType}, wantReason: "FailedGetResourceMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid resource metric source: the resource member is not set"},
		{name: "unparsable metric selector", spec: badSelector, wantReason: "FailedGetObjectMetric",
			wantMessage: `the HPA was unable to compute the replica count: "Bogus" is not a valid label selector operator`},
		{name: "pod without a request for a utilization target", spec: testbuild.CPUUtilization(50), pods: withoutRequests, data: hzCPU(100, 100), wantReason: "FailedGetResourceMetric",
			wantMessage: "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container container1 of Pod test-pod-0"},
		{name: "utilization target of zero", spec: testbuild.CPUUtilization(0), wantReason: "FailedGetResourceMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid resource metric source: the average utilization target must be positive, got 0%"},
		{name: "pods target of zero", spec: testbuild.PodsAverage("qps", 0), wantReason: "FailedGetPodsMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid pods metric source: the average value target must be positive, got 0"},
		{name: "object value target of zero", spec: testbuild.ObjectValue(testDeployment, "qps", 0), wantReason: "FailedGetObjectMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid object metric source: the value target must be positive, got 0"},
		{name: "external average target of zero", spec: testbuild.ExternalAverage("qps", testExternalSelector, 0), wantReason: "FailedGetExternalMetric",
			wantMessage: "the HPA was unable to compute the replica count: invalid external metric source: the average value target must be positive, got 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods
			if pods == nil {
				pods = hzPods(2, 1000, nil)
			}
			data := tc.data
			if data.PodSamples == nil {
				data = hzCPU(100, 100)
				data.Value, data.Values = 100, []int64{100}
			}
			in := input(hpa(testbuild.Metrics(tc.spec)), 2, withPods(pods...), withData(data))
			d := Decide(in)
			if d.Phase != PhaseMetricsFailed {
				t.Fatalf("phase = %s, want %s", d.Phase, PhaseMetricsFailed)
			}
			var got *Condition
			for i := range d.Conditions {
				if d.Conditions[i].Type == autoscalingv2.ScalingActive {
					got = &d.Conditions[i]
				}
			}
			want := &Condition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ScalingActive (-want +got):\n%s", diff)
			}
			if d.Rescale || d.DesiredReplicas != 2 {
				t.Errorf("a failed decision must not rescale: rescale=%v desired=%d", d.Rescale, d.DesiredReplicas)
			}
		})
	}
}

func TestDecideAndApplyNeverMutateInputs(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: rules(1, 60, 0, 0, 60)}
	h := hpa(testbuild.Min(1), testbuild.Max(10), testbuild.Behavior(b), testbuild.Metrics(testbuild.CPUUtilization(50), testbuild.PodsAverage("qps", 1000)),
		testbuild.Conditions(autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"}))
	pods := hzPods(4, 1000, map[int][]testbuild.PodOption{1: {testbuild.Ready(corev1.ConditionFalse)}})
	hist := History{
		Recommendations: recsAgo(3, 10*time.Minute, 5, 30*time.Second),
		ScaleDownEvents: []ScaleEvent{{ReplicaChange: 1, Timestamp: testNow.Add(-2 * time.Minute)}},
	}
	in := input(h, 5, withPods(pods...), withData(hzCPU(100, 100, 100), podValues(100, 100, 100, 100)), withHistory(hist))
	snapshot := deepCopyInput(in)
	d := Decide(in)
	Apply(in, d, nil)
	if diff := cmp.Diff(snapshot, in); diff != "" {
		t.Errorf("inputs changed (-before +after):\n%s", diff)
	}
}

func deepCopyInput(in Input) Input {
	out := in
	out.HPA = in.HPA.DeepCopy()
	s := *in.Scale
	out.Scale = &s
	out.Pods = make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		out.Pods[i] = p.DeepCopy()
	}
	out.Metrics = make([]MetricData, len(in.Metrics))
	for i, m := range in.Metrics {
		out.Metrics[i] = m
		if m.PodSamples != nil {
			out.Metrics[i].PodSamples = m.PodSamples.Clone()
		}
		out.Metrics[i].Values = cloneSlice(m.Values)
	}
	out.History = History{Recommendations: cloneSlice(in.History.Recommendations), ScaleUpEvents: cloneSlice(in.History.ScaleUpEvents), ScaleDownEvents: cloneSlice(in.History.ScaleDownEvents)}
	return out
}

// hpa-spec.md E.4: the intermediate numbers of the worked examples.
func TestWorkedExamplesFromTheSpec(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	cases := []struct {
		name              string
		fixture           calcFixture
		spec              autoscalingv2.MetricSpec
		data              func(calcFixture) MetricData
		statusReplicas    int32
		ratio, rebalanced float64
		want              int32
	}{
		{name: "1 resource utilization scale up", fixture: calcFixture{current: 3, requests: sameRequests(3, "1.0"), levels: perContainer(300, 500, 700)},
			spec: testbuild.CPUUtilization(30), ratio: 50.0 / 30, rebalanced: 50.0 / 30, want: 5},
		{name: "2 unready pod on scale-up", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, T}, requests: sameRequests(3, "1.0"), levels: perContainer(300, 500, 700)},
			spec: testbuild.CPUUtilization(30), ratio: 2.0, rebalanced: 40.0 / 30, want: 4},
		{name: "3 rebalancing flips direction", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{T, F, F}, requests: sameRequests(3, "1.0"), levels: perContainer(400, 500, 700)},
			spec: testbuild.CPUUtilization(30), ratio: 40.0 / 30, rebalanced: 13.0 / 30, want: 3},
		{name: "4 resource scale down", fixture: calcFixture{current: 5, requests: sameRequests(5, "1.0"), levels: perContainer(100, 300, 500, 250, 250)},
			spec: testbuild.CPUUtilization(50), ratio: 0.56, rebalanced: 0.56, want: 3},
		{name: "5 missing metrics on scale-down", fixture: calcFixture{current: 4, requests: sameRequests(4, "1.0"), levels: perContainer(400, 95)},
			spec: testbuild.CPUUtilization(100), ratio: 0.24, rebalanced: 0.62, want: 3},
		{name: "6 target above 100% with a missing pod", fixture: calcFixture{current: 4, readiness: []corev1.ConditionStatus{F, T, T, T},
			requests: []string{"1.0", "1.0", "2.0", "2.0"}, levels: perContainer(200, 100, 100)}, spec: testbuild.CPUUtilization(300), ratio: 6.0 / 300, rebalanced: 124.0 / 300, want: 2},
		{name: "7 superfluous metrics", fixture: calcFixture{current: 4, requests: sameRequests(4, "1.0"), levels: perContainer(4000, 9500, 3000, 7000, 3200, 2000)},
			spec: testbuild.CPUUtilization(100), ratio: 5.87, rebalanced: 5.87, want: 24},
		{name: "9 pods metric ignores readiness", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, F}, start: []timeT{hot(), cool(), hot()}, values: []int64{50000, 15000, 30000}},
			spec: testbuild.PodsAverage("qps", 15000), data: calcFixture.customData, ratio: 31666.0 / 15000, rebalanced: 31666.0 / 15000, want: 7},
		{name: "10 rolling update, missing pod on scale-down", fixture: calcFixture{current: 2, phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning}, values: []int64{10000, 10000}},
			spec: testbuild.PodsAverage("qps", 17000), data: calcFixture.customData, ratio: 10000.0 / 17000, rebalanced: 12333.0 / 17000, want: 2},
		{name: "11 object value", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, F}}, spec: testbuild.ObjectValue(testDeployment, "qps", 10000),
			data: func(calcFixture) MetricData { return objValue(50000) }, ratio: 5, rebalanced: 5, want: 5},
		{name: "12 object per pod", fixture: calcFixture{current: 4}, spec: testbuild.ObjectAverage(testDeployment, "qps", 5000), data: func(calcFixture) MetricData { return objValue(20208) },
			ratio: 20208.0 / 20000, rebalanced: 20208.0 / 20000, want: 5},
		{name: "13 external per pod", fixture: calcFixture{current: 5}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 2867), data: func(calcFixture) MetricData { return values(8600) },
			ratio: 8600.0 / (2867 * 5), rebalanced: 8600.0 / (2867 * 5), want: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.fixture.resourceData()
			if tc.data != nil {
				data = tc.data(tc.fixture)
			}
			opts := []testbuild.HPAOption{testbuild.Max(1000), testbuild.Metrics(tc.spec)}
			if tc.name[:2] == "12" {
				opts = append(opts, testbuild.Tolerances(testTolerance, 0.01))
			}
			in := input(hpa(opts...), tc.fixture.current, withPods(tc.fixture.pods()...), withData(data))
			d := Decide(in)
			r := checkMetric(t, d, tc.want, "")
			if math.Abs(r.Ratio-tc.ratio) > 1e-9 || math.Abs(r.RebalancedRatio-tc.rebalanced) > 1e-9 {
				t.Errorf("ratios %.6f -> %.6f, want %.6f -> %.6f\n%s", r.Ratio, r.RebalancedRatio, tc.ratio, tc.rebalanced, traceText(d))
			}
		})
	}
}

func TestNeedsMetricsFollowsThePreMetricBranches(t *testing.T) {
	obj := testbuild.ObjectValue(testDeployment, "qps", 1000)
	cases := []struct {
		name string
		in   Input
		want bool
	}{
		{"in range", input(hpa(testbuild.Min(1), testbuild.Max(5)), 3), true},
		{"scale error", func() Input { in := input(hpa(), 3); in.ScaleErr = errTest; in.Scale = nil; return in }(), false},
		{"above max", input(hpa(testbuild.Min(1), testbuild.Max(5)), 6), false},
		{"below min", input(hpa(testbuild.Min(2), testbuild.Max(5)), 1), false},
		{"zero replicas", input(hpa(testbuild.Min(1), testbuild.Max(5)), 0), false},
		{"zero after scaling to zero with an object metric", input(hpa(testbuild.Min(0), testbuild.Metrics(obj), testbuild.Conditions(testbuild.ScaledToZero())), 0), true},
		{"zero after scaling to zero with min raised", input(hpa(testbuild.Min(2), testbuild.Metrics(testbuild.CPUUtilization(50)), testbuild.Conditions(testbuild.ScaledToZero())), 0), true},
		{"zero after scaling to zero, gate off", func() Input {
			in := input(hpa(testbuild.Min(0), testbuild.Metrics(obj), testbuild.Conditions(testbuild.ScaledToZero())), 0)
			in.Config.ScaleToZero = false
			return in
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsMetrics(tc.in); got != tc.want {
				t.Errorf("NeedsMetrics = %v, want %v", got, tc.want)
			}
			d := Decide(tc.in)
			if computed := d.Phase == PhaseComputed || d.Phase == PhaseMetricsFailed; computed != tc.want {
				t.Errorf("Decide phase %s disagrees with NeedsMetrics %v", d.Phase, tc.want)
			}
		})
	}
}

var errTest = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestTraceTellsTheStory(t *testing.T) {
	in := input(hpa(testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(30))), 3, withPods(hzPods(3, 2000, nil)...), withData(hzCPU(1000, 1000, 1000)))
	d := Decide(in)
	want := "cpu resource utilization (percentage of request): 3 ready pods use 3 of 6 requested = 50% of request vs target 30% -> ratio 1.667"
	found := false
	for _, s := range d.Trace {
		found = found || s.Text == want
	}
	if !found {
		t.Errorf("trace lacks %q:\n%s", want, traceText(d))
	}
	if d.Trace[len(d.Trace)-1].Text != "scale from 3 to 5: cpu resource utilization (percentage of request) above target" {
		t.Errorf("last step = %q", d.Trace[len(d.Trace)-1].Text)
	}
}
