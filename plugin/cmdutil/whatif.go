package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// WhatIf is one parsed METRIC=VALUE: explain's --set-target and --assume, a metric's target
// in simulate's --variant.
type WhatIf struct {
	Flag string // "set-target", "assume" or "variant"
	// Prefix is what the flag's value holds before METRIC=VALUE: "NAME=" for --variant.
	Prefix string
	Metric string // short name or spec index
	Raw    string
	// Exactly one of Percent and Quantity is set.
	Percent  *int32
	Quantity *resource.Quantity
}

// ParseWhatIf parses METRIC=VALUE given to --flag after prefix (simulate's --variant
// NAME=METRIC=VALUE has the prefix "NAME="). A target (any flag but assume) of 0% is refused.
func ParseWhatIf(flag, prefix, s string) (WhatIf, error) {
	metric, value, ok := strings.Cut(s, "=")
	if !ok || metric == "" || value == "" {
		return WhatIf{}, fmt.Errorf("--%s %q: want METRIC=VALUE, e.g. cpu=60%% or requests_per_second=100", flag, prefix+s)
	}
	w := WhatIf{Flag: flag, Prefix: prefix, Metric: metric, Raw: value}
	if p, isPct := strings.CutSuffix(value, "%"); isPct {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || (flag != "assume" && n == 0) {
			return WhatIf{}, fmt.Errorf("%s: %q is not a valid percentage", w.Given(), value)
		}
		w.Percent = ptr.To(int32(n))
	} else {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return WhatIf{}, fmt.Errorf("%s: %q is neither a percentage nor a quantity: %w", w.Given(), value, err)
		}
		if q.Sign() < 0 {
			return WhatIf{}, fmt.Errorf("%s: the value must not be negative", w.Given())
		}
		w.Quantity = &q
	}
	return w, nil
}

// Given is the flag as it was typed, for messages: --set-target cpu=60%, --variant fast=cpu=60%.
func (w WhatIf) Given() string {
	return "--" + w.Flag + " " + w.Prefix + w.Metric + "=" + w.Raw
}

// FindMetric resolves a metric named by spec index, short name, or bare resource name.
func FindMetric(hpa *autoscalingv2.HorizontalPodAutoscaler, id string) (int, error) {
	specs := hpa.Spec.Metrics
	if n, err := strconv.Atoi(id); err == nil {
		if n < 0 || n >= len(specs) {
			return 0, fmt.Errorf("metric index %d is out of range: the HPA has %d metric(s)", n, len(specs))
		}
		return n, nil
	}
	var matches, names []string
	var idx []int
	for i, s := range specs {
		short := output.ShortName(s)
		names = append(names, fmt.Sprintf("%d=%s", i, short))
		resourceName, _, _ := strings.Cut(short, "/")
		if short == id || (s.Type == autoscalingv2.ContainerResourceMetricSourceType && resourceName == id) {
			matches = append(matches, short)
			idx = append(idx, i)
		}
	}
	switch len(idx) {
	case 0:
		return 0, &NoSuchMetricError{id: id, has: strings.Join(names, ", ")}
	case 1:
		return idx[0], nil
	}
	return 0, fmt.Errorf("metric %q is ambiguous (%s): name it by index (%s)", id, strings.Join(matches, ", "), strings.Join(names, ", "))
}

// NoSuchMetricError is FindMetric's error for a name that no metric of the HPA has (as
// opposed to an index out of range or a name two metrics share): a variant key that names
// no metric is then an unknown key.
type NoSuchMetricError struct{ id, has string }

func (e *NoSuchMetricError) Error() string {
	return fmt.Sprintf("metric %q is not in spec.metrics of this HPA (it has: %s)", e.id, e.has)
}

// TargetIn points at the target inside spec.
func TargetIn(spec *autoscalingv2.MetricSpec) *autoscalingv2.MetricTarget {
	switch {
	case spec.Resource != nil:
		return &spec.Resource.Target
	case spec.ContainerResource != nil:
		return &spec.ContainerResource.Target
	case spec.Pods != nil:
		return &spec.Pods.Target
	case spec.Object != nil:
		return &spec.Object.Target
	case spec.External != nil:
		return &spec.External.Target
	}
	return nil
}

// RefuseBareResourceNumber refuses a unitless value for a resource metric: cpu=90 would
// mean 90 whole cores (and memory=300, 300 bytes), almost never what was meant.
func RefuseBareResourceNumber(w WhatIf, spec autoscalingv2.MetricSpec) error {
	if w.Quantity == nil || !IsResourceMetric(spec.Type) || strings.TrimLeft(w.Raw, "0123456789.") != "" {
		return nil
	}
	name, _ := ResourceOf(spec)
	example, unit := "300Mi", "bytes"
	if name == corev1.ResourceCPU {
		example, unit = "900m", "cores"
	}
	return fmt.Errorf("%s: a number without a unit would mean %s %s: give a utilization such as %s%% or a quantity with its unit such as %s",
		w.Given(), w.Raw, unit, w.Raw, example)
}

// IsResourceMetric is true for the Resource and ContainerResource metric types.
func IsResourceMetric(t autoscalingv2.MetricSourceType) bool {
	return t == autoscalingv2.ResourceMetricSourceType || t == autoscalingv2.ContainerResourceMetricSourceType
}

// ResourceOf is the resource (and container, for ContainerResource) a metric measures;
// empty for the other types.
func ResourceOf(spec autoscalingv2.MetricSpec) (corev1.ResourceName, string) {
	switch {
	case spec.Resource != nil:
		return spec.Resource.Name, ""
	case spec.ContainerResource != nil:
		return spec.ContainerResource.Name, spec.ContainerResource.Container
	}
	return "", ""
}

// SetTarget changes, in hpa, the target of the metric w names to w's value.
func SetTarget(hpa *autoscalingv2.HorizontalPodAutoscaler, w WhatIf) (v1alpha1.WhatIf, error) {
	i, err := FindMetric(hpa, w.Metric)
	if err != nil {
		return v1alpha1.WhatIf{}, fmt.Errorf("%s: %w", w.Given(), err)
	}
	spec := &hpa.Spec.Metrics[i]
	t := TargetIn(spec)
	if t == nil {
		return v1alpha1.WhatIf{}, fmt.Errorf("%s: metric %d has no target to change", w.Given(), i)
	}
	was := output.FormatTarget(*t)
	if err := RefuseBareResourceNumber(w, *spec); err != nil {
		return v1alpha1.WhatIf{}, err
	}
	switch {
	case w.Percent != nil:
		if !IsResourceMetric(spec.Type) {
			return v1alpha1.WhatIf{}, fmt.Errorf("%s: only Resource and ContainerResource metrics have utilization targets; give a quantity", w.Given())
		}
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: w.Percent}
	case t.Type == autoscalingv2.ValueMetricType:
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: w.Quantity}
	default:
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: w.Quantity}
	}
	return v1alpha1.WhatIf{Flag: w.Flag, Metric: output.ShortName(*spec), Value: w.Raw, Was: was}, nil
}
