// Package replicas is the decision core of kubectl-hpa: given a snapshot of one
// HorizontalPodAutoscaler, its target's scale, the selected pods and their metric
// samples, the in-memory history and the time, it decides the replica count exactly
// as the Kubernetes v1.37 HPA controller does, and says why.
//
// The package is pure: it never reads a clock, never logs, never talks to an API
// server and never mutates its inputs. It may use k8s.io/api and k8s.io/apimachinery
// types, nothing from client-go and nothing else of this module.
package replicas

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// Config holds the controller-wide settings (kube-controller-manager flags and the
// feature gates that change decisions). DefaultConfig returns upstream's defaults.
type Config struct {
	// Tolerance is --horizontal-pod-autoscaler-tolerance (0.1).
	Tolerance float64
	// DownscaleStabilizationWindow is --horizontal-pod-autoscaler-downscale-stabilization (5m).
	DownscaleStabilizationWindow time.Duration
	// CPUInitializationPeriod is --horizontal-pod-autoscaler-cpu-initialization-period (5m).
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is --horizontal-pod-autoscaler-initial-readiness-delay (30s).
	InitialReadinessDelay time.Duration
	// LegacyScaleUpFactor and LegacyScaleUpMinimum cap a scale-up of an HPA without
	// behavior to max(factor*current, minimum): 2 and 4 upstream (its unit tests use 8).
	LegacyScaleUpFactor  float64
	LegacyScaleUpMinimum float64
	// ScaleToZero is the HPAScaleToZero gate (beta, on in 1.37).
	ScaleToZero bool
	// ConfigurableTolerance is the HPAConfigurableTolerance gate (GA, locked on in 1.37).
	ConfigurableTolerance bool
	// PodLevelResources is the PodLevelResources gate (beta, on since 1.34).
	PodLevelResources bool
	// HPAGeneration is the HPAGeneration gate (beta, on in 1.37): status.observedGeneration is written.
	HPAGeneration bool
}

// DefaultConfig returns the settings of a default v1.37.2 kube-controller-manager.
func DefaultConfig() Config {
	return Config{
		Tolerance:                    0.1,
		DownscaleStabilizationWindow: 5 * time.Minute,
		CPUInitializationPeriod:      5 * time.Minute,
		InitialReadinessDelay:        30 * time.Second,
		LegacyScaleUpFactor:          2.0,
		LegacyScaleUpMinimum:         4.0,
		ScaleToZero:                  true,
		ConfigurableTolerance:        true,
		PodLevelResources:            true,
		HPAGeneration:                true,
	}
}

// Input is everything the core needs for one decision about one HPA.
type Input struct {
	// HPA is the object as read (autoscaling/v2). It is never modified. A non-nil
	// spec.behavior whose fields are unset gets the API defaults applied internally.
	HPA *autoscalingv2.HorizontalPodAutoscaler
	// Scale is the target's scale subresource; nil when ScaleErr is set.
	Scale *Scale
	// ScaleErr is why the scale could not be read (bad apiVersion, no REST mapping, GET failed).
	// The decision is then AbleToScale=False/FailedGetScale, as upstream. Wrap the error in a
	// *ScaleError to say which step failed (the reconcile error's wording depends on it); a bare
	// error counts as a failed GET.
	ScaleErr error
	// Pods are the pods in the HPA's namespace that match Scale.Selector. Only the fields the
	// decision reads need to be set (name, phase, deletionTimestamp, Ready condition, startTime,
	// container and init container names/requests/restartPolicy, pod-level requests).
	Pods []*corev1.Pod
	// Metrics holds what was fetched for each entry of HPA.Spec.Metrics, by index.
	// Len must equal len(HPA.Spec.Metrics) whenever metrics are needed (see NeedsMetrics).
	Metrics []MetricData
	// OtherHPAsSelectingPods names ("ns/name") other HPAs whose selectors match any of Pods;
	// non-empty means AmbiguousSelector and no scaling, as upstream.
	OtherHPAsSelectingPods []string
	// History is this HPA's recommendation and scale-event history as kept in memory by the
	// controller. The zero value means "never reconciled": the core seeds {current, now}.
	History History
	// Now is the decision time.
	Now time.Time
	// Config is the controller-wide configuration.
	Config Config
	// OmitPodTreatments leaves MetricResult.Pods nil: the same decision without its per-pod
	// account, for callers that never show it (run's line and table output). It saves a
	// record per pod and metric, the largest part of a decision's memory at thousands of pods.
	OmitPodTreatments bool
	// OmitTrace leaves Decision.Trace nil, and Stabilization.Considered (the list the trace
	// counts and explain shows): the same decision without its account, for callers that
	// never show it (the simulator, which decides thousands of times per spec played).
	OmitTrace bool
	// HistoryOwned hands History.Recommendations' array to the decision: Decide records the
	// new recommendation in it instead of in a copy, so the caller must read the history it
	// gave no more (only the decision's). For the simulator, which keeps only the decision's
	// history and decides thousands of times: the copy was a quarter of its bytes. Without
	// it, Decide never changes in.
	HistoryOwned bool
}

