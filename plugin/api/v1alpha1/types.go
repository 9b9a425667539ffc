package v1alpha1

import (
	"encoding/json"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Group and Version of the API; each kind's name is its Kind* constant.
const (
	Group           = "hpa.kubectl-hpa.io"
	Version         = "v1alpha1"
	KindExplanation = "Explanation"
)

// SchemeGroupVersion is the group/version of Explanation.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Binding constraints named by Verdict.Constraint: the decision core's names
// (controller/replicas), which a test holds these to.
const (
	ConstraintNone                   = "None"                   // metrics set the count and nothing held it back
	ConstraintTolerance              = "Tolerance"              // every usable ratio was inside the tolerance band
	ConstraintScaleUpStabilization   = "ScaleUpStabilization"   // the scale-up window held the count
	ConstraintScaleDownStabilization = "ScaleDownStabilization" // the scale-down window held the count
	ConstraintScaleUpLimit           = "ScaleUpLimit"           // a scale-up policy (or legacy 2x/4 cap) bound
	ConstraintScaleDownLimit         = "ScaleDownLimit"         // a scale-down policy bound
	ConstraintMaxReplicas            = "MaxReplicas"            // spec.maxReplicas bound
	ConstraintMinReplicas            = "MinReplicas"            // spec.minReplicas bound
	ConstraintMetricsUnavailable     = "MetricsUnavailable"     // no usable metric (or a failure blocked a scale-down)
	ConstraintSelector               = "Selector"               // invalid or ambiguous selector
	ConstraintScaleUnavailable       = "ScaleUnavailable"       // the target's scale could not be read
	ConstraintScalingDisabled        = "ScalingDisabled"        // target at 0 replicas, scaling from zero not allowed
)

// Explanation is one HPA decision with everything needed to understand it.
type Explanation struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        Metadata    `json:"metadata"`
	Time            metav1.Time `json:"time"`
	Error           *Error      `json:"error,omitempty"`

	Target        *Target     `json:"target,omitempty"`
	Replicas      *Range      `json:"replicas,omitempty"`
	Tolerance     *Tolerance  `json:"tolerance,omitempty"`
	Behavior      *Behavior   `json:"behavior,omitempty"`
	MetricsSource string      `json:"metricsSource,omitempty"`
	Metrics       []Metric    `json:"metrics,omitempty"`
	Arithmetic    *Arithmetic `json:"arithmetic,omitempty"`
	Decision      *Decision   `json:"decision,omitempty"`
	Verdict       *Verdict    `json:"verdict,omitempty"`
	Cluster       *Cluster    `json:"cluster,omitempty"`
	History       *History    `json:"history,omitempty"`
	WhatIf        []WhatIf    `json:"whatIf,omitempty"`
	Warnings      []Warning   `json:"warnings,omitempty"`
	// KEDA is what KEDA adds around the HPA when one of its ScaledObjects owns it.
	KEDA *KEDA `json:"keda,omitempty"`
	// Findings are the HPA's problems, worst first: those its decision shows and those of
	// kubectl hpa lint's rules (list's PROBLEMS).
	Findings []Finding `json:"findings,omitempty"`
	Trace    []Step    `json:"trace,omitempty"`
}

