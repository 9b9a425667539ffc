package v1alpha1

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindSimulation is the kind of what `kubectl hpa simulate -o json|yaml` prints, in the same
// group and version as Explanation.
const KindSimulation = "Simulation"

// Simulation is a demand curve played through the cluster model and the exact controller, for
// the HPA as it is and each variant of it. Within v1alpha1 fields are only added.
type Simulation struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the HPA simulated (name and namespace; uid and resourceVersion when read
	// from the cluster).
	Metadata Metadata `json:"metadata"`
	// Source says where the HPA and workload came from: "cluster" or the file given with -f.
	Source string `json:"source"`
	// Load is the demand curve played.
	Load SimLoad `json:"load"`
	// DurationSeconds is how long the simulation ran, in virtual time.
	DurationSeconds float64 `json:"durationSeconds"`
	// Model lists the cluster model's parameters, each with where its value came from.
	Model []SimParam `json:"model"`
	// Workload is the scale target at the start: its replicas and each pod's requests.
	Workload SimWorkload `json:"workload"`
	// Variants holds one result per spec simulated, the HPA as it is first.
	Variants []SimVariant `json:"variants"`
}

// SimLoad describes the demand curve.
type SimLoad struct {
	File          string   `json:"file"`
	Metrics       []string `json:"metrics"`
	Interpolation string   `json:"interpolation"`
	Points        int      `json:"points"`
}

// SimParam is one parameter of the model.
type SimParam struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// SimWorkload is the scale target as the simulation starts.
type SimWorkload struct {
	Kind     string            `json:"kind,omitempty"`
	Name     string            `json:"name,omitempty"`
	Replicas int32             `json:"replicas"`
	Requests map[string]string `json:"requests,omitempty"` // per pod, summed over its containers
}

// SimVariant is one spec's result.
type SimVariant struct {
	Name string `json:"name"`
	// Changes are what this variant changed from the HPA as it is, as given (empty for the
	// HPA as it is).
	Changes []string `json:"changes,omitempty"`
	// Targets are the spec's metrics and their targets, as explain prints them.
	Targets     []SimTarget `json:"targets"`
	MinReplicas int32       `json:"minReplicas"`
	MaxReplicas int32       `json:"maxReplicas"`
	Summary     SimSummary  `json:"summary"`
	// Steps has one entry per sync.
	Steps []SimStep `json:"steps"`
}

// SimTarget is one metric of a variant's spec.
type SimTarget struct {
	Metric string `json:"metric"`
	Target string `json:"target"`
}

// SimSummary are a variant's figures over the whole run.
type SimSummary struct {
	PeakReplicas  int32   `json:"peakReplicas"`
	PeakAtSeconds float64 `json:"peakAtSeconds"`
	// PodSeconds is the cost: pods existing (Pending included) integrated over time.
	PodSeconds float64 `json:"podSeconds"`
	// SecondsAboveTarget is the risk: time during which the true per-pod usage of any metric
	// was above its target.
	SecondsAboveTarget float64 `json:"secondsAboveTarget"`
	ScaleUps           int     `json:"scaleUps"`
	ScaleDowns         int     `json:"scaleDowns"`
	// HeldBackBy counts the syncs each constraint held the count back (Constraint* names).
	HeldBackBy map[string]int `json:"heldBackBy,omitempty"`
}

// SimStep is one sync of the simulated controller.
type SimStep struct {
	AtSeconds float64 `json:"atSeconds"`
	// Replicas is the scale's spec.replicas after this sync, Ready the pods Ready when it
	// decided, Desired what it decided.
	Replicas int32 `json:"replicas"`
	Ready    int32 `json:"ready"`
	Desired  int32 `json:"desired"`
	// Utilization is each metric's value as the controller measured it, in percent of its
	// target (100 = on target); a metric it could not measure is absent.
	Utilization map[string]float64 `json:"utilization,omitempty"`
	// Constraint is what held the count back (a Constraint* name), empty when nothing did.
	Constraint string `json:"constraint,omitempty"`
	Scaled     bool   `json:"scaled,omitempty"`
}

// NewSimulation returns a Simulation with its type set.
func NewSimulation() *Simulation {
	return &Simulation{TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindSimulation}}
}

// DeepCopyObject implements runtime.Object (printers take runtime.Objects).
func (s *Simulation) DeepCopyObject() runtime.Object {
	if s == nil {
		return nil
	}
	out := &Simulation{}
	data, err := json.Marshal(s)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		// Every field marshals; a failure here is a programming error in this package.
		panic(fmt.Sprintf("copying a Simulation: %v", err))
	}
	return out
}