// Scale is the part of the target's scale subresource that matters.
type Scale struct {
	// SpecReplicas is scale.spec.replicas: upstream's "current replicas".
	SpecReplicas int32
	// StatusReplicas is scale.status.replicas: used only by per-pod Object/External targets.
	StatusReplicas int32
	// Selector is scale.status.selector in label-selector string syntax.
	Selector string
}

// MetricData is what the metrics layer returned for one metric spec.
type MetricData struct {
	// Err is the fetch error (metrics API absent, empty answer, ...); the core wraps it the way
	// upstream wraps the metrics client error and attributes the condition reason.
	Err error
	// PodSamples: Resource, ContainerResource and Pods metrics; a sample per pod name.
	// Pods omitted here are "missing". Samples for pods not in Input.Pods are kept ("superfluous").
	PodSamples *sampleset.Set
	// Value: Object metrics, the single value in milli-units.
	Value int64
	// Values: External metrics, every sample matching the metric selector, in milli-units.
	Values []int64
	// Timestamp of the metric as reported by the metrics API.
	Timestamp time.Time
	// Source says where the numbers came from ("metrics.k8s.io/v1", "heapster service kube-system/heapster", ...);
	// it is carried into the trace only.
	Source string
}

// History is the in-memory state upstream keeps per HPA key.
type History struct {
	// Recommendations is nil when the HPA was never reconciled (then seeded with {current, now});
	// an empty non-nil slice means "known, but nothing recorded".
	Recommendations []Recommendation
	ScaleUpEvents   []ScaleEvent
	ScaleDownEvents []ScaleEvent
}

// Recommendation is one pre-normalization desired replica count and when it was made.
type Recommendation struct {
	Replicas  int32
	Timestamp time.Time
}

// ScaleEvent is one successful rescale in one direction.
type ScaleEvent struct {
	// ReplicaChange is the absolute change.
	ReplicaChange int32
	Timestamp     time.Time
	// Outdated marks a slot older than the direction's longest policy period, reusable.
	Outdated bool
}

// Phase tells how far a decision got.
type Phase string

const (
	// PhaseScaleFailed: the scale could not be read; only AbleToScale changes.
	PhaseScaleFailed Phase = "ScaleFailed"
	// PhaseDisabled: current replicas is 0 and the HPA may not scale from zero.
	PhaseDisabled Phase = "Disabled"
	// PhaseClampedToRange: current replicas outside [min, max]; metrics not computed.
	PhaseClampedToRange Phase = "ClampedToRange"
	// PhaseMetricsFailed: no usable replica count (every metric failed, a failure blocks a
	// scale-down, or the selector is invalid/ambiguous); nothing is scaled.
	PhaseMetricsFailed Phase = "MetricsFailed"
	// PhaseComputed: a desired count was computed and normalized (it may equal current).
	PhaseComputed Phase = "Computed"
)

// Decision is the outcome of Decide: what upstream's reconcile would do up to (not including)
// the scale write, and everything needed to explain it.
type Decision struct {
	Phase Phase
	// CurrentReplicas is scale.spec.replicas (0 when the scale could not be read).
	CurrentReplicas int32
	// MinReplicas is spec.minReplicas with nil read as 1.
	MinReplicas int32
	MaxReplicas int32
	// Tolerances in force: Down applies below ratio 1, Up above.
	Tolerances Tolerances
	// Metrics has one entry per spec metric, by index (nil when metrics were not computed).
	Metrics []MetricResult
	// MetricName is the name of the metric that set the count ("cpu resource utilization
	// (percentage of request)"), empty if none did.
	MetricName string
	// MetricReplicas is the max over metric proposals before normalization (-1 when none).
	MetricReplicas int32
	// Stabilization and Limit describe normalization (nil when it did not run).
	Stabilization *Stabilization
	Limit         *Limit
	// DesiredReplicas is the final count upstream would write to the scale (equals
	// CurrentReplicas when not rescaling).
	DesiredReplicas int32
	// Rescale is true when DesiredReplicas differs from CurrentReplicas and would be written.
	Rescale bool
	// Reason is the rescale reason used in events ("cpu resource utilization (percentage of
	// request) above target", "All metrics below target", "Current number of replicas above Spec.MaxReplicas").
	Reason string
	// Conditions are set in this order on the HPA status, before the scale write. A type may
	// appear more than once (AbleToScale is first SucceededGetScale, then the stabilization
	// reason); applying them in order with Apply's merge rules gives upstream's status.
	Conditions []Condition
	// RemovedConditions are condition types removed from the status after Conditions are set
	// (ScaledToZero on the disabled path when the HPAScaleToZero gate is off).
	RemovedConditions []autoscalingv2.HorizontalPodAutoscalerConditionType
	// Reference is upstream's "<Kind>/<namespace>/<name>" of the scale target, used in errors.
	Reference string
	// Events are emitted before the scale write (per-metric failures, selector problems, ...).
	Events []Event
	// Err is the error upstream's reconcile returns (nil on success); partial metric failures
	// set it even when a count was produced.
	Err error
	// History is the new history after recording this decision's recommendation (scale events
	// are added by Apply after a successful write).
	History History
	// Trace is the ordered, human-readable account of every step (nil with Input.OmitTrace).
	Trace []Step
}

