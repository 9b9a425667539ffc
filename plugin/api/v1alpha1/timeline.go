package v1alpha1

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindTimeline is the kind of what `kubectl hpa timeline -o json|yaml` prints, in the same
// group and version as Explanation.
const KindTimeline = "Timeline"

// Timeline sources, best first.
const (
	// TimelineRecording: a kubectl hpa run --record file, every sync as the controller made it.
	TimelineRecording = "recording"
	// TimelinePrometheus: the metrics replayed from Prometheus through the decision core at
	// every sync of the period.
	TimelinePrometheus = "prometheus"
	// TimelineEvents: the HPA's SuccessfulRescale events, the history kubectl hpa run
	// persisted on it and its status: the rescales, not the syncs between them.
	TimelineEvents = "events"
)

// Timeline is one HPA's decisions over a period, sync by sync, with what held each, every
// rescale and its cause, and what the period shows (flapping, time at max, blind, above
// target). Within v1alpha1 fields are only added.
type Timeline struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        Metadata `json:"metadata"`
	// From and To bound the period shown.
	From metav1.Time `json:"from"`
	To   metav1.Time `json:"to"`
	// Source says where the past came from and how exact it is.
	Source TimelineSource `json:"source"`
	// SyncPeriodSeconds is the deciding controller's sync period (0 when unknown).
	SyncPeriodSeconds float64     `json:"syncPeriodSeconds,omitempty"`
	MinReplicas       int32       `json:"minReplicas"`
	MaxReplicas       int32       `json:"maxReplicas"`
	Targets           []SimTarget `json:"targets"`
	// Syncs are the decisions in time order: every one known, or with changesOnly those where
	// something changed (the first and last always).
	Syncs       []TimelineSync `json:"syncs"`
	ChangesOnly bool           `json:"changesOnly,omitempty"`
	// SyncsKnown is how many syncs the source holds over the period (Syncs may hold fewer).
	SyncsKnown int               `json:"syncsKnown"`
	Rescales   []TimelineRescale `json:"rescales"`
	Findings   []TimelineFinding `json:"findings"`
}

// TimelineSource is where a timeline's past came from.
type TimelineSource struct {
	// Kind is recording, prometheus or events (Timeline* constants).
	Kind string `json:"kind"`
	// Name is the file, the Prometheus asked, or the objects read.
	Name string `json:"name"`
	// Exact says every sync is the one the controller made (a recording, or a replay that
	// matched it); false for a replay of the metrics or a reconstruction from events.
	Exact bool `json:"exact"`
	// Queries are the PromQL sent (prometheus).
	Queries []string `json:"queries,omitempty"`
	// SyncPhase is where the deciding controller's syncs fall past each sync period, as its
	// status puts them (prometheus; absent when unknown).
	SyncPhase *SyncPhase `json:"syncPhase,omitempty"`
	// Grid is where the replay read the metrics (prometheus).
	Grid *TimelineGrid `json:"grid,omitempty"`
	// Notes say what makes the timeline less than exact, or what was checked.
	Notes []string `json:"notes,omitempty"`
}

// TimelineGrid is where a replay read the metrics: every StepSeconds, PhaseSeconds past each
// multiple of it (Unix time).
type TimelineGrid struct {
	StepSeconds  float64 `json:"stepSeconds"`
	PhaseSeconds float64 `json:"phaseSeconds"`
	// AlignedWith is what the phase comes from: syncs (the controller's, SyncPhase), scrapes
	// (Prometheus' of the pods' cpu counters) or epoch (neither known; history.GridAt*);
	// Anchor is the timestamp that put it.
	AlignedWith string `json:"alignedWith"`
	Anchor      string `json:"anchor,omitempty"`
}

// TimelineSync is one sync of the controller.
type TimelineSync struct {
	Time metav1.Time `json:"time"`
	// Replicas is the target's replicas when the controller decided (scale.spec.replicas);
	// UnknownReplicas when no evidence says it (a rescale event's old size).
	Replicas int32 `json:"replicas"`
	// Desired is what it decided; Recommendation what the metrics alone proposed (-1 when no
	// metric gave a count; absent when unknown).
	Desired        int32  `json:"desired"`
	Recommendation *int32 `json:"recommendation,omitempty"`
	// Metrics are each metric against its target (absent when unknown).
	Metrics []TimelineMetric `json:"metrics,omitempty"`
	// Constraint is what held the count (replicas.ConstraintOf's names; empty when unknown).
	Constraint string `json:"constraint,omitempty"`
	// UnreadyPods counts the pods a metric took as unready or missing when they changed its
	// ratio (the core's second pass).
	UnreadyPods int `json:"unreadyPods,omitempty"`
	// Rescale says the controller wrote Desired to the scale at this sync; Reason is its cause.
	Rescale bool   `json:"rescale,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Observed is the replicas kube-state-metrics saw the controller set (prometheus with
	// its series), absent otherwise.
	Observed *int32 `json:"observed,omitempty"`
}

// UnknownReplicas is TimelineSync.Replicas when no evidence says it: never a size, which a
// 0 would be.
const UnknownReplicas int32 = -1

// TimelineMetric is one metric at one sync.
type TimelineMetric struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Target  string `json:"target"`
	// PercentOfTarget is the usage ratio in percent (100 = on target), absent on error.
	PercentOfTarget *float64 `json:"percentOfTarget,omitempty"`
	Error           string   `json:"error,omitempty"`
}

// TimelineRescale is one change of the target's replicas by the controller.
type TimelineRescale struct {
	Time metav1.Time `json:"time"`
	// Direction is up or down; From is absent when unknown (the first rescale events show).
	Direction string `json:"direction"`
	From      *int32 `json:"from,omitempty"`
	To        int32  `json:"to"`
	// Cause is the controller's reason ("cpu resource utilization (percentage of request)
	// above target"), with the constraint that shaped the size when known.
	Cause      string `json:"cause"`
	Constraint string `json:"constraint,omitempty"`
}

// Findings' types over a period; CappedAtMax and Blind are the same ideas as a decision's
// findings (FindingCappedAtMax, FindingBlind), over time.
const (
	FindingFlapping    = "Flapping"
	FindingAboveTarget = "AboveTarget"
)

// TimelineFinding is one thing the period shows, found or not.
type TimelineFinding struct {
	Type  string `json:"type"`
	Found bool   `json:"found"`
	// Unknown says the source cannot tell (events carry no metric).
	Unknown bool `json:"unknown,omitempty"`
	// Seconds is how long it lasted (CappedAtMax, Blind, AboveTarget), Percent its share of
	// the period; Count how many times (Flapping: the direction reversals).
	Seconds float64 `json:"seconds,omitempty"`
	Percent float64 `json:"percent,omitempty"`
	Count   int     `json:"count,omitempty"`
	// Message says it in a sentence, with the threshold it was judged by.
	Message string `json:"message"`
}

// NewTimeline returns a Timeline with its type set.
func NewTimeline() *Timeline {
	return &Timeline{TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindTimeline}}
}

// DeepCopyObject implements runtime.Object (printers take runtime.Objects).
func (t *Timeline) DeepCopyObject() runtime.Object {
	if t == nil {
		return nil
	}
	out := &Timeline{}
	data, err := json.Marshal(t)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		// Every field marshals; a failure here is a programming error in this package.
		panic(fmt.Sprintf("copying a Timeline: %v", err))
	}
	return out
}
