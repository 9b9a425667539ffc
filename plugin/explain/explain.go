package explain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const long = `Compute the decision the Kubernetes v1.37 HPA controller would make for one
HorizontalPodAutoscaler right now, from live data, and show every step: the target's scale,
the effective tolerance and behavior, each metric's target, current value, ratio and proposal,
how every pod was treated, the arithmetic from proposals to the final count, one verdict
sentence naming the binding constraint, and what the cluster's own controller last decided.

explain only reads: it never creates, updates, patches or deletes anything, not even events.
The cluster controller's recommendation history lives in its memory and cannot be read;
explain says which history it used (reconstructed from status.lastScaleTime and rescale events).
With --prometheus-url it replays the metrics of the longest stabilization window from
Prometheus (cAdvisor's series; --prometheus-query for custom metrics) through the same
decision core at every sync kube-controller-manager could have made (--sync-period is its
sync period), and says when a held scale-down ends, as a range: the controller's sync phase
is known only to the second of its last condition change or rescale. A Prometheus that
fails costs a warning line and the reconstruction, not the exit code.

Exit codes: 0 ok, 1 unexpected failure (server unreachable or not a Kubernetes API server),
2 bad flags or arguments (or no kubeconfig), 3 HPA not found, 4 wrong namespace (namespace
missing or HPA found elsewhere), 5 scale target not found, 6 scale target not scalable,
7 forbidden by RBAC, 8 a metrics API the HPA needs is not served, 9 unauthorized,
10 the HPA cannot compute a replica count (ScalingActive=False: its metrics were read but,
for example, its pods have no requests for a Utilization target). With -w, the code of the
last explanation when stopped. With -o json|yaml failures are also printed as an Explanation
with .error set.`

const example = `  # Why does web have the replica count it has?
  kubectl hpa explain web -n shop

  # The whole decision as a versioned object (hpa.kubectl-hpa.io/v1alpha1 Explanation)
  kubectl hpa explain web -n shop -o yaml

  # Re-explain every 15s until Ctrl-C
  kubectl hpa explain web -n shop --watch

  # When does kube-controller-manager's held scale-down end? (replayed from Prometheus)
  kubectl hpa explain web -n shop --prometheus-url http://127.0.0.1:9090 --sync-period 15s

  # What if the target were 60% and cpu were at 90%? (nothing in the cluster changes)
  kubectl hpa explain web -n shop --set-target cpu=60% --assume cpu=90%`

// prometheusUsage is what the --prometheus-* flags do in explain: replay the history.
var prometheusUsage = cmdutil.PrometheusUsage{
	URL:        "Replay the HPA's metrics of the longest stabilization window from this Prometheus (base URL, e.g. http://127.0.0.1:9090 after kubectl port-forward) to reconstruct the recommendations kube-controller-manager keeps in memory.",
	RateWindow: "Window CPU usage is averaged over in the replay (the usage counter's increase over it); 0 takes the live samples' window (metrics-server's), or 1m without live samples.",
	Query:      `PromQL template to replay a Pods, Object or External metric, METRIC=QUERY (repeatable); it may use {{.Namespace}}, {{.Pods}} (a regexp of the pods' names), {{.Object}}, {{.Window}} and {{.Selector}}. A Pods metric's query must give one series per pod label.`,
}

