package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-hpa/kubectl-hpa/controller/recording"
	"github.com/kubectl-hpa/kubectl-hpa/controller/rerun"
	"github.com/kubectl-hpa/kubectl-hpa/controller/sim"
	"github.com/kubectl-hpa/kubectl-hpa/controller/validation"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// completeRecording checks --from-recording's arguments: the recording gives the
// HPA, its workload and the demand, so nothing else may.
func (o *Options) completeRecording(cmd *cobra.Command, args []string) error {
	switch {
	case o.File != "":
		return cmdutil.UsageErrorf("--from-recording and -f both give the HPA: give one")
	case o.LoadFile != "":
		return cmdutil.UsageErrorf("--from-recording and --load both give the demand: give one")
	case o.WorkloadFile != "" || o.Replicas != 0 || o.Requests != "":
		return cmdutil.UsageErrorf("--workload, --replicas and --requests apply with -f: a recording gives the workload")
	case len(args) > 1:
		return cmdutil.UsageErrorf("unexpected argument %q: kubectl hpa %s takes one HPA NAME", args[1], o.Command)
	}
	if len(args) == 1 {
		if err := cmdutil.OneHPAName(cmd, args); err != nil {
			return err
		}
		o.Name = cmdutil.HPANameOf(args[0])
	}
	return nil
}

func (o *Options) simulatesVariants() bool {
	return len(o.Variants) > 0 || len(o.VariantFiles) > 0
}

// runFromRecording replays a recording exactly, or plays its demand for variants.
func (o *Options) runFromRecording(ctx context.Context) error {
	rec, err := o.openRecording()
	if err != nil {
		return err
	}
	keys, err := o.recordedKeys(rec)
	if err != nil {
		return err
	}
	if o.simulatesVariants() {
		if len(keys) != 1 {
			return cmdutil.UsageErrorf("%s holds %d HPAs (%s): name the one to simulate", o.Recording, len(keys), strings.Join(keys, ", "))
		}
		return o.simulateRecording(ctx, rec, keys[0])
	}
	rep, err := rerun.Run(ctx, rec, rerun.Options{Keys: keys})
	if err != nil {
		return err
	}
	return o.printReplay(rec, keys, rep)
}

// recordedKeys are the HPAs of the recording the NAME argument (and -n) choose: every one
// without a NAME.
func (o *Options) recordedKeys(rec *recording.Recording) ([]string, error) {
	var all []string
	for _, s := range rec.Syncs {
		if !slices.Contains(all, s.Key) {
			all = append(all, s.Key)
		}
	}
	slices.Sort(all)
	if len(all) == 0 {
		return nil, cmdutil.UsageErrorf("%s holds no sync: run recorded no decision", o.Recording)
	}
	if o.Name == "" {
		return all, nil
	}
	var keys []string
	for _, k := range all {
		ns, name, _ := strings.Cut(k, "/")
		if name == o.Name && (!o.ExplicitNamespace || ns == o.Namespace) {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return nil, cmdutil.UsageErrorf("%s holds no sync of HPA %s (it holds %s)", o.Recording, o.Name, strings.Join(all, ", "))
	case 1:
		return keys, nil
	}
	return nil, cmdutil.UsageErrorf("%s holds HPAs named %s in %d namespaces (%s): give -n NAMESPACE", o.Recording, o.Name, len(keys), strings.Join(keys, ", "))
}

// printReplay prints every replayed decision as run printed it (its line, or with -o json its
// Explanation), then whether every one is run's; a replay that differs exits 1 after listing
// each difference.
func (o *Options) printReplay(rec *recording.Recording, keys []string, rep *rerun.Report) error {
	asJSON := o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat == "json"
	for _, s := range rep.Syncs {
		r := output.Sync{Key: s.Key, Input: s.Input, Decision: s.Decision, DryRunReason: s.DryRunReason, Err: s.Outcome.Err}
		if !asJSON {
			fmt.Fprintln(o.Out, r.Line())
			continue
		}
		data, err := json.Marshal(r.Explanation(rec.Header.MetricsSource))
		if err != nil {
			return err
		}
		fmt.Fprintln(o.Out, string(data))
	}
	// With -o json, stdout stays one Explanation per line: the verdict goes to stderr.
	verdict := o.Out
	if asJSON {
		verdict = o.ErrOut
	}
	what := fmt.Sprintf("%d syncs of %s from %s", len(rep.Syncs), strings.Join(keys, ", "), o.Recording)
	if rep.Equal() {
		fmt.Fprintf(verdict, "replayed %s: every decision, outcome and history kept is run's\n", what)
		return nil
	}
	for _, d := range rep.Divergences {
		fmt.Fprintln(o.ErrOut, d)
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("replayed %s: %d fields differ from what run recorded (listed above)", what, len(rep.Divergences))}
}

// simulateRecording plays the recording's demand for one HPA through the model, for the HPA
// as recorded and each variant.
func (o *Options) simulateRecording(ctx context.Context, rec *recording.Recording, key string) error {
	in, err := o.recordingInput(rec, key)
	if err != nil {
		return err
	}
	variants, err := o.variants(in.HPA, validation.Options{ScaleToZero: in.Model.Controller.ScaleToZero})
	if err != nil {
		return err
	}
	spec := sim.Spec{Model: in.Model, Load: in.Load, Workload: in.Workload, Duration: o.Duration}
	res, err := simulate(ctx, spec, variants, o.Recording)
	if err != nil {
		return err
	}
	return o.present(buildSimulation(in.HPA, in.Source, in.LoadName, in.Load, in.Workload, variants, res, o.modelFlags))
}

// recordingInput is the recording's demand for one HPA, the HPA as recorded and its workload.
// The recorded controller configuration and sync period stand unless a flag sets them.
func (o *Options) recordingInput(rec *recording.Recording, key string) (*Input, error) {
	spec, err := rerun.SimSpec(rec, key)
	if err != nil {
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	m, recorded := o.Model, spec.Model
	if !o.modelFlags["sync period"] {
		m.SyncPeriod = recorded.SyncPeriod
	}
	c := recorded.Controller
	set := o.Model.Controller
	if o.modelFlags["tolerance"] {
		c.Tolerance = set.Tolerance
	}
	if o.modelFlags["downscale stabilization"] {
		c.DownscaleStabilizationWindow = set.DownscaleStabilizationWindow
	}
	if o.modelFlags["cpu initialization period"] {
		c.CPUInitializationPeriod = set.CPUInitializationPeriod
	}
	if o.modelFlags["initial readiness delay"] {
		c.InitialReadinessDelay = set.InitialReadinessDelay
	}
	m.Controller = c
	return &Input{HPA: spec.Variants[0].HPA, Workload: spec.Workload, Load: spec.Load, LoadName: o.Recording, Source: "recording " + o.Recording, Model: m}, nil
}
