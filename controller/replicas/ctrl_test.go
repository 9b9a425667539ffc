package replicas

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// cond is a condition as upstream's horizontal tests compare it (message and time blanked).
type cond struct {
	Type   autoscalingv2.HorizontalPodAutoscalerConditionType
	Status corev1.ConditionStatus
	Reason string
}

var (
	statusOK = []cond{
		{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"},
		{autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound"},
		{autoscalingv2.ScalingLimited, corev1.ConditionFalse, "DesiredWithinRange"},
	}
	szFalse     = cond{autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero"}
	szTrue      = cond{autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero"}
	readyNoScal = cond{autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"}
	gotScale    = cond{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale"}
	disabled    = cond{autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled"}
)

// okWith is upstream's statusOkWithOverrides: statusOK with conditions replaced by type or appended.
func okWith(overrides ...cond) []cond {
	out := append([]cond(nil), statusOK...)
	for _, o := range overrides {
		found := false
		for i := range out {
			if out[i].Type == o.Type {
				out[i], found = o, true
			}
		}
		if !found {
			out = append(out, o)
		}
	}
	return out
}

func limited(reason string) cond {
	return cond{autoscalingv2.ScalingLimited, corev1.ConditionTrue, reason}
}

func inactive(reason string) cond {
	return cond{autoscalingv2.ScalingActive, corev1.ConditionFalse, reason}
}

// hzPods builds upstream's horizontal-test pods (horizontal_test.go:178-264): n pods whose two
// containers each request half of reqMilli, with per-pod options by index.
func hzPods(n int, reqMilli int64, opts map[int][]testbuild.PodOption) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		o := append([]testbuild.PodOption{testbuild.ContainerRequests(corev1.ResourceCPU, reqMilli/2, reqMilli/2)}, opts[i]...)
		out[i] = pod(podName(i), o...)
	}
	return out
}

// hzCPU reports per-pod cpu totals at now with a one-minute window, as the horizontal tests do.
func hzCPU(levels ...int64) MetricData {
	m := make(map[string]sampleset.Sample, len(levels))
	for i, v := range levels {
		m[podName(i)] = sampleset.Sample{MilliValue: v, Timestamp: sampleset.Timestamp(testNow), Window: time.Minute}
	}
	return MetricData{PodSamples: sampleSet(m), Timestamp: testNow}
}

func hotPod() []testbuild.PodOption {
	return []testbuild.PodOption{testbuild.StartedAt(testNow), testbuild.ReadySince(corev1.ConditionTrue, testNow)}
}

type ctrlCase struct {
	name     string
	hpa      *autoscalingv2.HorizontalPodAutoscaler
	current  int32
	status   *int32 // scale.status.replicas when it differs from current
	selector *string
	pods     []*corev1.Pod
	data     []MetricData
	history  *History
	cfg      func(*Config)
	others   []string
	scaleErr error
	writeErr error

	wantDesired int32
	wantConds   []cond
	wantErr     string
	wantEvent   *Event
}

func runCtrl(t *testing.T, tc ctrlCase) (Decision, Outcome) {
	t.Helper()
	h := tc.hpa
	if h.Status.CurrentReplicas == 0 && h.Status.DesiredReplicas == 0 {
		h.Status.CurrentReplicas, h.Status.DesiredReplicas = tc.current, tc.current
	}
	in := input(h, tc.current, withPods(tc.pods...), withData(tc.data...))
	if tc.status != nil {
		in.Scale.StatusReplicas = *tc.status
	}
	if tc.selector != nil {
		in.Scale.Selector = *tc.selector
	}
	if tc.history != nil {
		in.History = *tc.history
	}
	if tc.cfg != nil {
		tc.cfg(&in.Config)
	}
	if tc.scaleErr != nil {
		in.Scale, in.ScaleErr = nil, tc.scaleErr
	}
	in.OtherHPAsSelectingPods = tc.others
	d := Decide(in)
	out := Apply(in, d, tc.writeErr)
	if out.Status.DesiredReplicas != tc.wantDesired {
		t.Errorf("status desired replicas = %d, want %d (decision %d, phase %s, err %v)\ntrace:\n%s",
			out.Status.DesiredReplicas, tc.wantDesired, d.DesiredReplicas, d.Phase, d.Err, traceText(d))
	}
	var got []cond
	for _, c := range out.Status.Conditions {
		got = append(got, cond{c.Type, c.Status, c.Reason})
	}
	want := tc.wantConds
	if want == nil {
		want = okWith(szFalse)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	switch {
	case tc.wantErr == "" && out.Err != nil:
		t.Errorf("unexpected reconcile error: %v", out.Err)
	case tc.wantErr != "" && !hasError(out.Err, tc.wantErr):
		t.Errorf("reconcile error = %v, want it to contain %q", out.Err, tc.wantErr)
	}
	if tc.wantEvent != nil {
		all := append(append([]Event(nil), d.Events...), out.Events...)
		found := false
		for _, e := range all {
			found = found || e == *tc.wantEvent
		}
		if !found {
			t.Errorf("event %+v not among %+v", *tc.wantEvent, all)
		}
	}
	return d, out
}

func i32(v int32) *int32 { return &v }

func TestReconcileCPUMatchesUpstream(t *testing.T) {
	cpu := func(opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
		return hpa(append([]testbuild.HPAOption{testbuild.Min(2), testbuild.Max(6)}, opts...)...)
	}
	unready := []testbuild.PodOption{testbuild.Ready(corev1.ConditionFalse)}
	failed := []testbuild.PodOption{testbuild.Phase(corev1.PodFailed)}
	deleting := []testbuild.PodOption{testbuild.DeletedAt(testNow)}
	noSeed := &History{Recommendations: []Recommendation{}}
	cases := []ctrlCase{
		// horizontal_test.go:1403 TestScaleCPU "scale up"
		{name: "scale up", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(300, 500, 700)}, wantDesired: 5},
		// :1418 "scale up with unready pods results in less scale"
		{name: "scale up with unready pods results in less scale", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{0: unready}), data: []MetricData{hzCPU(300, 500, 700)}, wantDesired: 4},
		// :1434 "scale up with hot cpu pods results in less scale"
		{name: "scale up with hot cpu pods results in less scale", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{0: hotPod()}), data: []MetricData{hzCPU(300, 500, 700)}, wantDesired: 4},
		// :1450 "scale up ignores failed pods"
		{name: "scale up ignores failed pods", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 2,
			pods: hzPods(4, 1000, map[int][]testbuild.PodOption{2: failed, 3: failed}), data: []MetricData{hzCPU(500, 700)}, wantDesired: 4},
		// :1467 "scale up ignores deletion pods"
		{name: "scale up ignores deletion pods", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 2,
			pods: hzPods(4, 1000, map[int][]testbuild.PodOption{2: deleting, 3: deleting}), data: []MetricData{hzCPU(500, 700)}, wantDesired: 4},
		// :1525 "no scale up when all unready pods bring utilization within target"
		{name: "no scale up when all unready pods bring utilization within target", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{1: unready, 2: unready}), data: []MetricData{hzCPU(400, 500, 700)},
			wantDesired: 3, wantConds: okWith(readyNoScal)},
		// :1541 "scale down"
		{name: "scale down", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 3},
		// :1557 "scale down includes unready pods" (they are left out of a scale-down)
		{name: "scale down leaves unready pods out", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, map[int][]testbuild.PodOption{3: unready, 4: unready}), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 2},
		// :1574 "scale down ignores hot cpu pods"
		{name: "scale down ignores hot cpu pods", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, map[int][]testbuild.PodOption{3: hotPod(), 4: hotPod()}), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 2},
		// :1591 "scale down ignores failed pods"
		{name: "scale down ignores failed pods", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: noSeed,
			pods: hzPods(7, 1000, map[int][]testbuild.PodOption{5: failed, 6: failed}), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 3},
		// :1609 "scale down ignores deletion pods"
		{name: "scale down ignores deletion pods", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: noSeed,
			pods: hzPods(7, 1000, map[int][]testbuild.PodOption{5: deleting, 6: deleting}), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 3},
		// :1730 TestScaleContainerResource "scale up container resource" (container1 holds half of each level)
		{name: "scale up container resource", hpa: cpu(testbuild.Metrics(testbuild.ContainerUtilization(corev1.ResourceCPU, "container1", 30))), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(150, 250, 350)}, wantDesired: 5},
		// :1759 "scale down container resource"
		{name: "scale down container resource", hpa: cpu(testbuild.Metrics(testbuild.ContainerUtilization(corev1.ResourceCPU, "container2", 50))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(50, 150, 250, 125, 125)}, wantDesired: 3},
		// :1861 TestScaleUpHotCpuNoScale
		{name: "hot unready pods keep the count", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{1: append(hotPod(), testbuild.Ready(corev1.ConditionFalse)), 2: append(hotPod(), testbuild.Ready(corev1.ConditionFalse))}),
			data: []MetricData{hzCPU(400, 500, 700)}, wantDesired: 3, wantConds: okWith(readyNoScal)},
		// :2805 TestScaleDownStabilizeInitialSize: a fresh controller seeds {current, now}
		{name: "scale down is held by the seeded recommendation", hpa: cpu(testbuild.Metrics(testbuild.CPUUtilization(50))), current: 5, history: &History{},
			pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(100, 300, 500, 250, 250)}, wantDesired: 5,
			wantConds: okWith(cond{autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized"})},
		// :5352 TestStabilizeDownscale
		{name: "recent higher recommendation holds a scale down", hpa: hpa(testbuild.Min(1), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 4,
			history: &History{Recommendations: recsAgo(10, 10*time.Minute, 4, time.Minute)},
			pods:    hzPods(3, 100, nil), data: []MetricData{hzCPU(50, 50, 50)}, wantDesired: 4,
			wantConds: okWith(cond{autoscalingv2.AbleToScale, corev1.ConditionTrue, "ScaleDownStabilized"})},
		// :4673 TestEventCreated
		{name: "rescale event names the metric", hpa: hpa(testbuild.Min(1), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(50))), current: 1,
			pods: hzPods(1, 200, nil), data: []MetricData{hzCPU(200)}, wantDesired: 2,
			wantEvent: &Event{Type: corev1.EventTypeNormal, Reason: "SuccessfulRescale", Message: "New size: 2; reason: cpu resource utilization (percentage of request) above target"}},
		// :5208 TestConditionFailedUpdateScale
		{name: "failed scale write keeps desired", hpa: hpa(testbuild.Min(1), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 3,
			pods: hzPods(3, 100, nil), data: []MetricData{hzCPU(150, 150, 150)}, writeErr: errors.New("something went wrong"),
			wantDesired: 3, wantErr: "failed to rescale ReplicationController/test-namespace/test-rc: something went wrong",
			wantConds: okWith(cond{autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale"}),
			wantEvent: &Event{Type: corev1.EventTypeWarning, Reason: "FailedRescale", Message: "New size: 5; reason: cpu resource utilization (percentage of request) above target; error: something went wrong"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtrl(t, tc) })
	}
}

func TestReconcileCustomMetricsMatchesUpstream(t *testing.T) {
	cm := func(opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
		return hpa(append([]testbuild.HPAOption{testbuild.Min(2), testbuild.Max(6)}, opts...)...)
	}
	unreadyHot := append(hotPod(), testbuild.Ready(corev1.ConditionFalse))
	noSeed := &History{Recommendations: []Recommendation{}}
	enabled, disabledGate := func(c *Config) { c.ScaleToZero = true }, func(c *Config) { c.ScaleToZero = false }
	cases := []ctrlCase{
		// horizontal_test.go:1904 TestScaleUpCM "scale up custom metric"
		{name: "scale up pods metric", hpa: cm(testbuild.Metrics(testbuild.PodsAverage("qps", 15000))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{podValues(20000, 10000, 30000)}, wantDesired: 4},
		// :1936 "unready and hot cpu pods do not reduce scale for custom metric"
		{name: "unready and hot pods do not matter for a pods metric", hpa: cm(testbuild.Metrics(testbuild.PodsAverage("qps", 15000))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{2: unreadyHot}), data: []MetricData{podValues(50000, 10000, 30000)}, wantDesired: 6},
		// :1970 "unready and hot cpu pods scale to max with scaling limited condition"
		{name: "pods metric capped at max", hpa: cm(testbuild.Metrics(testbuild.PodsAverage("qps", 15000))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{0: unreadyHot, 2: unreadyHot}), data: []MetricData{podValues(50000, 15000, 30000)},
			wantDesired: 6, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
		// :2017 "scale up external metric with value target"
		{name: "scale up external value", hpa: cm(testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 6666))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 4},
		// :2049 "scale up external metric with per-pod average value target"
		{name: "scale up external average value", hpa: cm(testbuild.Metrics(testbuild.ExternalAverage("qps", testExternalSelector, 2222))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 4},
		// :2184 TestScaleUpCMObject "scale up object metric with value target"
		{name: "scale up object value", hpa: cm(testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 15000))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{objValue(20000)}, wantDesired: 4},
		// :2221 "scale up from zero with HPAScaleToZero enabled"
		{name: "scale up from zero", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 15000)), testbuild.Conditions(scaledToZeroTrueCond())), current: 0,
			data: []MetricData{objValue(20000)}, cfg: enabled, wantDesired: 2,
			wantConds: []cond{szFalse, {autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, statusOK[1], statusOK[2]}},
		// :2268 "scale up from zero with HPAScaleToZero disabled"
		{name: "no scale up from zero with the gate off", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 15000)), testbuild.Conditions(scaledToZeroTrueCond())), current: 0,
			data: []MetricData{objValue(20000)}, cfg: disabledGate, wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :2312 "scale up from zero ignores tolerance, enabled"
		{name: "scale up from zero ignores tolerance", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 1000)), testbuild.Conditions(scaledToZeroTrueCond())), current: 0,
			data: []MetricData{objValue(1000)}, cfg: enabled, wantDesired: 1,
			wantConds: []cond{szFalse, {autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, statusOK[1], statusOK[2]}},
		// :2403 "scale up per-pod object metric with average value target"
		{name: "scale up object average value", hpa: cm(testbuild.Metrics(testbuild.ObjectAverage(testDeployment, "qps", 10000))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{objValue(40000)}, wantDesired: 4},
		// :2853 TestScaleDownCM "scale down pods metric"
		{name: "scale down pods metric", hpa: cm(testbuild.Metrics(testbuild.PodsAverage("qps", 20000))), current: 5, history: noSeed, pods: hzPods(5, 1000, nil),
			data: []MetricData{podValues(12000, 12000, 12000, 12000, 12000)}, wantDesired: 3},
		// :2885 "scale down object metric with value target"
		{name: "scale down object value", hpa: cm(testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 20000))), current: 5, history: noSeed, pods: hzPods(5, 1000, nil),
			data: []MetricData{objValue(12000)}, wantDesired: 3},
		// :2922 "scale down to zero object metric, gate enabled"
		{name: "scale down to zero on an object metric", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 20000))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{objValue(0)}, wantDesired: 0, wantConds: okWith(szTrue)},
		// :2965 "scale down to zero object metric, gate disabled"
		{name: "scale down to zero on an object metric with the gate off", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 20000))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{objValue(0)}, cfg: disabledGate, wantDesired: 0, wantConds: okWith()},
		// :3004 "scale down per-pod object metric with average value target"
		{name: "scale down object average value", hpa: cm(testbuild.Metrics(testbuild.ObjectAverage(testDeployment, "qps", 20000))), current: 5, history: noSeed, pods: hzPods(5, 1000, nil),
			data: []MetricData{objValue(60000)}, wantDesired: 3},
		// :3041 "scale down external metric with value target"
		{name: "scale down external value", hpa: cm(testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 14400))), current: 5, history: noSeed, pods: hzPods(5, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 3},
		// :3073 "scale down to zero external metric, gate enabled"
		{name: "scale down to zero on an external metric", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 14400))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{values(0)}, wantDesired: 0, wantConds: okWith(szTrue)},
		// :3111 "scale down to zero external metric, gate disabled"
		{name: "scale down to zero on an external metric with the gate off", hpa: cm(testbuild.Min(0), testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 14400))), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{values(0)}, cfg: disabledGate, wantDesired: 0, wantConds: okWith()},
		// :3145 "scale down per-pod external metric with average value target"
		{name: "scale down external average value", hpa: cm(testbuild.Metrics(testbuild.ExternalAverage("qps", testExternalSelector, 3000))), current: 5, history: noSeed, pods: hzPods(5, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 3},
		// :2757 TestScaleUpCMUnreadyandCpuHot
		{name: "pods metric ignores unready hot pods and is capped", hpa: cm(testbuild.Metrics(testbuild.PodsAverage("qps", 15000))), current: 3,
			pods: hzPods(3, 1000, map[int][]testbuild.PodOption{0: unreadyHot, 2: unreadyHot}), data: []MetricData{podValues(50000, 15000, 30000)},
			wantDesired: 6, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
		// :5244 TestNoBackoffUpscaleCM
		{name: "no back-off after a recent scale", hpa: hpa(testbuild.Min(1), testbuild.Max(5), testbuild.Metrics(testbuild.PodsAverage("qps", 15000)),
			func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.LastScaleTime = &metav1.Time{Time: testNow} }), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{podValues(20000, 10000, 30000)}, wantDesired: 4},
		// :5297 TestNoBackoffUpscaleCMNoBackoffCpu
		{name: "cpu and pods metric, the larger capped at max", hpa: hpa(testbuild.Min(1), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(10), testbuild.PodsAverage("qps", 15000))), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(300, 500, 700), podValues(20000, 10000, 30000)},
			wantDesired: 5, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtrl(t, tc) })
	}
}

