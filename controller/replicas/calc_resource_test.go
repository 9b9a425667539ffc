package replicas

import (
	"fmt"
	"math"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// resourceCalcCase restates one GetResourceReplicas case of replica_calculator_test.go.
type resourceCalcCase struct {
	name     string
	fixture  calcFixture
	target   int32
	down, up *float64
	want     int32
	wantUtil int32
	wantRaw  int64
	wantErr  string
}

func f64(v float64) *float64 { return &v }

func runResourceCalc(t *testing.T, tc resourceCalcCase) {
	t.Helper()
	spec := testbuild.CPUUtilization(tc.target)
	if tc.fixture.container != "" {
		spec = testbuild.ContainerUtilization(corev1.ResourceCPU, tc.fixture.container, tc.target)
	}
	opts := []testbuild.HPAOption{testbuild.Max(1000), testbuild.Metrics(spec)}
	if tc.down != nil {
		opts = append(opts, testbuild.Tolerances(*tc.down, *tc.up))
	}
	in := input(hpa(opts...), tc.fixture.current, withPods(tc.fixture.pods()...), withData(tc.fixture.resourceData()))
	d := Decide(in)
	r := checkMetric(t, d, tc.want, tc.wantErr)
	if tc.wantErr != "" {
		return
	}
	var cur autoscalingv2.MetricValueStatus
	switch {
	case r.Status.Resource != nil:
		cur = r.Status.Resource.Current
	case r.Status.ContainerResource != nil:
		cur = r.Status.ContainerResource.Current
	default:
		t.Fatalf("no resource status: %+v", r.Status)
	}
	if cur.AverageUtilization == nil || *cur.AverageUtilization != tc.wantUtil {
		t.Errorf("utilization = %v, want %d", cur.AverageUtilization, tc.wantUtil)
	}
	if cur.AverageValue == nil || cur.AverageValue.MilliValue() != tc.wantRaw {
		t.Errorf("raw average = %v, want %dm", cur.AverageValue, tc.wantRaw)
	}
}

func TestResourceUtilizationMatchesUpstreamCalculator(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	run, fail := corev1.PodRunning, corev1.PodFailed
	pend := corev1.PodPending
	cases := []resourceCalcCase{
		// replica_calculator_test.go:470 TestReplicaCalcResourceScale "scale up"
		{name: "scale up", fixture: calcFixture{current: 3, requests: sameRequests(3, "1.0"), levels: perContainer(300, 500, 700)},
			target: 30, want: 5, wantUtil: 50, wantRaw: 1000},
		// :484 "scale up: container metric"
		{name: "scale up: container metric", fixture: calcFixture{current: 3, container: "container2", requests: sameRequests(3, "1.0"),
			levels: [][]int64{{1000, 300}, {1000, 500}, {1000, 700}}}, target: 30, want: 5, wantUtil: 50, wantRaw: 500},
		// :499 "scale up: unready pod scales less"
		{name: "scale up: unready pod scales less", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, T},
			requests: sameRequests(3, "1.0"), levels: perContainer(300, 500, 700)}, target: 30, want: 4, wantUtil: 60, wantRaw: 1200},
		// :514 "scale up: hot-CPU container scales less"
		{name: "scale up: hot-CPU container scales less", fixture: calcFixture{current: 3, container: "container2",
			start: []timeT{hot(), cool(), cool()}, requests: sameRequests(3, "1.0"), levels: [][]int64{{0, 300}, {0, 500}, {0, 700}}},
			target: 30, want: 4, wantUtil: 60, wantRaw: 600},
		// :530 "scale up: hot-CPU pod scales less"
		{name: "scale up: hot-CPU pod scales less", fixture: calcFixture{current: 3, start: []timeT{hot(), cool(), cool()},
			requests: sameRequests(3, "1.0"), levels: perContainer(300, 500, 700)}, target: 30, want: 4, wantUtil: 60, wantRaw: 1200},
		// :545 "no scale: unready pods ignored"
		{name: "no scale: unready pods ignored", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{T, F, F},
			requests: sameRequests(3, "1.0"), levels: perContainer(400, 500, 700)}, target: 30, want: 3, wantUtil: 40, wantRaw: 800},
		// :560 "no scale: hot-CPU pods ignored"
		{name: "no scale: hot-CPU pods ignored", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{T, F, F},
			start: []timeT{cool(), hot(), hot()}, requests: sameRequests(3, "1.0"), levels: perContainer(400, 500, 700)},
			target: 30, want: 3, wantUtil: 40, wantRaw: 800},
		// :576 "scale up: failed pods ignored"
		{name: "scale up: failed pods ignored", fixture: calcFixture{current: 2, readiness: []corev1.ConditionStatus{T, T, F, F},
			phase: []corev1.PodPhase{run, run, fail, fail}, requests: sameRequests(4, "1.0"), levels: perContainer(500, 700)},
			target: 30, want: 4, wantUtil: 60, wantRaw: 1200},
		// :592 "scale up: failed pods ignored with missing container metric"
		{name: "scale up: failed pods ignored with missing container metric", fixture: calcFixture{current: 2, container: "container2",
			readiness: []corev1.ConditionStatus{T, T, F, F}, phase: []corev1.PodPhase{run, run, fail, fail}, requests: sameRequests(4, "1.0"),
			levels: [][]int64{{1000, 500}, {9000, 700}, {1000}, {9000}}}, target: 30, want: 4, wantUtil: 60, wantRaw: 600},
		// :609 "scale up: container metrics with failed pods ignored"
		{name: "scale up: container metrics with failed pods ignored", fixture: calcFixture{current: 2, container: "container2",
			readiness: []corev1.ConditionStatus{T, T, F, F}, phase: []corev1.PodPhase{run, run, fail, fail}, requests: sameRequests(4, "1.0"),
			levels: [][]int64{{1000, 500}, {9000, 700}}}, target: 30, want: 4, wantUtil: 60, wantRaw: 600},
		// :626 "scale up: pods being deleted are ignored"
		{name: "scale up: pods being deleted are ignored", fixture: calcFixture{current: 2, readiness: []corev1.ConditionStatus{T, T, F, F},
			phase: []corev1.PodPhase{run, run, run, run}, deleted: []bool{false, false, true, true}, requests: sameRequests(4, "1.0"),
			levels: perContainer(500, 700)}, target: 30, want: 4, wantUtil: 60, wantRaw: 1200},
		// :643 "scale up: container metrics with pods being deleted ignored"
		{name: "scale up: container metrics with pods being deleted ignored", fixture: calcFixture{current: 2, container: "container1",
			readiness: []corev1.ConditionStatus{T, T, F, F}, phase: []corev1.PodPhase{run, run, run, run}, deleted: []bool{false, false, true, true},
			requests: sameRequests(4, "1.0"), levels: perContainer(500, 700)}, target: 30, want: 4, wantUtil: 60, wantRaw: 600},
		// :661 "scale down"
		{name: "scale down", fixture: calcFixture{current: 5, requests: sameRequests(5, "1.0"), levels: perContainer(100, 300, 500, 250, 250)},
			target: 50, want: 3, wantUtil: 28, wantRaw: 560},
		// :675 "scale down: container metric"
		{name: "scale down: container metric", fixture: calcFixture{current: 5, container: "container2", requests: sameRequests(5, "1.0"),
			levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 250}, {1000, 250}}}, target: 50, want: 3, wantUtil: 28, wantRaw: 280},
		// :690 "scale down: exclude unready pods"
		{name: "scale down: exclude unready pods", fixture: calcFixture{current: 5, readiness: []corev1.ConditionStatus{T, T, T, F, F},
			requests: sameRequests(5, "1.0"), levels: perContainer(100, 300, 500, 250, 250)}, target: 50, want: 2, wantUtil: 30, wantRaw: 600},
		// :705 "scale down: container metric excludes unready pods"
		{name: "scale down: container metric excludes unready pods", fixture: calcFixture{current: 5, container: "container2",
			readiness: []corev1.ConditionStatus{T, T, T, F, F}, requests: sameRequests(5, "1.0"),
			levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 250}, {1000, 250}}}, target: 50, want: 2, wantUtil: 30, wantRaw: 300},
		// :721 "scale down: exclude unscheduled pods"
		{name: "scale down: exclude unscheduled pods", fixture: calcFixture{current: 5, readiness: []corev1.ConditionStatus{T, F, F, F, F},
			phase: []corev1.PodPhase{run, pend, pend, pend, pend}, requests: sameRequests(5, "1.0"), levels: perContainer(100)},
			target: 50, want: 1, wantUtil: 10, wantRaw: 200},
		// :737 "scale down: container metric excludes unscheduled pods"
		{name: "scale down: container metric excludes unscheduled pods", fixture: calcFixture{current: 5, container: "container2",
			readiness: []corev1.ConditionStatus{T, F, F, F, F}, phase: []corev1.PodPhase{run, pend, pend, pend, pend}, requests: sameRequests(5, "1.0"),
			levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 250}, {1000, 250}}}, target: 50, want: 1, wantUtil: 10, wantRaw: 100},
		// :754 "scale down: ignore hot-CPU pods"
		{name: "scale down: ignore hot-CPU pods", fixture: calcFixture{current: 5, start: []timeT{cool(), cool(), cool(), hot(), hot()},
			requests: sameRequests(5, "1.0"), levels: perContainer(100, 300, 500, 250, 250)}, target: 50, want: 2, wantUtil: 30, wantRaw: 600},
		// :769 "scale down: container metric ignores hot-CPU pods"
		{name: "scale down: container metric ignores hot-CPU pods", fixture: calcFixture{current: 5, container: "container2",
			start: []timeT{cool(), cool(), cool(), hot(), hot()}, requests: sameRequests(5, "1.0"),
			levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 1000}, {1000, 1000}}}, target: 50, want: 2, wantUtil: 30, wantRaw: 300},
		// :785 "scale down: failed pods ignored"
		{name: "scale down: failed pods ignored", fixture: calcFixture{current: 5, readiness: []corev1.ConditionStatus{T, T, T, T, T, F, F},
			phase: []corev1.PodPhase{run, run, run, run, run, fail, fail}, requests: sameRequests(7, "1.0"), levels: perContainer(100, 300, 500, 250, 250)},
			target: 50, want: 3, wantUtil: 28, wantRaw: 560},
		// :801 "scale down: container metric with failed pods ignored"
		{name: "scale down: container metric with failed pods ignored", fixture: calcFixture{current: 5, container: "container2",
			readiness: []corev1.ConditionStatus{T, T, T, T, T, F, F}, phase: []corev1.PodPhase{run, run, run, run, run, fail, fail},
			requests: sameRequests(7, "1.0"), levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 250}, {1000, 250}}},
			target: 50, want: 3, wantUtil: 28, wantRaw: 280},
		// :818 "scale down: pods being deleted are ignored"
		{name: "scale down: pods being deleted are ignored", fixture: calcFixture{current: 5, readiness: []corev1.ConditionStatus{T, T, T, T, T, F, F},
			phase: []corev1.PodPhase{run, run, run, run, run, run, run}, deleted: []bool{false, false, false, false, false, true, true},
			requests: sameRequests(7, "1.0"), levels: perContainer(100, 300, 500, 250, 250)}, target: 50, want: 3, wantUtil: 28, wantRaw: 560},
		// :836 "scale down: still-running pods being deleted are ignored" (issue 83561)
		{name: "scale down: still-running pods being deleted are ignored", fixture: calcFixture{current: 5, container: "container2",
			readiness: []corev1.ConditionStatus{T, T, T, T, T, F, F}, phase: []corev1.PodPhase{run, run, run, run, run, run, run},
			deleted: []bool{false, false, false, false, false, true, true}, requests: sameRequests(7, "1.0"),
			levels: [][]int64{{1000, 100}, {1000, 300}, {1000, 500}, {1000, 250}, {1000, 250}}}, target: 50, want: 3, wantUtil: 28, wantRaw: 280},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runResourceCalc(t, tc) })
	}
}