// Metadata identifies the HPA explained.
type Metadata struct {
	Name            string    `json:"name"`
	Namespace       string    `json:"namespace"`
	UID             types.UID `json:"uid,omitempty"`
	Generation      int64     `json:"generation,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
}

// Error is a failure of the command, structured.
type Error struct {
	// ExitCode is the process exit code (see the plugin package's Exit* constants).
	ExitCode int `json:"exitCode"`
	// Reason is a stable CamelCase word (HPANotFound, WrongNamespace, TargetNotFound,
	// TargetNotScalable, Forbidden, MetricsAPIUnavailable, ...).
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Target is the scale target and its scale subresource.
type Target struct {
	APIVersion     string `json:"apiVersion"`
	Kind           string `json:"kind"`
	Name           string `json:"name"`
	SpecReplicas   *int32 `json:"specReplicas,omitempty"`
	StatusReplicas *int32 `json:"statusReplicas,omitempty"`
	Selector       string `json:"selector,omitempty"`
	// Error is why the scale could not be read.
	Error string `json:"error,omitempty"`
}

// Range is the HPA's replica bounds.
type Range struct {
	Min int32 `json:"min"`
	Max int32 `json:"max"`
}

// Tolerance is the effective tolerance per direction.
type Tolerance struct {
	ScaleUp   DirectionTolerance `json:"scaleUp"`
	ScaleDown DirectionTolerance `json:"scaleDown"`
}

// DirectionTolerance is one direction's tolerance (0.1 = 10 %) and where it came from.
type DirectionTolerance struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
}

// Behavior is the scaling behavior in force.
type Behavior struct {
	// Legacy is true when spec.behavior is absent: scale-down is stabilized over the cluster
	// window, scale-up is capped at max(2x current, 4) per sync, no policies.
	Legacy    bool                           `json:"legacy"`
	ScaleUp   *autoscalingv2.HPAScalingRules `json:"scaleUp,omitempty"`
	ScaleDown *autoscalingv2.HPAScalingRules `json:"scaleDown,omitempty"`
	// Defaulted lists the fields filled with API or controller defaults.
	Defaulted []string `json:"defaulted,omitempty"`
}

// Metric is one spec metric's part in the decision.
type Metric struct {
	Index int    `json:"index"`
	Type  string `json:"type"`
	// Name is the controller's own name for the metric ("cpu resource utilization (percentage of request)").
	Name string `json:"name"`
	// Short is the name a person uses and --set-target/--assume accept ("cpu", "requests_per_second").
	Short string `json:"short"`
	// Target and Current in describe's vocabulary ("80%", "250m", "<unknown>").
	Target  string `json:"target"`
	Current string `json:"current"`
	// TargetSpec is the target as written in spec.metrics (after --set-target).
	TargetSpec autoscalingv2.MetricTarget `json:"targetSpec"`
	// Status is what the controller would write into status.currentMetrics (absent on error).
	Status          *autoscalingv2.MetricStatus `json:"status,omitempty"`
	Ratio           *float64                    `json:"ratio,omitempty"`
	RebalancedRatio *float64                    `json:"rebalancedRatio,omitempty"`
	WithinTolerance bool                        `json:"withinTolerance"`
	Proposal        *int32                      `json:"proposal,omitempty"`
	ReadyPods       int                         `json:"readyPods"`
	// Computed is false on the paths that do not consult metrics (scale unreadable, scaling
	// disabled, current count outside [min, max]).
	Computed bool `json:"computed"`
	// Chosen marks the metric whose proposal set the count.
	Chosen    bool         `json:"chosen"`
	Timestamp *metav1.Time `json:"timestamp,omitempty"`
	Error     string       `json:"error,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	Pods      []Pod        `json:"pods,omitempty"`
}

// Pod is one pod's treatment in a pod-based metric.
type Pod struct {
	Name  string `json:"name"`
	Phase string `json:"phase,omitempty"`
	Ready bool   `json:"ready"`
	// Age is the time since status.startTime at decision time ("" when not started).
	Age string `json:"age,omitempty"`
	// Request and Usage in milli-units; Utilization in percent of request (Utilization targets).
	RequestMilli *int64 `json:"requestMilli,omitempty"`
	UsageMilli   *int64 `json:"usageMilli,omitempty"`
	Utilization  *int64 `json:"utilization,omitempty"`
	// Treatment is ready (counted), unready (counted as 0 % on a scale-up), missing
	// (counted as 100 % of target on a scale-down, 0 on a scale-up) or ignored.
	Treatment string `json:"treatment"`
	Why       string `json:"why,omitempty"`
	// AssumedUsageMilli is the value the rebalancing pass used for this pod.
	AssumedUsageMilli *int64 `json:"assumedUsageMilli,omitempty"`
}

// Arithmetic is the path from proposals to the final count.
type Arithmetic struct {
	Proposals      []Proposal     `json:"proposals,omitempty"`
	MetricReplicas *int32         `json:"metricReplicas,omitempty"`
	ChosenMetric   string         `json:"chosenMetric,omitempty"`
	Stabilization  *Stabilization `json:"stabilization,omitempty"`
	Limits         *Limits        `json:"limits,omitempty"`
	// Clamp is set on the paths that skip metrics (current outside [min, max]).
	Clamp   string `json:"clamp,omitempty"`
	Desired int32  `json:"desired"`
}