func scaledToZeroTrueCond() autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero",
		LastTransitionTime: metav1.Time{Time: testNow.Add(-time.Hour)}}
}

func TestReconcileScaleToZeroMatchesUpstream(t *testing.T) {
	obj := func(opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
		return hpa(append([]testbuild.HPAOption{testbuild.Max(6), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 15000))}, opts...)...)
	}
	enabled, disabledGate := func(c *Config) { c.ScaleToZero = true }, func(c *Config) { c.ScaleToZero = false }
	stale := autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero"}
	cases := []ctrlCase{
		// horizontal_test.go:3277 TestScaleToZeroBehavior "from zero without condition, gate enabled"
		{name: "from zero without the condition is disabled", hpa: obj(testbuild.Min(0)), current: 0, data: []MetricData{objValue(20000)}, cfg: enabled,
			wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :3309 "... gate disabled"
		{name: "from zero without the condition is disabled with the gate off", hpa: obj(testbuild.Min(0)), current: 0, data: []MetricData{objValue(20000)}, cfg: disabledGate,
			wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :3342 "minReplicas increased with ScaledToZero condition, gate enabled"
		{name: "min raised after scaling to zero", hpa: obj(testbuild.Min(2), testbuild.Conditions(scaledToZeroTrueCond())), current: 0, data: []MetricData{objValue(10000)}, cfg: enabled,
			wantDesired: 2, wantConds: []cond{szFalse, {autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, statusOK[1], limited("TooFewReplicas")}},
		// :3380 "... gate disabled"
		{name: "min raised after scaling to zero with the gate off", hpa: obj(testbuild.Min(2), testbuild.Conditions(scaledToZeroTrueCond())), current: 0, data: []MetricData{objValue(10000)},
			cfg: disabledGate, wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :3416 "stale ScaledToZero condition cleared on normal rescale, gate enabled"
		{name: "stale condition cleared by a rescale", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30)), testbuild.Conditions(stale)), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(500, 500, 500)}, cfg: enabled, wantDesired: 5,
			wantConds: []cond{szFalse, {autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, statusOK[1], statusOK[2]}},
		// :3448 "... gate disabled"
		{name: "stale condition removed by a rescale with the gate off", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30)), testbuild.Conditions(stale)), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(500, 500, 500)}, cfg: disabledGate, wantDesired: 5, wantConds: okWith()},
		// :3478 "manual scale to zero disables HPA, gate enabled"
		{name: "manual scale to zero disables the HPA", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30))), current: 0, cfg: enabled,
			wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :3504 "... gate disabled"
		{name: "manual scale to zero disables the HPA with the gate off", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30))), current: 0, cfg: disabledGate,
			wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :3531 "no ScaledToZero condition when gate disabled"
		{name: "no ScaledToZero condition with the gate off", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(500, 500, 500)}, cfg: disabledGate, wantDesired: 5, wantConds: okWith()},
		// :2590 TestScaleWithOneInvalidMetric "from zero with invalid metric, gate enabled"
		{name: "from zero with an invalid metric is disabled", hpa: hpa(testbuild.Min(0), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30), cheddar())), current: 0, cfg: enabled,
			wantDesired: 0, wantConds: []cond{gotScale, disabled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtrl(t, tc) })
	}
}

