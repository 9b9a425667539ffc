// Package benchload is the one copy of the decision benchmark's workload: BenchmarkDecide
// (controller/replicas) and upstream's calculator benchmark (test/parity) both build it here,
// so their figures compare the same pods and samples. Only tests import it.
package benchload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Namespace of the pods.
	Namespace = "bench"
	// LabelKey=LabelValue selects every pod (Selector in label-selector syntax).
	LabelKey   = "app"
	LabelValue = "web"
	Selector   = LabelKey + "=" + LabelValue
	// TargetUtilization is the cpu utilization target the benchmarks decide against (percent).
	TargetUtilization = 50
	// UsageMilli is the cpu usage of every pod with a sample: 60 % of its 500m request.
	UsageMilli = 300
)

// Sample is one pod's metric as a metrics decoder reads it, before it is added to a PodSamples.
type Sample struct {
	Pod        string
	MilliValue int64
	Timestamp  time.Time
	Window     time.Duration
}

// Workload is the state a controller holds (informer cache, decoded metrics) before it decides.
type Workload struct {
	Pods    []corev1.Pod
	Samples []Sample
}

// New builds n pods with two containers requesting 250m cpu each, started an hour before now;
// every tenth pod never became ready, the pods whose index is 3, 17 or 31 mod 50 (6 %) have no
// sample, the others use UsageMilli, sampled 15 s before now over a 30 s window.
//
// The pods share one container array, as run's pod cache hands them out (its PodStripper
// interns equal stripped container lists) and as the simulator's pods do (they copy one
// template spec).
func New(n int, now time.Time) Workload {
	w := Workload{Pods: make([]corev1.Pod, n)}
	start := metav1.NewTime(now.Add(-time.Hour))
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	containers := []corev1.Container{
		{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}},
		{Name: "sidecar", Resources: corev1.ResourceRequirements{Requests: req}},
	}
	for i := range w.Pods {
		ready := corev1.ConditionTrue
		if i%10 == 9 {
			ready = corev1.ConditionFalse
		}
		name := fmt.Sprintf("web-%d", i)
		w.Pods[i] = corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{LabelKey: LabelValue}},
			Spec:       corev1.PodSpec{Containers: containers},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				StartTime:  &start,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: start}},
			},
		}
		if m := i % 50; m == 3 || m == 17 || m == 31 {
			continue
		}
		// A decoder's pod name is its own string, not the pod object's: a lookup then
		// compares the bytes, as it does in a controller, instead of matching on the pointer.
		w.Samples = append(w.Samples, Sample{Pod: strings.Clone(name), MilliValue: UsageMilli, Timestamp: now.Add(-15 * time.Second), Window: 30 * time.Second})
	}
	return w
}

// CPUPerOp reports the process CPU time per iteration of a finished b.Loop loop as
// "cpu-ns/op"; start is ProcessCPU before the loop.
func CPUPerOp(b *testing.B, start time.Duration) {
	end, ok := ProcessCPU()
	if !ok || b.N == 0 {
		return
	}
	b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
}
