// Package recording is the file format of `kubectl hpa run --record`: JSON Lines, a header
// naming the format and how the controller was configured, then one entry per sync carrying
// every input of that decision (the time, the HPA, the target's scale or why it could not be
// read, the pods or why they could not be listed, each metric's samples or error, the other
// HPAs selecting the pods, the history the controller held) and what the controller decided
// and kept. A recording reruns exactly (plugin/rerun): the same inputs through the same core give the same
// decisions, sync by sync. A Reader hands out one sync at a time, so that a rerun holds one
// sync of a file of any length; Load keeps the syncs of the HPAs a caller asks for.
//
// The package is a leaf (the standard library, k8s.io/api, k8s.io/apimachinery and the core's
// types) so that its decoder's fuzz target instruments little.
package recording

import (
	"encoding/json"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

const (
	// APIVersion and Kind name the format in the header line.
	APIVersion = "hpa.kubectl-hpa.io/v1alpha1"
	Kind       = "Recording"
	// Version is the schema version this package writes and the newest it reads. It grows
	// with every change an older reader would misread.
	Version = 1

	// KindTerm and KindSync are the kinds of the entries after the header.
	KindTerm = "Term"
	KindSync = "Sync"
)

// Header is a recording's first line: what wrote it and how the controller was configured.
type Header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Version    int    `json:"version"`
	// Recorder is the program and version that wrote the file ("kubectl-hpa v0.3.0").
	Recorder string `json:"recorder,omitempty"`
	// Started is when recording began.
	Started    time.Time  `json:"started"`
	Controller Controller `json:"controller"`
	// FeatureGates are the gates that change decisions, by upstream's names.
	FeatureGates FeatureGates `json:"featureGates"`
	// MetricsSource says where the numbers came from (metrics.Client.Source()).
	MetricsSource string `json:"metricsSource"`
	// DryRun is run's --dry-run: none, client or server.
	DryRun string `json:"dryRun"`
}

// Controller is run's configuration: kube-controller-manager's flags and run's own.
type Controller struct {
	Namespace               string   `json:"namespace"`
	Selector                string   `json:"selector,omitempty"`
	SyncPeriod              Duration `json:"syncPeriod"`
	Tolerance               float64  `json:"tolerance"`
	DownscaleStabilization  Duration `json:"downscaleStabilization"`
	CPUInitializationPeriod Duration `json:"cpuInitializationPeriod"`
	InitialReadinessDelay   Duration `json:"initialReadinessDelay"`
	// LegacyScaleUpFactor and LegacyScaleUpMinimum cap a scale-up without behavior
	// (upstream's constants 2 and 4).
	LegacyScaleUpFactor  float64  `json:"legacyScaleUpFactor"`
	LegacyScaleUpMinimum float64  `json:"legacyScaleUpMinimum"`
	Workers              int      `json:"workers,omitempty"`
	ForceOwnership       bool     `json:"forceOwnership,omitempty"`
	OwnershipWindow      Duration `json:"ownershipWindow,omitempty"`
	ScaleFromCache       bool     `json:"scaleFromCache,omitempty"`
	// PersistHistory: a new controller restores each HPA's history from its annotation.
	PersistHistory bool `json:"persistHistory,omitempty"`
}

// FeatureGates are the feature gates that change decisions.
type FeatureGates struct {
	HPAScaleToZero           bool `json:"HPAScaleToZero"`
	HPAConfigurableTolerance bool `json:"HPAConfigurableTolerance"`
	PodLevelResources        bool `json:"PodLevelResources"`
	HPAGeneration            bool `json:"HPAGeneration"`
}

// Term is written when a new controller starts (run's start, and each time it takes the
// Lease again): the new controller holds no history but what it restores from the HPAs'
// annotations, so none is carried across it.
type Term struct {
	Kind  string    `json:"kind"`
	Term  int       `json:"term"`
	Start time.Time `json:"start"`
}

// Sync is one reconcile of one HPA: every input of its decision, and the result.
type Sync struct {
	Kind string `json:"kind"`
	// Term is the Term entry this sync belongs to.
	Term int `json:"term"`
	// Key is "namespace/name".
	Key string `json:"key"`
	// Now is the decision time.
	Now time.Time `json:"now"`
	// HPA is the HPA as read (spec, status and metadata but managed fields).
	HPA *autoscalingv2.HorizontalPodAutoscaler `json:"hpa"`
	// Scale is the target's scale; nil when it could not be read (ScaleError).
	Scale      *Scale      `json:"scale,omitempty"`
	ScaleError *ScaleError `json:"scaleError,omitempty"`
	// Pods are the pods listed for the target's selector, stripped to what decisions read
	// (as run's pod cache strips them), sorted by name; nil when they were not listed.
	Pods      []*corev1.Pod `json:"pods,omitempty"`
	PodsError *Error        `json:"podsError,omitempty"`
	// OtherHPAs are the other HPAs ("ns/name") whose selectors match the pods.
	OtherHPAs []string `json:"otherHPAs,omitempty"`
	// Metrics holds what was read for each of the HPA's spec.metrics, by index.
	Metrics []Metric `json:"metrics,omitempty"`
	// History is what the controller held for this HPA before deciding: null when it had
	// never reconciled it (the core then seeds it), which differs from an empty history.
	History *History `json:"history"`
	// DryRunReason is why nothing was written (empty when the controller wrote).
	DryRunReason string `json:"dryRunReason,omitempty"`
	// ScaleWriteError is why the scale write failed (a decision to rescale only).
	ScaleWriteError *Error `json:"scaleWriteError,omitempty"`
	// StatusWriteError is why the status write failed: the sync's error as run printed it
	// (replicas.StatusWriteFailed) is this one, not the decision's.
	StatusWriteError *Error `json:"statusWriteError,omitempty"`
	Result           Result `json:"result"`

	// Line is the entry's line in the file it was read from (0 when not read from one), Index
	// its place among the file's syncs (from 0).
	Line  int `json:"-"`
	Index int `json:"-"`
}