func cheddar() autoscalingv2.MetricSpec { return autoscalingv2.MetricSpec{Type: "CheddarCheese"} }

func TestReconcileToleranceAndLimitsMatchUpstream(t *testing.T) {
	mixed := func(opts map[int][]testbuild.PodOption) []*corev1.Pod {
		pods := hzPods(3, 0, opts)
		for i, m := range []int64{900, 1000, 1100} {
			testbuild.ContainerRequests(corev1.ResourceCPU, m/2, m/2)(pods[i])
		}
		return pods
	}
	noSeed := &History{Recommendations: []Recommendation{}}
	upTol := func(q string) testbuild.HPAOption {
		return testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(resource.MustParse(q))}})
	}
	downTol := func(q string) testbuild.HPAOption {
		return testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: ptr.To(resource.MustParse(q))}})
	}
	keep := okWith(readyNoScal)
	cases := []ctrlCase{
		// horizontal_test.go:3631 TestTolerance (cpu)
		{name: "cpu within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 3, pods: mixed(nil), data: []MetricData{hzCPU(1010, 1030, 1020)}, wantDesired: 3, wantConds: keep},
		// :3648 (pods)
		{name: "pods metric within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.PodsAverage("qps", 20000))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{podValues(20000, 20001, 21000)}, wantDesired: 3, wantConds: keep},
		// :3678 (object value)
		{name: "object value within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 20000))), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{objValue(20050)}, wantDesired: 3, wantConds: keep},
		// :3713 (external value)
		{name: "external value within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 8666))), current: 4, pods: hzPods(4, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 4, wantConds: keep},
		// :3743 (object average value)
		{name: "object average value within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.ObjectAverage(testDeployment, "qps", 2200))), current: 4, pods: hzPods(4, 1000, nil),
			data: []MetricData{objValue(8600)}, wantDesired: 4, wantConds: keep},
		// :3778 (external average value)
		{name: "external average value within tolerance", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.ExternalAverage("qps", testExternalSelector, 2200))), current: 4, pods: hzPods(4, 1000, nil),
			data: []MetricData{values(8600)}, wantDesired: 4, wantConds: keep},
		// :3895 TestConfigurableTolerance "scaling up because of a 1% configurable tolerance"
		{name: "1% scale-up tolerance scales up", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100)), upTol("0.01")), current: 3, pods: mixed(nil),
			data: []MetricData{hzCPU(1010, 1030, 1020)}, wantDesired: 4},
		// :3922 "no scale-down because of a 90% configurable tolerance"
		{name: "90% scale-down tolerance holds", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100)), downTol("0.9")), current: 3, history: noSeed, pods: mixed(nil),
			data: []MetricData{hzCPU(300, 300, 300)}, wantDesired: 3, wantConds: keep},
		// :3949 "no scaling because of the large default tolerance"
		{name: "default tolerance holds", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 3, pods: mixed(nil),
			data: []MetricData{hzCPU(1010, 1030, 1020)}, wantDesired: 3, wantConds: keep},
		// :3975 "configurable tolerance ignored when gate disabled"
		{name: "configurable tolerance ignored with the gate off", hpa: hpa(testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(100)), upTol("0.01")), current: 3, pods: mixed(nil),
			data: []MetricData{hzCPU(1010, 1030, 1020)}, cfg: func(c *Config) { c.ConfigurableTolerance = false }, wantDesired: 3, wantConds: keep},
		// :4081 TestReplicaLimits "scale down clamped to min replicas"
		{name: "scale down clamped to min", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 3, history: noSeed, pods: mixed(nil),
			data: []MetricData{hzCPU(10, 95, 10)}, wantDesired: 2, wantConds: okWith(limited("TooFewReplicas"), szFalse)},
		// :4107 "scale down to zero when min replicas is zero" (cpu only: not ScaledToZero)
		{name: "scale down to zero with min zero", hpa: hpa(testbuild.Min(0), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 3, history: noSeed, pods: mixed(nil),
			data: []MetricData{hzCPU(0, 0, 0)}, wantDesired: 0},
		// :4133 "scale down clamped to min when desired is zero"
		{name: "zero desired clamped to min", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 3, history: noSeed, pods: mixed(nil),
			data: []MetricData{hzCPU(0, 0, 0)}, wantDesired: 2, wantConds: okWith(limited("TooFewReplicas"), szFalse)},
		// :4159 "no scaling when spec replicas is zero"
		{name: "no scaling at zero replicas", hpa: hpa(testbuild.Min(3), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 0, wantDesired: 0, wantConds: []cond{gotScale, disabled}},
		// :4182 "scale up to min when below min replicas"
		{name: "scale up to min", hpa: hpa(testbuild.Min(3), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 2, wantDesired: 3,
			wantConds: []cond{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, szFalse}},
		// :4206 "scale down to max when above max replicas"
		{name: "scale down to max", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 10, wantDesired: 5,
			wantConds: []cond{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, szFalse}},
		// :4230 "scale up clamped to max replicas"
		{name: "scale up clamped to max", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90))), current: 3, pods: mixed(nil),
			data: []MetricData{hzCPU(8000, 9500, 1000)}, wantDesired: 5, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
		// :4255 "scale up to min immediately even with recent scale time"
		{name: "scale up to min ignores a recent scale", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90)),
			func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.LastScaleTime = &metav1.Time{Time: testNow} }), current: 1, wantDesired: 2,
			wantConds: []cond{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, szFalse}},
		// :4279 "scale down to max immediately even with recent scale time"
		{name: "scale down to max ignores a recent scale", hpa: hpa(testbuild.Min(2), testbuild.Max(5), testbuild.Metrics(testbuild.CPUUtilization(90)),
			func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.LastScaleTime = &metav1.Time{Time: testNow} }), current: 6, wantDesired: 5,
			wantConds: []cond{{autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale"}, szFalse}},
		// :4726 TestUpscaleCap
		{name: "behavior caps a scale up", hpa: hpa(testbuild.Min(1), testbuild.Max(100), testbuild.Metrics(testbuild.CPUUtilization(10)),
			testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, 0, 700, 60, 0)})), current: 3,
			pods: hzPods(3, 100, nil), data: []MetricData{hzCPU(100, 200, 300)}, wantDesired: 24, wantConds: okWith(limited("ScaleUpLimit"), szFalse)},
		// :4756 TestUpscaleCapGreaterThanMaxReplicas
		{name: "max below the behavior cap", hpa: hpa(testbuild.Min(1), testbuild.Max(20), testbuild.Metrics(testbuild.CPUUtilization(10)),
			testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, 0, 700, 60, 0)})), current: 3,
			pods: hzPods(3, 100, nil), data: []MetricData{hzCPU(100, 200, 300)}, wantDesired: 20, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtrl(t, tc) })
	}
}

