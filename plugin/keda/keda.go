package keda

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// KEDA's names (keda.sh/v1alpha1 scaledobject_types.go).
const (
	// Label is the label KEDA puts on a ScaledObject and, by copying its labels, on its HPA.
	Label = "scaledobject.keda.sh/name"
	// CompositeMetric is the one External metric of a ScaledObject whose scalingModifiers
	// combine its triggers by a formula.
	CompositeMetric = "composite-metric"

	AnnotationPausedReplicas = "autoscaling.keda.sh/paused-replicas"
	AnnotationPaused         = "autoscaling.keda.sh/paused"
	AnnotationPausedScaleIn  = "autoscaling.keda.sh/paused-scale-in"
	AnnotationPausedScaleOut = "autoscaling.keda.sh/paused-scale-out"

	// defaultCooldown is spec.cooldownPeriod when unset (KEDA's executor).
	defaultCooldown = 300
)

// Owner is the ScaledObject among sos that owns hpa: the one its owner reference names, or
// the one whose HPA name it bears (status.hpaName, spec.advanced.horizontalPodAutoscalerConfig.name,
// or keda-hpa-NAME). nil when none does.
func Owner(hpa *autoscalingv2.HorizontalPodAutoscaler, sos []*unstructured.Unstructured) *unstructured.Unstructured {
	for _, so := range sos {
		if Owns(hpa, so) {
			return so
		}
	}
	return nil
}

// Owns says whether hpa is the HPA KEDA made for the ScaledObject so.
func Owns(hpa *autoscalingv2.HorizontalPodAutoscaler, so *unstructured.Unstructured) bool {
	if hpa.Namespace != so.GetNamespace() {
		return false
	}
	for _, r := range hpa.OwnerReferences {
		if r.Kind == "ScaledObject" && r.Name == so.GetName() && strings.HasPrefix(r.APIVersion, "keda.sh/") {
			return true
		}
	}
	return hpa.Name == hpaName(so)
}

// hpaName is the name KEDA gives the ScaledObject's HPA.
func hpaName(so *unstructured.Unstructured) string {
	if name, _, _ := unstructured.NestedString(so.Object, "status", "hpaName"); name != "" {
		return name
	}
	if name, _, _ := unstructured.NestedString(so.Object, "spec", "advanced", "horizontalPodAutoscalerConfig", "name"); name != "" {
		return name
	}
	return "keda-hpa-" + so.GetName()
}

// Trigger is one of a ScaledObject's triggers.
type Trigger struct {
	Type, Name string
	Metadata   map[string]string
}

// Triggers are so's spec.triggers, in order.
func Triggers(so *unstructured.Unstructured) []Trigger {
	list, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	out := make([]Trigger, 0, len(list))
	for _, item := range list {
		m, _ := item.(map[string]any)
		t := Trigger{Metadata: map[string]string{}}
		t.Type, _, _ = unstructured.NestedString(m, "type")
		t.Name, _, _ = unstructured.NestedString(m, "name")
		md, _, _ := unstructured.NestedMap(m, "metadata")
		for k, v := range md {
			if s, ok := v.(string); ok {
				t.Metadata[k] = s
			}
		}
		out = append(out, t)
	}
	return out
}

// IsResource says whether the trigger is cpu or memory: a Resource metric metrics-server
// serves, which KEDA neither answers nor falls back on.
func (t Trigger) IsResource() bool { return t.Type == "cpu" || t.Type == "memory" }

// HasActivation says whether the trigger sets an activation threshold (activationThreshold,
// activationValue, activationQueueLength, ...: each scaler names its own).
func (t Trigger) HasActivation() bool {
	for k := range t.Metadata {
		if strings.HasPrefix(k, "activation") {
			return true
		}
	}
	return false
}

func (t Trigger) String() string {
	if t.Name != "" {
		return t.Type + "/" + t.Name
	}
	return t.Type
}

// fallbackOf is spec.fallback; ok is false when there is none KEDA would apply (KEDA's
// HasValidFallback: both counts at least 0).
func fallbackOf(so *unstructured.Unstructured) (threshold, replicas int64, behavior string, ok bool) {
	fb, found, _ := unstructured.NestedMap(so.Object, "spec", "fallback")
	if !found {
		return 0, 0, "", false
	}
	threshold, okT, _ := unstructured.NestedInt64(fb, "failureThreshold")
	replicas, okR, _ := unstructured.NestedInt64(fb, "replicas")
	behavior, _, _ = unstructured.NestedString(fb, "behavior")
	if behavior == "" {
		behavior = "static"
	}
	return threshold, replicas, behavior, okT && okR && threshold >= 0 && replicas >= 0
}

