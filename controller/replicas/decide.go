package replicas

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// SpecError is an error caused by the HPA's spec rather than by the cluster (upstream labels
// them "spec" in its monitoring metrics); find it in a decision's error with errors.As. Its text
// is Err's.
type SpecError struct {
	Err error
}

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

// ScaleErrorStage says which step of reading the target's scale failed. Upstream wraps the
// reconcile error differently per step while the event and condition carry the bare error.
type ScaleErrorStage int

const (
	// ScaleErrorGet: the scale subresource GET failed for every REST mapping (the zero value).
	ScaleErrorGet ScaleErrorStage = iota
	// ScaleErrorAPIVersion: scaleTargetRef.apiVersion does not parse as a group/version.
	ScaleErrorAPIVersion
	// ScaleErrorMapping: the RESTMapper knows no resource for the target's group and kind.
	ScaleErrorMapping
)

// ScaleError is an Input.ScaleErr that says at which stage reading the scale failed. Any other
// error in Input.ScaleErr is treated as ScaleErrorGet.
type ScaleError struct {
	Stage ScaleErrorStage
	Err   error
}

func (e *ScaleError) Error() string { return e.Err.Error() }
func (e *ScaleError) Unwrap() error { return e.Err }

// Condition reasons and messages upstream writes; kept here so Decide and Apply agree.
const (
	msgScaleDownStabilized = "recent recommendations were higher than current one, applying the highest recent recommendation"
	msgScaleUpStabilized   = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	msgReadyForNewScale    = "recommended size matches current size"
	msgWithinRange         = "the desired count is within the acceptable range"
	msgTooMany             = "the desired replica count is more than the maximum replica count"
	msgTooFew              = "the desired replica count is less than the minimum replica count"
	msgScaleUpLimit        = "the desired replica count is increasing faster than the maximum scale rate"
	msgScaleDownLimit      = "the desired replica count is decreasing faster than the maximum scale rate"

	reasonAboveMax = "Current number of replicas above Spec.MaxReplicas"
	reasonBelowMin = "Current number of replicas below Spec.MinReplicas"
)

// seedLead is how much earlier than the decision the seed of a first sync is made. Upstream
// seeds at the start of the sync and stabilizes after reading the metrics, each at its own
// time.Now(), so the seed is always the older: a zero-length window has already left it behind
// (and replaces it), where a seed at the decision's own instant would stay in the history.
const seedLead = time.Nanosecond

// preMetric is the outcome of upstream's checks made before any metric is computed.
type preMetric int

const (
	preScaleFailed preMetric = iota
	preDisabled
	preAboveMax
	preBelowMin
	preMetrics
)

// zeroState is what upstream precomputes about scale-to-zero.
type zeroState struct {
	gate, hasObjectOrExternal, scaledToZero bool
}

func scaleToZeroState(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg Config) zeroState {
	z := zeroState{gate: cfg.ScaleToZero}
	for i := range hpa.Spec.Metrics {
		t := hpa.Spec.Metrics[i].Type
		if t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType {
			z.hasObjectOrExternal = true
			break
		}
	}
	if z.gate {
		for _, c := range hpa.Status.Conditions {
			if c.Type == autoscalingv2.ScaledToZero {
				z.scaledToZero = c.Status == corev1.ConditionTrue
				break
			}
		}
	}
	return z
}

func minReplicasOf(hpa *autoscalingv2.HorizontalPodAutoscaler) int32 {
	if hpa.Spec.MinReplicas != nil {
		return *hpa.Spec.MinReplicas
	}
	return 1
}

func classify(in Input) preMetric {
	if in.HPA == nil || in.ScaleErr != nil || in.Scale == nil {
		return preScaleFailed
	}
	current := in.Scale.SpecReplicas
	minR := minReplicasOf(in.HPA)
	switch {
	case current == 0:
		z := scaleToZeroState(in.HPA, in.Config)
		if (minR != 0 && z.scaledToZero) || (z.scaledToZero && z.hasObjectOrExternal) {
			return preMetrics
		}
		return preDisabled
	case current > in.HPA.Spec.MaxReplicas:
		return preAboveMax
	case current < minR:
		return preBelowMin
	}
	return preMetrics
}