// Options are the inputs of "kubectl hpa explain".
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Name      string
	Namespace string
	// ExplicitNamespace is whether -n named Namespace (kubectl's enforceNamespace).
	ExplicitNamespace bool

	Watch      bool
	SyncPeriod time.Duration
	SetTargets []string
	Assumes    []string
	Config     replicas.Config

	// Clock drives --watch; injected for tests.
	Clock clock.WithTicker
	// terminalRows is the height of the terminal Out is, 0 when it is none: --watch redraws
	// each explanation in place there, cut to fit.
	terminalRows func() int

	// newClients builds the clients from ConfigFlags; tests replace it with fakes.
	newClients func(ctx context.Context, o *Options) (*clients, error)
	// newKube builds the client shell completion lists HPAs with.
	newKube func() (kubernetes.Interface, string, error)

	// Metrics selects the metrics source (--metrics-source, --heapster-*).
	Metrics metrics.Config
	// Prometheus, when its URL is set, replays the cluster controller's history (--prometheus-*).
	Prometheus prometheus.Config

	// syncPeriodSet says --sync-period was given.
	syncPeriodSet bool

	clients *clients
	// prom reads the history from Prometheus (nil without --prometheus-url).
	prom    *prometheus.Reader
	printer printers.ResourcePrinter
	whatIf  []cmdutil.WhatIf
	// newMetrics builds the metrics client for the live clients; dc is their discovery.
	newMetrics func(ctx context.Context, o *Options, cfg *rest.Config, dc discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error)
}

// NewOptions returns options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	printFlags := genericclioptions.NewPrintFlags("")
	// An Explanation is not an API object with ObjectMeta: -o name has nothing to print.
	printFlags.NamePrintFlags = nil
	return &Options{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		SyncPeriod:  15 * time.Second,
		Config:      replicas.DefaultConfig(),
		Clock:       clock.RealClock{},
		newClients:  liveClients,
		newKube:     cmdutil.KubeFromFlags(configFlags),
		newMetrics:  metricsFromOptions,
		Metrics:     metrics.DefaultConfig(),
		Prometheus:  prometheus.Config{Timeout: prometheus.DefaultTimeout},
		terminalRows: func() int {
			if f, ok := streams.Out.(*os.File); ok && cmdutil.IsTerminal(f) {
				if _, h, err := term.GetSize(int(f.Fd())); err == nil {
					return h
				}
			}
			return 0
		},
	}
}

// NewCmdExplain builds "kubectl hpa explain".
func NewCmdExplain(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "explain NAME [-n NAMESPACE]",
		DisableFlagsInUseLine: true,
		Short:                 "Show, step by step, the decision the HPA controller would make for one HPA",
		Long:                  long,
		Example:               example,
		Args:                  cmdutil.OneHPAName,
		ValidArgsFunction:     cmdutil.CompleteHPANames(o.newKube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return o.fail(err)
			}
			if err := o.Validate(); err != nil {
				return o.fail(err)
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	fs := cmd.Flags()
	fs.BoolVarP(&o.Watch, "watch", "w", o.Watch, "Re-explain every --sync-period until interrupted")
	fs.DurationVar(&o.SyncPeriod, "sync-period", o.SyncPeriod,
		"The cluster's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period): with --watch, how often to re-explain, since a decision changes at most once a period; with --prometheus-url, the period at which the replay decides")
	fs.StringArrayVar(&o.SetTargets, "set-target", nil, "What-if: use this target for a metric, e.g. cpu=60% or requests_per_second=100 (metric by short name or index; repeatable)")
	fs.StringArrayVar(&o.Assumes, "assume", nil, "What-if: use this current value for a metric instead of the fetched one, e.g. cpu=90% or memory=300Mi per pod (repeatable)")
	cmdutil.AddControllerConfigFlags(fs, &o.Config, "The cluster's")
	cmdutil.AddMetricsFlags(fs, &o.Metrics)
	cmdutil.AddPrometheusFlags(fs, &o.Prometheus, prometheusUsage)
	// An Explanation has no managedFields: the flag PrintFlags adds changes nothing here.
	_ = fs.MarkHidden("show-managed-fields")
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete fills the name, namespace and printer.
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
	} else {
		o.printer = TextPrinter{}
	}
	if err := o.Metrics.Validate(); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
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
	if o.Name == "" {
		return cmdutil.UsageErrorf("an HPA name is required: kubectl hpa explain NAME")
	}
	if o.syncPeriodSet && !o.Watch && !o.Prometheus.Enabled() {
		return cmdutil.UsageErrorf("--sync-period only applies with --watch (-w) or --prometheus-url: explain without them explains once")
	}
	if (o.Watch || o.Prometheus.Enabled()) && o.SyncPeriod <= 0 {
		return cmdutil.UsageErrorf("--sync-period must be positive, got %s", o.SyncPeriod)
	}
	if o.Config.Tolerance < 0 {
		return cmdutil.UsageErrorf("--tolerance must not be negative, got %v", o.Config.Tolerance)
	}
	wi, err := parseWhatIfs(o.SetTargets, o.Assumes)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	o.whatIf = wi
	return nil
}