// triggerIndex is the index in s<index>-<scaler>, KEDA's External metric name.
var triggerIndex = regexp.MustCompile(`^s(\d+)-`)

// Of is what KEDA adds around hpa when one of sos owns it, nil when none does; current is the
// target's replica count (fallback behaviors other than static use it).
func Of(hpa *autoscalingv2.HorizontalPodAutoscaler, sos []*unstructured.Unstructured, current int32) *v1alpha1.KEDA {
	so := Owner(hpa, sos)
	if so == nil {
		return nil
	}
	return explain(hpa, so, current)
}

// explain is what KEDA adds around hpa, which so owns.
func explain(hpa *autoscalingv2.HorizontalPodAutoscaler, so *unstructured.Unstructured, current int32) *v1alpha1.KEDA {
	k := &v1alpha1.KEDA{ScaledObject: so.GetName(), CooldownSeconds: defaultCooldown}
	conds, _, _ := unstructured.NestedSlice(so.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		var kc v1alpha1.KEDACondition
		kc.Type, _, _ = unstructured.NestedString(m, "type")
		kc.Status, _, _ = unstructured.NestedString(m, "status")
		kc.Reason, _, _ = unstructured.NestedString(m, "reason")
		kc.Message, _, _ = unstructured.NestedString(m, "message")
		k.Conditions = append(k.Conditions, kc)
	}
	if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount"); ok {
		k.MinReplicaCount = int32(v)
	}
	if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "idleReplicaCount"); ok {
		k.IdleReplicaCount = new(int32(v))
	}
	if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "cooldownPeriod"); ok {
		k.CooldownSeconds = int32(v)
	}
	k.Metrics, k.Notes = metrics(hpa, so, current)
	k.Pause = pause(so)
	if n := zeroNote(k, current); n != "" {
		k.Notes = append(k.Notes, n)
	}
	if k.Pause != nil {
		k.Notes = append(k.Notes, fmt.Sprintf("paused by %s=%q: %s", k.Pause.Annotation, k.Pause.Value, k.Pause.Effect))
	}
	return k
}

// metrics maps each of the HPA's metrics to the trigger that feeds it, and says which KEDA
// answers with its fallback value.
func metrics(hpa *autoscalingv2.HorizontalPodAutoscaler, so *unstructured.Unstructured, current int32) ([]v1alpha1.KEDAMetric, []string) {
	triggers := Triggers(so)
	threshold, fbReplicas, behavior, hasFallback := fallbackOf(so)
	var out []v1alpha1.KEDAMetric
	var notes []string
	for _, spec := range hpa.Spec.Metrics {
		var km v1alpha1.KEDAMetric
		switch {
		case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
			km.Metric = spec.External.Metric.Name
			km.Trigger = externalTrigger(km.Metric, triggers)
			failures, health := healthOf(so, km.Metric)
			km.Failures = int32(failures)
			if hasFallback && health == "Failing" && failures > threshold {
				r := fallbackReplicas(behavior, fbReplicas, current)
				km.Fallback = &v1alpha1.KEDAFallback{Replicas: r, Behavior: behavior, FailureThreshold: int32(threshold)}
				notes = append(notes, fmt.Sprintf("metric %s is KEDA's fallback, not a measurement: %d failed reads in a row, more than failureThreshold %d, so KEDA's metrics server answers its target x %d (fallback %s), which makes the HPA ask for %d replicas on it",
					km.Metric, failures, threshold, r, behavior, r))
			}
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
			km.Metric = string(spec.Resource.Name)
			km.Trigger = resourceTrigger(km.Metric, triggers)
		case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
			km.Metric = string(spec.ContainerResource.Name)
			km.Trigger = resourceTrigger(km.Metric, triggers)
		default:
			continue
		}
		if km.Trigger == "" {
			km.Trigger = "none of the ScaledObject's triggers"
		}
		out = append(out, km)
	}
	return out, notes
}

// externalTrigger names the trigger behind KEDA's External metric name.
func externalTrigger(metric string, triggers []Trigger) string {
	if metric == CompositeMetric {
		var names []string
		for _, t := range triggers {
			if !t.IsResource() {
				names = append(names, t.String())
			}
		}
		return "the scalingModifiers formula over " + strings.Join(names, ", ")
	}
	m := triggerIndex.FindStringSubmatch(metric)
	if m == nil {
		return ""
	}
	i, err := strconv.Atoi(m[1])
	if err != nil || i >= len(triggers) {
		return ""
	}
	return fmt.Sprintf("triggers[%d] %s", i, triggers[i])
}

