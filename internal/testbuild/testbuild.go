// Package testbuild builds the Kubernetes objects the tests of this module decide on, through
// functional options: HPAs (metric specs of the five types, behavior, tolerances, conditions,
// status) and pods (requests per container, sidecars, pod-level requests and overhead, phase,
// readiness and its time, start, deletion, labels). Its sibling fakemetrics is the one fake
// metrics.Client, with the samples it serves.
//
// HPA and Pod set little by themselves; each suite states its own defaults once, in a small
// wrapper (upstream's test-namespace/test-hpa on a ReplicationController for the core, a
// Deployment "web" for the controller and the plugin), and a test adds what its case is about.
//
// Tests only: product code never imports it (depguard in .golangci.yml, hack/verify-imports.sh).
// It imports only the standard library, k8s.io/api and k8s.io/apimachinery, so that the core's
// tests and fuzz targets compile nothing more than the core does.
package testbuild

import (
	"fmt"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ---- HPAs ----

// HPAOption changes an HPA being built.
type HPAOption func(*autoscalingv2.HorizontalPodAutoscaler)

// HPA is namespace/name with nothing else set, then opts in order.
func HPA(namespace, name string, opts ...HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Generation sets metadata.generation.
func Generation(g int64) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Generation = g }
}

// ResourceVersion sets metadata.resourceVersion.
func ResourceVersion(v string) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.ResourceVersion = v }
}

// UID sets metadata.uid.
func UID(uid string) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.UID = types.UID(uid) }
}

// Target sets spec.scaleTargetRef.
func Target(apiVersion, kind, name string) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: kind, Name: name, APIVersion: apiVersion}
	}
}

// TargetName renames the scale target, keeping its kind.
func TargetName(name string) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = name }
}

// Min sets spec.minReplicas.
func Min(n int32) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To(n) }
}

// Max sets spec.maxReplicas.
func Max(n int32) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = n }
}

// Metrics appends to spec.metrics.
func Metrics(m ...autoscalingv2.MetricSpec) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics = append(h.Spec.Metrics, m...) }
}

// Behavior sets spec.behavior.
func Behavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Behavior = b }
}

// Tolerances sets each direction's tolerance in spec.behavior (the scaling rules created if
// absent), the way upstream's calculator tests pass Tolerances{down, up}.
func Tolerances(down, up float64) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) {
		if h.Spec.Behavior == nil {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		}
		b := h.Spec.Behavior
		if b.ScaleUp == nil {
			b.ScaleUp = &autoscalingv2.HPAScalingRules{}
		}
		if b.ScaleDown == nil {
			b.ScaleDown = &autoscalingv2.HPAScalingRules{}
		}
		b.ScaleUp.Tolerance = ptr.To(resource.MustParse(fmt.Sprint(up)))
		b.ScaleDown.Tolerance = ptr.To(resource.MustParse(fmt.Sprint(down)))
	}
}

// Conditions sets status.conditions.
func Conditions(c ...autoscalingv2.HorizontalPodAutoscalerCondition) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.Conditions = c }
}

// ScaledToZero is the ScaledToZero=True condition an HPA disabled at zero replicas carries.
func ScaledToZero() autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero"}
}

// Replicas sets status.currentReplicas and status.desiredReplicas.
func Replicas(current, desired int32) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Status.CurrentReplicas, h.Status.DesiredReplicas = current, desired
	}
}

// ObservedGeneration sets status.observedGeneration.
func ObservedGeneration(g int64) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.ObservedGeneration = ptr.To(g) }
}

// LastScaleTime sets status.lastScaleTime.
func LastScaleTime(t time.Time) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Status.LastScaleTime = &metav1.Time{Time: t} }
}

// StatusManager adds a managed-fields entry saying manager last wrote the status at at, as the
// API server records an update of the status subresource.
func StatusManager(manager string, at time.Time) HPAOption {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.ManagedFields = append(h.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			Time: &metav1.Time{Time: at}, APIVersion: "autoscaling/v2", FieldsType: "FieldsV1",
		})
	}
}

// ---- metric specs ----

// CPUUtilization is a cpu Resource metric with an average utilization target (percent).
func CPUUtilization(target int32) autoscalingv2.MetricSpec {
	return ResourceUtilization(corev1.ResourceCPU, target)
}

// ResourceUtilization is a Resource metric with an average utilization target (percent).
func ResourceUtilization(res corev1.ResourceName, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)},
	}}
}

// ResourceAverage is a Resource metric with an average value target in milli-units.
func ResourceAverage(res corev1.ResourceName, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: res, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: Milli(milli)},
	}}
}

// ContainerUtilization is a ContainerResource metric of one container with an average
// utilization target (percent).
func ContainerUtilization(res corev1.ResourceName, container string, target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: res, Container: container, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)},
	}}
}

// PodsAverage is a Pods metric with an average value target in milli-units.
func PodsAverage(name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: Milli(milli)},
	}}
}

