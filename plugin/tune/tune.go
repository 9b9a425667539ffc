// Package tune is "kubectl hpa tune": a search of an HPA's spec space on a load, through the
// simulator, and one recommendation with its evidence, its sensitivity and its patch.
package tune

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/plot"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/simulate"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune/search"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

const long = `Search the HPA's spec space on a load, through the simulator, and recommend one spec.

The load is simulate's: a load file (--load), a run --record recording (--from-recording) or
the HPA's metric history in Prometheus (--from-prometheus --since 7d); the HPA and its
workload from the cluster (written only with --apply) or from files (-f). Every candidate is
played on the same load, workload and cluster model, through the exact controller, and scored
on cost (pod-hours), risk (time the demand per Ready pod was above target, and the longest
such stretch) and churn (rescales per hour).

The space: each metric's target (half to one and a half times its value), min and max, and
for scale-up and scale-down the tolerance, the stabilization window, the policies and
selectPolicy. The search plays a coarse grid over the fields that move the figures most,
then moves the best candidates one field one step at a time until --candidates are played.
--keep holds fields at their value.

Printed: the Pareto front (no spec beats one on cost, risk and churn at once) with the
current spec placed in it; the recommendation for --objective within the constraints,
validated as kube-apiserver v1.37 would, as a YAML merge patch and the kubectl patch command;
its figures on the load scaled by 1.5 and 2 and with pods twice as slow to become Ready; what
the load cannot say (its period, peak, gaps and, from Prometheus, restarted containers); and
simulate's comparison of the current and recommended specs, the model's assumptions first.
-o json|yaml prints the same figures as a Tuning (hpa.kubectl-hpa.io/v1alpha1).

Nothing is written unless --apply: then, once printed, the HPA read from the cluster is
patched (field manager kubectl-hpa): a server dry run, then the patch, both at the
resourceVersion read, so that the API server refuses them if anyone changed the HPA since; a
change of its status only (the HPA controller's) is patched over at the new resourceVersion.
Nothing is written when no spec meets the constraints, when the load cannot support the
recommendation, or when it is the HPA as it is.

Exit codes as for simulate: 0 done (also when no candidate meets the constraints: the closest
is shown, and said to be), 2 bad flags, arguments or input files, and --apply refused because
no spec meets the constraints or the load cannot support the recommendation, 1 --apply
refused because the HPA's spec changed since it was read, 7 --apply forbidden (it needs patch
on horizontalpodautoscalers), 3 to 9 as for explain.`

const example = `  # The cheapest spec for the HPA web that keeps the demand above target at most 1% of the time
  kubectl hpa tune web -n shop --load load.csv --objective cost --max-above-target 1%

  # From the last week in Prometheus, holding min and max, at most 6 rescales an hour
  kubectl hpa tune web -n shop --from-prometheus --prometheus-url http://127.0.0.1:9090 --since 7d \
    --keep min,max --max-rescales-per-hour 6

  # No cluster: the HPA and its pods' requests from files
  kubectl hpa tune -f hpa.yaml --requests cpu=200m --load load.csv

  # Write the recommendation to the HPA (a server dry run first), refused if it changed since read
  kubectl hpa tune web -n shop --load load.csv --max-above-target 1% --apply`

// Options are the inputs of "kubectl hpa tune".
type Options struct {
	genericiooptions.IOStreams
	PrintFlags *genericclioptions.PrintFlags
	// Input reads what is played, as simulate does (its flags, files, cluster and Prometheus).
	Input *simulate.Options

	Objective          string
	MaxAboveTarget     string
	MaxRescalesPerHour float64
	Keep               []string
	Candidates         int
	Plot               string
	Width              int
	// Apply patches the HPA read from the cluster with the recommendation once it is printed.
	Apply bool

	objective   search.Objective
	constraints search.Constraints
	// workers play candidates side by side (0: GOMAXPROCS); tests set 1 for a stable order.
	workers int
	// termWidth sizes the chart; tests replace it.
	termWidth func(io.Writer) int
	// printer prints the Tuning with -o; nil prints the text report.
	printer printers.ResourcePrinter
}

// NewOptions returns tune's options with simulate's inputs and model defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	in := simulate.NewOptions(configFlags, streams)
	in.Command = "tune"
	printFlags := genericclioptions.NewPrintFlags("")
	printFlags.NamePrintFlags = nil
	return &Options{
		IOStreams: streams, Input: in, PrintFlags: printFlags,
		Objective: string(search.Balanced), MaxAboveTarget: "1%", MaxRescalesPerHour: -1,
		Candidates: search.DefaultBudget, termWidth: terminalWidth,
	}
}

