package simulate

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/rerun"
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

// runFromRecording reruns a recording exactly, or plays its demand for variants. A rerun of
// every HPA reads the file as it reruns it; one HPA's syncs, which a NAME or the variants
// need, are read first.
func (o *Options) runFromRecording(ctx context.Context) error {
	if o.Name == "" && !o.simulatesVariants() {
		r, err := o.openRecording()
		if err != nil {
			return err
		}
		defer r.Close()
		if err := o.rerun(ctx, r.Name, r.Header, r.All(), nil); err != nil {
			return err
		}
		o.warnCut(r.Name, r.CutLine)
		return nil
	}
	rec, key, err := o.loadRecorded()
	if err != nil {
		return err
	}
	if o.simulatesVariants() {
		return o.simulateRecording(ctx, rec, key)
	}
	return o.rerun(ctx, rec.Name, rec.Header, rec.All(), []string{key})
}

// openRecording opens --from-recording; a file that does not decode is bad input.
func (o *Options) openRecording() (*recording.Reader, error) {
	r, err := recording.Open(o.Recording)
	if err != nil {
		return nil, recordingError(err)
	}
	return r, nil
}

// recordingError is a recording that cannot be read, as bad input.
func recordingError(err error) error {
	if _, ok := errors.AsType[*recording.ParseError](err); ok {
		return cmdutil.UsageErrorf("%v", err)
	}
	return cmdutil.UsageErrorf("--from-recording: %v", err)
}

func (o *Options) warnCut(name string, line int) {
	if line > 0 {
		fmt.Fprintf(o.ErrOut, "warning: %s:%d: the last line was cut short (run was stopped while writing it), so it is left out\n", name, line)
	}
}

// loadRecorded reads the syncs of the one HPA of the recording the NAME argument (and -n)
// choose, or of its only HPA without a NAME.
func (o *Options) loadRecorded() (*recording.Recording, string, error) {
	first := ""
	rec, err := recording.Load(o.Recording, func(key string) bool {
		if o.Name == "" {
			if first == "" {
				first = key
			}
			return key == first
		}
		return o.names(key)
	})
	if err != nil {
		return nil, "", recordingError(err)
	}
	o.warnCut(rec.Name, rec.CutLine)
	all := slices.Sorted(slices.Values(rec.Keys))
	if len(all) == 0 {
		return nil, "", cmdutil.UsageErrorf("%s holds no sync: run recorded no decision", o.Recording)
	}
	if o.Name == "" {
		if len(all) > 1 {
			return nil, "", cmdutil.UsageErrorf("%s holds %d HPAs (%s): name the one to %s", o.Recording, len(all), cmdutil.SomeNames(all, cmdutil.MaxNamedHPAs), o.Command)
		}
		return rec, all[0], nil
	}
	var keys []string
	for _, k := range all {
		if o.names(k) {
			keys = append(keys, k)
		}
	}
	switch len(keys) {
	case 0:
		return nil, "", cmdutil.UsageErrorf("%s holds no sync of HPA %s (it holds %s)", o.Recording, o.Name, cmdutil.SomeNames(all, cmdutil.MaxNamedHPAs))
	case 1:
		return rec, keys[0], nil
	}
	return nil, "", cmdutil.UsageErrorf("%s holds HPAs named %s in %d namespaces (%s): give -n NAMESPACE", o.Recording, o.Name, len(keys), cmdutil.SomeNames(keys, cmdutil.MaxNamedHPAs))
}

// names reports whether the NAME argument (and -n) name the HPA key.
func (o *Options) names(key string) bool {
	ns, name, _ := strings.Cut(key, "/")
	return name == o.Name && (!o.ExplicitNamespace || ns == o.Namespace)
}

// rerun re-decides syncs (of the HPAs keys, every one when empty), printing each decision as
// run printed it (its line, or with -o json its Explanation) as it is re-decided, then whether
// every one is run's; a rerun that differs exits 1 after listing each difference.
func (o *Options) rerun(ctx context.Context, name string, h recording.Header, syncs iter.Seq2[*recording.Sync, error], keys []string) error {
	asJSON := o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat == "json"
	out := bufio.NewWriter(o.Out)
	rep, err := rerun.Run(ctx, name, h, syncs, rerun.Options{Keys: keys, Each: func(s rerun.Sync) error {
		r := output.Sync{Key: s.Key, Input: s.Input, Decision: s.Decision, DryRunReason: s.DryRunReason, Err: s.Outcome.Err}
		if !asJSON {
			_, err := fmt.Fprintln(out, r.Line())
			return err
		}
		data, err := json.Marshal(r.Explanation(h.MetricsSource))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(data))
		return err
	}})
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if _, ok := errors.AsType[*recording.ParseError](err); ok {
		return recordingError(err)
	}
	if err != nil {
		return err
	}
	if rep.Syncs == 0 {
		return cmdutil.UsageErrorf("%s holds no sync: run recorded no decision", o.Recording)
	}
	// With -o json, stdout stays one Explanation per line: the verdict goes to stderr.
	verdict := o.Out
	if asJSON {
		verdict = o.ErrOut
	}
	what := fmt.Sprintf("%d syncs of %s from %s", rep.Syncs, hpas(rep.Keys), o.Recording)
	if rep.Equal() {
		fmt.Fprintf(verdict, "replayed %s: every decision, outcome and history kept is run's\n", what)
		return nil
	}
	for _, d := range rep.Divergences {
		fmt.Fprintln(o.ErrOut, d)
	}
	listed := "listed above"
	if len(rep.Divergences) < rep.Differing {
		listed = fmt.Sprintf("the first %d listed above", len(rep.Divergences))
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("replayed %s: %d fields differ from what run recorded (%s)", what, rep.Differing, listed)}
}

// hpas names a few HPAs, and counts more.
func hpas(keys []string) string {
	if len(keys) > 3 {
		return fmt.Sprintf("%d HPAs", len(keys))
	}
	return strings.Join(keys, ", ")
}

// simulateRecording plays the recording's demand for one HPA through the model, for the HPA
// as recorded and each variant.
func (o *Options) simulateRecording(ctx context.Context, rec *recording.Recording, key string) error {
	in, err := o.recordingInput(rec, key)
	if err != nil {
		return err
	}
	return o.play(ctx, in)
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
