package explain

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/keda"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// Warning reasons (output.Warning.Reason); stable strings tests and scripts may match.
const (
	WarnKEDA            = "ManagedByKEDA"
	WarnKnative         = "ManagedByKnative"
	WarnVPA             = "VerticalPodAutoscaler"
	WarnRollout         = "RolloutInProgress"
	WarnMissingRequests = "MissingRequests"
	WarnFeatureGate     = "FeatureGate"
	WarnIncompleteReads = "IncompleteReads"
)

// maxListed bounds how many pods a warning names.
const maxListed = 3

// warnings lists what makes this decision surprising. It only looks at what was read: vpas are
// the namespace's VerticalPodAutoscalers, notes say which reads beside the decision failed
// (the namespace's HPAs, the lint rules' lists).
func warnings(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input, vpas []*unstructured.Unstructured, notes []string, eventsErr error) []v1alpha1.Warning {
	var out []v1alpha1.Warning
	out = append(out, managerWarnings(hpa, in.Pods)...)
	out = append(out, vpaWarnings(hpa.Spec.ScaleTargetRef, vpas)...)
	if eventsErr != nil {
		out = append(out, warning(WarnIncompleteReads, "could not list events, so rescale history is missing from the reconstruction: %v", eventsErr))
	}
	for _, n := range notes {
		out = append(out, warning(WarnIncompleteReads, "%s", n))
	}
	out = append(out, rolloutWarnings(in)...)
	out = append(out, missingRequestWarnings(hpa, in)...)
	out = append(out, featureGateWarnings(hpa, in)...)
	return out
}