// Tolerances are the effective tolerance per direction and where each came from.
type Tolerances struct {
	Down, Up             float64
	DownSource, UpSource string // "controller default" or "behavior.scaleDown.tolerance" ...
}

// MetricResult is one metric's proposal.
type MetricResult struct {
	// Index into spec.metrics and the metric's type as written.
	Index int
	Type  autoscalingv2.MetricSourceType
	// Name is upstream's name for this metric in messages ("pods metric qps").
	Name string
	// Replicas proposed (0 when Err is set).
	Replicas int32
	// Ratio is the usage ratio of the first pass, RebalancedRatio the one after filling
	// missing/unready pods (equal to Ratio when no second pass ran).
	Ratio, RebalancedRatio float64
	// WithinTolerance reports that the ratio that decided was inside the tolerance band.
	WithinTolerance bool
	// Status is the MetricStatus upstream writes into status.currentMetrics (zero value on error).
	Status autoscalingv2.MetricStatus
	// Pods classifies every pod for pod-based metrics (nil with Input.OmitPodTreatments).
	Pods []PodTreatment
	// ReadyPods is the count the proposal was multiplied by (pod metrics: ready pods; Object/External
	// value: Running+Ready pods).
	ReadyPods int
	// Timestamp of the metric used.
	Timestamp time.Time
	// Err is the per-metric error, wrapped as upstream wraps it; Reason the condition/event reason
	// (FailedGetResourceMetric, ...); Message the ScalingActive condition message upstream would
	// set if this metric were the first failing one.
	Err     error
	Reason  string
	Message string
}

// PodClass is how the calculator treated one pod.
type PodClass string

const (
	PodReady   PodClass = "ready"
	PodUnready PodClass = "unready"
	PodMissing PodClass = "missing"
	PodIgnored PodClass = "ignored"
)

// PodTreatment explains one pod's part in a pod-based metric.
type PodTreatment struct {
	Name  string
	Class PodClass
	// Why is a short phrase: "deleting", "phase Failed", "phase Pending", "no metric",
	// "cpu: not ready within initialization period", ...
	Why string
	// Request in milli-units for Utilization targets (0 otherwise), Usage the sample (0 if missing),
	// AssumedUsage the value the rebalancing pass used (-1 when the pod took no part in it).
	Request, Usage, AssumedUsage int64
	// HasSample is false for missing pods.
	HasSample bool
}

// Stabilization records the stabilization step.
type Stabilization struct {
	// Legacy is true without spec.behavior (downscale-only, cluster window).
	Legacy                               bool
	UpWindow                             time.Duration
	DownWindow                           time.Duration
	Recommendation                       int32 // input (pre-normalized)
	UpRecommendation, DownRecommendation int32
	Result                               int32
	// Reason is the AbleToScale reason: ReadyForNewScale, ScaleUpStabilized, ScaleDownStabilized.
	Reason string
	// Considered are the history samples that were inside a window (nil with
	// Input.OmitTrace).
	Considered []Recommendation
}

// Limit records the rate-limit and min/max step.
type Limit struct {
	Input  int32
	Result int32
	// Policies evaluated (behavior only), with the proposal each made.
	Policies []PolicyLimit
	// ScaleUpLimit / ScaleDownLimit in force (legacy: max(2x, 4)).
	UpLimit, DownLimit int32
	// Reason is the ScalingLimited reason: DesiredWithinRange, TooManyReplicas, TooFewReplicas,
	// ScaleUpLimit, ScaleDownLimit.
	Reason  string
	Limited bool
}

// PolicyLimit is one behavior policy's proposal.
type PolicyLimit struct {
	Direction     string // "scaleUp" or "scaleDown"
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
	PeriodStart   int32
	Proposal      int32
}

// Condition is a status condition to set (lastTransitionTime is managed by Apply).
type Condition struct {
	Type    autoscalingv2.HorizontalPodAutoscalerConditionType
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// Event is an event upstream records on the HPA.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Step is one line of the trace.
type Step struct {
	// Stage groups steps: "scale", "metric", "pods", "proposal", "stabilization", "limits", "result".
	Stage string
	// Metric is the metric index for metric stages, -1 otherwise.
	Metric int
	// Text is a sentence for a person ("cpu: 3 ready pods at 50% of request vs target 30% -> ratio 1.67 -> 5 replicas").
	Text string
}

// Outcome is the result of Apply: what the controller writes after the scale write attempt.
type Outcome struct {
	// Status is the new HPA status (conditions merged as upstream: lastTransitionTime changes
	// only on a status flip, new types appended).
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// StatusChanged is false when Status is semantically equal to the HPA's current status
	// (upstream then skips the write).
	StatusChanged bool
	// Events to record after the scale write (SuccessfulRescale / FailedRescale), in addition
	// to Decision.Events.
	Events []Event
	// History after recording a successful rescale's scale event.
	History History
	// Err is the reconcile error after the write (FailedRescale, or Decision.Err).
	Err error
}
