package replicas

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Test-only constants of upstream's tests (hpa-spec.md E.0).
const (
	testTolerance      = 0.1
	testCPUInit        = 2 * time.Minute
	testReadinessDelay = 10 * time.Second
	testNamespace      = "test-namespace"
	testSelector       = "name=test-pod"
)

// testNow is the fixed decision time of every test.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testConfig is DefaultConfig with upstream's test constants: calculator tests use tolerance 0.1,
// cpu initialization 2 min and readiness delay 10 s; horizontal tests use a legacy factor of 8.
func testConfig() Config {
	c := DefaultConfig()
	c.Tolerance = testTolerance
	c.CPUInitializationPeriod = testCPUInit
	c.InitialReadinessDelay = testReadinessDelay
	c.LegacyScaleUpFactor = 8
	return c
}

func hot() time.Time  { return testNow }
func cool() time.Time { return testNow.Add(-3 * time.Minute) }

// ---- pods ----

type podOpt func(*corev1.Pod)

// pod is a valid-by-default pod: Running, Ready=True since the zero time, started at the zero
// time (long ago), two containers "container1" and "container2" without requests.
func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, Labels: map[string]string{"name": "test-pod"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "container1"}, {Name: "container2"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			StartTime:  &metav1.Time{},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// withCPURequest puts the same cpu request on every container.
func withCPURequest(q string) podOpt {
	return func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		}
	}
}

// withContainerRequests sets one request per container for res (milli-units), replacing containers.
func withContainerRequests(res corev1.ResourceName, milli ...int64) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for i, m := range milli {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
				Name:      fmt.Sprintf("container%d", i+1),
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{res: *resource.NewMilliQuantity(m, resource.DecimalSI)}},
			})
		}
	}
}

func withReady(s corev1.ConditionStatus) podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions[0].Status = s }
}

func withReadySince(s corev1.ConditionStatus, t time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.Time{Time: t}}}
	}
}

func withoutConditions() podOpt {
	return func(p *corev1.Pod) { p.Status.Conditions = nil }
}

func withStart(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: t} }
}

func withPhase(ph corev1.PodPhase) podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

func withDeletion() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: testNow} }
}

// ---- HPAs ----

type hpaOpt func(*autoscalingv2.HorizontalPodAutoscaler)

// hpa is a valid-by-default HPA test-namespace/test-hpa on ReplicationController test-rc,
// min 1, max 100, no metrics, no behavior.
func hpa(opts ...hpaOpt) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "test-hpa", Namespace: testNamespace, Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "ReplicationController", Name: "test-rc", APIVersion: "v1"},
			MinReplicas:    ptr(int32(1)),
			MaxReplicas:    100,
		},
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

func withMin(n int32) hpaOpt {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr(n) }
}
func withMax(n int32) hpaOpt {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = n }
}

func withMetrics(m ...autoscalingv2.MetricSpec) hpaOpt {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = append(h.Spec.Metrics, m...) }
}

func withBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) hpaOpt {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Behavior = b }
}

func withConditions(c ...autoscalingv2.HorizontalPodAutoscalerCondition) hpaOpt {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.Conditions = c }
}

func scaledToZeroTrue() autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero"}
}

// ---- metric specs ----

func cpuUtil(target int32) autoscalingv2.MetricSpec {
	return resourceUtil(corev1.ResourceCPU, target)
}

func resourceUtil(res corev1.ResourceName, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(target)},
	}}
}

func resourceAvg(res corev1.ResourceName, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: mq(milli)},
	}}
}

func containerUtil(res corev1.ResourceName, container string, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: res, Container: container, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(target)},
	}}
}

func podsAvg(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: mq(milli)},
	}}
}

var testDeployment = autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "some-deployment"}

func objectValue(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: testDeployment, Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: mq(milli)},
	}}
}

func objectAvg(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: testDeployment, Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: mq(milli)},
	}}
}

var testExternalSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"label": "value"}}

func externalValue(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: testExternalSelector},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: mq(milli)},
	}}
}

func externalAvg(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: testExternalSelector},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: mq(milli)},
	}}
}

func mq(milli int64) *resource.Quantity { return resource.NewMilliQuantity(milli, resource.DecimalSI) }

// ---- inputs ----

type inputOpt func(*Input)

// input is a valid-by-default Input for h: scale spec = status = current, selector name=test-pod,
// the test config, at testNow, with an empty (non-nil) recommendation history so that nothing
// is stabilized unless a test says so.
func input(h *autoscalingv2.HorizontalPodAutoscaler, current int32, opts ...inputOpt) Input {
	in := Input{
		HPA:     h,
		Scale:   &Scale{SpecReplicas: current, StatusReplicas: current, Selector: testSelector},
		Now:     testNow,
		Config:  testConfig(),
		History: History{Recommendations: []Recommendation{}},
	}
	for _, o := range opts {
		o(&in)
	}
	return in
}

func withPods(p ...*corev1.Pod) inputOpt { return func(in *Input) { in.Pods = append(in.Pods, p...) } }
func withData(m ...MetricData) inputOpt {
	return func(in *Input) { in.Metrics = append(in.Metrics, m...) }
}
func withHistory(h History) inputOpt { return func(in *Input) { in.History = h } }

// samples builds pod samples for test-pod-<i> with the given milli-values, at the zero time
// with a one-minute window as upstream's calculator fixtures report them.
func samples(values ...int64) MetricData {
	m := make(map[string]Sample, len(values))
	for i, v := range values {
		m[podName(i)] = Sample{MilliValue: v, Window: time.Minute}
	}
	return MetricData{PodSamples: m}
}

func podName(i int) string { return fmt.Sprintf("test-pod-%d", i) }

func recsAgo(pairs ...any) []Recommendation {
	var out []Recommendation
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Recommendation{Replicas: int32(pairs[i].(int)), Timestamp: testNow.Add(-pairs[i+1].(time.Duration))})
	}
	return out
}
