package output

import (
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// ShortName is the name people use for a metric spec; --set-target and --assume accept it.
func ShortName(spec autoscalingv2.MetricSpec) string {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource != nil {
			return string(spec.Resource.Name)
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource != nil {
			return string(spec.ContainerResource.Name) + "/" + spec.ContainerResource.Container
		}
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods != nil {
			return spec.Pods.Metric.Name
		}
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object != nil {
			return spec.Object.Metric.Name
		}
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External != nil {
			return spec.External.Metric.Name
		}
	}
	return strings.ToLower(string(spec.Type))
}

// TargetOf returns the metric target of spec (zero value for an unknown type).
func TargetOf(spec autoscalingv2.MetricSpec) autoscalingv2.MetricTarget {
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		return spec.Resource.Target
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		return spec.ContainerResource.Target
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		return spec.Pods.Target
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		return spec.Object.Target
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		return spec.External.Target
	}
	return autoscalingv2.MetricTarget{}
}

// FormatTarget prints a target the way kubectl describe does.
func FormatTarget(t autoscalingv2.MetricTarget) string {
	switch {
	case t.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *t.AverageUtilization)
	case t.AverageValue != nil:
		return t.AverageValue.String() + " (avg)"
	case t.Value != nil:
		return t.Value.String()
	}
	return "<none>"
}

// formatCurrent prints the current value in the unit of the target.
func formatCurrent(t autoscalingv2.MetricTarget, c autoscalingv2.MetricValueStatus) string {
	switch {
	case t.AverageUtilization != nil && c.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *c.AverageUtilization)
	case t.AverageValue != nil && c.AverageValue != nil:
		return c.AverageValue.String() + " (avg)"
	case t.Value != nil && c.Value != nil:
		return c.Value.String()
	case c.AverageUtilization != nil:
		return fmt.Sprintf("%d%%", *c.AverageUtilization)
	case c.AverageValue != nil:
		return c.AverageValue.String() + " (avg)"
	case c.Value != nil:
		return c.Value.String()
	}
	return "<unknown>"
}

// FormatCurrent prints a metric result's current value in the unit of its target
// ("142%", "250m (avg)"), or "<unknown>" when it failed.
func FormatCurrent(spec autoscalingv2.MetricSpec, r replicas.MetricResult) string {
	if r.Err != nil {
		return "<unknown>"
	}
	if c, ok := r.Current(); ok {
		return formatCurrent(TargetOf(spec), c)
	}
	return "<unknown>"
}

// Quantity formats milli-units as a quantity for people ("250m", "128Mi").
func Quantity(milli int64, binary bool) string {
	q := resource.NewMilliQuantity(milli, resource.DecimalSI)
	if binary && milli%1000 == 0 {
		q = resource.NewQuantity(milli/1000, resource.BinarySI)
	}
	return q.String()
}
