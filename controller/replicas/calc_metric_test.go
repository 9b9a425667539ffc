package replicas

import (
	"math"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// metricCalcCase restates one Pods/Object/External calculator case: the spec, the fetched data,
// the expected proposal and the usage upstream reports (averageValue or value).
type metricCalcCase struct {
	name      string
	fixture   calcFixture
	spec      autoscalingv2.MetricSpec
	data      MetricData
	up        *float64
	want      int32
	wantUsage int64
}

func runMetricCalc(t *testing.T, tc metricCalcCase) {
	t.Helper()
	opts := []testbuild.HPAOption{testbuild.Max(math.MaxInt32), testbuild.Metrics(tc.spec)}
	if tc.up != nil {
		opts = append(opts, testbuild.Tolerances(testTolerance, *tc.up))
	}
	in := input(hpa(opts...), tc.fixture.current, withPods(tc.fixture.pods()...), withData(tc.data))
	d := Decide(in)
	r := checkMetric(t, d, tc.want, "")
	if got := reportedUsage(t, r.Status); got != tc.wantUsage {
		t.Errorf("reported usage = %d, want %d", got, tc.wantUsage)
	}
}

func reportedUsage(t *testing.T, s autoscalingv2.MetricStatus) int64 {
	t.Helper()
	var cur autoscalingv2.MetricValueStatus
	switch {
	case s.Pods != nil:
		cur = s.Pods.Current
	case s.Object != nil:
		cur = s.Object.Current
	case s.External != nil:
		cur = s.External.Current
	case s.Resource != nil:
		cur = s.Resource.Current
	default:
		t.Fatalf("no status set: %+v", s)
	}
	if cur.Value != nil {
		return cur.Value.MilliValue()
	}
	if cur.AverageValue != nil {
		return cur.AverageValue.MilliValue()
	}
	t.Fatalf("status has neither value nor averageValue: %+v", cur)
	return 0
}

func values(v ...int64) MetricData { return MetricData{Values: v} }
func objValue(v int64) MetricData  { return MetricData{Value: v} }

func TestPodsMetricMatchesUpstreamCalculator(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	run := corev1.PodRunning
	qps := func(target int64) autoscalingv2.MetricSpec { return testbuild.PodsAverage("qps", target) }
	cases := []metricCalcCase{
		// replica_calculator_test.go:969 TestReplicaCalcPodMetric "scale up"
		{name: "scale up", fixture: calcFixture{current: 3}, spec: qps(15000), data: podValues(20000, 10000, 30000), want: 4, wantUsage: 20000},
		// :979 "scale up: unready hot-CPU pod scales less" (readiness is not consulted for custom metrics)
		{name: "scale up: unready hot-CPU pod does not matter", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{T, T, F},
			start: []timeT{cool(), cool(), hot()}}, spec: qps(15000), data: podValues(50000, 10000, 30000), want: 6, wantUsage: 30000},
		// :991 "scale up: unready hot-CPU pods avoid scale-down"
		{name: "scale up: unready hot-CPU pods avoid scale-down", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, F},
			start: []timeT{hot(), cool(), hot()}}, spec: qps(15000), data: podValues(50000, 15000, 30000), want: 7, wantUsage: 31666},
		// :1003 "scale down"
		{name: "scale down", fixture: calcFixture{current: 5}, spec: qps(20000), data: podValues(12000, 12000, 12000, 12000, 12000), want: 3, wantUsage: 12000},
		// :1013 "within default tolerance"
		{name: "within default tolerance", fixture: calcFixture{current: 3}, spec: qps(20000), data: podValues(20000, 21000, 21000), want: 3, wantUsage: 20666},
		// :1023 "outside configurable 1% tolerance"
		{name: "outside configurable 1% tolerance", up: f64(0.01), fixture: calcFixture{current: 3}, spec: qps(20000),
			data: podValues(20000, 21000, 21000), want: 4, wantUsage: 20666},
		// :1034 "no change: missing metrics"
		{name: "no change: missing metrics", fixture: calcFixture{current: 5}, spec: qps(20000), data: podValues(20000, 19000, 21000), want: 5, wantUsage: 20000},
		// :1044 "rolling update with maxSurge: extra pod missing metric"
		{name: "rolling update with maxSurge: extra pod missing metric", fixture: calcFixture{current: 2, phase: []corev1.PodPhase{run, run, run}},
			spec: qps(17000), data: podValues(10000, 10000), want: 2, wantUsage: 10000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMetricCalc(t, tc) })
	}
}

