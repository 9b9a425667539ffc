package simulate

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// Input is what is played: the HPA, its workload, the load and the model, read from the
// flags AddInputFlags adds (simulate's, which tune shares).
type Input struct {
	HPA      *autoscalingv2.HorizontalPodAutoscaler
	Workload sim.Workload
	Load     load.Curve
	// LoadName names the load (its file, the recording, or the Prometheus and period);
	// Source where the HPA and workload came from ("cluster", "file F", "recording F").
	LoadName, Source string
	// FromPrometheus says the load is Prometheus' past, read every PromStep.
	FromPrometheus bool
	PromStep       time.Duration
	Model          sim.Model
	// Kube is the client the HPA was read through, nil when it came from a file or a
	// recording: tune --apply patches through it.
	Kube kubernetes.Interface
}

// ReadInput reads the HPA, its workload and the load, from files, the cluster, Prometheus
// or a recording, as simulate does for its variants.
func (o *Options) ReadInput(ctx context.Context) (*Input, error) {
	if o.Recording != "" {
		rec, key, err := o.loadRecorded()
		if err != nil {
			return nil, err
		}
		return o.recordingInput(rec, key)
	}
	curve, err := o.readLoad()
	if err != nil {
		return nil, err
	}
	in, err := o.readHPAAndWorkload(ctx, validation.Options{ScaleToZero: o.Model.Controller.ScaleToZero})
	if err != nil {
		return nil, err
	}
	in.Load, in.LoadName, in.Model = curve, o.LoadFile, o.Model
	if o.prom != nil {
		if in.Load, in.LoadName, err = o.prometheusLoad(ctx, in.HPA); err != nil {
			return nil, err
		}
		in.FromPrometheus, in.PromStep = true, promStep(o.Since)
	}
	return in, nil
}

// Named is one spec to compare: its name, what it changes (as --variant gives them) and the HPA.
type Named struct {
	Name    string
	Changes []string
	HPA     *autoscalingv2.HorizontalPodAutoscaler
}

// Compare plays in's load for each spec, as simulate plays variants, and returns the
// simulation simulate would print (its summary table and chart); the time above target is
// measured against in.HPA's targets for every spec, as tune scores them.
func (o *Options) Compare(ctx context.Context, in *Input, specs []Named) (*v1alpha1.Simulation, error) {
	vs := make([]variant, len(specs))
	spec := sim.Spec{Model: in.Model, Load: in.Load, Workload: in.Workload, Duration: o.Duration}
	for i, s := range specs {
		vs[i] = variant{name: s.Name, changes: s.Changes, hpa: s.HPA}
		spec.Variants = append(spec.Variants, sim.Variant{Name: s.Name, HPA: s.HPA, RiskAgainst: in.HPA})
	}
	res, err := sim.Run(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, cmdutil.UsageErrorf("%s: %v", in.LoadName, err)
	}
	return buildSimulation(in.HPA, in.Source, in.LoadName, in.Load, in.Workload, vs, res, o.modelFlags), nil
}
