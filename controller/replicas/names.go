package replicas

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// MetricName is the name upstream gives a metric in conditions and rescale reasons
// ("cpu resource utilization (percentage of request)", "pods metric qps", ...). It is empty
// for a spec upstream cannot compute (unknown type, missing member or target). Object
// average-value metrics are called "external metric ..." as upstream does.
func MetricName(spec autoscalingv2.MetricSpec) string {
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		o := spec.Object
		if o == nil {
			return ""
		}
		switch {
		case o.Target.Type == autoscalingv2.ValueMetricType && o.Target.Value != nil:
			return fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name)
		case o.Target.Type == autoscalingv2.AverageValueMetricType && o.Target.AverageValue != nil:
			return fmt.Sprintf("external metric %s(%+v)", o.Metric.Name, o.Metric.Selector)
		}
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods != nil {
			return "pods metric " + spec.Pods.Metric.Name
		}
	case autoscalingv2.ResourceMetricSourceType:
		if r := spec.Resource; r != nil {
			return resourceMetricName(r.Target, string(r.Name), "resource utilization (percentage of request)")
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		if r := spec.ContainerResource; r != nil {
			return resourceMetricName(r.Target, string(r.Name), "container resource utilization (percentage of request)")
		}
	case autoscalingv2.ExternalMetricSourceType:
		if e := spec.External; e != nil && (e.Target.AverageValue != nil || e.Target.Value != nil) {
			return fmt.Sprintf("external metric %s(%+v)", e.Metric.Name, e.Metric.Selector)
		}
	}
	return ""
}

func resourceMetricName(t autoscalingv2.MetricTarget, res, utilizationSuffix string) string {
	switch {
	case t.AverageValue != nil:
		return res + " resource"
	case t.AverageUtilization != nil:
		return res + " " + utilizationSuffix
	}
	return ""
}
