// Package validation decides whether kube-apiserver v1.37 would accept an autoscaling/v2
// HorizontalPodAutoscaler on create: it fills in the API's defaults as the server does, then
// checks the object with the server's rules, reporting each refusal at the same field path
// with the same kind of error (required, invalid, forbidden, not supported). The messages are
// our own. The test/parity module holds it to upstream's ValidateHorizontalPodAutoscaler.
package validation

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Limits the API server puts on behavior.
const (
	// MaxPolicyPeriodSeconds is the longest periodSeconds of a scaling policy (30 minutes).
	MaxPolicyPeriodSeconds int32 = 1800
	// MaxStabilizationWindowSeconds is the longest stabilization window (one hour).
	MaxStabilizationWindowSeconds int32 = 3600
	// DefaultCPUUtilization is the target of the cpu metric the API adds to an HPA without metrics.
	DefaultCPUUtilization int32 = 80
)

// Options are the cluster settings that change what the API server accepts.
type Options struct {
	// ScaleToZero is the HPAScaleToZero feature gate (beta and on by default in v1.37):
	// minReplicas may then be 0, as long as an Object or External metric is present.
	ScaleToZero bool
}

// DefaultOptions are a default v1.37 API server's.
func DefaultOptions() Options { return Options{ScaleToZero: true} }

// Default fills in, in place, what the API server's defaulting fills into an autoscaling/v2
// HPA before it validates and stores it: minReplicas 1, a cpu target of 80% when there are no
// metrics, and, when behavior is set, every unset scaling-rule field of both directions
// (scaleUp: window 0, select Max, 4 Pods and 100 Percent per 15 s; scaleDown: select Max,
// 100 Percent per 15 s, the window left unset for the controller's own default).
func Default(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	s := &hpa.Spec
	if s.MinReplicas == nil {
		s.MinReplicas = ptr.To(int32(1))
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(DefaultCPUUtilization)},
			},
		}}
	}
	if s.Behavior == nil {
		return
	}
	up := autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To(int32(0)),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
	down := autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
	s.Behavior.ScaleUp = overlay(s.Behavior.ScaleUp, up)
	s.Behavior.ScaleDown = overlay(s.Behavior.ScaleDown, down)
}

// overlay returns def with every field that set has (non-nil) taken from set. A policy list
// that is present but empty counts as set, as it does for the API server (and fails validation).
func overlay(set *autoscalingv2.HPAScalingRules, def autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if set == nil {
		return &def
	}
	if set.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = set.StabilizationWindowSeconds
	}
	if set.SelectPolicy != nil {
		def.SelectPolicy = set.SelectPolicy
	}
	if set.Policies != nil {
		def.Policies = set.Policies
	}
	if set.Tolerance != nil {
		def.Tolerance = set.Tolerance
	}
	return &def
}

// Validate returns every reason the API server would refuse to create hpa, checked on a
// defaulted copy (hpa is not changed). hpa must carry the namespace it would be created in, as
// a request to the server does. An empty list means it would be accepted.
func Validate(hpa *autoscalingv2.HorizontalPodAutoscaler, opts Options) field.ErrorList {
	h := hpa.DeepCopy()
	Default(h)
	errs := apimachineryvalidation.ValidateObjectMeta(&h.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	for i, f := range h.Finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers[f] {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "finalizers").Index(i), f, "a finalizer without a domain prefix must be one of Kubernetes' own (kubernetes, orphan, foregroundDeletion)"))
		}
	}
	return append(errs, ValidateSpec(&h.Spec, field.NewPath("spec"), opts)...)
}

var standardFinalizers = map[string]bool{"kubernetes": true, "orphan": true, "foregroundDeletion": true}

// ValidateSpec checks an already defaulted spec (see Default) at path p.
func ValidateSpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	lowest := int32(1)
	if opts.ScaleToZero {
		lowest = 0
	}
	if s.MinReplicas != nil && *s.MinReplicas < lowest {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *s.MinReplicas, fmt.Sprintf("the lowest allowed is %d", lowest)))
	}
	switch {
	case s.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), "give a maximum of at least 1"))
	case s.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, "the lowest allowed is 1"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), s.MaxReplicas, fmt.Sprintf("is below minReplicas (%d)", *s.MinReplicas)))
	}
	// Only a ReplicationController, the one scalable kind of the core group, may leave the
	// group out of its apiVersion.
	errs = append(errs, checkReference(s.ScaleTargetRef, p.Child("scaleTargetRef"), s.ScaleTargetRef.Kind == "ReplicationController")...)
	errs = append(errs, checkMetrics(s.Metrics, p.Child("metrics"), s.MinReplicas)...)
	if b := s.Behavior; b != nil {
		errs = append(errs, checkRules(b.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, checkRules(b.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

// checkReference checks a scaleTargetRef or an Object metric's describedObject.
func checkReference(ref autoscalingv2.CrossVersionObjectReference, p *field.Path, coreGroupAllowed bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, checkPathSegment(ref.Kind, p.Child("kind"), "")...)
	errs = append(errs, checkPathSegment(ref.Name, p.Child("name"), "")...)
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	switch {
	case err != nil:
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, fmt.Sprintf("not a group/version: %v", err)))
	case gv.Group == "" && !coreGroupAllowed:
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, "name the API group too, e.g. apps/v1"))
	}
	return errs
}