// Scale is the part of the target's scale subresource decisions read.
type Scale struct {
	SpecReplicas   int32  `json:"specReplicas"`
	StatusReplicas int32  `json:"statusReplicas"`
	Selector       string `json:"selector"`
}

// ScaleError is why the target's scale could not be read, and at which step.
type ScaleError struct {
	// Stage is Get, APIVersion or Mapping (replicas.ScaleErrorStage).
	Stage   string `json:"stage"`
	Message string `json:"message"`
}

// Error is an error's text.
type Error struct {
	Message string `json:"message"`
}

// Metric is what the metrics source answered for one spec metric.
type Metric struct {
	Error *Error `json:"error,omitempty"`
	// PodSamples (Resource, ContainerResource, Pods metrics) by pod name.
	PodSamples map[string]Sample `json:"podSamples,omitempty"`
	// Value (Object metrics) and Values (External metrics) in milli-units.
	Value     int64     `json:"value,omitempty"`
	Values    []int64   `json:"values,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	Source    string    `json:"source,omitempty"`
}

// Sample is one pod's metric value and the window it was measured over.
type Sample struct {
	MilliValue int64     `json:"milliValue"`
	Timestamp  time.Time `json:"timestamp"`
	Window     Duration  `json:"window"`
}

// History is the controller's memory of one HPA (replicas.History). A null
// recommendations list (never reconciled) differs from an empty one.
type History struct {
	Recommendations []Recommendation `json:"recommendations"`
	ScaleUpEvents   []ScaleEvent     `json:"scaleUpEvents"`
	ScaleDownEvents []ScaleEvent     `json:"scaleDownEvents"`
}

// Recommendation is one recommendation the controller remembers.
type Recommendation struct {
	Replicas  int32     `json:"replicas"`
	Timestamp time.Time `json:"timestamp"`
}

// ScaleEvent is one rescale the controller remembers.
type ScaleEvent struct {
	ReplicaChange int32     `json:"replicaChange"`
	Timestamp     time.Time `json:"timestamp"`
	Outdated      bool      `json:"outdated,omitempty"`
}

// Result is what the controller decided and did: the decision, the outcome it wrote (or
// would have), and the history it kept for the next sync.
type Result struct {
	Phase           string         `json:"phase"`
	CurrentReplicas int32          `json:"currentReplicas"`
	DesiredReplicas int32          `json:"desiredReplicas"`
	Rescale         bool           `json:"rescale"`
	Reason          string         `json:"reason,omitempty"`
	MetricName      string         `json:"metricName,omitempty"`
	MetricReplicas  int32          `json:"metricReplicas"`
	Metrics         []MetricResult `json:"metrics,omitempty"`
	Conditions      []Condition    `json:"conditions,omitempty"`
	Events          []Event        `json:"events,omitempty"`
	Error           string         `json:"error,omitempty"`
	// Status is the HPA status the outcome sets; StatusChanged says it differs from the one
	// read (upstream writes it only then).
	Status        autoscalingv2.HorizontalPodAutoscalerStatus `json:"status"`
	StatusChanged bool                                        `json:"statusChanged"`
	// OutcomeEvents are the events after the scale write; OutcomeError the reconcile error.
	OutcomeEvents []Event `json:"outcomeEvents,omitempty"`
	OutcomeError  string  `json:"outcomeError,omitempty"`
	// Kept is the history the controller kept for the next sync.
	Kept History `json:"kept"`
}

// MetricResult is one metric's proposal.
type MetricResult struct {
	Replicas int32                      `json:"replicas"`
	Status   autoscalingv2.MetricStatus `json:"status"`
	Reason   string                     `json:"reason,omitempty"`
	Error    string                     `json:"error,omitempty"`
}

// Condition is a status condition a decision sets, in order.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Event is an event the controller records.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Duration is a time.Duration written as Go's duration string ("1m30s"), which parses back
// to the same nanoseconds.
type Duration time.Duration

// Std is d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"15s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