// Proposal is one metric's proposed count.
type Proposal struct {
	Metric   string `json:"metric"`
	Replicas *int32 `json:"replicas,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Stabilization is the stabilization step.
type Stabilization struct {
	Legacy             bool             `json:"legacy"`
	UpWindowSeconds    int64            `json:"upWindowSeconds"`
	DownWindowSeconds  int64            `json:"downWindowSeconds"`
	Recommendation     int32            `json:"recommendation"`
	UpRecommendation   int32            `json:"upRecommendation"`
	DownRecommendation int32            `json:"downRecommendation"`
	Result             int32            `json:"result"`
	Reason             string           `json:"reason"`
	Considered         []Recommendation `json:"considered,omitempty"`
}

// Recommendation is one history sample.
type Recommendation struct {
	Replicas int32       `json:"replicas"`
	Time     metav1.Time `json:"time"`
	// Age is the sample's age at decision time.
	Age string `json:"age"`
}

// Limits is the rate-limit and min/max step.
type Limits struct {
	Input         int32         `json:"input"`
	Result        int32         `json:"result"`
	UpLimit       int32         `json:"upLimit"`
	DownLimit     int32         `json:"downLimit"`
	Policies      []PolicyLimit `json:"policies,omitempty"`
	Reason        string        `json:"reason"`
	Limited       bool          `json:"limited"`
	BindingPolicy string        `json:"bindingPolicy,omitempty"`
}

// PolicyLimit is one behavior policy's proposal.
type PolicyLimit struct {
	Direction     string `json:"direction"`
	Type          string `json:"type"`
	Value         int32  `json:"value"`
	PeriodSeconds int32  `json:"periodSeconds"`
	PeriodStart   int32  `json:"periodStart"`
	Proposal      int32  `json:"proposal"`
}

// Decision is the outcome as the controller would apply it.
type Decision struct {
	Phase           string      `json:"phase"`
	CurrentReplicas int32       `json:"currentReplicas"`
	DesiredReplicas int32       `json:"desiredReplicas"`
	Rescale         bool        `json:"rescale"`
	Reason          string      `json:"reason,omitempty"`
	Conditions      []Condition `json:"conditions,omitempty"`
	Events          []Event     `json:"events,omitempty"`
	Error           string      `json:"error,omitempty"`
}

// Condition is an HPA status condition.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// LastTransitionTime is set for conditions read from the cluster.
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// Event is an event on the HPA (would-be, or read from the cluster).
type Event struct {
	Type    string       `json:"type"`
	Reason  string       `json:"reason"`
	Message string       `json:"message"`
	Count   int32        `json:"count,omitempty"`
	Time    *metav1.Time `json:"time,omitempty"`
}

// Verdict is the one-sentence answer.
type Verdict struct {
	Sentence   string `json:"sentence"`
	Constraint string `json:"constraint"`
	// Details answer the questions the verdict usually raises, in the words people search
	// with: which metric drove it, which pods were not counted as measured, what would move
	// the count, why a failing metric blocks a scale-down, what kubectl get hpa shows.
	Details []string `json:"details,omitempty"`
	// HeldUntil is when the stabilization window or scaling policy period that holds the
	// decision lets go of it, were the metrics to stay as they are (replicas.HeldUntil); the
	// controller moves at its first sync from then. Set by list only, for now.
	HeldUntil *metav1.Time `json:"heldUntil,omitempty"`
	// Alternatives are the counts the controller would set under the memories the cluster's
	// evidence leaves open (history.memory), where they differ from this one.
	Alternatives []Alternative `json:"alternatives,omitempty"`
}

// Alternative is the count under a memory the evidence does not rule out: If says what the
// evidence leaves open.
type Alternative struct {
	DesiredReplicas int32  `json:"desiredReplicas"`
	If              string `json:"if"`
}

// Cluster is what the cluster's own HPA controller last decided.
type Cluster struct {
	CurrentReplicas    int32        `json:"currentReplicas"`
	DesiredReplicas    int32        `json:"desiredReplicas"`
	LastScaleTime      *metav1.Time `json:"lastScaleTime,omitempty"`
	ObservedGeneration *int64       `json:"observedGeneration,omitempty"`
	Conditions         []Condition  `json:"conditions,omitempty"`
	RecentRescales     []Event      `json:"recentRescales,omitempty"`
	// Comparable is false when this decision produces no new count (scale unreadable, metrics
	// failed): the controller then leaves status.desiredReplicas as it was.
	Comparable bool `json:"comparable"`
	// StatusNeverWritten is true when no controller has written the HPA's status yet (no
	// observed generation, conditions or counts): there is no decision of the cluster's to
	// compare with, so Comparable is false.
	StatusNeverWritten bool `json:"statusNeverWritten,omitempty"`
	// Agrees is true when the decision is comparable and the cluster's desiredReplicas equals it.
	Agrees bool `json:"agrees"`
	// Note says what a disagreement may mean.
	Note string `json:"note,omitempty"`
	// StatusWriters are the field managers of the HPA's status subresource (managedFields),
	// the latest writer first. Set by list only, for now.
	StatusWriters []StatusWriter `json:"statusWriters,omitempty"`
	// Causes are what the evidence says a disagreement comes from, each a word list's
	// DisagreesWithCluster finding explains (GenerationNotObserved, AnotherWriter,
	// StaleMetrics, InMemoryHistory, Unknown). Set by list only, for now.
	Causes []string `json:"causes,omitempty"`
}

// StatusWriter is one field manager of the HPA's status and when it last wrote it.
type StatusWriter struct {
	Manager string       `json:"manager"`
	Time    *metav1.Time `json:"time,omitempty"`
}

// History says which recommendation history the decision used.
type History struct {
	// Source is "reconstructed" (from status.lastScaleTime and rescale events), "recorded" (the
	// history a kubectl hpa run persisted on the HPA), "controller" (the history kept by the
	// kubectl hpa run loop deciding) or "prometheus" (replayed from the metric history in
	// Prometheus, see Replay).
	Source string `json:"source"`
	Note   string `json:"note"`
	// Holder is the Lease identity of the kubectl hpa run that recorded a "recorded" history
	// (empty when it ran without a Lease), RecordedAt when it last wrote it.
	Holder     string       `json:"holder,omitempty"`
	RecordedAt *metav1.Time `json:"recordedAt,omitempty"`
	// Recommendations and scale events given to the core (before this decision's own sample).
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	ScaleUpEvents   []ScaleEvent     `json:"scaleUpEvents,omitempty"`
	ScaleDownEvents []ScaleEvent     `json:"scaleDownEvents,omitempty"`
	// FreshControllerDesired is what a controller that started just now (no history: the
	// current size is its only sample) would decide, when that differs.
	FreshControllerDesired *int32 `json:"freshControllerDesired,omitempty"`
	// Replay is the replay from Prometheus (explain --prometheus-url), also when it failed.
	Replay *Replay `json:"replay,omitempty"`
	// Memory is the evidence a "reconstructed" history was inferred from.
	Memory *Memory `json:"memory,omitempty"`
}

// Memory is the cluster controller's memory of the HPA as the cluster's evidence shows it:
// when it began, the seed of its first sync, the rescales it made since.
type Memory struct {
	// Start is when the controller's memory of the HPA begins, StartEvidence from what (the
	// HPA's creationTimestamp, kube-controller-manager's leader Lease).
	Start         *metav1.Time `json:"start,omitempty"`
	StartEvidence string       `json:"startEvidence,omitempty"`
	// Controller is who decides the HPA: "kube-controller-manager", or "kubectl hpa run" while
	// one holds its Lease. Leader is that controller's Lease as read; LeaderError why a Lease
	// could not be read.
	Controller  string  `json:"controller,omitempty"`
	Leader      *Leader `json:"leader,omitempty"`
	LeaderError string  `json:"leaderError,omitempty"`
	// NeverSynced: the HPA's status was never written; its next sync is its first and seeds.
	NeverSynced bool        `json:"neverSynced,omitempty"`
	Seed        *MemorySeed `json:"seed,omitempty"`
	Rescales    []Rescaled  `json:"rescales,omitempty"`
	// TargetEventsError says why the target's events (the sizes rescales came from) could not
	// be listed.
	TargetEventsError string `json:"targetEventsError,omitempty"`
}

// Leader is who holds a controller's leader Lease (namespace/name) since when, and how often
// the Lease changed hands.
type Leader struct {
	Lease       string      `json:"lease"`
	Holder      string      `json:"holder"`
	Since       metav1.Time `json:"since"`
	Transitions int32       `json:"transitions"`
}

// MemorySeed is the recommendation the controller's first sync of the HPA made.
type MemorySeed struct {
	Replicas int32       `json:"replicas"`
	Time     metav1.Time `json:"time"`
	Evidence string      `json:"evidence"`
}

// Rescaled is one rescale the controller remembers: its new size, and the size it came from
// with what says so (without it, a behavior's policies count one pod, the least it changed, in
// Direction, from the event's reason).
type Rescaled struct {
	Time         metav1.Time `json:"time"`
	From         *int32      `json:"from,omitempty"`
	To           int32       `json:"to"`
	FromEvidence string      `json:"fromEvidence,omitempty"`
	Direction    string      `json:"direction,omitempty"`
}

// Replay is the cluster controller's recommendation history replayed from the metric
// history in Prometheus: the decision core run at every sync the controller could have
// made over its longest stabilization window.
type Replay struct {
	// Prometheus is the server asked (its URL without credentials).
	Prometheus string `json:"prometheus"`
	// Error says why there is no replay (Prometheus unreachable or failing, no series, a
	// metric without a query); the history is then the reconstruction.
	Error string `json:"error,omitempty"`
	// Queries are the PromQL queries, by metric.
	Queries []string `json:"queries,omitempty"`
	// From and To bound the replayed syncs; Syncs is how many were replayed.
	From  *metav1.Time `json:"from,omitempty"`
	To    *metav1.Time `json:"to,omitempty"`
	Syncs int          `json:"syncs,omitempty"`
	// StepSeconds is the spacing of the samples (the live samples' window: metrics-server's
	// scrape interval, aligned to its scrapes), RateWindowSeconds the rate() window of CPU.
	StepSeconds       float64 `json:"stepSeconds,omitempty"`
	RateWindowSeconds float64 `json:"rateWindowSeconds,omitempty"`
	// SyncPeriodSeconds is the controller's sync period; it syncs at SyncPhase past each
	// multiple of it (Unix time).
	SyncPeriodSeconds float64    `json:"syncPeriodSeconds,omitempty"`
	SyncPhase         *SyncPhase `json:"syncPhase,omitempty"`
	// NextSync is when the controller's next sync falls.
	NextSync *TimeRange `json:"nextSync,omitempty"`
	// HoldEnds is when the first sync falls that would write a different count, HoldEndsAt,
	// if the metrics stay as they are now; absent when none does within the window.
	HoldEnds   *TimeRange `json:"holdEnds,omitempty"`
	HoldEndsAt *int32     `json:"holdEndsAt,omitempty"`
	// Notes say what makes the replay less than exact.
	Notes []string `json:"notes,omitempty"`
}

// SyncPhase is the range of the controller's sync phase, [FromSeconds, ToSeconds).
type SyncPhase struct {
	FromSeconds float64 `json:"fromSeconds"`
	ToSeconds   float64 `json:"toSeconds"`
	// Anchor is the timestamp that narrowed it (empty: any phase).
	Anchor string `json:"anchor,omitempty"`
}

// TimeRange is [From, To): a time known to fall within it, to the second.
type TimeRange struct {
	From metav1.Time `json:"from"`
	To   metav1.Time `json:"to"`
}

// History sources.
const (
	HistoryReconstructed = "reconstructed"
	HistoryRecorded      = "recorded"
	HistoryController    = "controller"
)

// ScaleEvent is one reconstructed rescale.
type ScaleEvent struct {
	ReplicaChange int32       `json:"replicaChange"`
	Time          metav1.Time `json:"time"`
}

// WhatIf is one input changed by a what-if flag.
type WhatIf struct {
	// Flag is "set-target" or "assume".
	Flag   string `json:"flag"`
	Metric string `json:"metric"`
	Value  string `json:"value"`
	// Was is the value before the change, as a person reads it.
	Was string `json:"was,omitempty"`
}

// Warning is something that makes the decision surprising.
type Warning struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Step is one line of the core's trace.
type Step struct {
	Stage  string `json:"stage"`
	Metric *int   `json:"metric,omitempty"`
	Text   string `json:"text"`
}

// DeepCopyObject implements runtime.Object (printers take runtime.Objects).
func (e *Explanation) DeepCopyObject() runtime.Object {
	if e == nil {
		return nil
	}
	data, err := json.Marshal(e)
	if err != nil {
		// Every field marshals; a failure here is a programming error in this package.
		return &Explanation{TypeMeta: e.TypeMeta, Metadata: e.Metadata, Error: &Error{ExitCode: 1, Reason: "Internal", Message: err.Error()}}
	}
	out := &Explanation{}
	if err := json.Unmarshal(data, out); err != nil {
		return &Explanation{TypeMeta: e.TypeMeta, Metadata: e.Metadata, Error: &Error{ExitCode: 1, Reason: "Internal", Message: err.Error()}}
	}
	return out
}

// New returns an empty Explanation of the HPA namespace/name with apiVersion and kind set.
func NewExplanation(namespace, name string) *Explanation {
	return &Explanation{
		TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindExplanation},
		Metadata: Metadata{Namespace: namespace, Name: name},
	}
}