// Run explains once, or every sync period with --watch until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("hpa", klog.KRef(o.Namespace, o.Name))
	ctx = klog.NewContext(ctx, logger)
	// Clients are built here, after validation, because choosing the metrics source asks
	// the cluster.
	if o.clients == nil {
		c, err := o.newClients(ctx, o)
		if err != nil {
			return o.fail(err)
		}
		o.clients = c
	}
	if !o.Watch {
		e, err := o.explain(ctx)
		return o.print(e, err)
	}
	// On a terminal each text frame replaces the one before, cut to the screen's height so
	// that the verdict stays in sight; elsewhere they follow one another. -o json|yaml's
	// printers separate their documents themselves.
	rows := 0
	if o.textOutput() {
		rows = o.terminalRows()
	}
	frames := &cmdutil.Frames{Out: o.Out, Redraw: rows > 0}
	return cmdutil.Watch(ctx, o.Clock, o.SyncPeriod, o.ErrOut, func(ctx context.Context) error {
		e, err := o.explain(ctx)
		if err != nil && ctx.Err() != nil {
			// Stopped in the middle: the explanation before this one stands. One that was
			// made in full is printed and counts, even if the stop came as it was printed.
			return err
		}
		if !o.textOutput() {
			return o.print(e, err)
		}
		var frame bytes.Buffer
		perr := o.printTo(&frame, e, err)
		frames.Start()
		if _, werr := o.Out.Write(fitRows(frame.Bytes(), rows)); werr != nil {
			return werr
		}
		return perr
	})
}

// fitRows cuts a frame to rows lines (0: no limit), its last saying how many more there are.
func fitRows(frame []byte, rows int) []byte {
	lines := strings.SplitAfter(string(frame), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if rows <= 1 || len(lines) <= rows {
		return frame
	}
	cut := len(lines) - (rows - 1)
	return []byte(strings.Join(lines[:rows-1], "") + fmt.Sprintf("... %d more lines (explain without --watch prints them all)\n", cut))
}

// print writes e (or, on failure, a structured error for -o json|yaml) and returns err.
func (o *Options) print(e *v1alpha1.Explanation, err error) error {
	return o.printTo(o.Out, e, err)
}

func (o *Options) printTo(out io.Writer, e *v1alpha1.Explanation, err error) error {
	if err != nil && e == nil {
		return o.fail(err)
	}
	if e != nil {
		if perr := o.printer.PrintObj(e, out); perr != nil {
			return fmt.Errorf("printing the explanation: %w", perr)
		}
	}
	return err
}

// fail prints err as an Explanation with .error set when a machine-readable output was
// asked for; the one-line message always goes to stderr (printed by Execute).
func (o *Options) fail(err error) error {
	if o.printer == nil || o.textOutput() {
		return err
	}
	e := v1alpha1.NewExplanation(o.Namespace, o.Name)
	code := cmdutil.ExitCode(err)
	e.Time.Time = o.Clock.Now().UTC()
	e.Error = &v1alpha1.Error{ExitCode: code, Reason: cmdutil.ExitReason(code), Message: err.Error()}
	if perr := o.printer.PrintObj(e, o.Out); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

func (o *Options) textOutput() bool {
	_, ok := o.printer.(TextPrinter)
	return ok
}