// NeedsMetrics reports whether Decide would compute metrics for in: false when the scale could
// not be read, autoscaling is disabled (current replicas 0) or current replicas is outside
// [min, max]. The controller fetches metrics only when it is true.
func NeedsMetrics(in Input) bool {
	return classify(in) == preMetrics
}

// Decide computes what upstream's reconcileAutoscaler does for in, up to (not including) the
// scale write. It never mutates in, unless in.HistoryOwned gives it the history's array.
func Decide(in Input) Decision {
	traceCap := 8
	if in.HPA != nil {
		traceCap += 6 * len(in.HPA.Spec.Metrics)
	}
	var d decision
	d.init(traceCap, in.OmitTrace)
	decide(&d, in)
	d.finish()
	return d.Decision
}

func decide(d *decision, in Input) {
	d.MetricReplicas = -1
	d.History = in.History
	if !in.HistoryOwned {
		d.History = ownRecommendations(in.History)
	}
	hpa := in.HPA
	if hpa == nil {
		d.Phase = PhaseScaleFailed
		d.Err = errors.New("no HorizontalPodAutoscaler to decide for")
		d.trace("scale", -1, "no HorizontalPodAutoscaler was given")
		return
	}
	cfg := in.Config
	d.MinReplicas = minReplicasOf(hpa)
	d.MaxReplicas = hpa.Spec.MaxReplicas
	d.Tolerances = tolerancesFor(hpa, cfg)
	d.Reference = hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Namespace + "/" + hpa.Spec.ScaleTargetRef.Name
	// SucceededGetScale, ScalingActive, AbleToScale and ScalingLimited on the usual path.
	d.Conditions = make([]Condition, 0, 4)

	if in.ScaleErr != nil || in.Scale == nil {
		decideScaleFailed(d, in)
		return
	}
	d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := in.Scale.SpecReplicas
	d.CurrentReplicas = current
	d.line().s("scale of ").s(d.Reference).s(": spec.replicas ").i(int64(current)).s(" (current), status.replicas ").i(int64(in.Scale.StatusReplicas)).
		s(", selector ").q(in.Scale.Selector).s("; min ").i(int64(d.MinReplicas)).s(", max ").i(int64(d.MaxReplicas)).end("scale", -1)
	if d.History.Recommendations == nil {
		d.History.Recommendations = []Recommendation{{Replicas: current, Timestamp: in.Now.Add(-seedLead)}}
		d.line().s("no recommendation history: seeded with the current count ").i(int64(current)).s(" just before now (a fresh controller does the same)").end("stabilization", -1)
	}

	z := scaleToZeroState(hpa, cfg)
	switch classify(in) {
	case preDisabled:
		d.Phase = PhaseDisabled
		d.DesiredReplicas = 0
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		if !z.gate {
			d.RemovedConditions = append(d.RemovedConditions, autoscalingv2.ScaledToZero)
		}
		d.trace("result", -1, "current replicas is 0 and the HPA did not scale the target to zero itself (or may not scale from zero): autoscaling is disabled")
		return
	case preAboveMax:
		d.Phase = PhaseClampedToRange
		d.DesiredReplicas = d.MaxReplicas
		d.Reason = reasonAboveMax
		d.Rescale = true
		d.trace("result", -1, fmt.Sprintf("current replicas %d is above maxReplicas %d: scale to %d without computing metrics", current, d.MaxReplicas, d.MaxReplicas))
		return
	case preBelowMin:
		d.Phase = PhaseClampedToRange
		d.DesiredReplicas = d.MinReplicas
		d.Reason = reasonBelowMin
		d.Rescale = true
		d.trace("result", -1, fmt.Sprintf("current replicas %d is below minReplicas %d: scale to %d without computing metrics", current, d.MinReplicas, d.MinReplicas))
		return
	}

	metricReplicas, metricName, err := computeMetrics(d, in)
	d.MetricReplicas = metricReplicas
	if err != nil && metricReplicas == -1 {
		d.Phase = PhaseMetricsFailed
		d.DesiredReplicas = current
		d.event(corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
		d.Err = fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", d.Reference, err)
		d.trace("result", -1, "no usable replica count: nothing is scaled ("+err.Error()+")")
		return
	}
	if err != nil {
		d.Err = err
	}
	d.Phase = PhaseComputed

	desired := int32(0)
	rescaleMetric := ""
	if metricReplicas > desired {
		desired = metricReplicas
		rescaleMetric = metricName
	}
	d.MetricName = rescaleMetric
	if desired > current {
		d.Reason = rescaleMetric + " above target"
	}
	if desired < current {
		d.Reason = "All metrics below target"
	}
	if hpa.Spec.Behavior == nil {
		desired = normalizeLegacy(d, in, current, desired)
	} else {
		desired = normalizeWithBehavior(d, in, current, desired)
	}
	if current == 0 && d.MinReplicas != 0 && z.scaledToZero && desired < d.MinReplicas {
		d.trace("limits", -1, fmt.Sprintf("scaling from zero after scaling to zero: raised %d to minReplicas %d", desired, d.MinReplicas))
		desired = d.MinReplicas
		if d.Reason == "" {
			d.Reason = reasonBelowMin
		}
	}
	d.DesiredReplicas = desired
	d.Rescale = desired != current
	if d.Rescale {
		d.line().s("scale from ").i(int64(current)).s(" to ").i(int64(desired)).s(": ").s(d.Reason).end("result", -1)
	} else {
		d.line().s("keep ").i(int64(current)).s(" replicas").end("result", -1)
	}
}

func decideScaleFailed(d *decision, in Input) {
	d.Phase = PhaseScaleFailed
	err := in.ScaleErr
	if err == nil {
		err = errors.New("no scale was read for the target")
	}
	stage := ScaleErrorGet
	var se *ScaleError
	if errors.As(err, &se) && se.Err != nil {
		stage = se.Stage
		err = se.Err
	}
	d.event(corev1.EventTypeWarning, "FailedGetScale", err.Error())
	d.setCondition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: "+err.Error())
	switch stage {
	case ScaleErrorAPIVersion:
		d.Err = &SpecError{Err: fmt.Errorf("invalid API version in scale target reference: %v", err)}
	case ScaleErrorMapping:
		d.Err = fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	default:
		d.Err = fmt.Errorf("failed to query scale subresource for %s: %w", d.Reference, err)
	}
	d.trace("scale", -1, "could not read the target's scale: "+err.Error())
}

// computeMetrics is upstream's computeReplicasForMetrics: the maximum proposal over all metrics,
// the blocking rule for partial failures and the ScalingActive condition.
func computeMetrics(d *decision, in Input) (int32, string, error) {
	if err := validateSelector(d, in); err != nil {
		return -1, "", err
	}
	specs := in.HPA.Spec.Metrics
	d.Metrics = make([]MetricResult, len(specs))
	c := newCalc(in, d.Tolerances)
	var (
		replicas     int32
		metric       string
		invalidCount int
		firstErr     error
		firstReason  string
		firstMessage string
	)
	for i := range specs {
		r := &d.Metrics[i]
		var md MetricData
		if i < len(in.Metrics) {
			md = in.Metrics[i]
		} else {
			md.Err = errors.New("no metric data was gathered for this metric")
		}
		c.compute(d, i, &specs[i], md, r)
		if r.Err != nil {
			if invalidCount == 0 {
				firstErr, firstReason, firstMessage = r.Err, r.Reason, r.Message
			}
			invalidCount++
			continue
		}
		if replicas == 0 || r.Replicas > replicas {
			replicas = r.Replicas
			metric = r.Name
		}
	}
	var err error
	if firstErr != nil {
		err = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalidCount, len(specs), firstErr)
	}
	if invalidCount >= len(specs) || (invalidCount > 0 && replicas < in.Scale.SpecReplicas) {
		// With no metrics at all upstream sets a zero-valued condition and carries on with -1;
		// the API server's defaulting makes that unreachable, mirrored for parity only.
		status := corev1.ConditionFalse
		if firstErr == nil {
			status = ""
		}
		d.setCondition(conditionTypeFor(firstErr), status, firstReason, firstMessage)
		if invalidCount > 0 && invalidCount < len(specs) && d.tracing() {
			d.trace("proposal", -1, fmt.Sprintf("%d of %d metrics failed and the others propose %d < current %d: a failed metric blocks scaling down", invalidCount, len(specs), replicas, in.Scale.SpecReplicas))
		}
		return -1, "", err
	}
	d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from "+metric)
	if invalidCount > 0 && d.tracing() {
		d.trace("proposal", -1, fmt.Sprintf("%d of %d metrics failed; the others propose %d >= current %d, so scaling goes ahead (the reconcile still reports the error)", invalidCount, len(specs), replicas, in.Scale.SpecReplicas))
	}
	d.line().s("highest proposal: ").i(int64(replicas)).s(" replicas from ").s(metric).end("proposal", -1)
	return replicas, metric, err
}