func warning(reason, format string, args ...any) v1alpha1.Warning {
	return v1alpha1.Warning{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// managerWarnings say that KEDA or Knative manages the HPA (it owns it, or labels it), or
// that Knative's own autoscaler may act on its pods.
func managerWarnings(hpa *autoscalingv2.HorizontalPodAutoscaler, pods []*corev1.Pod) []v1alpha1.Warning {
	var out []v1alpha1.Warning
	for _, o := range hpa.OwnerReferences {
		gv, _ := schema.ParseGroupVersion(o.APIVersion)
		switch {
		case gv.Group == "keda.sh":
			out = append(out, warning(WarnKEDA, "this HPA is owned by KEDA %s %q: KEDA rewrites it, so change the %s instead; its External metrics come from KEDA's metrics adapter", o.Kind, o.Name, o.Kind))
		case strings.HasSuffix(gv.Group, "knative.dev"):
			out = append(out, warning(WarnKnative, "this HPA is owned by Knative %s %q: Knative manages it (class hpa.autoscaling.knative.dev); change the Knative Service's autoscaling annotations instead", o.Kind, o.Name))
		}
	}
	if len(out) > 0 {
		return out
	}
	if name := hpa.Labels[keda.Label]; name != "" {
		out = append(out, warning(WarnKEDA, "this HPA carries KEDA's label for ScaledObject %q: KEDA rewrites it, so change the ScaledObject instead", name))
	}
	for _, p := range pods {
		if rev := p.Labels["serving.knative.dev/revision"]; rev != "" {
			out = append(out, warning(WarnKnative, "the target's pods belong to Knative revision %q: Knative's own autoscaler (KPA) may act on them as well", rev))
			break
		}
	}
	return out
}

// vpaWarnings name the VerticalPodAutoscalers acting on the HPA's target.
func vpaWarnings(ref autoscalingv2.CrossVersionObjectReference, vpas []*unstructured.Unstructured) []v1alpha1.Warning {
	var out []v1alpha1.Warning
	for _, v := range vpas {
		kind, _, _ := unstructured.NestedString(v.Object, "spec", "targetRef", "kind")
		name, _, _ := unstructured.NestedString(v.Object, "spec", "targetRef", "name")
		if kind != ref.Kind || name != ref.Name {
			continue
		}
		mode, found, _ := unstructured.NestedString(v.Object, "spec", "updatePolicy", "updateMode")
		if !found || mode == "" {
			mode = "Auto (default)"
		}
		if mode == "Off" {
			continue
		}
		out = append(out, warning(WarnVPA, "VerticalPodAutoscaler %q also acts on %s/%s (updateMode %s): it changes pod requests, which moves utilization under this HPA; do not let both act on cpu or memory", v.GetName(), ref.Kind, ref.Name, mode))
	}
	return out
}

// rolloutWarnings say that the selected pods come from more than one revision, or that the
// target has not reached its replica count yet.
func rolloutWarnings(in replicas.Input) []v1alpha1.Warning {
	if in.Scale == nil {
		return nil
	}
	revisions := map[string]bool{}
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, l := range []string{"pod-template-hash", "controller-revision-hash"} {
			if h := p.Labels[l]; h != "" {
				revisions[l+"="+h] = true
			}
		}
	}
	switch {
	case len(revisions) > 1:
		return []v1alpha1.Warning{warning(WarnRollout, "the selected pods come from %d revisions (%s): during a rollout new pods start unready and old ones terminate, which moves pod counts and utilization", len(revisions), strings.Join(slices.Sorted(maps.Keys(revisions)), ", "))}
	case in.Scale.SpecReplicas != in.Scale.StatusReplicas:
		return []v1alpha1.Warning{warning(WarnRollout, "the target is still converging: spec %d replicas, status %d", in.Scale.SpecReplicas, in.Scale.StatusReplicas)}
	}
	return nil
}

// missingRequestWarnings name, per Utilization metric, the containers whose missing request
// makes the controller fail it.
func missingRequestWarnings(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input) []v1alpha1.Warning {
	var out []v1alpha1.Warning
	for _, spec := range hpa.Spec.Metrics {
		if !cmdutil.IsResourceMetric(spec.Type) {
			continue
		}
		if t := output.TargetOf(spec); t.Type != autoscalingv2.UtilizationMetricType {
			continue
		}
		res, container := cmdutil.ResourceOf(spec)
		missing := containersWithoutRequest(in, res, container)
		if len(missing) == 0 {
			continue
		}
		out = append(out, warning(WarnMissingRequests, "container(s) without a %s request (%s): %s utilization cannot be computed, so the controller fails this metric; set resources.requests.%s", res, cmdutil.SomeNames(missing, maxListed), res, res))
	}
	return out
}

// containersWithoutRequest are the POD/CONTAINER names without a request of res among the
// pods the controller fails for it (container: only that one).
func containersWithoutRequest(in replicas.Input, res corev1.ResourceName, container string) []string {
	var missing []string
	for _, p := range in.Pods {
		// The core's own request rule says whether the controller fails this pod; the
		// message then names every container (and sidecar) of the pod without the request.
		var re *replicas.RequestError
		if _, err := replicas.PodRequest(p, container, res, in.Config.PodLevelResources); !errors.As(err, &re) || re.NotFound {
			continue
		}
		for _, c := range requestingContainers(p) {
			if container != "" && c.Name != container {
				continue
			}
			if _, ok := c.Resources.Requests[res]; !ok {
				missing = append(missing, fmt.Sprintf("%s/%s", p.Name, c.Name))
			}
		}
	}
	return missing
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// featureGateWarnings names the feature gates this HPA's decision depends on.
func featureGateWarnings(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input) []v1alpha1.Warning {
	var out []v1alpha1.Warning
	cfg := in.Config
	if hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas == 0 {
		out = append(out, v1alpha1.Warning{Reason: WarnFeatureGate, Message: fmt.Sprintf("minReplicas 0 relies on HPAScaleToZero (beta in v1.37, on by default); assumed %s here, pass --feature-gates to match your cluster", onOff(cfg.ScaleToZero))})
	}
	if b := hpa.Spec.Behavior; b != nil && ((b.ScaleUp != nil && b.ScaleUp.Tolerance != nil) || (b.ScaleDown != nil && b.ScaleDown.Tolerance != nil)) {
		out = append(out, v1alpha1.Warning{Reason: WarnFeatureGate, Message: fmt.Sprintf("behavior tolerance relies on HPAConfigurableTolerance (GA in v1.37, alpha before v1.35: older clusters ignore it); assumed %s here", onOff(cfg.ConfigurableTolerance))})
	}
	usesResources := false
	for _, s := range hpa.Spec.Metrics {
		if s.Type == autoscalingv2.ResourceMetricSourceType {
			usesResources = true
		}
	}
	if usesResources {
		for _, p := range in.Pods {
			if p.Spec.Resources != nil && len(p.Spec.Resources.Requests) > 0 {
				out = append(out, v1alpha1.Warning{Reason: WarnFeatureGate, Message: fmt.Sprintf("pod %s has pod-level requests: utilization uses them only with PodLevelResources (beta, on since v1.34); assumed %s here", p.Name, onOff(cfg.PodLevelResources))})
				break
			}
		}
	}
	return out
}

// requestingContainers are the containers whose requests make up a pod's: its containers and
// its restartable init (sidecar) containers.
func requestingContainers(p *corev1.Pod) []corev1.Container {
	out := slices.Clone(p.Spec.Containers)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}
