// Package timeline is `kubectl hpa timeline`: one HPA's decisions over a period, sync by
// sync, with the constraint that held each, every rescale and its cause, and what the period
// shows (flapping, time capped at max, blind, above target), from the best source there is:
// a kubectl hpa run --record file, a replay of the metrics in Prometheus through the core,
// or the HPA's rescale events and status. It only reads.
package timeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/plot"
)

const long = `Show what one HorizontalPodAutoscaler did over a period, and why: at each sync of the
controller the replicas, each metric against its target, what the metrics proposed, what it
decided and the constraint that held it (a stabilization window, a scaling policy, the
tolerance, minReplicas or maxReplicas, metrics unavailable, unready pods), every rescale with
its cause, a chart, and what the period shows: flapping (more than 6 rescales within an hour,
or a rescale undoing the previous one within 10 minutes), the time held at maxReplicas while
the metrics asked for more, the time blind (a metric failing), the time above target.

The past comes from the best source there is, and the output says which:
  --record FILE     a kubectl hpa run --record file: every sync as run made it, exact (the
                    period is the last --since of the recording; no cluster is read)
  --prometheus-url  the HPA's metrics over the whole period replayed from Prometheus through
                    the decision core at every sync (--sync-period apart), as explain replays
                    the last window; kube-state-metrics' kube_horizontalpodautoscaler_status_*
                    series, when Prometheus has them, give the replicas the controller set
  otherwise         the HPA's SuccessfulRescale events and status: the rescales, not the syncs
                    between them (coarse; the API server keeps events for an hour by default)

By default only the syncs where something changed are listed (the replicas, the decision,
the proposal, the constraint, a metric failing or crossing its target); --all-syncs lists
every one. timeline only reads: it never writes to the cluster.

Exit codes: 0 ok, 1 unexpected failure (Prometheus or the server unreachable, nothing known of
the period), 2 bad flags or arguments (a bad --since, an unreadable --record), 3 HPA not
found, 4 wrong namespace, 7 forbidden by RBAC, 9 unauthorized.`

const example = `  # What did web do over the last 6 hours, and why? (rescale events and status)
  kubectl hpa timeline web -n shop

  # Every sync of the last day, replayed from Prometheus, as YAML
  kubectl hpa timeline web -n shop --since 24h --prometheus-url http://127.0.0.1:9090 --all-syncs -o yaml

  # The exact timeline of a kubectl hpa run --record file, drawn into an image too
  kubectl hpa timeline web -n shop --record run.jsonl --plot web.svg`

// prometheusUsage is what the --prometheus-* flags do in timeline: replay the whole period.
var prometheusUsage = cmdutil.PrometheusUsage{
	URL:        "Replay the HPA's metrics over the whole period from this Prometheus (base URL, e.g. http://127.0.0.1:9090 after kubectl port-forward) through the decision core, sync by sync.",
	RateWindow: "Window CPU usage is averaged over in the replay (the usage counter's increase over it); 0 takes 1m.",
	Query:      `PromQL template to replay a Pods, Object or External metric, METRIC=QUERY (repeatable); it may use {{.Namespace}}, {{.Pods}} (a regexp of the pods' names), {{.Object}}, {{.Window}} and {{.Selector}}. A Pods metric's query must give one series per pod label.`,
}

// Options are the inputs of "kubectl hpa timeline".
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Name      string
	Namespace string
	// ExplicitNamespace is whether -n named Namespace.
	ExplicitNamespace bool

	Since      time.Duration
	Record     string
	AllSyncs   bool
	SyncPeriod time.Duration
	Plot       string
	Width      int
	Config     replicas.Config
	// Prometheus, when its URL is set, replays the period (--prometheus-*).
	Prometheus prometheus.Config

	// Clock says when now is; injected for tests.
	Clock clock.PassiveClock

	// newClients builds the clients from ConfigFlags; tests replace it with fakes.
	newClients func(o *Options) (*cmdutil.Clients, error)
	newKube    func() (kubernetes.Interface, string, error)
	termWidth  func(io.Writer) int

	syncPeriodSet bool
	prom          *prometheus.Reader
	printer       printers.ResourcePrinter
	// timeline is what Run's steps build.
	timeline *v1alpha1.Timeline
}

// NewOptions returns options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	printFlags := genericclioptions.NewPrintFlags("")
	// A Timeline is not an API object with ObjectMeta: -o name has nothing to print.
	printFlags.NamePrintFlags = nil
	return &Options{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		Since:       6 * time.Hour,
		SyncPeriod:  15 * time.Second,
		Config:      replicas.DefaultConfig(),
		Clock:       clock.RealClock{},
		Prometheus:  prometheus.Config{Timeout: prometheus.DefaultTimeout},
		newClients:  func(o *Options) (*cmdutil.Clients, error) { return cmdutil.NewClients(o.ConfigFlags) },
		newKube:     cmdutil.KubeFromFlags(configFlags),
		termWidth:   terminalWidth,
	}
}