func TestResourceToleranceMatchesUpstreamCalculator(t *testing.T) {
	mixed := []string{"0.9", "1.0", "1.1"}
	cases := []resourceCalcCase{
		// replica_calculator_test.go:1316 TestReplicaCalcResourceTolerance "within default tolerance"
		{name: "within default tolerance", fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(1010, 1030, 1020)},
			target: 100, want: 3, wantUtil: 102, wantRaw: 2040},
		// :1330 "outside 0% tolerance"
		{name: "outside 0% tolerance", down: f64(0), up: f64(0), fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(909, 1010, 1111)},
			target: 100, want: 4, wantUtil: 101, wantRaw: 2020},
		// :1345 "within 200% scale-up tolerance"
		{name: "within 200% scale-up tolerance", down: f64(0.1), up: f64(2), fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(1890, 1910, 1900)},
			target: 100, want: 3, wantUtil: 190, wantRaw: 3800},
		// :1360 "outside 8% scale-up tolerance (superfluous scale-down tolerance)"
		{name: "outside 8% scale-up tolerance", down: f64(2), up: f64(0.08), fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(1100, 1080, 1090)},
			target: 100, want: 4, wantUtil: 109, wantRaw: 2180},
		// :1375 "within 36% scale-down tolerance"
		{name: "within 36% scale-down tolerance", down: f64(0.36), up: f64(0.1), fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(660, 640, 650)},
			target: 100, want: 3, wantUtil: 65, wantRaw: 1300},
		// :1390 "outside 34% scale-down tolerance"
		{name: "outside 34% scale-down tolerance", down: f64(0.34), up: f64(0.1), fixture: calcFixture{current: 3, requests: mixed, levels: perContainer(660, 640, 650)},
			target: 100, want: 2, wantUtil: 65, wantRaw: 1300},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runResourceCalc(t, tc) })
	}
}