func TestReconcileEdgeCasesMatchUpstream(t *testing.T) {
	noSeed := &History{Recommendations: []Recommendation{}}
	failedGet := func(reason string) []cond { return []cond{gotScale, inactive(reason)} }
	empty, cheese := "", "cheddar cheese"
	fetchErr := MetricData{Err: errors.New("something went wrong")}
	cases := []ctrlCase{
		// horizontal_test.go:4386 TestMetricsEdgeCases "superfluous metrics reported"
		{name: "superfluous metrics", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 4, pods: hzPods(4, 1000, nil),
			data: []MetricData{hzCPU(4000, 9500, 3000, 7000, 3200, 2000)}, wantDesired: 6, wantConds: okWith(limited("TooManyReplicas"), szFalse)},
		// :4418 "missing metrics from some pods"
		{name: "missing metrics from some pods", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 4, history: noSeed, pods: hzPods(4, 1000, nil),
			data: []MetricData{hzCPU(400, 95)}, wantDesired: 3},
		// :4446 "empty metrics from all pods"
		{name: "no metrics at all", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 4, pods: hzPods(4, 1000, nil),
			data: []MetricData{{Err: errors.New("no metrics returned from resource metrics API")}}, wantDesired: 4,
			wantConds: failedGet("FailedGetResourceMetric"), wantErr: "failed to compute desired number of replicas based on listed metrics for ReplicationController/test-namespace/test-rc: invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"},
		// :4478 "empty CPU requests" (no pods listed)
		{name: "no pods", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(100))), current: 4, data: []MetricData{hzCPU(400, 95)}, wantDesired: 4,
			wantConds: failedGet("FailedGetResourceMetric"), wantErr: "no pods returned by selector while calculating replica count"},
		// :4510 "missing reports from some pods scales down"
		{name: "one pod at 200% of a 50% target", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50))), current: 4, history: noSeed,
			pods: hzPods(1, 200, nil), data: []MetricData{hzCPU(200)}, wantDesired: 2},
		// :4538 "more replicas than spec no scale"
		{name: "status above spec does not scale", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50))), current: 4, status: i32(5),
			pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(500, 500, 500, 500, 500)}, wantDesired: 4, wantConds: okWith(readyNoScal)},
		// :4791 TestConditionInvalidSelectorMissing
		{name: "scale without selector", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50))), current: 3, selector: &empty, wantDesired: 3,
			wantConds: []cond{gotScale, inactive("InvalidSelector")}, wantErr: "selector is required",
			wantEvent: &Event{Type: corev1.EventTypeWarning, Reason: "SelectorRequired", Message: "selector is required"}},
		// :4841 TestConditionInvalidSelectorUnparsable
		{name: "unparsable selector", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50))), current: 3, selector: &cheese, wantDesired: 3,
			wantConds: []cond{gotScale, inactive("InvalidSelector")}, wantErr: "couldn't convert selector into a corresponding internal selector object"},
		// :4923 TestConditionAmbiguousSelectorWhenFullSelectorOverlapBetweenHPAs
		{name: "another HPA selects the pods", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3, others: []string{"test-namespace/test-hpa-2"},
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(300, 500, 700)}, wantDesired: 3, wantConds: []cond{gotScale, inactive("AmbiguousSelector")},
			wantErr: "pods by selector name=test-pod are controlled by more than one HPA (e.g. [test-namespace/test-hpa test-namespace/test-hpa-2])"},
		// :4892 TestConditionNoAmbiguousSelectorWhenNoSelectorOverlapBetweenHPAs
		{name: "no overlap scales", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30))), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(300, 500, 700)}, wantDesired: 5},
		// :5026 TestConditionFailedGetMetrics
		{name: "resource metric fetch fails", hpa: hpa(testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(10))), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{fetchErr},
			wantDesired: 3, wantConds: failedGet("FailedGetResourceMetric"), wantErr: "unable to get metrics for resource cpu: something went wrong"},
		{name: "pods metric fetch fails", hpa: hpa(testbuild.Max(6), testbuild.Metrics(testbuild.PodsAverage("qps", 10))), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{fetchErr},
			wantDesired: 3, wantConds: failedGet("FailedGetPodsMetric"), wantErr: "failed to get pods metric value: unable to get metric qps: something went wrong"},
		{name: "object metric fetch fails", hpa: hpa(testbuild.Max(6), testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 10))), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{fetchErr},
			wantDesired: 3, wantConds: failedGet("FailedGetObjectMetric"), wantErr: "failed to get object metric value: unable to get metric qps on Deployment test-namespace/some-deployment: something went wrong"},
		{name: "external metric fetch fails", hpa: hpa(testbuild.Max(6), testbuild.Metrics(testbuild.ExternalValue("qps", testExternalSelector, 10))), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{fetchErr},
			wantDesired: 3, wantConds: failedGet("FailedGetExternalMetric"),
			wantErr: "failed to get qps external metric value: failed to get external metric qps: unable to get external metric test-namespace/qps/&LabelSelector{MatchLabels:map[string]string{label: value,},MatchExpressions:[]LabelSelectorRequirement{},}: something went wrong"},
		// :5134 TestConditionInvalidSourceType
		{name: "unknown metric type", hpa: hpa(testbuild.Max(6), testbuild.Metrics(cheddar())), current: 3, pods: hzPods(3, 1000, nil), data: []MetricData{{}},
			wantDesired: 3, wantConds: failedGet("InvalidMetricSourceType"), wantErr: `invalid metrics (1 invalid out of 1), first error is: unknown metric source type "CheddarCheese"`},
		// :5174 TestConditionFailedGetScale
		{name: "scale read fails", hpa: hpa(testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(10))), current: 3, scaleErr: errors.New("something went wrong"), wantDesired: 3,
			wantConds: []cond{{autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale"}},
			wantErr:   "failed to query scale subresource for ReplicationController/test-namespace/test-rc: something went wrong"},
		// :2552 TestScaleWithOneInvalidMetric "scale up with one invalid metric"
		{name: "scale up despite an invalid metric", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30), cheddar())), current: 3, pods: hzPods(3, 1000, nil),
			data: []MetricData{hzCPU(300, 400, 500), {}}, wantDesired: 4, wantErr: "invalid metrics (1 invalid out of 2)"},
		// :6742 TestScaleUpOneMetricEmpty
		{name: "scale up despite a failing external metric", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30), testbuild.ExternalValue("qps", testExternalSelector, 10))), current: 3,
			pods: hzPods(3, 1000, nil), data: []MetricData{hzCPU(400, 400, 400), fetchErr}, wantDesired: 4, wantErr: "invalid metrics (1 invalid out of 2)"},
		// :6787 TestNoScaleDownOneMetricInvalid
		{name: "an invalid metric blocks a scale down", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50), cheddar())), current: 5, history: noSeed,
			pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(100, 300, 500, 250, 250), {}}, wantDesired: 5,
			wantConds: failedGet("InvalidMetricSourceType"), wantErr: "invalid metrics (1 invalid out of 2)"},
		// :6823 TestNoScaleDownOneMetricEmpty
		{name: "a failing external metric blocks a scale down", hpa: hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(50), testbuild.ExternalValue("qps", testExternalSelector, 10))), current: 5,
			history: noSeed, pods: hzPods(5, 1000, nil), data: []MetricData{hzCPU(100, 300, 500, 250, 250), fetchErr}, wantDesired: 5,
			wantConds: failedGet("FailedGetExternalMetric"), wantErr: "invalid metrics (1 invalid out of 2)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCtrl(t, tc) })
	}
}

