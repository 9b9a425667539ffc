package simulate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/recording"
	"github.com/kubectl-hpa/kubectl-hpa/controller/sim"
	"github.com/kubectl-hpa/kubectl-hpa/controller/sim/load"
	"github.com/kubectl-hpa/kubectl-hpa/controller/validation"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
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
		rec, err := o.openRecording()
		if err != nil {
			return nil, err
		}
		keys, err := o.recordedKeys(rec)
		if err != nil {
			return nil, err
		}
		if len(keys) != 1 {
			return nil, cmdutil.UsageErrorf("%s holds %d HPAs (%s): name the one to %s", o.Recording, len(keys), strings.Join(keys, ", "), o.Command)
		}
		return o.recordingInput(rec, keys[0])
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

// openRecording opens --from-recording; a file that does not decode is bad input.
func (o *Options) openRecording() (*recording.Recording, error) {
	rec, err := recording.Open(o.Recording)
	if err != nil {
		if _, ok := errors.AsType[*recording.ParseError](err); ok {
			return nil, cmdutil.UsageErrorf("%v", err)
		}
		return nil, cmdutil.UsageErrorf("--from-recording: %v", err)
	}
	if rec.CutLine > 0 {
		fmt.Fprintf(o.ErrOut, "warning: %s:%d: the last line was cut short (run was stopped while writing it), so it is left out\n", rec.Name, rec.CutLine)
	}
	return rec, nil
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
func (o *Options) Compare(ctx context.Context, in *Input, specs []Named) (*output.Simulation, error) {
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
