package v1alpha1

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindTuning is the kind of what `kubectl hpa tune -o json|yaml` prints, in the same group
// and version as Explanation.
const KindTuning = "Tuning"

// Tuning is a search of an HPA's spec space on a load through the simulator: the figures
// the recommendation was chosen from, what it rests on, and its patch. Within v1alpha1
// fields are only added.
type Tuning struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the HPA tuned (uid and resourceVersion when read from the cluster: the
	// resourceVersion --apply patches at).
	Metadata Metadata `json:"metadata"`
	// Source says where the HPA and workload came from: "cluster" or the file given with -f.
	Source string `json:"source"`
	// Objective is cost, risk or balanced.
	Objective   string          `json:"objective"`
	Constraints TuneConstraints `json:"constraints"`
	Keep        []string        `json:"keep,omitempty"`
	Search      TuneSearch      `json:"search"`
	Current     TuneCandidate   `json:"current"`
	Recommended TuneCandidate   `json:"recommended"`
	// Applicable says the recommendation meets the constraints on a load that supports it:
	// the only one --apply writes. When false, NotApplicable says every reason why not.
	Applicable    bool              `json:"applicable"`
	NotApplicable []string          `json:"notApplicable,omitempty"`
	Pareto        []TuneCandidate   `json:"pareto"`
	Sensitivity   []TuneSensitivity `json:"sensitivity"`
	// Patch is the JSON merge patch from the current spec to the recommended one; absent
	// when they are the same.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Assumptions are what the figures rest on: the load and its limits.
	Assumptions TuneAssumptions `json:"assumptions"`
	// Model lists the cluster model's parameters, each with where its value came from.
	Model []SimParam `json:"model"`
}

// TuneConstraints are the limits the recommendation must stay within, and whether it does.
type TuneConstraints struct {
	// MaxAboveTargetFraction is the largest share of the period above target; absent: no limit.
	MaxAboveTargetFraction *float64 `json:"maxAboveTargetFraction,omitempty"`
	// MaxRescalesPerHour is the most rescales an hour; absent: no limit.
	MaxRescalesPerHour *float64 `json:"maxRescalesPerHour,omitempty"`
	// Met says whether the recommendation meets them; when false it is only the closest.
	Met bool `json:"met"`
}

// TuneSearch says how much of the space was played.
type TuneSearch struct {
	// Played counts the specs simulated, the current one among them.
	Played int `json:"played"`
	// Refused counts the specs the API server would refuse (never played).
	Refused int `json:"refused,omitempty"`
}

// TuneCandidate is one spec played on the load.
type TuneCandidate struct {
	// Changes are what it changes from the HPA as it is, as --variant names them (empty for
	// the HPA as it is).
	Changes []string   `json:"changes,omitempty"`
	Scores  TuneScores `json:"scores"`
	// Summary is its simulation's summary (current and recommended only).
	Summary *SimSummary `json:"summary,omitempty"`
}

// TuneScores are a candidate's figures over the whole period.
type TuneScores struct {
	PodHours float64 `json:"podHours"`
	// SecondsAboveTarget is the time the demand per Ready pod was above the current spec's
	// target, AboveTargetFraction its share of the period, WorstSeconds the longest stretch.
	SecondsAboveTarget  float64 `json:"secondsAboveTarget"`
	AboveTargetFraction float64 `json:"aboveTargetFraction"`
	WorstSeconds        float64 `json:"worstSeconds"`
	RescalesPerHour     float64 `json:"rescalesPerHour"`
	PeakReplicas        int32   `json:"peakReplicas"`
}

// TuneSensitivity is the current and recommended specs on a changed load or cluster.
type TuneSensitivity struct {
	Case        string     `json:"case"`
	Current     TuneScores `json:"current"`
	Recommended TuneScores `json:"recommended"`
}

// TuneAssumptions are what the load can and cannot say.
type TuneAssumptions struct {
	// Load is the load's name (file, recording, or the Prometheus and period).
	Load          string  `json:"load"`
	PeriodSeconds float64 `json:"periodSeconds"`
	Points        int     `json:"points"`
	Peaks         []Peak  `json:"peaks"`
	Gaps          *Gaps   `json:"gaps,omitempty"`
	// CounterResets counts the resets of the pods' CPU usage counters over the period read
	// from Prometheus (restarted containers, whose demand while down is not in the load);
	// absent when not read.
	CounterResets *int `json:"counterResets,omitempty"`
	// Unsupported are why the load cannot support the recommendation (it is then not to be
	// applied).
	Unsupported []string `json:"unsupported,omitempty"`
}

// Peak is a metric's highest demand in the load, and when.
type Peak struct {
	Metric    string  `json:"metric"`
	Value     string  `json:"value"`
	AtSeconds float64 `json:"atSeconds"`
}

// Gaps are the stretches of a load read from Prometheus with no point (longer than two
// steps), where the load is a straight line.
type Gaps struct {
	StepSeconds float64 `json:"stepSeconds"`
	Count       int     `json:"count"`
	Seconds     float64 `json:"seconds"`
}

// NewTuning returns a Tuning with its type set.
func NewTuning() *Tuning {
	return &Tuning{TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindTuning}}
}

// DeepCopyObject implements runtime.Object (printers take runtime.Objects).
func (t *Tuning) DeepCopyObject() runtime.Object {
	if t == nil {
		return nil
	}
	out := &Tuning{}
	data, err := json.Marshal(t)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		// Every field marshals; a failure here is a programming error in this package.
		panic(fmt.Sprintf("copying a Tuning: %v", err))
	}
	return out
}
