package explain

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// decisionExitError says whether an otherwise printable decision must still end with a
// failure code: the target could not be read, or a metrics API it needs is not served.
func (o *Options) decisionExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input, d replicas.Decision, served map[string]bool) *cmdutil.ExitError {
	ref := hpa.Spec.ScaleTargetRef
	if in.ScaleErr != nil {
		return cmdutil.TargetExitError(hpa, in.ScaleErr, o.clients.Discovery)
	}
	for i, m := range d.Metrics {
		if m.Err == nil || i >= len(hpa.Spec.Metrics) {
			continue
		}
		spec := hpa.Spec.Metrics[i]
		if apierrors.IsForbidden(m.Err) {
			return cmdutil.APIExitError(fmt.Sprintf("reading metric %s for %s/%s", output.ShortName(spec), ref.Kind, ref.Name), m.Err)
		}
		if err := o.clients.MetricsErr; err != nil {
			if apierrors.IsForbidden(err) {
				return cmdutil.APIExitError("choosing the metrics source", err)
			}
			return &cmdutil.ExitError{Code: cmdutil.ExitMetricsUnavailable, Err: fmt.Errorf("no metrics source for metric %s: %w", output.ShortName(spec), err)}
		}
		heapster := o.clients.MetricsSelection.Source == metrics.SourceHeapster
		// A registered API whose server is down is left out of discovery too; its reads
		// are source failures, reported below.
		if api := requiredAPI(spec.Type, heapster); api != "" && len(served) > 0 && !served[api] && !metrics.IsSourceFailure(m.Err) {
			return &cmdutil.ExitError{Code: cmdutil.ExitMetricsUnavailable, Err: fmt.Errorf("%s is not served by this cluster, so metric %s cannot be read: %s", api, output.ShortName(spec), metricsAPIHint(api))}
		}
	}
	// A source that answers badly (garbage, stale, 500s, timeouts) leaves the decision with
	// no count: the explanation is printed, but a script must see the failure too.
	if d.Phase == replicas.PhaseMetricsFailed {
		for i, m := range d.Metrics {
			if i < len(hpa.Spec.Metrics) && metrics.IsSourceFailure(m.Err) {
				return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("metric %s of %s/%s cannot be read, so nothing would be scaled: %w", output.ShortName(hpa.Spec.Metrics[i]), ref.Kind, ref.Name, m.Err)}
			}
		}
		// Everything was read and still no count: the HPA itself cannot compute.
		reason, msg := "", ""
		for _, c := range d.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
				reason, msg = c.Reason, c.Message
			}
		}
		if reason == "" && d.Err != nil {
			reason, msg = "FailedComputeMetricsReplicas", d.Err.Error()
		}
		msg += notFoundHint(hpa, d)
		return &cmdutil.ExitError{Code: cmdutil.ExitCannotCompute, Err: fmt.Errorf("horizontalpodautoscaler %s/%s cannot compute a replica count, so nothing would be scaled (ScalingActive=False, %s): %s",
			hpa.Namespace, hpa.Name, reason, msg)}
	}
	return nil
}

// notFoundHint says where to look when the adapter answered that it has no value for a metric
// (the name or selector match none of its series): what it serves, at the version read.
func notFoundHint(hpa *autoscalingv2.HorizontalPodAutoscaler, d replicas.Decision) string {
	for i, m := range d.Metrics {
		if nf, ok := metrics.AsMetricNotFound(m.Err); ok && i < len(hpa.Spec.Metrics) {
			return fmt.Sprintf("; the adapter has no value for metric %s: compare its name and selector with what the adapter serves (kubectl get --raw /apis/%s)", output.ShortName(hpa.Spec.Metrics[i]), nf.GroupVersion)
		}
	}
	return ""
}

func metricsAPIHint(api string) string {
	switch api {
	case "metrics.k8s.io":
		return "install metrics-server or pass --metrics-source=heapster"
	case "custom.metrics.k8s.io":
		return "install a custom metrics adapter (for example prometheus-adapter)"
	case "external.metrics.k8s.io":
		return "install an external metrics adapter (for example KEDA's or prometheus-adapter)"
	}
	return "install the API's adapter"
}

// requiredAPI is the metrics API group a metric type is read from; Heapster serves
// resource and pods metrics itself.
func requiredAPI(t autoscalingv2.MetricSourceType, heapster bool) string {
	if heapster && (cmdutil.IsResourceMetric(t) || t == autoscalingv2.PodsMetricSourceType) {
		return ""
	}
	switch t {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		return "metrics.k8s.io"
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType:
		return "custom.metrics.k8s.io"
	case autoscalingv2.ExternalMetricSourceType:
		return "external.metrics.k8s.io"
	}
	return ""
}
