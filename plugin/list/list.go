package list

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const long = `List HorizontalPodAutoscalers with the decision the Kubernetes v1.37 HPA controller would
make for each right now, recomputed from live data exactly as explain computes it: the count it
would set (WOULD BE), the metric driving it, the constraint holding it (BINDING), where the
history it decides from came from, and its problems (metrics failing, capped at max, a target
that cannot be read, a decision that differs from the status the cluster's controller last
wrote) and the findings of kubectl hpa lint's rules on it (HPA003, ...), worst first.

list only reads, and reads per namespace, not per HPA: the HPAs, the pods, the resource
metrics, the targeted Deployments, ReplicaSets, StatefulSets and ReplicationControllers, the
rescale events and the PodDisruptionBudgets, one list each, and the VerticalPodAutoscalers and
KEDA ScaledObjects where the cluster serves them; only other kinds' scales and Pods, Object and
External metrics are read per HPA. An HPA that cannot be evaluated is a row saying why, never a failed command.

With --watch (-w) it lists again every --sync-period (15s, the controller's default sync
period) until interrupted: on a terminal each frame replaces the one before, elsewhere the
frames follow one another after a "---" line; a * marks every value that changed since the
frame before. Ctrl-C ends it with exit code 0 (or the failure of the latest frame).

Exit codes: 0 ok (also when some HPAs cannot be evaluated: their rows say why), 1 unexpected
failure, 2 bad flags or arguments, 3 none of the named HPAs exists, 4 the namespace does not
exist, 7 listing HPAs forbidden by RBAC, 9 unauthorized.`

const example = `  # Every HPA of the namespace shop, recomputed now
  kubectl hpa list -n shop

  # Only the HPAs with a problem, in every namespace, every metric shown
  kubectl hpa list -A --problems -o wide

  # The full decisions as a versioned list of Explanations
  kubectl hpa list -n shop -o yaml

  # Sorted by the constraint that holds them
  kubectl hpa ls -A --sort-by binding

  # Every HPA of shop, listed again every 15 seconds, what changed marked with *
  kubectl hpa list -n shop -w`

// Options are the inputs of "kubectl hpa list".
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Names         []string
	Namespace     string
	AllNamespaces bool
	// ExplicitNamespace is whether -n named Namespace.
	ExplicitNamespace bool
	Selector          string
	ProblemsOnly      bool
	SortBy            string
	Watch             bool
	SyncPeriod        time.Duration
	Config            replicas.Config
	Metrics           metrics.Config

	// Clock is the decisions' now and drives --watch; injected for tests.
	Clock clock.WithTicker

	// newClients builds the clients from ConfigFlags; tests replace it with fakes.
	newClients func(ctx context.Context, o *Options) (*clients, error)
	// newKube builds the client shell completion lists HPAs with.
	newKube func() (kubernetes.Interface, string, error)
	// isTerminal says whether Out is a terminal (--watch redraws in place there).
	isTerminal func() bool
	// syncPeriodSet says --sync-period was given.
	syncPeriodSet bool

	clients  *clients
	selector labels.Selector
	// printer is nil for the table (text or wide).
	printer printers.ResourcePrinter
	wide    bool
}

// NewOptions returns options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	printFlags := genericclioptions.NewPrintFlags("")
	printFlags.NamePrintFlags = nil
	return &Options{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		SyncPeriod:  15 * time.Second,
		Config:      replicas.DefaultConfig(),
		Metrics:     metrics.DefaultConfig(),
		Clock:       clock.RealClock{},
		newClients:  liveClients,
		newKube:     cmdutil.KubeFromFlags(configFlags),
		isTerminal:  func() bool { return cmdutil.IsTerminal(streams.Out) },
	}
}