// NewCmdTimeline builds "kubectl hpa timeline".
func NewCmdTimeline(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "timeline NAME [-n NAMESPACE] [--since 6h]",
		DisableFlagsInUseLine: true,
		Short:                 "Show one HPA's decisions over a period, sync by sync, and what held each",
		Long:                  long,
		Example:               example,
		Args:                  cmdutil.OneHPAName,
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
	fs.DurationVar(&o.Since, "since", o.Since, "How far back the timeline goes (from now; with --record, from the recording's last sync)")
	fs.StringVar(&o.Record, "record", "", "A kubectl hpa run --record file: the exact timeline of every sync it holds (no cluster is read)")
	fs.BoolVar(&o.AllSyncs, "all-syncs", false, "List every sync, not only those where something changed")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod,
		"The cluster's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period): with --prometheus-url, the period at which the replay decides")
	fs.StringVar(&o.Plot, "plot", "", "Also draw the timeline into FILE.svg or FILE.png")
	fs.IntVar(&o.Width, "width", 0, "Width of the text chart in columns (default: the terminal's, else 80)")
	cmdutil.AddControllerConfigFlags(fs, &o.Config, "With --prometheus-url, the cluster's")
	cmdutil.AddPrometheusFlags(fs, &o.Prometheus, prometheusUsage)
	// A Timeline has no managedFields: the flag PrintFlags adds changes nothing here.
	_ = fs.MarkHidden("show-managed-fields")
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete fills the name, namespace, printer and the Prometheus reader.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	o.Name = cmdutil.HPANameOf(args[0])
	o.syncPeriodSet = cmd != nil && cmd.Flags().Changed("sync-period")
	ns, explicit, err := cmdutil.Namespace(o.ConfigFlags)
	if err != nil {
		return err
	}
	o.Namespace, o.ExplicitNamespace = ns, explicit
	if o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" {
		p, err := cmdutil.Printer(o.PrintFlags)
		if err != nil {
			return cmdutil.UsageErrorf("%w", err)
		}
		o.printer = p
	}
	if o.Prometheus.Enabled() {
		r, err := prometheus.New(o.Prometheus)
		if err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
		}
		o.prom = r
	} else if err := o.Prometheus.Validate(); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	return nil
}

// Validate checks flags that do not need the cluster.
func (o *Options) Validate() error {
	switch {
	case o.Since <= 0:
		return cmdutil.UsageErrorf("--since must be positive, e.g. 6h or 30m, got %s", o.Since)
	case o.Record != "" && o.Prometheus.Enabled():
		return cmdutil.UsageErrorf("--record and --prometheus-url both give the past: give one (a recording is exact)")
	case o.syncPeriodSet && !o.Prometheus.Enabled():
		return cmdutil.UsageErrorf("--sync-period applies with --prometheus-url: a recording holds its own, events hold none")
	case o.SyncPeriod <= 0:
		return cmdutil.UsageErrorf("--sync-period must be positive, got %s", o.SyncPeriod)
	case o.Config.Tolerance < 0:
		return cmdutil.UsageErrorf("--tolerance must not be negative, got %v", o.Config.Tolerance)
	}
	if o.Plot != "" {
		if err := plot.CheckPath(o.Plot); err != nil {
			return cmdutil.UsageErrorf("--plot %w", err)
		}
	}
	return nil
}

// step is one named step of Run.
type step struct {
	name string
	run  func(ctx context.Context) error
}

// Run reads the past, judges it, keeps the changes, draws and prints.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("hpa", klog.KRef(o.Namespace, o.Name))
	ctx = klog.NewContext(ctx, logger)
	for _, s := range []step{
		{"read the past", o.readPast},
		{"judge the period", o.judge},
		{"keep the changes", o.keepChanges},
		{"draw", o.draw},
		{"print", o.print},
	} {
		logger.V(2).Info("timeline step", "step", s.name)
		if err := s.run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// readPast builds the timeline from the best source given.
func (o *Options) readPast(ctx context.Context) error {
	var err error
	if o.Record != "" {
		o.timeline, err = fromRecording(ctx, o.Record, o.Namespace, o.ExplicitNamespace, o.Name, o.Since)
		return err
	}
	c, err := o.newClients(o)
	if err != nil {
		return err
	}
	now := o.Clock.Now()
	if o.prom != nil {
		o.timeline, err = o.fromPrometheus(ctx, c, now)
		return err
	}
	o.timeline, err = o.fromEvents(ctx, c, now)
	return err
}

// judge finds what the period shows, over every sync known.
func (o *Options) judge(context.Context) error {
	t := o.timeline
	t.SyncsKnown = len(t.Syncs)
	if t.Source.Kind != v1alpha1.TimelineEvents {
		t.Rescales = rescalesOf(t.Syncs)
	}
	t.Findings = findings(t.Syncs, t.Rescales, t.From.Time, t.To.Time, t.MaxReplicas, t.Source.Kind != v1alpha1.TimelineEvents)
	return nil
}

func (o *Options) keepChanges(context.Context) error {
	if !o.AllSyncs && o.timeline.Source.Kind != v1alpha1.TimelineEvents {
		o.timeline.Syncs = changes(o.timeline.Syncs)
		o.timeline.ChangesOnly = true
	}
	return nil
}

func (o *Options) draw(context.Context) error {
	if o.Plot == "" {
		return nil
	}
	if err := plot.Write(o.Plot, timelineSimulation(o.timeline)); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--plot: %w", err)}
	}
	return nil
}

func (o *Options) print(context.Context) error {
	if o.printer != nil {
		return o.printer.PrintObj(o.timeline, o.Out)
	}
	width := o.Width
	if width == 0 {
		width = o.termWidth(o.Out)
	}
	return RenderText(o.Out, o.timeline, output.ChartOptions{Width: width})
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
