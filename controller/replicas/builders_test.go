package replicas

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
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

// ---- upstream's objects, on the shared builders ----

// pod is upstream's test pod test-namespace/<name>, labelled name=test-pod: containers
// "container1" and "container2" without requests, Running, Ready=True since the zero time,
// started at the zero time (long ago).
func pod(name string, opts ...testbuild.PodOption) *corev1.Pod {
	return testbuild.Pod(testNamespace, name, append([]testbuild.PodOption{
		testbuild.Labels("name", "test-pod"),
		testbuild.Containers(corev1.Container{Name: "container1"}, corev1.Container{Name: "container2"}),
		testbuild.StartedAt(time.Time{}),
	}, opts...)...)
}

// hpa is upstream's test HPA test-namespace/test-hpa on ReplicationController test-rc, min 1,
// max 100, no metrics, no behavior.
func hpa(opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(testNamespace, "test-hpa", append([]testbuild.HPAOption{
		testbuild.Generation(1), testbuild.Target("v1", "ReplicationController", "test-rc"), testbuild.Min(1), testbuild.Max(100),
	}, opts...)...)
}

// testDeployment and testExternalSelector are what upstream's object and external metric
// specs name.
var (
	testDeployment       = autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "some-deployment"}
	testExternalSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"label": "value"}}
)

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

// podValues builds pod samples for test-pod-<i> with the given milli-values, at the zero time
// with a one-minute window as upstream's calculator fixtures report them.
func podValues(values ...int64) MetricData {
	m := make(map[string]sampleset.Sample, len(values))
	for i, v := range values {
		m[podName(i)] = sampleset.Sample{MilliValue: v, Window: time.Minute}
	}
	return MetricData{PodSamples: sampleSet(m)}
}

// sampleSet is m as the metrics layer hands samples over (nil for nil).
func sampleSet(m map[string]sampleset.Sample) *sampleset.Set {
	if m == nil {
		return nil
	}
	return sampleset.Of(m)
}

func podName(i int) string { return fmt.Sprintf("test-pod-%d", i) }

func recsAgo(pairs ...any) []Recommendation {
	var out []Recommendation
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Recommendation{Replicas: int32(pairs[i].(int)), Timestamp: testNow.Add(-pairs[i+1].(time.Duration))})
	}
	return out
}