// checkPathSegment requires a name that can stand as one segment of a URL path (not ".", "..",
// and without "/" or "%"); missing is the detail of its absence ("" for none).
func checkPathSegment(v string, p *field.Path, missing string) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, missing)}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

func checkMetrics(metrics []autoscalingv2.MetricSpec, p *field.Path, minReplicas *int32) field.ErrorList {
	var errs field.ErrorList
	objectOrExternal := false
	for i, m := range metrics {
		errs = append(errs, checkMetric(m, p.Index(i))...)
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			objectOrExternal = true
		}
	}
	if minReplicas != nil && *minReplicas == 0 && !objectOrExternal {
		errs = append(errs, field.Forbidden(p, "minReplicas 0 needs an Object or External metric: the other kinds cannot be measured with no pods"))
	}
	return errs
}

var metricTypes = []string{
	string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType),
	string(autoscalingv2.ResourceMetricSourceType),
}

// sourceFields are the metric source fields in the order the API server looks at them: only
// the first one present is checked in depth, and any other present is refused.
var sourceFields = []struct {
	name string
	typ  autoscalingv2.MetricSourceType
}{
	{"object", autoscalingv2.ObjectMetricSourceType},
	{"external", autoscalingv2.ExternalMetricSourceType},
	{"pods", autoscalingv2.PodsMetricSourceType},
	{"resource", autoscalingv2.ResourceMetricSourceType},
	{"containerResource", autoscalingv2.ContainerResourceMetricSourceType},
}

func checkMetric(m autoscalingv2.MetricSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	known := false
	for _, t := range metricTypes {
		known = known || string(m.Type) == t
	}
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "say which kind of metric this is"))
	}
	if !known {
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricTypes))
	}
	present := map[string]bool{
		"object": m.Object != nil, "external": m.External != nil, "pods": m.Pods != nil,
		"resource": m.Resource != nil, "containerResource": m.ContainerResource != nil,
	}
	checked := false
	for _, sf := range sourceFields {
		if !present[sf.name] || checked {
			continue
		}
		checked = true
		fp := p.Child(sf.name)
		switch sf.name {
		case "object":
			errs = append(errs, checkObject(m.Object, fp)...)
		case "external":
			errs = append(errs, checkExternal(m.External, fp)...)
		case "pods":
			errs = append(errs, checkPods(m.Pods, fp)...)
		case "resource":
			errs = append(errs, checkResource(m.Resource, fp)...)
		case "containerResource":
			errs = append(errs, checkContainerResource(m.ContainerResource, fp)...)
		}
	}
	expected := ""
	for _, sf := range sourceFields {
		if m.Type == sf.typ {
			expected = sf.name
			if !present[sf.name] {
				errs = append(errs, field.Required(p.Child(sf.name), fmt.Sprintf("a %s metric needs its %s field", m.Type, sf.name)))
			}
		}
	}
	if !known {
		// The API server reports an unknown type a second time here.
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricTypes))
	}
	n := 0
	for _, v := range present {
		if v {
			n++
		}
	}
	if n > 1 {
		for _, sf := range sourceFields {
			if present[sf.name] && sf.name != expected {
				errs = append(errs, field.Forbidden(p.Child(sf.name), fmt.Sprintf("only the %s field of a %s metric may be set", expected, m.Type)))
			}
		}
	}
	return errs
}

func checkObject(s *autoscalingv2.ObjectMetricSource, p *field.Path) field.ErrorList {
	errs := checkReference(s.DescribedObject, p.Child("describedObject"), true)
	errs = append(errs, checkMetricName(s.Metric, p.Child("metric"))...)
	errs = append(errs, checkTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "an Object metric needs a value or an averageValue target"))
	}
	return errs
}

func checkExternal(s *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := checkMetricName(s.Metric, p.Child("metric"))
	errs = append(errs, checkTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "an External metric needs a value or an averageValue target"))
	}
	if s.Target.Value != nil && s.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "give value or averageValue, not both"))
	}
	return errs
}

func checkPods(s *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := checkMetricName(s.Metric, p.Child("metric"))
	errs = append(errs, checkTarget(s.Target, p.Child("target"))...)
	if s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "a Pods metric needs an averageValue target"))
	}
	return errs
}