func TestResourceMissingMetricsMatchUpstreamCalculator(t *testing.T) {
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	run := corev1.PodRunning
	cases := []resourceCalcCase{
		// replica_calculator_test.go:1427 TestReplicaCalcResourceMissingMetrics "superfluous metrics counted"
		{name: "superfluous metrics counted", fixture: calcFixture{current: 4, requests: sameRequests(4, "1.0"),
			levels: perContainer(4000, 9500, 3000, 7000, 3200, 2000)}, target: 100, want: 24, wantUtil: 587, wantRaw: 11750},
		// :1441 "some pods missing metrics scales down"
		{name: "some pods missing metrics scales down", fixture: calcFixture{current: 4, requests: sameRequests(4, "1.0"), levels: perContainer(400, 95)},
			target: 100, want: 3, wantUtil: 24, wantRaw: 495},
		// :1455 "no change: metric equal to target"
		{name: "no change: metric equal to target", fixture: calcFixture{current: 2, requests: sameRequests(2, "1.0"), levels: perContainer(1000)},
			target: 100, want: 2, wantUtil: 100, wantRaw: 2000},
		// :1469 "no change: metric above target"
		{name: "no change: metric above target", fixture: calcFixture{current: 2, requests: sameRequests(2, "1.0"), levels: perContainer(1900)},
			target: 100, want: 2, wantUtil: 190, wantRaw: 3800},
		// :1483 "no change: metric below target"
		{name: "no change: metric below target", fixture: calcFixture{current: 2, requests: sameRequests(2, "1.0"), levels: perContainer(600)},
			target: 100, want: 2, wantUtil: 60, wantRaw: 1200},
		// :1497 "no change: unready pod metric missing"
		{name: "no change: unready pod metric missing", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, T},
			requests: sameRequests(3, "1.0"), levels: perContainer(100, 450)}, target: 50, want: 3, wantUtil: 45, wantRaw: 900},
		// :1512 "no change: hot-CPU pod metric missing"
		{name: "no change: hot-CPU pod metric missing", fixture: calcFixture{current: 3, start: []timeT{hot(), cool(), cool()},
			requests: sameRequests(3, "1.0"), levels: perContainer(100, 450)}, target: 50, want: 3, wantUtil: 45, wantRaw: 900},
		// :1527 "scale up: unready pod metric missing"
		{name: "scale up: unready pod metric missing", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, T},
			requests: sameRequests(3, "1.0"), levels: perContainer(100, 2000)}, target: 50, want: 4, wantUtil: 200, wantRaw: 4000},
		// :1542 "scale up: hot-CPU pod metric missing"
		{name: "scale up: hot-CPU pod metric missing", fixture: calcFixture{current: 3, readiness: []corev1.ConditionStatus{F, T, T},
			start: []timeT{hot(), cool(), cool()}, requests: sameRequests(3, "1.0"), levels: perContainer(100, 2000)},
			target: 50, want: 4, wantUtil: 200, wantRaw: 4000},
		// :1558 "scale down: unready pod metric missing"
		{name: "scale down: unready pod metric missing", fixture: calcFixture{current: 4, readiness: []corev1.ConditionStatus{F, T, T, T},
			requests: sameRequests(4, "1.0"), levels: perContainer(100, 100, 100)}, target: 50, want: 3, wantUtil: 10, wantRaw: 200},
		// :1573 "scale down: target over 100"
		{name: "scale down: target over 100", fixture: calcFixture{current: 4, readiness: []corev1.ConditionStatus{F, T, T, T},
			requests: []string{"1.0", "1.0", "2.0", "2.0"}, levels: perContainer(200, 100, 100)}, target: 300, want: 2, wantUtil: 6, wantRaw: 200},
		// :1588 "rolling update with maxSurge: extra pod missing metric"
		{name: "rolling update with maxSurge: extra pod missing metric", fixture: calcFixture{current: 2, phase: []corev1.PodPhase{run, run, run},
			requests: sameRequests(3, "1.0"), levels: perContainer(100, 100)}, target: 50, want: 2, wantUtil: 10, wantRaw: 200},
		// :1603 "disjoint pod and metric names"
		{name: "disjoint pod and metric names", fixture: calcFixture{current: 1, requests: sameRequests(1, "1.0"), levels: perContainer(100),
			metricNames: []string{"an-older-pod-name"}}, target: 100, wantErr: "no metrics returned matched known pods"},
		// :1616 "no metrics returned from metrics API"
		{name: "no metrics returned from metrics API", fixture: calcFixture{current: 4, requests: sameRequests(3, "1.0")},
			target: 100, wantErr: "unable to get metrics for resource cpu: no metrics returned from resource metrics API"},
		// :1628 "missing CPU request on container"
		{name: "missing CPU request on container", fixture: calcFixture{current: 1, levels: perContainer(200)},
			target: 100, wantErr: "missing request for"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runResourceCalc(t, tc) })
	}
}

