package recording

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// ControllerOf is the header's record of the decision core's configuration, beside run's
// own settings in base.
func ControllerOf(base Controller, cfg replicas.Config) (Controller, FeatureGates) {
	c := base
	c.Tolerance = cfg.Tolerance
	c.DownscaleStabilization = Duration(cfg.DownscaleStabilizationWindow)
	c.CPUInitializationPeriod = Duration(cfg.CPUInitializationPeriod)
	c.InitialReadinessDelay = Duration(cfg.InitialReadinessDelay)
	c.LegacyScaleUpFactor = cfg.LegacyScaleUpFactor
	c.LegacyScaleUpMinimum = cfg.LegacyScaleUpMinimum
	return c, FeatureGates{
		HPAScaleToZero:           cfg.ScaleToZero,
		HPAConfigurableTolerance: cfg.ConfigurableTolerance,
		PodLevelResources:        cfg.PodLevelResources,
		HPAGeneration:            cfg.HPAGeneration,
	}
}

// Config is the decision core's configuration the header records.
func (h Header) Config() replicas.Config {
	c := h.Controller
	return replicas.Config{
		Tolerance:                    c.Tolerance,
		DownscaleStabilizationWindow: time.Duration(c.DownscaleStabilization),
		CPUInitializationPeriod:      time.Duration(c.CPUInitializationPeriod),
		InitialReadinessDelay:        time.Duration(c.InitialReadinessDelay),
		LegacyScaleUpFactor:          c.LegacyScaleUpFactor,
		LegacyScaleUpMinimum:         c.LegacyScaleUpMinimum,
		ScaleToZero:                  h.FeatureGates.HPAScaleToZero,
		ConfigurableTolerance:        h.FeatureGates.HPAConfigurableTolerance,
		PodLevelResources:            h.FeatureGates.PodLevelResources,
		HPAGeneration:                h.FeatureGates.HPAGeneration,
	}
}

// Reconcile is what one reconcile read, decided and did, as the controller reports it.
type Reconcile struct {
	Term  int
	Key   string
	Input replicas.Input
	// PodsErr is the pod list's error as the pod reader returned it (Input.Metrics carries
	// it wrapped).
	PodsErr  error
	Decision replicas.Decision
	// ScaleWriteErr is the scale write's error; nil when none was sent or it succeeded.
	ScaleWriteErr error
	// StatusWriteErr is the status write's error; nil when none was sent or it succeeded.
	StatusWriteErr error
	Outcome        replicas.Outcome
	// Kept is the history the controller kept for the next sync.
	Kept         replicas.History
	DryRunReason string
}

// SyncOf is one reconcile as a recording entry. It copies what it keeps, so the entry may
// be encoded after the controller has moved on.
func SyncOf(r Reconcile) Sync {
	in := r.Input
	s := Sync{
		Kind:             KindSync,
		Term:             r.Term,
		Key:              r.Key,
		Now:              in.Now,
		HPA:              stripHPA(in.HPA),
		OtherHPAs:        append([]string(nil), in.OtherHPAsSelectingPods...),
		History:          historyPtr(in.History),
		DryRunReason:     r.DryRunReason,
		ScaleWriteError:  errorOf(r.ScaleWriteErr),
		StatusWriteError: errorOf(r.StatusWriteErr),
		Result:           ResultOf(r.Decision, r.Outcome, r.Kept),
	}
	if in.ScaleErr != nil {
		s.ScaleError = scaleErrorOf(in.ScaleErr)
	} else if in.Scale != nil {
		s.Scale = &Scale{SpecReplicas: in.Scale.SpecReplicas, StatusReplicas: in.Scale.StatusReplicas, Selector: in.Scale.Selector}
	}
	s.PodsError = errorOf(r.PodsErr)
	if in.Pods != nil {
		s.Pods = make([]*corev1.Pod, len(in.Pods))
		for i, p := range in.Pods {
			s.Pods[i] = p.DeepCopy()
		}
		// run hands over pods in its cache's order; by name, recordings of the same pods read alike.
		slices.SortFunc(s.Pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	}
	if in.Metrics != nil {
		s.Metrics = make([]Metric, len(in.Metrics))
		for i, m := range in.Metrics {
			s.Metrics[i] = metricOf(m)
		}
	}
	return s
}

// stripHPA copies hpa without its managed fields, which no decision reads.
func stripHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	if hpa == nil {
		return nil
	}
	out := hpa.DeepCopy()
	out.ManagedFields = nil
	return out
}