// NewCmdTune builds "kubectl hpa tune".
func NewCmdTune(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "tune NAME [-n NAMESPACE] --load FILE | tune -f HPA.yaml --load FILE",
		DisableFlagsInUseLine: true,
		Short:                 "Search the HPA's spec space on a load through the simulator and recommend a spec",
		Long:                  long,
		Example:               example,
		Args:                  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	// A Tuning has no managedFields: the flag PrintFlags adds changes nothing here.
	_ = cmd.Flags().MarkHidden("show-managed-fields")
	o.Input.AddInputFlags(cmd)
	fs := cmd.Flags()
	fs.Lookup("filename").Usage = "Tune the HorizontalPodAutoscaler in this file (YAML or JSON) instead of one read from the cluster"
	fs.Lookup("from-recording").Usage = "A kubectl hpa run --record file: its demand is the load, its HPA and workload the ones tuned"
	fs.StringVar(&o.Objective, "objective", o.Objective, "What the recommendation minimizes within the constraints: cost (pod-hours), risk (time above target) or balanced (the three figures, each relative to the current spec's)")
	fs.StringVar(&o.MaxAboveTarget, "max-above-target", o.MaxAboveTarget, "Constraint: the largest share of the period the demand may be above target, as a percentage (1%) or a fraction (0.01); none for no limit")
	fs.Float64Var(&o.MaxRescalesPerHour, "max-rescales-per-hour", o.MaxRescalesPerHour, "Constraint: the most rescales (up and down) an hour; negative for no limit")
	fs.StringSliceVar(&o.Keep, "keep", nil, "Fields held at their value: min, max, targets, a metric's name, tolerance, scaleUp, scaleDown, or a field as --variant names it (scaleDown.stabilizationWindowSeconds)")
	fs.IntVar(&o.Candidates, "candidates", o.Candidates, "How many specs to play at most, the current one among them")
	fs.StringVar(&o.Plot, "plot", "", "Also draw the current and recommended specs into FILE.svg or FILE.png")
	fs.IntVar(&o.Width, "width", 0, "Width of the text chart in columns (default: the terminal's, else 80)")
	fs.BoolVar(&o.Apply, "apply", false, "Once printed, patch the HPA read from the cluster with the recommendation: a server dry run, then the patch, both refused by the API server if the HPA's spec changed since it was read; nothing is written when no spec meets the constraints or the load cannot support the recommendation")
	_ = cmd.MarkFlagFilename("plot", "svg", "png")
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete checks the arguments and the input flags as simulate does, and parses tune's own.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	if err := o.Input.CompleteInput(cmd, args); err != nil {
		return err
	}
	switch {
	case o.Apply && o.Input.File != "":
		return cmdutil.UsageErrorf("--apply patches the HPA read from the cluster: give an HPA NAME, not -f (or apply the printed patch yourself)")
	case o.Apply && o.Input.Recording != "":
		return cmdutil.UsageErrorf("--apply patches the HPA read from the cluster: --from-recording tunes the HPA as recorded, which may have changed since (give an HPA NAME and --load or --from-prometheus)")
	}
	obj, err := search.ParseObjective(o.Objective)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	o.objective = obj
	o.constraints = search.Constraints{MaxAboveFraction: -1, MaxRescalesPerHour: o.MaxRescalesPerHour}
	if o.MaxAboveTarget != "none" {
		f, err := parseShare(o.MaxAboveTarget)
		if err != nil {
			return cmdutil.UsageErrorf("--max-above-target %v", err)
		}
		o.constraints.MaxAboveFraction = f
	}
	if f := o.PrintFlags.OutputFormat; f != nil && *f != "" {
		p, err := cmdutil.Printer(o.PrintFlags)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		o.printer = p
	}
	return nil
}

// Validate checks the flags that need no input read.
func (o *Options) Validate() error {
	if o.Candidates < 2 {
		return cmdutil.UsageErrorf("--candidates must be at least 2 (the current spec and one more), got %d", o.Candidates)
	}
	if o.Width < 0 {
		return cmdutil.UsageErrorf("--width must not be negative, got %d", o.Width)
	}
	if o.Plot != "" {
		if err := plot.CheckPath(o.Plot); err != nil {
			return cmdutil.UsageErrorf("--plot %v", err)
		}
	}
	return nil
}