// NewCmdList builds "kubectl hpa list".
func NewCmdList(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "list [NAME...] [-n NAMESPACE | -A] [-l SELECTOR]",
		Aliases:               []string{"ls"},
		DisableFlagsInUseLine: true,
		Short:                 "List HPAs with the decision each would get now, what binds it and what is wrong",
		Long:                  long,
		Example:               example,
		ValidArgsFunction:     cmdutil.CompleteHPANames(o.newKube),
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
	fs := cmd.Flags()
	// The table is list's own printer: kubectl's flags do not know its wide form.
	if f := fs.Lookup("output"); f != nil {
		f.Usage = strings.Replace(f.Usage, "One of: (", "One of: (wide, ", 1)
	}
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "List the HPAs of every namespace")
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "Label selector of the HPAs to list (=, ==, !=, in, notin, exists), e.g. -l team=shop")
	fs.BoolVar(&o.ProblemsOnly, "problems", o.ProblemsOnly, "Only the HPAs with a problem")
	fs.StringVar(&o.SortBy, "sort-by", o.SortBy, "Sort the rows by a column: "+strings.Join(SortColumns(), ", ")+" (default: namespace, then name)")
	fs.BoolVarP(&o.Watch, "watch", "w", o.Watch, "List again every --sync-period until interrupted, marking with * what changed")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod, "The cluster's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period): with --watch, how often to list again, since a decision changes at most once a period")
	cmdutil.AddControllerConfigFlags(fs, &o.Config, "The cluster's")
	cmdutil.AddMetricsFlags(fs, &o.Metrics)
	_ = fs.MarkHidden("show-managed-fields")
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete fills the names, namespace, selector and printer.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	for _, a := range args {
		o.Names = append(o.Names, cmdutil.HPANameOf(a))
	}
	ns, explicit, err := cmdutil.Namespace(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.Namespace, o.ExplicitNamespace = ns, explicit
	o.syncPeriodSet = cmd != nil && cmd.Flags().Changed("sync-period")
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return cmdutil.UsageErrorf("-l %q is not a label selector: %w", o.Selector, err)
	}
	o.selector = sel
	switch format := ptrValue(o.PrintFlags.OutputFormat); format {
	case "":
	case "wide":
		o.wide = true
	default:
		p, err := cmdutil.Printer(o.PrintFlags, "wide")
		if err != nil {
			return cmdutil.UsageErrorf("%w", err)
		}
		o.printer = p
	}
	if err := o.Metrics.Validate(); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return nil
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Validate checks flags that do not need the cluster.
func (o *Options) Validate() error {
	if o.AllNamespaces && o.ExplicitNamespace {
		return cmdutil.UsageErrorf("-A lists every namespace: leave out -n %s, or -A", o.Namespace)
	}
	if o.AllNamespaces && len(o.Names) > 0 {
		return cmdutil.UsageErrorf("HPA names are per namespace: name them with -n NAMESPACE, not -A")
	}
	if o.SortBy != "" && !slices.Contains(SortColumns(), NormalColumn(o.SortBy)) {
		return cmdutil.UsageErrorf("--sort-by %q is not a column: use one of %s", o.SortBy, strings.Join(SortColumns(), ", "))
	}
	if o.Config.Tolerance < 0 {
		return cmdutil.UsageErrorf("--tolerance must not be negative, got %v", o.Config.Tolerance)
	}
	if o.syncPeriodSet && !o.Watch {
		return cmdutil.UsageErrorf("--sync-period only applies with --watch (-w): list without it lists once")
	}
	if o.Watch && o.SyncPeriod <= 0 {
		return cmdutil.UsageErrorf("--sync-period must be positive, got %s", o.SyncPeriod)
	}
	return nil
}

// Run lists the HPAs, decides for each from its namespace's batched reads, and prints the
// rows; with --watch again every sync period until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	if err := o.Connect(ctx); err != nil {
		return err
	}
	if !o.Watch {
		rows, err := o.Rows(ctx)
		if err != nil {
			return err
		}
		if len(rows) == 0 && o.printer == nil {
			fmt.Fprintln(o.ErrOut, o.nothingFound())
			return nil
		}
		return o.print(o.Out, rows, nil)
	}
	// -o json|yaml streams one List per frame, as kubectl get -w streams objects (the YAML
	// printer separates documents itself).
	frames := &cmdutil.Frames{Out: o.Out, Redraw: o.printer == nil && o.isTerminal()}
	var before map[string][]string
	return cmdutil.Watch(ctx, o.Clock, o.SyncPeriod, o.ErrOut, func(ctx context.Context) error {
		rows, err := o.Rows(ctx)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			// Stopped during the reads: the rows say "context canceled", not the cluster.
			return err
		}
		var frame bytes.Buffer
		if o.printer == nil {
			fmt.Fprintf(&frame, "Every %s, %s; * marks what changed since the frame before\n\n", o.SyncPeriod, o.Clock.Now().UTC().Format(time.RFC3339))
			if len(rows) == 0 {
				fmt.Fprintln(&frame, o.nothingFound())
			}
		}
		if len(rows) > 0 || o.printer != nil {
			if err := o.print(&frame, rows, before); err != nil {
				return err
			}
		}
		before = changeKeysByRow(rows)
		if o.printer == nil {
			frames.Start()
		}
		_, err = o.Out.Write(frame.Bytes())
		return err
	})
}

// Connect builds the clients Rows reads through, once.
func (o *Options) Connect(ctx context.Context) error {
	if o.clients != nil {
		return nil
	}
	c, err := o.newClients(ctx, o)
	if err != nil {
		return err
	}
	o.clients = c
	return nil
}

// Kube is the cluster's clientset, after Connect.
func (o *Options) Kube() kubernetes.Interface { return o.clients.Kube }

// nothingFound is kubectl get's line for an empty list.
func (o *Options) nothingFound() string {
	switch {
	case o.ProblemsOnly && o.AllNamespaces:
		return "No HPA with a problem found."
	case o.ProblemsOnly:
		return fmt.Sprintf("No HPA with a problem found in %s namespace.", o.Namespace)
	case o.AllNamespaces:
		return "No resources found"
	}
	return fmt.Sprintf("No resources found in %s namespace.", o.Namespace)
}
