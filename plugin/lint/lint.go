package lint

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

const long = `Check HorizontalPodAutoscalers, in manifests (-f) or in a cluster, and the Deployments,
StatefulSets, ReplicaSets, PodDisruptionBudgets, VerticalPodAutoscalers and KEDA ScaledObjects
beside them: the HPA rules of kube-score, Polaris, kube-linter and Datree, and the rules only an exact
controller can check (requests as the controller counts them, policies that never bind or take
too long, stabilization windows, tolerance, other autoscalers and disruption budgets on the same
pods). Each finding has a stable rule ID, a severity, the field and a fix; docs/lint.md lists
the rules.

-f takes files, directories (their *.yaml, *.yml and *.json files, recursively) and - for
standard input, several documents per file and List kinds (kustomize build and helm template
output). Other kinds are skipped. An HPA with a field autoscaling/v2 does not have, or a
manifest that does not parse, is an error naming the file, line and field (exit 2).

Without -f, lint reads the HPAs of the namespace (-n, all of them with -A; only the NAMEs when
given) and those objects from the cluster, only reading: one list per kind and namespace, the
VerticalPodAutoscalers and ScaledObjects only where the cluster serves them. In a cluster lint
also reports a metric whose API the cluster does not serve (HPA017), and does not check
spec.replicas (HPA007: every workload read from a cluster has one). A list that is refused is a
warning, and the rules that need its objects are not checked.

Findings at or above --fail-on (error by default) make the command exit 11 (LintFindings);
--fail-on none never does. Other exit codes: 2 bad flags or manifests (-f with -n or -A), 3 none
of the named HPAs exists, 4 the namespace does not exist, 7 listing HPAs forbidden, 9
unauthorized.`

const example = `  # Lint a directory of manifests
  kubectl hpa lint -f deploy/

  # Lint the HPAs of every namespace of the cluster
  kubectl hpa lint -A

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
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Files  []string
	Output string
	FailOn string
	Lint   rules.Options

	// Cluster mode (without -f): the HPAs named, of Namespace or of every namespace.
	Names         []string
	Namespace     string
	AllNamespaces bool
	// ExplicitNamespace is whether -n named Namespace.
	ExplicitNamespace bool

	// newClients builds the clients from ConfigFlags; tests replace it with fakes.
	newClients func() (*cmdutil.Clients, error)
}

// NewOptions returns the options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	return &Options{ConfigFlags: configFlags, IOStreams: streams, Output: "text", FailOn: "error", Lint: rules.DefaultOptions(),
		newClients: func() (*cmdutil.Clients, error) { return cmdutil.NewClients(configFlags) }}
}

// NewCmdLint builds "kubectl hpa lint".
func NewCmdLint(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "lint (-f FILE|DIR|- | [NAME...] [-n NAMESPACE | -A]) [-o text|json|yaml|sarif|junit] [--fail-on error|warning|none]",
		DisableFlagsInUseLine: true,
		Short:                 "Check HPAs, in manifests before they ship or in a cluster, and the workloads and budgets beside them",
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     cmdutil.CompleteHPANames(cmdutil.KubeFromFlags(o.ConfigFlags)),
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
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Lint the HPAs of every namespace (without -f)")
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

// Complete fills the names and the namespace, and what the mode changes in the rules' options.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	for _, a := range args {
		o.Names = append(o.Names, cmdutil.HPANameOf(a))
	}
	if len(o.Files) > 0 {
		o.Lint.Manifests = true
		o.ExplicitNamespace = cmd.Flags().Changed("namespace")
		return nil
	}
	ns, explicit, err := cmdutil.Namespace(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.Namespace, o.ExplicitNamespace = ns, explicit
	return nil
}

// Validate checks the flags.
func (o *Options) Validate() error {
	if len(o.Files) > 0 && (o.ExplicitNamespace || o.AllNamespaces || len(o.Names) > 0) {
		return cmdutil.UsageErrorf("-f lints manifests, NAME, -n and -A the HPAs of a cluster: give one or the other")
	}
	if o.AllNamespaces && o.ExplicitNamespace {
		return cmdutil.UsageErrorf("-A lints every namespace: leave out -n %s, or -A", o.Namespace)
	}
	if o.AllNamespaces && len(o.Names) > 0 {
		return cmdutil.UsageErrorf("HPA names are per namespace: name them with -n NAMESPACE, not -A")
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

// Run reads the manifests (or the cluster), checks them, prints the report and decides the
// exit code.
func (o *Options) Run(ctx context.Context) error {
	var r *Report
	if len(o.Files) > 0 {
		read, err := manifest.Read(o.Files, o.In)
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
		}
		r = check(read, o.Lint)
	} else {
		objs, checked, err := o.readCluster(ctx)
		if err != nil {
			return err
		}
		r = report(objs, o.Lint, checked, nil)
	}
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
	threshold := rules.Severity(o.FailOn).Rank()
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