// replica_calculator_test.go:1661 TestReplicaCalcComputedToleranceAlgImplementation: the target
// is derived from the tolerance so that one case just breaches it and the other does not.
func TestResourceComputedToleranceMatchesUpstreamCalculator(t *testing.T) {
	const pods = 10
	const usedPerPod = 150 // per container
	perPodRequested := int64(2 * usedPerPod)
	requestedToUsed := 2.0
	offsets := []int64{100, -100, 10, -10, 2, -2, 1, -1, 0, 0}
	var requests []string
	var usage []int64
	for _, o := range offsets {
		requests = append(requests, fmt.Sprintf("%dm", perPodRequested+o))
		usage = append(usage, usedPerPod)
	}
	fixture := calcFixture{current: pods, requests: requests, levels: perContainer(usage...)}

	breach := math.Abs(1/(requestedToUsed*(1-testTolerance))) + .01
	ratio := float64(pods*usedPerPod) / (float64(pods*perPodRequested) * breach)
	runResourceCalc(t, resourceCalcCase{fixture: fixture, target: int32(breach * 100),
		want: int32(math.Ceil(ratio * pods)), wantUtil: 50, wantRaw: 300})

	hold := math.Abs(1/(requestedToUsed*(1-testTolerance))) + .004
	runResourceCalc(t, resourceCalcCase{fixture: fixture, target: int32(hold * 100), want: pods, wantUtil: 50, wantRaw: 300})
}