func conditionTypeFor(firstErr error) autoscalingv2.HorizontalPodAutoscalerConditionType {
	if firstErr == nil {
		return ""
	}
	return autoscalingv2.ScalingActive
}

// validateSelector is upstream's validateAndParseSelector on the inputs the core is given.
func validateSelector(d *decision, in Input) error {
	sel := in.Scale.Selector
	if sel == "" {
		msg := "selector is required"
		d.event(corev1.EventTypeWarning, "SelectorRequired", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		d.trace("pods", -1, "the target's scale has no selector: the HPA cannot select pods")
		return errors.New(msg)
	}
	if err := parseSelectorError(sel); err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		d.event(corev1.EventTypeWarning, "InvalidSelector", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg)
		d.trace("pods", -1, "the target's selector does not parse: "+err.Error())
		return errors.New(msg)
	}
	if len(in.OtherHPAsSelectingPods) > 0 {
		keys := []string{in.HPA.Namespace + "/" + in.HPA.Name, in.OtherHPAsSelectingPods[0]}
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", sel, keys)
		d.event(corev1.EventTypeWarning, "AmbiguousSelector", msg)
		d.setCondition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg)
		d.trace("pods", -1, fmt.Sprintf("other HPAs select the same pods (%v): no scaling while they overlap", in.OtherHPAsSelectingPods))
		return errors.New(msg)
	}
	d.line().i(int64(len(in.Pods))).s(" pods match selector ").q(sel).end("pods", -1)
	return nil
}

