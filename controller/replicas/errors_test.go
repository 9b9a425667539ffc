package replicas

import (
	"errors"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// TestErrorKindsAreFoundWithErrorsAs: callers branch on a decision's error with errors.As, never
// on its text: spec mistakes are *SpecError, a pod without a request is *RequestError, and a
// cluster failure is neither.
func TestErrorKindsAreFoundWithErrorsAs(t *testing.T) {
	badVersion := input(hpa(), 3)
	badVersion.Scale, badVersion.ScaleErr = nil, &ScaleError{Stage: ScaleErrorAPIVersion, Err: errTest}
	getFailed := input(hpa(), 3)
	getFailed.Scale, getFailed.ScaleErr = nil, errTest
	noRequest := input(hpa(testbuild.Metrics(testbuild.CPUUtilization(50))), 2)
	noRequest.Pods = []*corev1.Pod{pod(podName(0)), pod(podName(1))}
	noRequest.Metrics = []MetricData{hzCPU(100, 100)}
	tests := []struct {
		name                  string
		in                    Input
		wantSpec, wantRequest bool
	}{
		{"unknown metric type", input(hpa(testbuild.Metrics(autoscalingv2.MetricSpec{Type: "CheddarCheese"})), 3), true, false},
		{"scaleTargetRef apiVersion does not parse", badVersion, true, false},
		{"scale GET failed", getFailed, false, false},
		{"pod without a request", noRequest, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if d.Err == nil {
				t.Fatal("no error")
			}
			if got := errors.As(d.Err, new(*SpecError)); got != tt.wantSpec {
				t.Errorf("errors.As(%q, *SpecError) = %v, want %v", d.Err, got, tt.wantSpec)
			}
			var re *RequestError
			if got := errors.As(d.Err, &re); got != tt.wantRequest {
				t.Errorf("errors.As(%q, *RequestError) = %v, want %v", d.Err, got, tt.wantRequest)
			}
			if re != nil && (re.Pod != podName(0) || re.Resource != corev1.ResourceCPU || re.Container == "") {
				t.Errorf("request error = %+v", *re)
			}
		})
	}
}

// TestPodMetricFailuresAreSentinels: the pod-based failures upstream reports by text are found
// with errors.Is in the decision's error.
func TestPodMetricFailuresAreSentinels(t *testing.T) {
	noPods := input(hpa(testbuild.Metrics(testbuild.CPUUtilization(50))), 2)
	noPods.Pods = nil
	noPods.Metrics = []MetricData{hzCPU(100)}
	noSamples := input(hpa(testbuild.Metrics(testbuild.CPUUtilization(50))), 2)
	noSamples.Pods = []*corev1.Pod{pod(podName(0)), pod(podName(1))}
	noSamples.Metrics = []MetricData{{PodSamples: sampleSet(map[string]sampleset.Sample{})}}
	objectNoPods := input(hpa(testbuild.Metrics(testbuild.ObjectValue(testDeployment, "qps", 1000))), 2)
	objectNoPods.Pods = nil
	objectNoPods.Metrics = []MetricData{{Value: 5000}}
	tests := []struct {
		name string
		in   Input
		want error
	}{
		{"utilization without pods", noPods, ErrNoPods},
		{"utilization without samples", noSamples, ErrNoPodMetrics},
		{"object value without pods", objectNoPods, ErrNoPods},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.in)
			if !errors.Is(d.Err, tt.want) {
				t.Errorf("errors.Is(%v, %v) = false", d.Err, tt.want)
			}
		})
	}
}
