package explain

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

func TestWarningsNameWhatMakesADecisionSurprising(t *testing.T) {
	type input struct {
		hpa       *autoscalingv2.HorizontalPodAutoscaler
		in        replicas.Input
		vpas      []*unstructured.Unstructured
		notes     []string
		eventsErr error
	}
	base := func(mods ...func(*input)) input {
		f := newFixture()
		i := input{hpa: f.HPA, in: replicas.Input{HPA: f.HPA, Pods: f.Pods, Config: replicas.DefaultConfig(),
			Scale: &replicas.Scale{SpecReplicas: 4, StatusReplicas: 4, Selector: "app=web"}}}
		for _, m := range mods {
			m(&i)
		}
		return i
	}
	vpaList := func(items ...*unstructured.Unstructured) []*unstructured.Unstructured { return items }
	tests := []struct {
		name string
		in   input
		want []string // reasons, in order
	}{
		{"nothing surprising", base(), nil},
		{"owned by a KEDA ScaledObject", base(func(i *input) {
			i.hpa.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web"}}
		}), []string{WarnKEDA}},
		{"KEDA label without owner", base(func(i *input) { i.hpa.Labels = map[string]string{"scaledobject.keda.sh/name": "web"} }), []string{WarnKEDA}},
		{"owned by Knative", base(func(i *input) {
			i.hpa.OwnerReferences = []metav1.OwnerReference{{APIVersion: "autoscaling.internal.knative.dev/v1alpha1", Kind: "PodAutoscaler", Name: "web-00001"}}
		}), []string{WarnKnative}},
		{"pods of a Knative revision", base(func(i *input) { i.in.Pods[0].Labels["serving.knative.dev/revision"] = "web-00001" }), []string{WarnKnative}},
		{"VPA in Auto mode on the same target", base(func(i *input) { i.vpas = vpaList(vpa("v", "Deployment", "web", "Auto")) }), []string{WarnVPA}},
		{"VPA in Off mode is harmless", base(func(i *input) { i.vpas = vpaList(vpa("v", "Deployment", "web", "Off")) }), nil},
		{"VPA on another target is ignored", base(func(i *input) { i.vpas = vpaList(vpa("v", "StatefulSet", "web", "Auto")) }), nil},
		{"a read beside the decision failed (the VPAs, the namespace's HPAs)", base(func(i *input) {
			i.notes = []string{"the verticalpodautoscalers.autoscaling.k8s.io objects of namespace \"shop\" could not be listed"}
		}), []string{WarnIncompleteReads}},
		{"events unreadable", base(func(i *input) { i.eventsErr = errors.New("forbidden") }), []string{WarnIncompleteReads}},
		{"two pod-template-hashes", base(func(i *input) { i.in.Pods[0].Labels["pod-template-hash"] = "new" }), []string{WarnRollout}},
		{"terminating old pod does not count as a rollout", base(func(i *input) {
			i.in.Pods[0].Labels["pod-template-hash"] = "old"
			i.in.Pods[0].DeletionTimestamp = &metav1.Time{}
		}), nil},
		{"scale converging", base(func(i *input) { i.in.Scale.StatusReplicas = 3 }), []string{WarnRollout}},
		{"container without cpu request", base(func(i *input) { i.in.Pods[1].Spec.Containers[0].Resources.Requests = nil }), []string{WarnMissingRequests}},
		{"sidecar without cpu request", base(func(i *input) {
			always := corev1.ContainerRestartPolicyAlways
			i.in.Pods[1].Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
		}), []string{WarnMissingRequests}},
		{"init container that is not a sidecar needs no request", base(func(i *input) {
			i.in.Pods[1].Spec.InitContainers = []corev1.Container{{Name: "setup"}}
		}), nil},
		{"pod-level request covers missing container requests", base(func(i *input) {
			i.in.Pods[1].Spec.Containers[0].Resources.Requests = nil
			i.in.Pods[1].Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		}), []string{WarnFeatureGate}},
		{"scale to zero", base(func(i *input) { i.hpa.Spec.MinReplicas = ptr.To(int32(0)) }), []string{WarnFeatureGate}},
		{"behavior tolerance", base(func(i *input) {
			q := resource.MustParse("0.05")
			i.hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &q}}
		}), []string{WarnFeatureGate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range warnings(tt.in.hpa, tt.in.in, tt.in.vpas, tt.in.notes, tt.in.eventsErr) {
				got = append(got, w.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warning reasons (-want +got):\n%s", diff)
			}
		})
	}
}