// horizontal_test.go:5391 TestComputedToleranceAlgImplementation at reconcile level.
func TestReconcileComputedToleranceMatchesUpstream(t *testing.T) {
	offsets := []int64{100, -100, 10, -10, 2, -2, 1, -1, 0, 0}
	pods := make([]*corev1.Pod, len(offsets))
	levels := make([]int64, len(offsets))
	for i, o := range offsets {
		pods[i] = pod(podName(i), testbuild.ContainerRequests(corev1.ResourceCPU, (600+2*o)/2, (600+2*o)/2))
		levels[i] = 300
	}
	noSeed := &History{Recommendations: []Recommendation{}}
	runCtrl(t, ctrlCase{name: "breach", hpa: hpa(testbuild.Min(1), testbuild.Max(1000), testbuild.Metrics(testbuild.CPUUtilization(56))), current: 10, history: noSeed,
		pods: pods, data: []MetricData{hzCPU(levels...)}, wantDesired: 9})
	runCtrl(t, ctrlCase{name: "within", hpa: hpa(testbuild.Min(1), testbuild.Max(1000), testbuild.Metrics(testbuild.CPUUtilization(55))), current: 10, history: noSeed,
		pods: pods, data: []MetricData{hzCPU(levels...)}, wantDesired: 10, wantConds: okWith(readyNoScal)})
}