func TestObjectMetricMatchesUpstreamCalculator(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	cases := []metricCalcCase{
		// replica_calculator_test.go:1082 TestReplicaCalcObjectMetric "scale up"
		{name: "value: scale up", fixture: calcFixture{current: 3}, spec: testbuild.ObjectValue(testDeployment, "qps", 15000), data: objValue(20000), want: 4, wantUsage: 20000},
		// :1092 "scale up: very large metric saturates replicas to MaxInt32"
		{name: "value: very large metric saturates to MaxInt32", fixture: calcFixture{current: 3}, spec: testbuild.ObjectValue(testDeployment, "qps", 1),
			data: objValue(math.MaxInt64), want: math.MaxInt32, wantUsage: math.MaxInt64},
		// :1102 "scale up: ignores unready pods"
		{name: "value: ignores unready pods", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, F}},
			spec: testbuild.ObjectValue(testDeployment, "qps", 10000), data: objValue(50000), want: 5, wantUsage: 50000},
		// :1113 "scale down"
		{name: "value: scale down", fixture: calcFixture{current: 5}, spec: testbuild.ObjectValue(testDeployment, "qps", 20000), data: objValue(12000), want: 3, wantUsage: 12000},
		// :1123 "within default tolerance"
		{name: "value: within default tolerance", fixture: calcFixture{current: 3}, spec: testbuild.ObjectValue(testDeployment, "qps", 20000), data: objValue(20666), want: 3, wantUsage: 20666},
		// :1133 "outside configurable 1% tolerance"
		{name: "value: outside configurable 1% tolerance", up: f64(0.01), fixture: calcFixture{current: 3}, spec: testbuild.ObjectValue(testDeployment, "qps", 20000),
			data: objValue(20666), want: 4, wantUsage: 20666},
		// :1171 TestReplicaCalcObjectPerPodMetric "scale up"
		{name: "average value: scale up", fixture: calcFixture{current: 3}, spec: testbuild.ObjectAverage(testDeployment, "qps", 5000), data: objValue(20000), want: 4, wantUsage: 6667},
		// :1181 "scale down"
		{name: "average value: scale down", fixture: calcFixture{current: 5}, spec: testbuild.ObjectAverage(testDeployment, "qps", 2000), data: objValue(6000), want: 3, wantUsage: 1200},
		// :1191 "within default tolerance"
		{name: "average value: within default tolerance", fixture: calcFixture{current: 4}, spec: testbuild.ObjectAverage(testDeployment, "qps", 5000), data: objValue(20166), want: 4, wantUsage: 5042},
		// :1201 "outside configurable 1% tolerance"
		{name: "average value: outside configurable 1% tolerance", up: f64(0.01), fixture: calcFixture{current: 4}, spec: testbuild.ObjectAverage(testDeployment, "qps", 5000),
			data: objValue(20208), want: 5, wantUsage: 5052},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMetricCalc(t, tc) })
	}
}

func TestExternalMetricMatchesUpstreamCalculator(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	cases := []metricCalcCase{
		// replica_calculator_test.go:1239 TestReplicaCalcExternalMetric "scale down: ignores unready pods (would otherwise scale up)"
		{name: "value: ignores unready pods", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, F}},
			spec: testbuild.ExternalValue("qps", testExternalSelector, 4400), data: values(8600), want: 2, wantUsage: 8600},
		// :1250 "scale down"
		{name: "value: scale down", fixture: calcFixture{current: 5}, spec: testbuild.ExternalValue("qps", testExternalSelector, 14334), data: values(8600), want: 3, wantUsage: 8600},
		// :1260 "within default tolerance"
		{name: "value: within default tolerance", fixture: calcFixture{current: 3}, spec: testbuild.ExternalValue("qps", testExternalSelector, 8888), data: values(8600), want: 3, wantUsage: 8600},
		// :1270 "outside configurable 1% tolerance"
		{name: "value: outside configurable 1% tolerance", up: f64(0.01), fixture: calcFixture{current: 3}, spec: testbuild.ExternalValue("qps", testExternalSelector, 8800),
			data: values(8900), want: 4, wantUsage: 8900},
		// :1281 "usage overflow caps at MaxInt64"
		{name: "value: usage overflow caps at MaxInt64", fixture: calcFixture{current: 3}, spec: testbuild.ExternalValue("qps", testExternalSelector, math.MaxInt64),
			data: values(math.MaxInt64/2+1, math.MaxInt64/2+1), want: 3, wantUsage: math.MaxInt64},
		// :880 TestReplicaCalcExternalPerPodMetric "replica count overflow saturates to MaxInt32"
		{name: "average value: replica count overflow saturates to MaxInt32", fixture: calcFixture{current: 1}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 1),
			data: values(math.MaxInt64), want: math.MaxInt32, wantUsage: math.MaxInt64},
		// :891 "usage overflow with huge target leaves replicas unchanged"
		{name: "average value: usage overflow with huge target leaves replicas unchanged", fixture: calcFixture{current: 1},
			spec: testbuild.ExternalAverage("qps", testExternalSelector, math.MaxInt64), data: values(math.MaxInt64), want: 1, wantUsage: math.MaxInt64},
		// :902 "scale up"
		{name: "average value: scale up", fixture: calcFixture{current: 3}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 2150), data: values(8600), want: 4, wantUsage: 2867},
		// :912 "scale down"
		{name: "average value: scale down", fixture: calcFixture{current: 5}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 2867), data: values(8600), want: 3, wantUsage: 1720},
		// :922 "within default tolerance"
		{name: "average value: within default tolerance", fixture: calcFixture{current: 3}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 2900), data: values(8600), want: 3, wantUsage: 2867},
		// :932 "outside configurable 1% tolerance"
		{name: "average value: outside configurable 1% tolerance", up: f64(0.01), fixture: calcFixture{current: 3}, spec: testbuild.ExternalAverage("qps", testExternalSelector, 2800),
			data: values(8600), want: 4, wantUsage: 2867},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMetricCalc(t, tc) })
	}
}