func (d *decision) setCondition(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, message string) {
	d.Conditions = append(d.Conditions, Condition{Type: t, Status: s, Reason: reason, Message: message})
}

func (d *decision) event(typ, reason, message string) {
	d.Events = append(d.Events, Event{Type: typ, Reason: reason, Message: message})
}

// tolerancesFor is upstream's tolerancesForHpa.
func tolerancesFor(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg Config) Tolerances {
	t := Tolerances{Down: cfg.Tolerance, Up: cfg.Tolerance, DownSource: "controller default", UpSource: "controller default"}
	b := hpa.Spec.Behavior
	if b == nil || !cfg.ConfigurableTolerance {
		return t
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.Down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		t.DownSource = "behavior.scaleDown.tolerance"
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.Up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		t.UpSource = "behavior.scaleUp.tolerance"
	}
	return t
}

// Within reports whether a usage ratio is inside the tolerance band (both ends inclusive).
func (t Tolerances) Within(ratio float64) bool {
	return (1.0-t.Down) <= ratio && ratio <= (1.0+t.Up)
}

// ownRecommendations is h with a copy of its recommendations, the one part of a history a
// decision changes in place (record). The scale events are only read, and storeScaleEvent
// stores into a copy: sharing them saves two copies per sync.
func ownRecommendations(h History) History {
	h.Recommendations = cloneSlice(h.Recommendations)
	return h
}

// cloneSlice copies s keeping nil as nil and empty as empty (the difference matters for the
// recommendation seed).
func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	out := make([]T, len(s), len(s)+1)
	copy(out, s)
	return out
}

func seconds(s int32) time.Duration { return time.Second * time.Duration(s) }
