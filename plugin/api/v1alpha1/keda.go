package v1alpha1

// KEDA is what KEDA adds around an HPA one of its ScaledObjects owns, as the ScaledObject
// read says: KEDA writes the HPA, serves its External metrics, scales between 0 and 1 itself,
// and may feed a metric a value it made up or pause the scaling.
type KEDA struct {
	// ScaledObject is the ScaledObject's name (in the HPA's namespace).
	ScaledObject string `json:"scaledObject"`
	// Conditions are the ScaledObject's own (Ready, Active, Fallback, Paused, HPAActive).
	Conditions []KEDACondition `json:"conditions,omitempty"`
	// Metrics are the HPA's metrics KEDA wrote, each with the trigger that feeds it.
	Metrics []KEDAMetric `json:"metrics,omitempty"`
	// MinReplicaCount is spec.minReplicaCount (0 when unset, as KEDA reads it); below the
	// HPA's minReplicas it is KEDA that scales to it and back.
	MinReplicaCount int32 `json:"minReplicaCount"`
	// IdleReplicaCount is spec.idleReplicaCount, the count KEDA holds while no trigger is active.
	IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
	// CooldownSeconds is how long every trigger stays inactive before KEDA scales to
	// IdleReplicaCount or 0 (spec.cooldownPeriod, 300 when unset).
	CooldownSeconds int32 `json:"cooldownSeconds"`
	// Pause is the pause in force, nil when none.
	Pause *KEDAPause `json:"pause,omitempty"`
	// Notes say, in sentences, what KEDA does that the HPA's decision does not show.
	Notes []string `json:"notes,omitempty"`
}

// KEDACondition is one of a ScaledObject's conditions.
type KEDACondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// KEDAMetric is one of the HPA's metrics and the ScaledObject trigger behind it.
type KEDAMetric struct {
	// Metric is the HPA's metric name: s<index>-<scaler> for an External metric, cpu or memory
	// for a Resource one, composite-metric for the formula of scalingModifiers.
	Metric string `json:"metric"`
	// Trigger is the trigger's type (prometheus, cpu, ...), and its name after a slash when
	// it has one; for composite-metric, every trigger the formula combines.
	Trigger string `json:"trigger"`
	// Failures is KEDA's count of failed reads of the metric in a row (status.health).
	Failures int32 `json:"failures,omitempty"`
	// Fallback, when set, says that KEDA answers the metric with its fallback value: what the
	// HPA reads is made up, not measured.
	Fallback *KEDAFallback `json:"fallback,omitempty"`
}

// KEDAFallback is the value KEDA's metrics server answers for a metric in fallback.
type KEDAFallback struct {
	// Replicas is the count the value makes the HPA ask for (fallback.replicas, or the
	// current count, by Behavior).
	Replicas int32 `json:"replicas"`
	// Behavior is spec.fallback.behavior (static when unset).
	Behavior string `json:"behavior"`
	// FailureThreshold is spec.fallback.failureThreshold: fallback is in force above it.
	FailureThreshold int32 `json:"failureThreshold"`
}

// KEDAPause is a pause of the ScaledObject, by its annotation.
type KEDAPause struct {
	// Annotation is the annotation in force (autoscaling.keda.sh/paused-replicas, paused,
	// paused-scale-in or paused-scale-out) and Value its value.
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	// Effect says what it does to the HPA and the workload.
	Effect string `json:"effect"`
}
