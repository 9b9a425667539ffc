package plugin

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// whatIf is one parsed --set-target or --assume flag.
type whatIf struct {
	flag   string // "set-target" or "assume"
	metric string // short name or spec index
	raw    string
	// Exactly one of percent and quantity is set.
	percent  *int32
	quantity *resource.Quantity
}

func parseWhatIfs(sets, assumes []string) ([]whatIf, error) {
	var out []whatIf
	for _, s := range sets {
		w, err := parseWhatIf("set-target", s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	for _, s := range assumes {
		w, err := parseWhatIf("assume", s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// parseWhatIf parses METRIC=VALUE given to --flag (flag may carry more words, such as
// simulate's "variant NAME"). A target (any flag but assume) of 0% is refused.
func parseWhatIf(flag, s string) (whatIf, error) {
	metric, value, ok := strings.Cut(s, "=")
	if !ok || metric == "" || value == "" {
		return whatIf{}, fmt.Errorf("--%s %q: want METRIC=VALUE, e.g. cpu=60%% or requests_per_second=100", flag, s)
	}
	w := whatIf{flag: flag, metric: metric, raw: value}
	if p, isPct := strings.CutSuffix(value, "%"); isPct {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 || (flag != "assume" && n == 0) {
			return whatIf{}, fmt.Errorf("--%s %q: %q is not a valid percentage", flag, s, value)
		}
		w.percent = ptrTo(int32(n))
	} else {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return whatIf{}, fmt.Errorf("--%s %q: %q is neither a percentage nor a quantity: %w", flag, s, value, err)
		}
		if q.Sign() < 0 {
			return whatIf{}, fmt.Errorf("--%s %q: the value must not be negative", flag, s)
		}
		w.quantity = &q
	}
	return w, nil
}

func ptrTo[T any](v T) *T { return &v }

// findMetric resolves a metric named by spec index, short name, or bare resource name.
func findMetric(hpa *autoscalingv2.HorizontalPodAutoscaler, id string) (int, error) {
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
		return 0, &noSuchMetricError{id: id, has: strings.Join(names, ", ")}
	case 1:
		return idx[0], nil
	}
	return 0, fmt.Errorf("metric %q is ambiguous (%s): name it by index (%s)", id, strings.Join(matches, ", "), strings.Join(names, ", "))
}

// noSuchMetricError is findMetric's error for a name that no metric of the HPA has (as
// opposed to an index out of range or a name two metrics share): a variant key that names
// no metric is then an unknown key.
type noSuchMetricError struct{ id, has string }

func (e *noSuchMetricError) Error() string {
	return fmt.Sprintf("metric %q is not in spec.metrics of this HPA (it has: %s)", e.id, e.has)
}

// targetOf points at the target inside spec.
func targetOf(spec *autoscalingv2.MetricSpec) *autoscalingv2.MetricTarget {
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

// refuseBareResourceNumber refuses a unitless value for a resource metric: cpu=90 would
// mean 90 whole cores (and memory=300, 300 bytes), almost never what was meant.
func refuseBareResourceNumber(w whatIf, spec autoscalingv2.MetricSpec) error {
	if w.quantity == nil || !isResourceMetric(spec.Type) || strings.TrimLeft(w.raw, "0123456789.") != "" {
		return nil
	}
	name, _ := resourceOf(spec)
	example, unit := "300Mi", "bytes"
	if name == corev1.ResourceCPU {
		example, unit = "900m", "cores"
	}
	return fmt.Errorf("--%s %s=%s: a number without a unit would mean %s %s: give a utilization such as %s%% or a quantity with its unit such as %s",
		w.flag, w.metric, w.raw, w.raw, unit, w.raw, example)
}

func isResourceMetric(t autoscalingv2.MetricSourceType) bool {
	return t == autoscalingv2.ResourceMetricSourceType || t == autoscalingv2.ContainerResourceMetricSourceType
}

// applySetTargets returns the HPA the core should see: a copy with the what-if targets, or
// hpa itself when there are none.
func applySetTargets(hpa *autoscalingv2.HorizontalPodAutoscaler, wis []whatIf) (*autoscalingv2.HorizontalPodAutoscaler, []output.WhatIf, error) {
	var records []output.WhatIf
	out := hpa
	for _, w := range wis {
		if w.flag != "set-target" {
			continue
		}
		if out == hpa {
			out = hpa.DeepCopy()
		}
		rec, err := setTarget(out, w)
		if err != nil {
			return nil, nil, err
		}
		records = append(records, rec)
	}
	return out, records, nil
}

// setTarget changes, in hpa, the target of the metric w names to w's value.
func setTarget(hpa *autoscalingv2.HorizontalPodAutoscaler, w whatIf) (output.WhatIf, error) {
	i, err := findMetric(hpa, w.metric)
	if err != nil {
		return output.WhatIf{}, fmt.Errorf("--%s: %w", w.flag, err)
	}
	spec := &hpa.Spec.Metrics[i]
	t := targetOf(spec)
	if t == nil {
		return output.WhatIf{}, fmt.Errorf("--%s: metric %d has no target to change", w.flag, i)
	}
	was := output.FormatTarget(*t)
	if err := refuseBareResourceNumber(w, *spec); err != nil {
		return output.WhatIf{}, err
	}
	switch {
	case w.percent != nil:
		if !isResourceMetric(spec.Type) {
			return output.WhatIf{}, fmt.Errorf("--%s %s=%s: only Resource and ContainerResource metrics have utilization targets; give a quantity", w.flag, w.metric, w.raw)
		}
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: w.percent}
	case t.Type == autoscalingv2.ValueMetricType:
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: w.quantity}
	default:
		*t = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: w.quantity}
	}
	return output.WhatIf{Flag: w.flag, Metric: output.ShortName(*spec), Value: w.raw, Was: was}, nil
}

// applyAssumes replaces fetched metric values in in with the --assume values: every
// selected pod reports the value (a percentage is of that pod's request), an Object metric
// has the value, an External metric has the value as its only sample. before is the
// decision on the fetched values, to say what each value was.
func applyAssumes(in *replicas.Input, wis []whatIf, before []replicas.MetricResult) ([]output.WhatIf, error) {
	var records []output.WhatIf
	if len(in.Metrics) > 0 {
		// The gathered slice is not ours to change in place.
		in.Metrics = slices.Clone(in.Metrics)
	}
	for _, w := range wis {
		if w.flag != "assume" {
			continue
		}
		i, err := findMetric(in.HPA, w.metric)
		if err != nil {
			return nil, fmt.Errorf("--assume: %w", err)
		}
		spec := in.HPA.Spec.Metrics[i]
		if err := refuseBareResourceNumber(w, spec); err != nil {
			return nil, err
		}
		rec := output.WhatIf{Flag: w.flag, Metric: output.ShortName(spec), Value: w.raw}
		if i >= len(in.Metrics) {
			rec.Was = "not used: this decision does not consult metrics"
			records = append(records, rec)
			continue
		}
		md := &in.Metrics[i]
		switch {
		case md.Err != nil:
			rec.Was = "unavailable: " + md.Err.Error()
		case i < len(before):
			rec.Was = output.FormatCurrent(spec, before[i])
		}
		md.Err = nil
		md.Timestamp = in.Now
		switch spec.Type {
		case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType, autoscalingv2.PodsMetricSourceType:
			resourceName, container := resourceOf(spec)
			assumed := sampleset.New(len(in.Pods))
			for _, p := range in.Pods {
				v := int64(0)
				if w.percent != nil {
					if spec.Type == autoscalingv2.PodsMetricSourceType {
						return nil, fmt.Errorf("--assume %s=%s: a Pods metric has no request to take a percentage of; give a quantity", w.metric, w.raw)
					}
					// The request the core divides this pod's usage by, so the percentage comes out exact.
					req, err := replicas.PodRequest(p, container, resourceName, in.Config.PodLevelResources)
					if err != nil || req == 0 {
						return nil, fmt.Errorf("--assume %s=%s: pod %s has no %s request to take a percentage of; give a quantity", w.metric, w.raw, p.Name, resourceName)
					}
					v = req * int64(*w.percent) / 100
				} else {
					v = w.quantity.MilliValue()
				}
				assumed.Add(p.Name, sampleset.Sample{MilliValue: v, Timestamp: sampleset.Timestamp(in.Now)})
			}
			md.PodSamples = assumed
		case autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
			if w.percent != nil {
				return nil, fmt.Errorf("--assume %s=%s: %s metrics take a quantity, not a percentage", w.metric, w.raw, spec.Type)
			}
			md.Value = w.quantity.MilliValue()
			md.Values = []int64{w.quantity.MilliValue()}
		}
		records = append(records, rec)
	}
	return records, nil
}

func resourceOf(spec autoscalingv2.MetricSpec) (corev1.ResourceName, string) {
	switch {
	case spec.Resource != nil:
		return spec.Resource.Name, ""
	case spec.ContainerResource != nil:
		return spec.ContainerResource.Name, spec.ContainerResource.Container
	}
	return "", ""
}