// horizontal_test.go:5508 TestAvoidUnnecessaryUpdates: a status that already says what the
// controller would write is not written again.
func TestApplySkipsUnchangedStatus(t *testing.T) {
	long := metav1.Time{Time: testNow.Add(-time.Hour)}
	h := hpa(testbuild.Min(2), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(80)))
	first := input(h, 2, withPods(hzPods(2, 1000, map[int][]testbuild.PodOption{1: {testbuild.Ready(corev1.ConditionFalse)}})...), withData(hzCPU(400)))
	d := Decide(first)
	out := Apply(first, d, nil)
	if !out.StatusChanged {
		t.Fatalf("first reconcile should write a status")
	}
	for i := range out.Status.Conditions {
		out.Status.Conditions[i].LastTransitionTime = long
	}
	second := first
	second.HPA = h.DeepCopy()
	second.HPA.Status = out.Status
	second.History = d.History
	d2 := Decide(second)
	out2 := Apply(second, d2, nil)
	if out2.StatusChanged {
		t.Errorf("an identical status was reported as changed:\nold %+v\nnew %+v", second.HPA.Status, out2.Status)
	}
	if diff := cmp.Diff(second.HPA.Status, out2.Status); diff != "" {
		t.Errorf("status differs (-old +new):\n%s", diff)
	}
	if got := out.Status.ObservedGeneration; got == nil || *got != 1 {
		t.Errorf("observedGeneration = %v, want 1", got)
	}
}