func errorOf(err error) *Error {
	if err == nil {
		return nil
	}
	return &Error{Message: err.Error()}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var scaleStages = map[replicas.ScaleErrorStage]string{
	replicas.ScaleErrorGet:        "Get",
	replicas.ScaleErrorAPIVersion: "APIVersion",
	replicas.ScaleErrorMapping:    "Mapping",
}

func scaleErrorOf(err error) *ScaleError {
	stage := replicas.ScaleErrorGet
	var se *replicas.ScaleError
	if errors.As(err, &se) && se.Err != nil {
		stage = se.Stage
	}
	return &ScaleError{Stage: scaleStages[stage], Message: err.Error()}
}

// Err is the error the scale reader returned, with its stage.
func (e *ScaleError) Err() error {
	stage, _ := stageNamed(e.Stage)
	return &replicas.ScaleError{Stage: stage, Err: errors.New(e.Message)}
}

// Err is the recorded error (nil for a nil *Error).
func (e *Error) Err() error {
	if e == nil {
		return nil
	}
	return errors.New(e.Message)
}

func metricOf(m replicas.MetricData) Metric {
	out := Metric{Error: errorOf(m.Err), Value: m.Value, Values: append([]int64(nil), m.Values...), Timestamp: m.Timestamp, Source: m.Source}
	if m.PodSamples != nil {
		out.PodSamples = make(map[string]Sample, m.PodSamples.Len())
		for name, s := range m.PodSamples.All() {
			out.PodSamples[name] = Sample{MilliValue: s.MilliValue, Timestamp: sampleset.Time(s.Timestamp), Window: Duration(s.Window)}
		}
	}
	return out
}

// Data is the metric as the core reads it.
func (m Metric) Data() replicas.MetricData {
	return replicas.MetricData{Err: m.Error.Err(), PodSamples: m.Samples(), Value: m.Value, Values: append([]int64(nil), m.Values...), Timestamp: m.Timestamp, Source: m.Source}
}

// Samples is PodSamples as the metrics layer hands them over (nil for none), in the order of
// the pods' names.
func (m Metric) Samples() *sampleset.Set {
	if m.PodSamples == nil {
		return nil
	}
	out := sampleset.New(len(m.PodSamples))
	for _, name := range slices.Sorted(maps.Keys(m.PodSamples)) {
		s := m.PodSamples[name]
		out.Add(name, sampleset.Sample{MilliValue: s.MilliValue, Timestamp: sampleset.Timestamp(s.Timestamp), Window: time.Duration(s.Window)})
	}
	return out
}

// HistoryOf is the controller's history as recorded.
func HistoryOf(h replicas.History) History {
	out := History{}
	if h.Recommendations != nil {
		out.Recommendations = make([]Recommendation, len(h.Recommendations))
		for i, r := range h.Recommendations {
			out.Recommendations[i] = Recommendation{Replicas: r.Replicas, Timestamp: r.Timestamp}
		}
	}
	out.ScaleUpEvents = scaleEventsOf(h.ScaleUpEvents)
	out.ScaleDownEvents = scaleEventsOf(h.ScaleDownEvents)
	return out
}

// historyPtr is nil for the zero history (never reconciled).
func historyPtr(h replicas.History) *History {
	if h.Recommendations == nil && h.ScaleUpEvents == nil && h.ScaleDownEvents == nil {
		return nil
	}
	r := HistoryOf(h)
	return &r
}

func scaleEventsOf(in []replicas.ScaleEvent) []ScaleEvent {
	if in == nil {
		return nil
	}
	out := make([]ScaleEvent, len(in))
	for i, e := range in {
		out[i] = ScaleEvent{ReplicaChange: e.ReplicaChange, Timestamp: e.Timestamp, Outdated: e.Outdated}
	}
	return out
}

// Core is the history as the core reads it; a nil *History is the zero history.
func (h *History) Core() replicas.History {
	if h == nil {
		return replicas.History{}
	}
	out := replicas.History{}
	if h.Recommendations != nil {
		out.Recommendations = make([]replicas.Recommendation, len(h.Recommendations))
		for i, r := range h.Recommendations {
			out.Recommendations[i] = replicas.Recommendation{Replicas: r.Replicas, Timestamp: r.Timestamp}
		}
	}
	out.ScaleUpEvents = coreScaleEvents(h.ScaleUpEvents)
	out.ScaleDownEvents = coreScaleEvents(h.ScaleDownEvents)
	return out
}

func coreScaleEvents(in []ScaleEvent) []replicas.ScaleEvent {
	if in == nil {
		return nil
	}
	out := make([]replicas.ScaleEvent, len(in))
	for i, e := range in {
		out[i] = replicas.ScaleEvent{ReplicaChange: e.ReplicaChange, Timestamp: e.Timestamp, Outdated: e.Outdated}
	}
	return out
}

// ResultOf is a decision, its outcome and the history kept, as recorded.
func ResultOf(d replicas.Decision, out replicas.Outcome, kept replicas.History) Result {
	r := Result{
		Phase:           string(d.Phase),
		CurrentReplicas: d.CurrentReplicas,
		DesiredReplicas: d.DesiredReplicas,
		Rescale:         d.Rescale,
		Reason:          d.Reason,
		MetricName:      d.MetricName,
		MetricReplicas:  d.MetricReplicas,
		Events:          eventsOf(d.Events),
		Error:           errorText(d.Err),
		Status:          *out.Status.DeepCopy(),
		StatusChanged:   out.StatusChanged,
		OutcomeEvents:   eventsOf(out.Events),
		OutcomeError:    errorText(out.Err),
		Kept:            HistoryOf(kept),
	}
	for _, m := range d.Metrics {
		r.Metrics = append(r.Metrics, MetricResult{Replicas: m.Replicas, Status: *m.Status.DeepCopy(), Reason: m.Reason, Error: errorText(m.Err)})
	}
	for _, c := range d.Conditions {
		r.Conditions = append(r.Conditions, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return r
}

func eventsOf(in []replicas.Event) []Event {
	var out []Event
	for _, e := range in {
		out = append(out, Event{Type: e.Type, Reason: e.Reason, Message: e.Message})
	}
	return out
}

// Input is the core's input this sync recorded, decided with cfg.
func (s *Sync) Input(cfg replicas.Config) replicas.Input {
	in := replicas.Input{HPA: s.HPA, History: s.History.Core(), Now: s.Now, Config: cfg,
		OtherHPAsSelectingPods: append([]string(nil), s.OtherHPAs...)}
	if s.ScaleError != nil {
		in.ScaleErr = s.ScaleError.Err()
	} else if s.Scale != nil {
		in.Scale = &replicas.Scale{SpecReplicas: s.Scale.SpecReplicas, StatusReplicas: s.Scale.StatusReplicas, Selector: s.Scale.Selector}
	}
	in.Pods = s.Pods
	if s.Metrics != nil {
		in.Metrics = make([]replicas.MetricData, len(s.Metrics))
		for i, m := range s.Metrics {
			in.Metrics[i] = m.Data()
		}
	}
	return in
}

// validate checks what the decoder cannot: the entry's own consistency.
func (s *Sync) validate() error {
	switch {
	case s.Key == "":
		return fieldError("key", errors.New("is empty"))
	case s.HPA == nil:
		return fieldError("hpa", errors.New("is missing"))
	case s.Now.IsZero():
		return fieldError("now", errors.New("is missing"))
	case s.Scale != nil && s.ScaleError != nil:
		return fieldError("scale", errors.New("and scaleError are both set"))
	case s.Pods != nil && s.PodsError != nil:
		return fieldError("pods", errors.New("and podsError are both set"))
	case s.Metrics != nil && len(s.Metrics) != len(s.HPA.Spec.Metrics):
		return fieldError("metrics", fmt.Errorf("has %d entries for the HPA's %d spec.metrics", len(s.Metrics), len(s.HPA.Spec.Metrics)))
	}
	if s.ScaleError != nil {
		if _, ok := stageNamed(s.ScaleError.Stage); !ok {
			return fieldError("scaleError.stage", fmt.Errorf("%q is not Get, APIVersion or Mapping", s.ScaleError.Stage))
		}
	}
	for i, p := range s.Pods {
		if p == nil {
			return fieldError(fmt.Sprintf("pods[%d]", i), errors.New("is null"))
		}
	}
	return nil
}

func stageNamed(name string) (replicas.ScaleErrorStage, bool) {
	for stage, n := range scaleStages {
		if n == name {
			return stage, true
		}
	}
	return 0, false
}