func checkResource(s *autoscalingv2.ResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	// The server checks only that a Resource metric names some resource.
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name the resource, e.g. cpu or memory"))
	}
	return append(errs, checkResourceTarget(s.Target, p.Child("target"))...)
}

func checkContainerResource(s *autoscalingv2.ContainerResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name the resource, e.g. cpu or memory"))
	} else {
		errs = append(errs, checkContainerResourceName(s.Name, p.Child("name"))...)
	}
	if s.Container == "" {
		errs = append(errs, field.Required(p.Child("container"), "name the container"))
	} else {
		for _, msg := range content.IsDNS1123Label(s.Container) {
			errs = append(errs, field.Invalid(p.Child("container"), s.Container, msg))
		}
	}
	return append(errs, checkResourceTarget(s.Target, p.Child("target"))...)
}

// checkResourceTarget: a resource metric targets a utilization or an average value, one of them.
func checkResourceTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	errs := checkTarget(t, p)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("averageUtilization"), "a resource metric needs an averageUtilization or an averageValue target"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("averageValue"), "give averageUtilization or averageValue, not both"))
	}
	return errs
}

func checkTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "say which kind of target this is"))
	}
	switch t.Type {
	case autoscalingv2.UtilizationMetricType, autoscalingv2.ValueMetricType, autoscalingv2.AverageValueMetricType:
	default:
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "the kinds of target are Utilization, Value and AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value.String(), "must be above zero"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() <= 0 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue.String(), "must be above zero"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization <= 0 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), *t.AverageUtilization, "must be at least 1 (percent of the request)"))
	}
	return errs
}

func checkMetricName(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	return checkPathSegment(id.Name, p.Child("name"), "name the metric")
}

// checkContainerResourceName accepts what a container may request: cpu, memory,
// ephemeral-storage, hugepages-<size>, or an extended resource (example.com/gpu).
func checkContainerResourceName(name corev1.ResourceName, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := string(name)
	for _, msg := range content.IsLabelKey(s) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	if len(errs) == 0 && !strings.Contains(s, "/") && !quotaResourceNames[s] && !strings.HasPrefix(s, "hugepages-") && !strings.HasPrefix(s, "requests.hugepages-") {
		errs = append(errs, field.Invalid(p, s, "unknown resource: give a Kubernetes resource or a domain-qualified one"))
	}
	switch {
	case !strings.Contains(s, "/"):
		if s != "cpu" && s != "memory" && s != "ephemeral-storage" && !strings.HasPrefix(s, "hugepages-") {
			errs = append(errs, field.Invalid(p, s, "containers request cpu, memory, ephemeral-storage or hugepages-<size>"))
		}
	case !strings.Contains(s, "kubernetes.io/") && !isExtendedResource(s):
		errs = append(errs, field.Invalid(p, s, "not a valid extended resource name (domain/name, no requests. prefix)"))
	}
	return errs
}

// quotaResourceNames are the unprefixed resource names the API knows (those a ResourceQuota
// may name); a container resource name without a domain must be one of them first.
var quotaResourceNames = map[string]bool{
	"cpu": true, "memory": true, "ephemeral-storage": true,
	"requests.cpu": true, "requests.memory": true, "requests.ephemeral-storage": true,
	"limits.cpu": true, "limits.memory": true, "limits.ephemeral-storage": true,
	"pods": true, "resourcequotas": true, "services": true, "replicationcontrollers": true,
	"secrets": true, "configmaps": true, "persistentvolumeclaims": true, "storage": true,
	"requests.storage": true, "services.nodeports": true, "services.loadbalancers": true,
}

func isExtendedResource(s string) bool {
	if strings.HasPrefix(s, "requests.") {
		return false
	}
	return len(content.IsLabelKey("requests."+s)) == 0
}

var selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
var policyTypes = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}

func checkRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, "must not be negative"))
		}
		if *w > MaxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("the longest window allowed is %d seconds", MaxStabilizationWindowSeconds)))
		}
	}
	if sp := r.SelectPolicy; sp != nil {
		switch *sp {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			errs = append(errs, field.NotSupported(p.Child("selectPolicy"), *sp, selectPolicies))
		}
	}
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(p.Child("policies"), "give at least one policy"))
	}
	for i, pol := range r.Policies {
		pp := p.Child("policies").Index(i)
		if pol.Type != autoscalingv2.PodsScalingPolicy && pol.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pp.Child("type"), pol.Type, policyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), pol.Value, "must be at least 1"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, "must be at least 1"))
		}
		if pol.PeriodSeconds > MaxPolicyPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("the longest period allowed is %d seconds", MaxPolicyPeriodSeconds)))
		}
	}
	if r.Tolerance != nil && r.Tolerance.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), r.Tolerance.String(), "must not be negative"))
	}
	return errs
}