func TestApplyConditionMergeMatchesSetConditionInList(t *testing.T) {
	old := metav1.Time{Time: testNow.Add(-time.Hour)}
	h := hpa(testbuild.Min(1), testbuild.Max(6), testbuild.Metrics(testbuild.CPUUtilization(30)), testbuild.Conditions(
		autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionFalse, Reason: "DesiredWithinRange", LastTransitionTime: old},
		autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionFalse, Reason: "FailedGetScale", LastTransitionTime: old},
	))
	in := input(h, 3, withPods(hzPods(3, 1000, nil)...), withData(hzCPU(300, 500, 700)))
	before := slices.Clone(h.Status.Conditions)
	out := Apply(in, Decide(in), nil)
	// Apply shares the HPA's conditions until one changes: a change goes to a copy.
	if diff := cmp.Diff(before, h.Status.Conditions); diff != "" {
		t.Errorf("Apply changed the input's conditions (-before +after):\n%s", diff)
	}
	var got []string
	for _, c := range out.Status.Conditions {
		got = append(got, fmt.Sprintf("%s=%s %s changed=%v", c.Type, c.Status, c.Reason, !c.LastTransitionTime.Equal(&old)))
	}
	want := []string{
		"ScalingLimited=False DesiredWithinRange changed=false",
		"AbleToScale=True SucceededRescale changed=true",
		"ScalingActive=True ValidMetricFound changed=true",
		"ScaledToZero=False NotScaledToZero changed=true",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if out.Status.LastScaleTime == nil || !out.Status.LastScaleTime.Time.Equal(testNow) {
		t.Errorf("lastScaleTime = %v, want now", out.Status.LastScaleTime)
	}
	if !strings.HasPrefix(out.Status.CurrentMetrics[0].Resource.Current.AverageValue.String(), "500m") {
		t.Errorf("current metric = %v", out.Status.CurrentMetrics[0].Resource.Current.AverageValue)
	}
}