// resourceTrigger names the cpu or memory trigger behind a Resource metric.
func resourceTrigger(resource string, triggers []Trigger) string {
	i := slices.IndexFunc(triggers, func(t Trigger) bool { return t.Type == resource })
	if i < 0 {
		return ""
	}
	return fmt.Sprintf("triggers[%d] %s", i, triggers[i])
}

// healthOf is KEDA's count of failed reads of metric in a row and its status (Happy, Failing).
func healthOf(so *unstructured.Unstructured, metric string) (int64, string) {
	h, ok, _ := unstructured.NestedMap(so.Object, "status", "health", metric)
	if !ok {
		return 0, ""
	}
	n, _, _ := unstructured.NestedInt64(h, "numberOfFailures")
	status, _, _ := unstructured.NestedString(h, "status")
	return n, status
}

// fallbackReplicas is the count KEDA's fallback value makes the HPA ask for (fallback.go).
func fallbackReplicas(behavior string, fallback int64, current int32) int32 {
	switch behavior {
	case "currentReplicas":
		return current
	case "currentReplicasIfHigher":
		return max(current, int32(fallback))
	case "currentReplicasIfLower":
		return min(current, int32(fallback))
	}
	return int32(fallback)
}

// pause is the pause annotation in force on so, nil when none. paused-replicas pauses
// whatever its value; the others unless their value is false.
func pause(so *unstructured.Unstructured) *v1alpha1.KEDAPause {
	a := so.GetAnnotations()
	if v, ok := a[AnnotationPausedReplicas]; ok {
		return &v1alpha1.KEDAPause{Annotation: AnnotationPausedReplicas, Value: v,
			Effect: fmt.Sprintf("KEDA deletes this HPA and holds the workload at %s replicas until the annotation is removed", v)}
	}
	effects := []struct{ key, effect string }{
		{AnnotationPaused, "KEDA deletes this HPA and leaves the workload at its current count until the annotation is removed"},
		{AnnotationPausedScaleIn, "no scale-down: KEDA sets this HPA's behavior.scaleDown.selectPolicy to Disabled and does not scale to idle or 0 itself"},
		{AnnotationPausedScaleOut, "no scale-up: KEDA sets this HPA's behavior.scaleUp.selectPolicy to Disabled and does not scale from 0 itself"},
	}
	for _, e := range effects {
		if v, ok := a[e.key]; ok && pauses(v) {
			return &v1alpha1.KEDAPause{Annotation: e.key, Value: v, Effect: e.effect}
		}
	}
	return nil
}

// pauses is KEDA's reading of a pause annotation's value: any value but a false boolean.
func pauses(v string) bool {
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// zeroNote says what KEDA decides itself below the HPA's minReplicas, "" when nothing.
func zeroNote(k *v1alpha1.KEDA, current int32) string {
	if k.IdleReplicaCount != nil {
		return fmt.Sprintf("KEDA, not the HPA, holds %d replicas (idleReplicaCount) while no trigger is active, scales to %d (minReplicaCount) when one becomes active, and back after every trigger has been inactive for %ds (cooldownPeriod)",
			*k.IdleReplicaCount, max(k.MinReplicaCount, 1), k.CooldownSeconds)
	}
	if k.MinReplicaCount > 0 {
		return ""
	}
	s := fmt.Sprintf("0 to 1 and back is KEDA's decision, not the HPA's: KEDA scales to 1 when a trigger becomes active (its value above its activation threshold, 0 unless set) and to 0 after every trigger has been inactive for %ds (cooldownPeriod); the HPA (minReplicas 1) decides from 1 up", k.CooldownSeconds)
	if current == 0 {
		s += "; the workload is at 0 now, where the HPA does not act"
	}
	return s
}

// Findings are the problems of the HPA that KEDA's state shows: a metric in fallback, a pause.
func Findings(k *v1alpha1.KEDA) []v1alpha1.Finding {
	if k == nil {
		return nil
	}
	var out []v1alpha1.Finding
	for _, m := range k.Metrics {
		if m.Fallback != nil {
			out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingKEDAFallback, Severity: v1alpha1.SeverityWarning,
				Message: fmt.Sprintf("metric %s is KEDA's fallback (%d replicas), not measured: %d failed reads of %s", m.Metric, m.Fallback.Replicas, m.Failures, m.Trigger)})
		}
	}
	if k.Pause != nil {
		out = append(out, v1alpha1.Finding{ID: v1alpha1.FindingKEDAPaused, Severity: v1alpha1.SeverityInfo,
			Message: fmt.Sprintf("ScaledObject %s is paused by %s: %s", k.ScaledObject, k.Pause.Annotation, k.Pause.Effect)})
	}
	return out
}