// parseShare reads 1% or 0.01.
func parseShare(s string) (float64, error) {
	pct, isPct := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(pct, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q: want a percentage (1%%), a fraction (0.01) or none", s)
	}
	if isPct {
		f /= 100
	}
	if f > 1 {
		return 0, fmt.Errorf("%q is more than the whole period", s)
	}
	return f, nil
}

// searchGCPercent is the GOGC the search and what follows it run at, unless the user set
// one. The simulator allocates about 1.4 KB a sync over a live heap of a few MB, so at Go's
// default (100) the collector runs about 500 times in a search of a day and takes a fifth to
// a quarter of its CPU; see docs/tune.md's Speed for the figures.
const searchGCPercent = 400

// collectLessOften sets searchGCPercent unless the user set GOGC, and returns what restores
// the setting before.
func collectLessOften() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	before := debug.SetGCPercent(searchGCPercent)
	return func() { debug.SetGCPercent(before) }
}

// Run reads the inputs, searches, checks the recommendation, and only then prints.
func (o *Options) Run(ctx context.Context) error {
	in, err := o.Input.ReadInput(ctx)
	if err != nil {
		return err
	}
	// The HPA as read: --apply's patch must not land on a spec other than the one tuned.
	read := in.HPA.DeepCopy()
	resets, resetsRead, err := o.Input.CPUCounterResets(ctx, in.HPA)
	if err != nil {
		return err
	}
	space, err := search.NewSpace(in.HPA, in.Model.Controller, o.Keep)
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	spec := sim.Spec{Model: in.Model, Load: in.Load, Workload: in.Workload, Duration: o.Input.Duration}
	if spec.Duration == 0 {
		spec.Duration = in.Load.End()
	}
	if spec.Duration <= 0 {
		return cmdutil.UsageErrorf("%s: the load has one point: a period to tune on needs two", in.LoadName)
	}
	vopts := validation.Options{ScaleToZero: in.Model.Controller.ScaleToZero}
	defer collectLessOften()()
	res, err := search.Run(ctx, search.Problem{
		Space: space, Spec: spec, Objective: o.objective, Constraints: o.constraints,
		Budget: o.Candidates, Workers: o.workers, Validation: vopts,
	})
	if err != nil {
		return o.simError(ctx, in, err)
	}
	rec := res.Best
	if errs := validation.Validate(rec.HPA, vopts); len(errs) > 0 {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("the recommendation would be refused by the API server: %w", errs.ToAggregate())}
	}
	sens, err := search.Sensitivity(ctx, spec, o.workers, in.HPA, []*autoscalingv2.HorizontalPodAutoscaler{res.Current().HPA, rec.HPA})
	if err != nil {
		return o.simError(ctx, in, err)
	}
	evidence, err := o.Input.Compare(ctx, in, []simulate.Named{
		{Name: "current", HPA: in.HPA},
		{Name: "tuned", Changes: rec.Changes, HPA: rec.HPA},
	})
	if err != nil {
		return err
	}
	patch, err := search.MergePatch(in.HPA, rec.HPA)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
	}
	if o.Plot != "" {
		if err := plot.Write(o.Plot, evidence); err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--plot: %w", err)}
		}
	}
	width := o.Width
	if width == 0 {
		width = o.termWidth(o.Out)
	}
	r := report{in: in, period: spec.Duration, res: res, objective: o.objective, constraints: o.constraints,
		sens: sens, patch: patch, evidence: evidence, width: width, keep: o.Keep, apply: o.Apply}
	if resetsRead {
		r.resets = &resets
	}
	r.problems = r.dataProblems()
	// With -o the output is the Tuning alone: --apply's line goes to stderr.
	applyOut := o.Out
	if o.printer != nil {
		obj, err := r.object()
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
		}
		if err := o.printer.PrintObj(obj, o.Out); err != nil {
			return err
		}
		applyOut = o.ErrOut
	} else if err := r.render(o.Out); err != nil {
		return err
	}
	if !o.Apply {
		return nil
	}
	return apply(ctx, in.Kube, read, &r, applyOut)
}

// simError words a simulation's failure: a load the model cannot play is bad input.
func (o *Options) simError(ctx context.Context, in *simulate.Input, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return cmdutil.UsageErrorf("%s: %v", in.LoadName, err)
}

// terminalWidth is out's width when it is a terminal, else the default chart width.
func terminalWidth(out io.Writer) int {
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return output.DefaultChartWidth
}
