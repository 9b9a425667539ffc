package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

const explainLong = `Compute the decision the Kubernetes v1.37 HPA controller would make for one
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

const explainExample = `  # Why does web have the replica count it has?
  kubectl hpa explain web -n shop

  # The whole decision as a versioned object (hpa.kubectl-hpa.io/v1alpha1 Explanation)
  kubectl hpa explain web -n shop -o yaml

  # Re-explain every 15s until Ctrl-C
  kubectl hpa explain web -n shop --watch

  # When does kube-controller-manager's held scale-down end? (replayed from Prometheus)
  kubectl hpa explain web -n shop --prometheus-url http://127.0.0.1:9090 --sync-period 15s

  # What if the target were 60% and cpu were at 90%? (nothing in the cluster changes)
  kubectl hpa explain web -n shop --set-target cpu=60% --assume cpu=90%`

// ExplainOptions are the inputs of "kubectl hpa explain".
type ExplainOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Name      string
	Namespace string

	Watch      bool
	SyncPeriod time.Duration
	SetTargets []string
	Assumes    []string
	Config     replicas.Config

	// Clock drives --watch; injected for tests.
	Clock clock.WithTicker

	// newClients builds the clients from ConfigFlags; tests replace it with fakes.
	newClients func(ctx context.Context, o *ExplainOptions) (*explainClients, error)
	// newKube builds the client shell completion lists HPAs with.
	newKube func() (kubernetes.Interface, string, error)

	// Metrics selects the metrics source (--metrics-source, --heapster-*).
	Metrics metrics.Config
	// Prometheus, when its URL is set, replays the cluster controller's history (--prometheus-*).
	Prometheus prometheus.Config

	// syncPeriodSet says --sync-period was given.
	syncPeriodSet bool
	// host is the API server's address, for messages.
	host string

	clients *explainClients
	// prom reads the history from Prometheus (nil without --prometheus-url).
	prom    *prometheus.Reader
	printer printers.ResourcePrinter
	whatIf  []whatIf
	// newMetrics builds the metrics client for the live clients; dc is their discovery.
	newMetrics func(ctx context.Context, o *ExplainOptions, cfg *rest.Config, dc discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error)
}

// explainClients are the API clients explain reads through.
type explainClients struct {
	Kube      kubernetes.Interface
	Scales    evaluation.ScaleReader
	Pods      evaluation.PodReader
	Metrics   metrics.Client
	Discovery discovery.DiscoveryInterface
	// Dynamic reads VerticalPodAutoscalers (only when discovery shows the API).
	Dynamic dynamic.Interface
	// MetricsSelection says which metrics source was chosen and why.
	MetricsSelection metrics.Selection
	// MetricsErr is why no metrics source could be chosen; Metrics then fails every read
	// with it, so the explanation still shows everything else.
	MetricsErr error
}

// NewExplainOptions returns options with kube-controller-manager's defaults.
func NewExplainOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *ExplainOptions {
	printFlags := genericclioptions.NewPrintFlags("")
	// An Explanation is not an API object with ObjectMeta: -o name has nothing to print.
	printFlags.NamePrintFlags = nil
	return &ExplainOptions{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		SyncPeriod:  15 * time.Second,
		Config:      replicas.DefaultConfig(),
		Clock:       clock.RealClock{},
		newClients:  clientsFromFlags,
		newKube:     kubeFromFlags(configFlags),
		newMetrics:  metricsFromOptions,
		Metrics:     metrics.DefaultConfig(),
	}
}

// NewCmdExplain builds "kubectl hpa explain".
func NewCmdExplain(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdExplain(NewExplainOptions(configFlags, streams))
}

func newCmdExplain(o *ExplainOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "explain NAME [-n NAMESPACE]",
		DisableFlagsInUseLine: true,
		Short:                 "Show, step by step, the decision the HPA controller would make for one HPA",
		Long:                  explainLong,
		Example:               explainExample,
		Args:                  oneHPAName,
		ValidArgsFunction:     completeHPANames(o.newKube),
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
	AddSyncPeriodFlag(fs, &o.SyncPeriod)
	fs.StringArrayVar(&o.SetTargets, "set-target", nil, "What-if: use this target for a metric, e.g. cpu=60% or requests_per_second=100 (metric by short name or index; repeatable)")
	fs.StringArrayVar(&o.Assumes, "assume", nil, "What-if: use this current value for a metric instead of the fetched one, e.g. cpu=90% or memory=300Mi per pod (repeatable)")
	AddControllerConfigFlags(fs, &o.Config)
	AddMetricsFlags(fs, &o.Metrics)
	AddPrometheusFlags(fs, &o.Prometheus)
	withUsageExitCodes(cmd)
	return cmd
}

// oneHPAName requires exactly one argument, the HPA's NAME (or hpa/NAME, as kubectl
// accepts), and refuses anything that cannot be an object name before the cluster is asked.
func oneHPAName(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return usageErrorf("an HPA NAME is required: kubectl hpa explain NAME [-n NAMESPACE] (kubectl get hpa -n NAMESPACE lists them)")
	case len(args) > 1:
		return usageErrorf("unexpected argument %q: kubectl hpa explain takes one HPA NAME", args[1])
	}
	name := hpaNameOf(args[0])
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageErrorf("%q is not an HPA name: %s (give the NAME that kubectl get hpa -n NAMESPACE lists)", args[0], strings.Join(errs, "; "))
	}
	return nil
}

// hpaNameOf strips a kubectl-style resource prefix (hpa/web, horizontalpodautoscaler/web).
func hpaNameOf(arg string) string {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg
	}
	switch strings.ToLower(kind) {
	case "hpa", "horizontalpodautoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler.autoscaling", "horizontalpodautoscalers.autoscaling":
		return name
	}
	return arg
}

// Complete fills the name, namespace and printer.
func (o *ExplainOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = hpaNameOf(args[0])
	o.syncPeriodSet = cmd != nil && cmd.Flags().Changed("sync-period")
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return usageErrorf("reading the namespace from the kubeconfig: %w", err)
	}
	o.Namespace = ns
	if o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" {
		p, err := o.PrintFlags.ToPrinter()
		if err != nil {
			return usageErrorf("%w", err)
		}
		o.printer = p
	} else {
		o.printer = output.TextPrinter{}
	}
	if err := o.Metrics.Validate(); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if o.Prometheus.Enabled() {
		r, err := prometheus.New(o.Prometheus)
		if err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		o.prom = r
	} else if err := o.Prometheus.Validate(); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return nil
}

// Validate checks flags that do not need the cluster.
func (o *ExplainOptions) Validate() error {
	if o.Name == "" {
		return usageErrorf("an HPA name is required: kubectl hpa explain NAME")
	}
	if o.syncPeriodSet && !o.Watch && !o.Prometheus.Enabled() {
		return usageErrorf("--sync-period only applies with --watch (-w) or --prometheus-url: explain without them explains once")
	}
	if (o.Watch || o.Prometheus.Enabled()) && o.SyncPeriod <= 0 {
		return usageErrorf("--sync-period must be positive, got %s", o.SyncPeriod)
	}
	if o.Config.Tolerance < 0 {
		return usageErrorf("--tolerance must not be negative, got %v", o.Config.Tolerance)
	}
	wi, err := parseWhatIfs(o.SetTargets, o.Assumes)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	o.whatIf = wi
	return nil
}

// Run explains once, or every sync period with --watch until ctx is done.
func (o *ExplainOptions) Run(ctx context.Context) error {
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
	ticker := o.Clock.NewTicker(o.SyncPeriod)
	defer ticker.Stop()
	// last is the failure of the latest explanation: a watch stopped while the HPA is
	// missing (or cannot be explained) exits with that failure's code, not 0.
	var last error
	for first := true; ; first = false {
		if !first && o.textOutput() {
			fmt.Fprintln(o.Out, "---")
		}
		e, err := o.explain(ctx)
		if err != nil && ctx.Err() != nil {
			// Stopped in the middle: the explanation before this one stands. One that was
			// made in full is printed and counts, even if the stop came as it was printed.
			return last
		}
		if err := o.print(e, err); err != nil {
			// A failing sync does not end the watch, as it does not stop the controller.
			fmt.Fprintf(o.ErrOut, "error: %v\n", err)
			last = alreadyReported{err}
		} else {
			last = nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-ticker.C():
		}
	}
}

// print writes e (or, on failure, a structured error for -o json|yaml) and returns err.
func (o *ExplainOptions) print(e *output.Explanation, err error) error {
	if err != nil && e == nil {
		return o.fail(err)
	}
	if e != nil {
		if perr := o.printer.PrintObj(e, o.Out); perr != nil {
			return fmt.Errorf("printing the explanation: %w", perr)
		}
	}
	return err
}

// fail prints err as an Explanation with .error set when a machine-readable output was
// asked for; the one-line message always goes to stderr (printed by Execute).
func (o *ExplainOptions) fail(err error) error {
	if o.printer == nil || o.textOutput() {
		return err
	}
	e := output.New(o.Namespace, o.Name)
	code := exitCode(err)
	e.Time.Time = o.Clock.Now().UTC()
	e.Error = &output.Error{ExitCode: code, Reason: ExitReason(code), Message: err.Error()}
	if perr := o.printer.PrintObj(e, o.Out); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

func (o *ExplainOptions) textOutput() bool {
	_, ok := o.printer.(output.TextPrinter)
	return ok
}

// clientsFromFlags builds live clients from the kubeconfig flags, with the cached discovery
// client and REST mapper kubectl uses so discovery costs nothing after the first run.
func clientsFromFlags(ctx context.Context, o *ExplainOptions) (*explainClients, error) {
	cfg, err := restConfig(o.ConfigFlags)
	if err != nil {
		return nil, err
	}
	o.host = cfg.Host
	warnOnce := rest.CopyConfig(cfg)
	warnOnce.WarningHandler = rest.NoWarnings{}
	kube, err := kubernetes.NewForConfig(warnOnce)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	cached, err := o.ConfigFlags.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	// One discovery client for every reader, the REST mapper's included, built as
	// ConfigFlags.ToRESTMapper builds it but over the serialized cache.
	dc := newSerialDiscovery(cached)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil)
	sg, err := scale.NewForConfig(warnOnce, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	if err != nil {
		return nil, fmt.Errorf("creating the scale client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(warnOnce)
	if err != nil {
		return nil, fmt.Errorf("creating the dynamic client: %w", err)
	}
	c := &explainClients{
		Kube:      kube,
		Scales:    &live.ScaleClient{Scales: sg, Mapper: mapper},
		Pods:      live.Pods{Client: kube},
		Discovery: dc,
		Dynamic:   dyn,
	}
	c.Metrics, c.MetricsSelection, c.MetricsErr = o.newMetrics(ctx, o, warnOnce, dc)
	if c.MetricsErr != nil {
		c.Metrics = unavailableMetrics{err: c.MetricsErr}
	}
	return c, nil
}

// metricsFromOptions chooses the metrics source through dc, kubectl's discovery cache
// (~/.kube/cache/discovery): warm, it spares explain the discovery round trip.
func metricsFromOptions(ctx context.Context, o *ExplainOptions, cfg *rest.Config, dc discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error) {
	return metrics.NewClient(ctx, o.Metrics, cfg, dc, o.Clock)
}

// unavailableMetrics answers every read with why no metrics source could be chosen.
type unavailableMetrics struct{ err error }

func (u unavailableMetrics) PodResource(context.Context, string, corev1.ResourceName, labels.Selector, string) (*sampleset.Set, time.Time, error) {
	return nil, time.Time{}, u.err
}

func (u unavailableMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (*sampleset.Set, time.Time, error) {
	return nil, time.Time{}, u.err
}

func (u unavailableMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, u.err
}

func (u unavailableMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, u.err
}

func (u unavailableMetrics) Source() string { return "none: " + u.err.Error() }
