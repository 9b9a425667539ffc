package v1alpha1

// Finding is one problem of an HPA: one its decision shows (Blind, CappedAtMax, ...) or one
// of kubectl hpa lint's rules (HPA001, ...). list shows their IDs in PROBLEMS, explain prints
// them, and both carry them in Explanation.Findings, worst first.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Object is the object whose field Path names when it is not the HPA (its workload, a
	// PodDisruptionBudget, another HPA, ...).
	Object *ObjectRef `json:"object,omitempty"`
	// Path is the field path (spec.minReplicas); empty for the object as a whole.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Why it matters and the fix, for a lint rule's finding.
	Why string `json:"why,omitempty"`
	Fix string `json:"fix,omitempty"`
}

// IDs of the findings an evaluation shows.
const (
	// FindingNotEvaluated: the HPA could not be evaluated (its target's scale unreadable,
	// the HPA named but not found).
	FindingNotEvaluated = "NotEvaluated"
	// FindingBlind: no metric could be used, so the controller scales nothing.
	FindingBlind = "Blind"
	// FindingMetricFailing: a metric failed while others were used (a failing metric blocks
	// a scale-down).
	FindingMetricFailing = "MetricFailing"
	// FindingCannotCompute: the metrics were read but give no count (ScalingActive=False).
	FindingCannotCompute = "CannotCompute"
	// FindingAmbiguousSelector: other HPAs select some of the same pods, so upstream's
	// controller scales none of them (its AmbiguousSelector condition).
	FindingAmbiguousSelector = "AmbiguousSelector"
	// FindingCappedAtMax: the metrics want more than maxReplicas.
	FindingCappedAtMax = "CappedAtMax"
	// FindingDisagrees: the decision now differs from status.desiredReplicas, which the
	// cluster's controller last wrote.
	FindingDisagrees = "DisagreesWithCluster"
	// FindingKEDAFallback: KEDA answers one of the HPA's metrics with its fallback value,
	// so the HPA decides on a made-up value, not a measurement.
	FindingKEDAFallback = "KEDAFallback"
	// FindingKEDAPaused: an annotation of the ScaledObject pauses KEDA's scaling.
	FindingKEDAPaused = "KEDAPaused"
)

// Severity is how bad a finding is.
type Severity string

// Severities, worst first.
const (
	// SeverityError: the HPA does not work as written (refused, ScalingActive=False, or
	// another writer fights it).
	SeverityError Severity = "error"
	// SeverityWarning: it works, but not as its author most likely meant.
	SeverityWarning Severity = "warning"
	// SeverityInfo: worth knowing; often intended.
	SeverityInfo Severity = "info"
)

// Rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// ObjectRef names an object (the HPA, its workload, a PodDisruptionBudget, another HPA).
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String is KIND/NAME, or KIND/NAMESPACE/NAME.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}
