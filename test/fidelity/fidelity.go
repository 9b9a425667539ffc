// Package fidelity is the format of the recordings of upstream kube-controller-manager's own
// HPA controller on the real test cluster (written by the e2e recorder, `make
// record-fidelity`) that `plugin/sim` must reproduce (its fidelity test). Every instant is
// milliseconds since Start, the HPA's creation; instants the API server stores in whole seconds
// (creation, start and readiness times) are kept as they were stored, cut to the second.
package fidelity

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Version is the format's version; a reader refuses another.
const Version = 1

// Recording is what upstream's HPA controller did with one HPA under one scripted load.
type Recording struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario"`
	// About says what the scenario exercises.
	About string `json:"about"`
	// Start is the wall-clock instant the HPA was created (the recorder's clock, the same
	// machine's as the API server's and the node stand-in's).
	Start time.Time `json:"start"`
	// DurationMs is how long after Start the recording ran.
	DurationMs int64   `json:"durationMs"`
	Cluster    Cluster `json:"cluster"`
	// HPA is the spec as created (autoscaling/v2, before the API server's defaults).
	HPA      autoscalingv2.HorizontalPodAutoscalerSpec `json:"hpa"`
	Workload Workload                                  `json:"workload"`
	// Loads are the load model's steps: the total demand of the workload from AtMs on (the
	// first at or before 0, set before the HPA existed).
	Loads []LoadStep `json:"loads"`
	// Replicas are the Deployment's spec.replicas as a watch saw them change (the first entry,
	// at or before 0, is the initial value).
	Replicas []ReplicasAt `json:"replicas"`
	// PerSecond is spec.replicas at each whole second since Start (index = second).
	PerSecond []int32 `json:"perSecond"`
	// Syncs are kcm's HPA syncs: when the API server received each of its metrics reads.
	SyncsMs []int64 `json:"syncsMs"`
	// ScaleWrites are kcm's writes of the scale subresource (received; the new replicas from
	// the watch).
	ScaleWrites []ReplicasAt `json:"scaleWrites"`
	// Statuses are the HPA's status as a watch saw each of kcm's writes of it.
	Statuses []Status `json:"statuses"`
	// ScrapesMs are metrics-server's scrapes of the node (the instant the node stand-in served
	// each, its page's timestamp).
	ScrapesMs []int64 `json:"scrapesMs"`
	Pods      []Pod   `json:"pods"`
}

// Cluster is the exact configuration the recording ran with.
type Cluster struct {
	Kubernetes    string `json:"kubernetes"`
	MetricsServer string `json:"metricsServer"`
	// ControllerManagerArgs are the flags kube-controller-manager got beyond the harness's.
	ControllerManagerArgs []string `json:"controllerManagerArgs"`
	SyncPeriodMs          int64    `json:"syncPeriodMs"`
	// MetricResolutionMs is metrics-server's --metric-resolution.
	MetricResolutionMs        int64   `json:"metricResolutionMs"`
	DownscaleStabilizationMs  int64   `json:"downscaleStabilizationMs"`
	CPUInitializationPeriodMs int64   `json:"cpuInitializationPeriodMs"`
	InitialReadinessDelayMs   int64   `json:"initialReadinessDelayMs"`
	Tolerance                 float64 `json:"tolerance"`
	// PodReadyDelayMs is how long after its creation the node stand-in marks a pod Running and
	// Ready (start and readiness times are then stored cut to the second).
	PodReadyDelayMs int64 `json:"podReadyDelayMs"`
	// LoadModel says how demand becomes per-pod usage.
	LoadModel string `json:"loadModel"`
}

// Workload is the Deployment the HPA scales.
type Workload struct {
	InitialReplicas    int32 `json:"initialReplicas"`
	CPURequestMilli    int64 `json:"cpuRequestMilli"`
	MemoryRequestBytes int64 `json:"memoryRequestBytes"`
	MemoryBytes        int64 `json:"memoryBytes"`
}

// LoadStep is one change of the workload's total demand.
type LoadStep struct {
	// ScriptMs is when the script asked for it, AtMs when the load model took it.
	ScriptMs int64 `json:"scriptMs"`
	AtMs     int64 `json:"atMs"`
	CPUMilli int64 `json:"cpuMilli"`
}

// ReplicasAt is a replica count from an instant on.
type ReplicasAt struct {
	AtMs     int64 `json:"atMs"`
	Replicas int32 `json:"replicas"`
}

// Status is one HPA status kcm wrote, as the watch delivered it.
type Status struct {
	SeenMs          int64 `json:"seenMs"`
	CurrentReplicas int32 `json:"currentReplicas"`
	DesiredReplicas int32 `json:"desiredReplicas"`
	// Utilization is the CPU metric's averageUtilization (nil when kcm had none).
	Utilization  *int32 `json:"utilization,omitempty"`
	AverageMilli *int64 `json:"averageMilli,omitempty"`
	// LastScaleMs is status.lastScaleTime (whole seconds).
	LastScaleMs *int64   `json:"lastScaleMs,omitempty"`
	Conditions  []string `json:"conditions"`
}

// Pod is one pod's life. Nil instants did not happen within the recording.
type Pod struct {
	Name string `json:"name"`
	// CreatedMs, StartedMs and ReadyMs are the pod's creationTimestamp, status.startTime and
	// its Ready condition's lastTransitionTime (whole seconds, as stored).
	CreatedMs *int64 `json:"createdMs"`
	StartedMs *int64 `json:"startedMs,omitempty"`
	ReadyMs   *int64 `json:"readyMs,omitempty"`
	// SeenCreatedMs and SeenReadyMs are when the watch delivered them.
	SeenCreatedMs *int64 `json:"seenCreatedMs,omitempty"`
	SeenReadyMs   *int64 `json:"seenReadyMs,omitempty"`
	// DeletingMs is when the watch saw its deletionTimestamp set, GoneMs when it saw it deleted.
	DeletingMs *int64 `json:"deletingMs,omitempty"`
	GoneMs     *int64 `json:"goneMs,omitempty"`
}

// Read decodes the recording at path.
func Read(path string) (*Recording, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Recording
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Version != Version {
		return nil, fmt.Errorf("%s: version %d, this reader knows %d", path, r.Version, Version)
	}
	return &r, nil
}

// Write encodes r to path, indented so that a diff of two recordings reads.
func Write(path string, r *Recording) error {
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Run is one value held for a number of consecutive samples.
type Run struct {
	Value int32
	// From is the first sample's index, Len the number of samples.
	From, Len int
}

// RunLength encodes seq as its runs.
func RunLength(seq []int32) []Run {
	var out []Run
	for i, v := range seq {
		if n := len(out); n > 0 && out[n-1].Value == v {
			out[n-1].Len++
			continue
		}
		out = append(out, Run{Value: v, From: i, Len: 1})
	}
	return out
}

// Values are the runs' values: the distinct sequence.
func Values(runs []Run) []int32 {
	out := make([]int32, len(runs))
	for i, r := range runs {
		out[i] = r.Value
	}
	return out
}

// Ms is d in whole milliseconds.
func Ms(d time.Duration) int64 { return d.Milliseconds() }
