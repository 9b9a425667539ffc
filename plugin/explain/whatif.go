package explain

import (
	"fmt"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

func parseWhatIfs(sets, assumes []string) ([]cmdutil.WhatIf, error) {
	var out []cmdutil.WhatIf
	for _, s := range sets {
		w, err := cmdutil.ParseWhatIf("set-target", "", s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	for _, s := range assumes {
		w, err := cmdutil.ParseWhatIf("assume", "", s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// applySetTargets returns the HPA the core should see: a copy with the what-if targets, or
// hpa itself when there are none.
func applySetTargets(hpa *autoscalingv2.HorizontalPodAutoscaler, wis []cmdutil.WhatIf) (*autoscalingv2.HorizontalPodAutoscaler, []v1alpha1.WhatIf, error) {
	var records []v1alpha1.WhatIf
	out := hpa
	for _, w := range wis {
		if w.Flag != "set-target" {
			continue
		}
		if out == hpa {
			out = hpa.DeepCopy()
		}
		rec, err := cmdutil.SetTarget(out, w)
		if err != nil {
			return nil, nil, err
		}
		records = append(records, rec)
	}
	return out, records, nil
}

// applyAssumes replaces fetched metric values in in with the --assume values: every
// selected pod reports the value (a percentage is of that pod's request), an Object metric
// has the value, an External metric has the value as its only sample. before is the
// decision on the fetched values, to say what each value was.
func applyAssumes(in *replicas.Input, wis []cmdutil.WhatIf, before []replicas.MetricResult) ([]v1alpha1.WhatIf, error) {
	var records []v1alpha1.WhatIf
	if len(in.Metrics) > 0 {
		// The gathered slice is not ours to change in place.
		in.Metrics = slices.Clone(in.Metrics)
	}
	for _, w := range wis {
		if w.Flag != "assume" {
			continue
		}
		i, err := cmdutil.FindMetric(in.HPA, w.Metric)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Given(), err)
		}
		spec := in.HPA.Spec.Metrics[i]
		if err := cmdutil.RefuseBareResourceNumber(w, spec); err != nil {
			return nil, err
		}
		rec := v1alpha1.WhatIf{Flag: w.Flag, Metric: output.ShortName(spec), Value: w.Raw}
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
			resourceName, container := cmdutil.ResourceOf(spec)
			assumed := sampleset.New(len(in.Pods))
			for _, p := range in.Pods {
				v := int64(0)
				if w.Percent != nil {
					if spec.Type == autoscalingv2.PodsMetricSourceType {
						return nil, fmt.Errorf("--assume %s=%s: a Pods metric has no request to take a percentage of; give a quantity", w.Metric, w.Raw)
					}
					// The request the core divides this pod's usage by, so the percentage comes out exact.
					req, err := replicas.PodRequest(p, container, resourceName, in.Config.PodLevelResources)
					if err != nil || req == 0 {
						return nil, fmt.Errorf("--assume %s=%s: pod %s has no %s request to take a percentage of; give a quantity", w.Metric, w.Raw, p.Name, resourceName)
					}
					v = req * int64(*w.Percent) / 100
				} else {
					v = w.Quantity.MilliValue()
				}
				assumed.Add(p.Name, sampleset.Sample{MilliValue: v, Timestamp: sampleset.Timestamp(in.Now)})
			}
			md.PodSamples = assumed
		case autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
			if w.Percent != nil {
				return nil, fmt.Errorf("--assume %s=%s: %s metrics take a quantity, not a percentage", w.Metric, w.Raw, spec.Type)
			}
			md.Value = w.Quantity.MilliValue()
			md.Values = []int64{w.Quantity.MilliValue()}
		}
		records = append(records, rec)
	}
	return records, nil
}
