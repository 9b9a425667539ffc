package simulate

import (
	"math"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// buildSimulation is the versioned object of a run.
func buildSimulation(base *autoscalingv2.HorizontalPodAutoscaler, source, loadFile string, curve load.Curve, w sim.Workload, variants []variant, res *sim.Result, modelFlags map[string]bool) *v1alpha1.Simulation {
	s := v1alpha1.NewSimulation()
	s.Metadata = v1alpha1.Metadata{Name: base.Name, Namespace: base.Namespace, UID: base.UID, Generation: base.Generation, ResourceVersion: base.ResourceVersion}
	s.Source = source
	s.Load = v1alpha1.SimLoad{File: loadFile, Metrics: slices.Clone(curve.Metrics), Interpolation: curve.Interpolation.String(), Points: len(curve.Points)}
	s.DurationSeconds = res.Duration.Seconds()
	for _, p := range res.Model.Params() {
		src := p.Source
		if modelFlags[p.Name] {
			src = "flag --" + modelFlagNames[p.Name]
		}
		s.Model = append(s.Model, v1alpha1.SimParam{Name: p.Name, Value: p.Value, Source: src})
	}
	s.Workload = v1alpha1.SimWorkload{Kind: base.Spec.ScaleTargetRef.Kind, Name: base.Spec.ScaleTargetRef.Name, Replicas: w.Replicas, Requests: podRequests(w.Pod)}
	for i, vr := range res.Variants {
		s.Variants = append(s.Variants, variantOf(variants[i], vr))
	}
	return s
}

// variantOf is one variant's result: its spec's bounds and targets, its summary and its steps.
func variantOf(v variant, vr sim.VariantResult) v1alpha1.SimVariant {
	ov := v1alpha1.SimVariant{Name: vr.Name, Changes: v.changes, MaxReplicas: v.hpa.Spec.MaxReplicas, MinReplicas: 1}
	if v.hpa.Spec.MinReplicas != nil {
		ov.MinReplicas = *v.hpa.Spec.MinReplicas
	}
	for _, m := range v.hpa.Spec.Metrics {
		if t := cmdutil.TargetIn(&m); t != nil {
			ov.Targets = append(ov.Targets, v1alpha1.SimTarget{Metric: output.ShortName(m), Target: output.FormatTarget(*t)})
		}
	}
	sm := vr.Summary
	ov.Summary = v1alpha1.SimSummary{
		PeakReplicas: sm.PeakReplicas, PeakAtSeconds: sm.PeakAt.Seconds(), PodSeconds: sm.PodSeconds,
		SecondsAboveTarget: sm.SecondsAboveTarget, ScaleUps: sm.ScaleUps, ScaleDowns: sm.ScaleDowns,
	}
	for c, n := range sm.HeldBackBy {
		if ov.Summary.HeldBackBy == nil {
			ov.Summary.HeldBackBy = map[string]int{}
		}
		ov.Summary.HeldBackBy[string(c)] = n
	}
	ov.Steps = make([]v1alpha1.SimStep, 0, len(vr.Steps))
	for _, st := range vr.Steps {
		ov.Steps = append(ov.Steps, stepOf(st, vr.Metrics))
	}
	return ov
}

// stepOf is one sync of a variant, with each measured metric's utilization of its target.
func stepOf(st sim.Step, metrics []sim.MetricInfo) v1alpha1.SimStep {
	step := v1alpha1.SimStep{AtSeconds: st.At.Seconds(), Replicas: st.Replicas, Ready: st.Ready, Desired: st.Desired, Scaled: st.Scaled}
	if st.Constraint != replicas.ConstraintNone {
		step.Constraint = string(st.Constraint)
	}
	for j, val := range st.Metrics {
		if j >= len(metrics) || math.IsNaN(val) || metrics[j].Target == 0 { // not measured
			continue
		}
		if step.Utilization == nil {
			step.Utilization = map[string]float64{}
		}
		mi := metrics[j]
		step.Utilization[mi.Name] = roundTo(val/mi.Target*100, 1)
	}
	return step
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// podRequests sums the containers' requests of a pod template, as quantities.
func podRequests(spec corev1.PodSpec) map[string]string {
	sum := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			acc := sum[name]
			acc.Add(q)
			sum[name] = acc
		}
	}
	out := map[string]string{}
	for name, q := range sum {
		out[string(name)] = q.String()
	}
	return out
}
