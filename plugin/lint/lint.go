package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/controller/lint"
	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const long = `Check HorizontalPodAutoscaler manifests, and the Deployments, StatefulSets, ReplicaSets,
PodDisruptionBudgets, VerticalPodAutoscalers and KEDA ScaledObjects beside them, before they
ship: the HPA rules of kube-score, Polaris, kube-linter and Datree, and the rules only an exact
controller can check (requests as the controller counts them, policies that never bind or take
too long, stabilization windows, tolerance, other autoscalers and disruption budgets on the same
pods). Each finding has a stable rule ID, a severity, the field and a fix; docs/lint.md lists
the rules.

-f takes files, directories (their *.yaml, *.yml and *.json files, recursively) and - for
standard input, several documents per file and List kinds (kustomize build and helm template
output). Other kinds are skipped. An HPA with a field autoscaling/v2 does not have, or a
manifest that does not parse, is an error naming the file, line and field (exit 2).

Findings at or above --fail-on (error by default) make the command exit 11 (LintFindings);
--fail-on none never does. Linting the HPAs of a cluster (lint NAME, -n, -A) is not available
yet.`

const example = `  # Lint a directory of manifests
  kubectl hpa lint -f deploy/

  # Lint what kustomize renders, failing on warnings too
  kustomize build overlays/prod | kubectl hpa lint -f - --fail-on warning

  # SARIF for a code-scanning upload
  kubectl hpa lint -f deploy/ -o sarif > hpa-lint.sarif`

// Output formats.
var outputs = []string{"text", "json", "yaml", "sarif", "junit"}

// failOn are --fail-on's values.
var failOn = []string{"error", "warning", "none"}

// Options are the inputs of "kubectl hpa lint".
type Options struct {
	genericiooptions.IOStreams

	Files  []string
	Output string
	FailOn string
	Lint   lint.Options
}

// NewOptions returns the options with kube-controller-manager's defaults.
func NewOptions(streams genericiooptions.IOStreams) *Options {
	o := &Options{IOStreams: streams, Output: "text", FailOn: "error", Lint: lint.DefaultOptions()}
	o.Lint.Manifests = true
	return o
}

// NewCmdLint builds "kubectl hpa lint".
func NewCmdLint(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "lint -f FILE|DIR|- [-o text|json|yaml|sarif|junit] [--fail-on error|warning|none]",
		DisableFlagsInUseLine: true,
		Short:                 "Check HPA manifests, and the workloads and budgets beside them, before they ship",
		Long:                  long,
		Example:               example,
		Args:                  cmdutil.NoArgs(" (give the manifests with -f)"),
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.Files, "filename", "f", nil, "A manifest file, a directory of them (recursively) or - for standard input (repeatable)")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "Output format: "+strings.Join(outputs, ", "))
	fs.StringVar(&o.FailOn, "fail-on", o.FailOn, "Exit 11 when a finding is at least this severe: "+strings.Join(failOn, ", "))
	fs.DurationVar(&o.Lint.SyncPeriod, "sync-period", o.Lint.SyncPeriod, "The cluster's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period)")
	fs.Float64Var(&o.Lint.Tolerance, "tolerance", o.Lint.Tolerance, "The cluster's tolerance (kube-controller-manager --horizontal-pod-autoscaler-tolerance)")
	fs.DurationVar(&o.Lint.DownscaleStabilizationWindow, "downscale-stabilization", o.Lint.DownscaleStabilizationWindow, "The cluster's downscale stabilization window (kube-controller-manager --horizontal-pod-autoscaler-downscale-stabilization)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputs, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions(failOn, cobra.ShellCompDirectiveNoFileComp))
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if len(o.Files) == 0 {
		return cmdutil.UsageErrorf("give the manifests to lint with -f FILE, -f DIR or -f - (standard input)")
	}
	if !slices.Contains(outputs, o.Output) {
		return cmdutil.UsageErrorf("--output %q: want one of %s", o.Output, strings.Join(outputs, ", "))
	}
	if !slices.Contains(failOn, o.FailOn) {
		return cmdutil.UsageErrorf("--fail-on %q: want one of %s", o.FailOn, strings.Join(failOn, ", "))
	}
	if o.Lint.SyncPeriod <= 0 {
		return cmdutil.UsageErrorf("--sync-period %v: want a positive duration", o.Lint.SyncPeriod)
	}
	if o.Lint.Tolerance < 0 || o.Lint.DownscaleStabilizationWindow < 0 {
		return cmdutil.UsageErrorf("--tolerance and --downscale-stabilization cannot be negative")
	}
	return nil
}

// Run reads the manifests, checks them, prints the report and decides the exit code.
func (o *Options) Run() error {
	read, err := manifest.Read(o.Files, o.In)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	r := check(read, o.Lint)
	if err := o.print(r); err != nil {
		return err
	}
	return o.verdict(r)
}

// verdict is the exit: ExitLintFindings when a finding is at least --fail-on.
func (o *Options) verdict(r *Report) error {
	if o.FailOn == "none" {
		return nil
	}
	threshold := lint.Severity(o.FailOn).Rank()
	n := 0
	for _, f := range r.Findings {
		if f.Severity.Rank() >= threshold {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitLintFindings, Err: fmt.Errorf("%d %s at or above %s (--fail-on %s)", n, plural(n, "finding", "findings"), o.FailOn, o.FailOn)}
}

// print writes the report in the -o format.
func (o *Options) print(r *Report) error {
	var err error
	switch o.Output {
	case "json":
		err = writeJSON(o.Out, r)
	case "yaml":
		err = writeYAML(o.Out, r)
	case "sarif":
		err = writeSARIF(o.Out, r)
	case "junit":
		err = writeJUnit(o.Out, r, o.FailOn)
	default:
		err = writeText(o.Out, r)
	}
	if err != nil {
		return fmt.Errorf("printing the report: %w", err)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
