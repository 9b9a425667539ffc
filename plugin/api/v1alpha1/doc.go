// Package v1alpha1 is the API users script against: the kinds of API group
// hpa.kubectl-hpa.io, version v1alpha1, that kubectl hpa prints with -o json and -o yaml:
// Explanation (one HPA decision: explain, and run per sync), List (list's items, each an
// Explanation), Simulation (simulate: the model, the workload, the load, and per variant its
// summary and one step per sync), Timeline (timeline: the period, its syncs, rescales and
// findings) and Tuning (tune: the search, the candidates, the recommendation). The types' doc
// comments are the schema's documentation. It holds types only: plugin/output builds and
// renders them.
//
// The schema is the object kind Explanation in API group hpa.kubectl-hpa.io, version
// v1alpha1. `kubectl hpa explain -o json|yaml` prints one Explanation per decision (one per
// sync period with --watch) and `kubectl hpa run -o json` is meant to print the same object
// per reconcile. Within v1alpha1 fields are only added, never renamed or removed; a
// breaking change gets a new version.
//
// Top-level fields, in the order -o json and -o yaml print them (all names are JSON names;
// below the top level, -o yaml sorts the keys as kubectl does):
//
//	apiVersion, kind   hpa.kubectl-hpa.io/v1alpha1, Explanation
//	metadata           the HPA explained: name, namespace, uid, generation, resourceVersion
//	time               when the decision was computed (the core's "now")
//	error              set when the command failed: exitCode, reason (machine-readable, see
//	                   the Reason* constants) and message; the other fields may then be absent
//	target             scaleTargetRef, scale spec/status replicas and selector, or why the scale
//	                   could not be read
//	replicas           min (nil read as 1) and max
//	tolerance          effective tolerance per direction (scaleUp, scaleDown) and its source
//	behavior           spec.behavior with API defaults filled in, or legacy (no behavior) rules
//	metricsSource      where numbers came from
//	metrics[]          per spec metric: target, current value, ratios, within tolerance,
//	                   proposal, error, and pods[] with each pod's treatment and why
//	arithmetic         proposals -> max -> stabilization -> rate limits/clamp -> desired
//	decision           phase, current/desired replicas, rescale, reason, conditions and events the
//	                   controller would set/emit, and its error
//	verdict            one sentence and the binding constraint (see the Constraint* constants)
//	cluster            what the cluster's own controller last decided (status, conditions, recent
//	                   SuccessfulRescale events) and whether it agrees
//	history            which recommendation history the decision used and how it was obtained;
//	                   history.replay (explain --prometheus-url): the cluster controller's
//	                   history replayed from Prometheus, its sync phase range, when the next
//	                   sync and the end of a stabilization hold fall, or why it failed
//	whatIf[]           inputs changed by --set-target/--assume (the cluster was not touched)
//	warnings[]         reason + message for conditions that make the decision surprising
//	keda               when a KEDA ScaledObject owns the HPA: its conditions, which trigger
//	                   feeds each metric and which metric is KEDA's fallback (made up, not
//	                   measured), the counts KEDA scales to itself, a pause in force
//	findings[]         the HPA's problems, worst first (list's PROBLEMS): those the decision
//	                   shows (Blind, AmbiguousSelector, CappedAtMax, ...) and kubectl hpa lint's
//	                   rules' (HPA001, ...): id, severity, message, and for a rule's the field
//	                   path, the object it is in when not the HPA, why and fix
//	trace[]            the core's ordered steps
package v1alpha1
