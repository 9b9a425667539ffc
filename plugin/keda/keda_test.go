package keda

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// scaledObject decodes a ScaledObject written as KEDA's CRD has it, as a client decodes one
// (whole numbers as int64).
func scaledObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// kedaHPA is the HPA KEDA writes for ScaledObject web: an External metric per trigger KEDA
// serves (s<index>-<scaler>), a Resource metric per cpu or memory trigger.
func kedaHPA(metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "keda-hpa-web", Namespace: "shop", Labels: map[string]string{Label: "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web"}}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 10, Metrics: metrics},
	}
}

func external(name string) autoscalingv2.MetricSpec {
	q := resource.MustParse("10")
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{Label: "web"}}},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

func cpu() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu"}}
}

const webSO = `
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {name: web}
  minReplicaCount: 1
  fallback: {failureThreshold: 3, replicas: 6%s}
  triggers:
  - type: cpu
    metricType: Utilization
    metadata: {value: "50"}
  - type: prometheus
    name: rps
    metadata: {threshold: "10", activationThreshold: "2"}
status:
  hpaName: keda-hpa-web
  externalMetricNames: [s1-prometheus]
  health:
    s1-prometheus: {numberOfFailures: %s, status: Failing}
  conditions:
  - {type: Ready, status: "True", reason: ScaledObjectReady}
  - {type: Fallback, status: "True", reason: FallbackExists}
`

func so(behavior, failures string) string {
	if behavior != "" {
		behavior = ", behavior: " + behavior
	}
	return strings.Replace(strings.Replace(webSO, "%s", behavior, 1), "%s", failures, 1)
}

func TestEachMetricNamesItsTriggerAndAFallbackInForceSaysWhatKEDAAnswers(t *testing.T) {
	tests := []struct {
		name, behavior, failures string
		current                  int32
		want                     *v1alpha1.KEDAFallback
	}{
		{name: "at the threshold: measured still", failures: "3", current: 4},
		{name: "above it, static: fallback.replicas", failures: "4", current: 4, want: &v1alpha1.KEDAFallback{Replicas: 6, Behavior: "static", FailureThreshold: 3}},
		{name: "currentReplicas: the current count", behavior: "currentReplicas", failures: "4", current: 4, want: &v1alpha1.KEDAFallback{Replicas: 4, Behavior: "currentReplicas", FailureThreshold: 3}},
		{name: "currentReplicasIfHigher: the higher", behavior: "currentReplicasIfHigher", failures: "4", current: 8, want: &v1alpha1.KEDAFallback{Replicas: 8, Behavior: "currentReplicasIfHigher", FailureThreshold: 3}},
		{name: "currentReplicasIfLower: the lower", behavior: "currentReplicasIfLower", failures: "4", current: 8, want: &v1alpha1.KEDAFallback{Replicas: 6, Behavior: "currentReplicasIfLower", FailureThreshold: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hpa := kedaHPA(external("s1-prometheus"), cpu())
			k := Of(hpa, []*unstructured.Unstructured{scaledObject(t, so(tc.behavior, tc.failures))}, tc.current)
			if len(k.Metrics) != 2 || k.Metrics[0].Trigger != "triggers[1] prometheus/rps" || k.Metrics[1].Trigger != "triggers[0] cpu" {
				t.Fatalf("metrics %+v, want s1-prometheus from triggers[1] and cpu from triggers[0]", k.Metrics)
			}
			if diff := cmp.Diff(tc.want, k.Metrics[0].Fallback); diff != "" {
				t.Errorf("fallback (-want +got):\n%s", diff)
			}
			findings := Findings(k)
			if (tc.want != nil) != (len(findings) == 1 && findings[0].ID == v1alpha1.FindingKEDAFallback) {
				t.Errorf("findings %+v, want a KEDAFallback one only in fallback", findings)
			}
		})
	}
}

func TestOwnerIsByOwnerReferenceOrByTheNameKEDAGivesItsHPA(t *testing.T) {
	web := scaledObject(t, so("", "0"))
	named := scaledObject(t, `{apiVersion: keda.sh/v1alpha1, kind: ScaledObject, metadata: {name: api, namespace: shop}, spec: {advanced: {horizontalPodAutoscalerConfig: {name: api-hpa}}}}`)
	byRef := kedaHPA()
	byRef.Name = "renamed"
	byName := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "api-hpa", Namespace: "shop"}}
	elsewhere := kedaHPA()
	elsewhere.Namespace = "other"
	plain := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}}
	sos := []*unstructured.Unstructured{web, named}
	for _, tc := range []struct {
		name string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want string
	}{
		{"owner reference", byRef, "web"},
		{"horizontalPodAutoscalerConfig.name", byName, "api"},
		{"another namespace", elsewhere, ""},
		{"an HPA of its own", plain, ""},
	} {
		got := ""
		if o := Owner(tc.hpa, sos); o != nil {
			got = o.GetName()
		}
		if got != tc.want {
			t.Errorf("%s: owner %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPauseAndScaleToZeroSayWhatKEDADecidesItself(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		spec        string
		current     int32
		wantPause   string
		wantNote    string
	}{
		{name: "paused-replicas pauses whatever its value", annotations: map[string]string{AnnotationPausedReplicas: "0"}, spec: "minReplicaCount: 1", wantPause: AnnotationPausedReplicas, wantNote: "holds the workload at 0 replicas"},
		{name: "paused=false does not pause", annotations: map[string]string{AnnotationPaused: "false"}, spec: "minReplicaCount: 1"},
		{name: "a paused value that is no boolean pauses", annotations: map[string]string{AnnotationPaused: "yes"}, spec: "minReplicaCount: 1", wantPause: AnnotationPaused, wantNote: "leaves the workload at its current count"},
		{name: "paused-scale-in disables the scale-down", annotations: map[string]string{AnnotationPausedScaleIn: "true"}, spec: "minReplicaCount: 1", wantPause: AnnotationPausedScaleIn, wantNote: "scaleDown.selectPolicy to Disabled"},
		{name: "minReplicaCount unset is 0: KEDA scales 0 to 1", spec: "cooldownPeriod: 120", current: 0, wantNote: "inactive for 120s (cooldownPeriod); the HPA (minReplicas 1) decides from 1 up; the workload is at 0 now"},
		{name: "idleReplicaCount: KEDA holds it while inactive", spec: "idleReplicaCount: 0\n  minReplicaCount: 2", current: 2, wantNote: "holds 0 replicas (idleReplicaCount) while no trigger is active, scales to 2 (minReplicaCount)"},
		{name: "minReplicaCount above 0: nothing below the HPA", spec: "minReplicaCount: 2", current: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := scaledObject(t, "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: web, namespace: shop}\nspec:\n  "+tc.spec+"\n  triggers: [{type: prometheus, metadata: {threshold: '10'}}]\n")
			o.SetAnnotations(tc.annotations)
			k := Of(kedaHPA(external("s0-prometheus")), []*unstructured.Unstructured{o}, tc.current)
			got := ""
			if k.Pause != nil {
				got = k.Pause.Annotation
			}
			if got != tc.wantPause {
				t.Errorf("pause %q, want %q", got, tc.wantPause)
			}
			notes := strings.Join(k.Notes, "\n")
			if (tc.wantNote == "") != (notes == "") || !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes %q, want one containing %q", notes, tc.wantNote)
			}
		})
	}
}