// ObjectValue is an Object metric of obj with a value target in milli-units.
func ObjectValue(obj autoscalingv2.CrossVersionObjectReference, name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: obj, Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: Milli(milli)},
	}}
}

// ObjectAverage is an Object metric of obj with an average value target in milli-units.
func ObjectAverage(obj autoscalingv2.CrossVersionObjectReference, name string, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: obj, Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: Milli(milli)},
	}}
}

// ExternalValue is an External metric (selector may be nil) with a value target in milli-units.
func ExternalValue(name string, selector *metav1.LabelSelector, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: selector},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: Milli(milli)},
	}}
}

// ExternalAverage is an External metric (selector may be nil) with an average value target in
// milli-units.
func ExternalAverage(name string, selector *metav1.LabelSelector, milli int64) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: selector},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: Milli(milli)},
	}}
}

// Milli is the decimal quantity milli/1000.
func Milli(milli int64) *resource.Quantity {
	return resource.NewMilliQuantity(milli, resource.DecimalSI)
}

// ---- pods ----

// PodOption changes a pod being built.
type PodOption func(*corev1.Pod)

// Pod is namespace/name, Running, with one condition, PodReady=True (no transition time), and no
// containers, then opts in order.
func Pod(namespace, name string, opts ...PodOption) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Labels adds labels, given as key, value, key, value...
func Labels(kv ...string) PodOption {
	return func(p *corev1.Pod) { p.Labels = addPairs(p.Labels, kv) }
}

// Annotations adds annotations, given as key, value, key, value...
func Annotations(kv ...string) PodOption {
	return func(p *corev1.Pod) { p.Annotations = addPairs(p.Annotations, kv) }
}

func addPairs(m map[string]string, kv []string) map[string]string {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("testbuild: key without a value in %q", kv))
	}
	if m == nil {
		m = make(map[string]string, len(kv)/2)
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// Containers replaces the pod's containers (a copy of c: options that change a container change
// only this pod's).
func Containers(c ...corev1.Container) PodOption {
	return func(p *corev1.Pod) { p.Spec.Containers = slices.Clone(c) }
}

// Container is a container named name requesting requests (none when nil).
func Container(name string, requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests}}
}

// Requests is a resource list given as name, quantity, name, quantity... ("cpu", "250m").
func Requests(kv ...string) corev1.ResourceList {
	if len(kv)%2 != 0 {
		panic(fmt.Sprintf("testbuild: resource without a quantity in %q", kv))
	}
	out := make(corev1.ResourceList, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// CPURequest puts the same cpu request, and only it, on every container the pod has so far.
func CPURequest(q string) PodOption {
	return func(p *corev1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		}
	}
}

// ContainerRequests replaces the containers with container1, container2... each requesting the
// next of milli (milli-units) of res.
func ContainerRequests(res corev1.ResourceName, milli ...int64) PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for i, m := range milli {
			p.Spec.Containers = append(p.Spec.Containers, Container(fmt.Sprintf("container%d", i+1), corev1.ResourceList{res: *Milli(m)}))
		}
	}
}

// InitContainers replaces the pod's init containers (a copy of c).
func InitContainers(c ...corev1.Container) PodOption {
	return func(p *corev1.Pod) { p.Spec.InitContainers = slices.Clone(c) }
}

// Sidecar is an init container that keeps running beside the others (restartPolicy Always),
// whose requests count towards the pod's.
func Sidecar(name string, requests corev1.ResourceList) corev1.Container {
	c := Container(name, requests)
	c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return c
}

// PodRequests sets pod-level requests (spec.resources).
func PodRequests(requests corev1.ResourceList) PodOption {
	return func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{Requests: requests} }
}

// Overhead sets spec.overhead (a RuntimeClass's per-pod cost).
func Overhead(o corev1.ResourceList) PodOption {
	return func(p *corev1.Pod) { p.Spec.Overhead = o }
}

// Ready sets the status of the PodReady condition, keeping its transition time (adding the
// condition if the pod has none).
func Ready(s corev1.ConditionStatus) PodOption {
	return func(p *corev1.Pod) {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = s
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: s})
	}
}

// ReadySince makes PodReady, with status s since t, the pod's only condition.
func ReadySince(s corev1.ConditionStatus, t time.Time) PodOption {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: s, LastTransitionTime: metav1.Time{Time: t}}}
	}
}

// NoConditions removes every condition (a pod the kubelet has not reported on).
func NoConditions() PodOption {
	return func(p *corev1.Pod) { p.Status.Conditions = nil }
}

// StartedAt sets status.startTime.
func StartedAt(t time.Time) PodOption {
	return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: t} }
}

// Phase sets status.phase.
func Phase(ph corev1.PodPhase) PodOption {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// DeletedAt sets metadata.deletionTimestamp (a pod being deleted).
func DeletedAt(t time.Time) PodOption {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t} }
}
