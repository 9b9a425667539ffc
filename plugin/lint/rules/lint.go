package rules

import (
	"cmp"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// Severity is how bad a finding is: the API's (plugin/api/v1alpha1), which findings carry.
type Severity = v1alpha1.Severity

// Severities, worst first.
const (
	SeverityError   = v1alpha1.SeverityError
	SeverityWarning = v1alpha1.SeverityWarning
	SeverityInfo    = v1alpha1.SeverityInfo
)

// ObjectRef names an object: the API's, as findings carry it.
type ObjectRef = v1alpha1.ObjectRef

// Finding is one rule's verdict on one HPA.
type Finding struct {
	// ID is the rule's stable ID (HPA001, ...).
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// HPA is the HPA the finding is about.
	HPA ObjectRef `json:"hpa"`
	// Object is the object whose field Path names: the HPA, or its workload, a
	// PodDisruptionBudget, a VPA, a ScaledObject, another HPA.
	Object ObjectRef `json:"object"`
	// Path is the field path in Object (spec.behavior.scaleDown.policies[0]); empty for the
	// object as a whole.
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
	// Why it matters, in one line.
	Why string `json:"why"`
	Fix string `json:"fix"`
}

// Objects are the HPAs to check and what lies beside them (in the same files, or the same
// namespaces of a cluster).
type Objects struct {
	HPAs                 []*autoscalingv2.HorizontalPodAutoscaler
	Deployments          []*appsv1.Deployment
	StatefulSets         []*appsv1.StatefulSet
	ReplicaSets          []*appsv1.ReplicaSet
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// VerticalPodAutoscalers (autoscaling.k8s.io) and KEDA ScaledObjects (keda.sh), whose
	// types this module does not import.
	VerticalPodAutoscalers []*unstructured.Unstructured
	ScaledObjects          []*unstructured.Unstructured
}

// Add sorts obj into its list, and says whether it is of a kind lint reads (an unstructured
// object is read when it is a VerticalPodAutoscaler of autoscaling.k8s.io or a ScaledObject of
// keda.sh).
func (o *Objects) Add(obj runtime.Object) bool {
	switch t := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		o.HPAs = append(o.HPAs, t)
	case *appsv1.Deployment:
		o.Deployments = append(o.Deployments, t)
	case *appsv1.StatefulSet:
		o.StatefulSets = append(o.StatefulSets, t)
	case *appsv1.ReplicaSet:
		o.ReplicaSets = append(o.ReplicaSets, t)
	case *policyv1.PodDisruptionBudget:
		o.PodDisruptionBudgets = append(o.PodDisruptionBudgets, t)
	case *unstructured.Unstructured:
		gk := t.GroupVersionKind().GroupKind()
		switch gk {
		case schema.GroupKind{Group: "autoscaling.k8s.io", Kind: "VerticalPodAutoscaler"}:
			o.VerticalPodAutoscalers = append(o.VerticalPodAutoscalers, t)
		case schema.GroupKind{Group: "keda.sh", Kind: "ScaledObject"}:
			o.ScaledObjects = append(o.ScaledObjects, t)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// Options are the cluster's settings the rules judge against, and the thresholds of the rules
// that have one.
type Options struct {
	// Manifests: the objects are manifests as written, so a workload's unset spec.replicas is
	// unset (read from a cluster, every workload has one, and HPA007 is not checked).
	Manifests bool
	// SyncPeriod is --horizontal-pod-autoscaler-sync-period.
	SyncPeriod time.Duration
	// Tolerance is --horizontal-pod-autoscaler-tolerance.
	Tolerance float64
	// DownscaleStabilizationWindow is --horizontal-pod-autoscaler-downscale-stabilization.
	DownscaleStabilizationWindow time.Duration
	// ScaleUpWithin and ScaleDownWithin: HPA013 warns when the policies take longer to go from
	// minReplicas to maxReplicas (or back).
	ScaleUpWithin, ScaleDownWithin time.Duration
	// Validation is what the API server accepts (feature gates).
	Validation validation.Options
	// PodLevelResources is the PodLevelResources gate, for the requests a Utilization divides by.
	PodLevelResources bool
	// ServedAPIs are the API groups the cluster serves (from discovery), for HPA017; nil for
	// manifests, where it is not checked.
	ServedAPIs map[string]bool
}

// DefaultOptions are kube-controller-manager's defaults, and HPA013's thresholds: 5 minutes
// from minReplicas to maxReplicas, 20 minutes back.
func DefaultOptions() Options {
	cfg := replicas.DefaultConfig()
	return Options{
		SyncPeriod:                   15 * time.Second,
		Tolerance:                    cfg.Tolerance,
		DownscaleStabilizationWindow: cfg.DownscaleStabilizationWindow,
		ScaleUpWithin:                5 * time.Minute,
		ScaleDownWithin:              20 * time.Minute,
		Validation:                   validation.DefaultOptions(),
		PodLevelResources:            cfg.PodLevelResources,
	}
}

// Check runs every rule on every HPA of objs. The findings come per HPA in the order of
// objs.HPAs, and within an HPA worst first, then by rule ID and path.
func Check(objs Objects, opts Options) []Finding {
	ix := index(objs)
	var out []Finding
	for _, hpa := range objs.HPAs {
		c := &checker{hpa: hpa, ref: ObjectRef{Kind: "HorizontalPodAutoscaler", Namespace: hpa.Namespace, Name: hpa.Name}, ix: ix, opts: opts}
		c.workload = ix.workload(hpa.Namespace, hpa.Spec.ScaleTargetRef)
		for _, r := range rules {
			c.rule = &r
			r.check(c)
		}
		slices.SortStableFunc(c.found, func(a, b Finding) int {
			return cmp.Or(b.Severity.Rank()-a.Severity.Rank(), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Path, b.Path))
		})
		out = append(out, c.found...)
	}
	return out
}

// checker is one HPA being checked.
type checker struct {
	hpa      *autoscalingv2.HorizontalPodAutoscaler
	ref      ObjectRef
	ix       *objectIndex
	opts     Options
	workload *workload
	// rule is the rule running, whose findings add records.
	rule  *Rule
	found []Finding
}

// add records a finding of the running rule on the HPA's own field path.
func (c *checker) add(path, message string) {
	c.addOn(c.ref, path, message)
}

// addOn records a finding of the running rule on another object's field path.
func (c *checker) addOn(obj ObjectRef, path, message string) {
	r := c.rule
	c.found = append(c.found, Finding{ID: r.ID, Severity: r.Severity, HPA: c.ref, Object: obj, Path: path, Message: message, Why: r.Why, Fix: r.Fix})
}

// minReplicas is the HPA's minReplicas as the API defaults it.
func (c *checker) minReplicas() int32 {
	if c.hpa.Spec.MinReplicas == nil {
		return 1
	}
	return *c.hpa.Spec.MinReplicas
}

// workload is an HPA's scale target found among the objects: what the rules read of it.
type workload struct {
	ref      ObjectRef
	group    string
	replicas *int32
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
}

// podSelector is the workload's selector, or nothing when it has none or it does not parse.
func (w *workload) podSelector() labels.Selector {
	if w.selector == nil {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(w.selector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

type workloadKey struct{ group, kind, namespace, name string }

type objectIndex struct {
	workloads map[workloadKey]*workload
	objs      Objects
}

func index(objs Objects) *objectIndex {
	ix := &objectIndex{workloads: map[workloadKey]*workload{}, objs: objs}
	put := func(kind string, meta metav1.ObjectMeta, r *int32, sel *metav1.LabelSelector, t *corev1.PodTemplateSpec) {
		w := &workload{ref: ObjectRef{Kind: kind, Namespace: meta.Namespace, Name: meta.Name}, group: "apps", replicas: r, selector: sel, template: t}
		ix.workloads[workloadKey{"apps", kind, meta.Namespace, meta.Name}] = w
	}
	for _, d := range objs.Deployments {
		put("Deployment", d.ObjectMeta, d.Spec.Replicas, d.Spec.Selector, &d.Spec.Template)
	}
	for _, s := range objs.StatefulSets {
		put("StatefulSet", s.ObjectMeta, s.Spec.Replicas, s.Spec.Selector, &s.Spec.Template)
	}
	for _, r := range objs.ReplicaSets {
		put("ReplicaSet", r.ObjectMeta, r.Spec.Replicas, r.Spec.Selector, &r.Spec.Template)
	}
	return ix
}

// workload finds a scale target in namespace ns, or nil.
func (ix *objectIndex) workload(ns string, ref autoscalingv2.CrossVersionObjectReference) *workload {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	return ix.workloads[workloadKey{gv.Group, ref.Kind, ns, ref.Name}]
}

// readKinds are the scale target kinds lint reads; a target of another kind (a custom resource)
// cannot be looked up, so the rules about the workload say nothing about it.
func readKind(group, kind string) bool {
	return group == "apps" && (kind == "Deployment" || kind == "StatefulSet" || kind == "ReplicaSet")
}
