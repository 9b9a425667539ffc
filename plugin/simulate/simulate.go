package simulate

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/plot"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

const long = `Play a demand curve through a model of the cluster and the exact HPA controller, in virtual
time, for the HPA as it is and for each variant of it, and compare them.

The HPA, its scale target's replicas and its pods' requests are read from the cluster
(nothing is written), or, with -f, from files with no cluster at all. Every sync decides
through the same evaluation path as explain and run. The cluster model (sync period, pod
delays, metrics-server's scrape, the controller's settings) is printed first with where each
value comes from; each is a flag.

Variants: --variant NAME=KEY=VALUE[,KEY=VALUE...] changes the HPA: a metric's target
(cpu=60%, requests_per_second=100), min, max, tolerance, or a behavior field
(scaleUp.policies='Pods:8/15s;Percent:200/15s', quoted for the shell, scaleDown.stabilizationWindowSeconds=60,
scaleUp.selectPolicy=Min, scaleDown.tolerance=0.05). --variant-file [NAME=]FILE takes the
whole spec from an HPA manifest. Every variant is validated as kube-apiserver would validate it.

Load file (--load): the demand in total over all pods, for each metric the HPA reads, from
each time on. CSV is a header, then one row per time (90s, 1h30m, or seconds):

  time,cpu,memory
  0s,150m,512Mi
  2m,1500m,2Gi

cpu is in millicores, as a number (150) or a Kubernetes quantity (150m; a bare number is
millicores, not cores); memory in bytes or a quantity (256Mi, 2Gi); a custom metric in its
own unit (60.5 or 500m). YAML says the same with kind: Load and points: [{at: 0s, cpu: 150m}],
and interpolation: linear for straight lines between the points instead of steps.

Nothing is printed until every input is read and every variant simulated: bad input exits
with one line naming the flag or file, line and field. Exit codes as for explain: 0 done,
1 unexpected failure, 2 bad flags, arguments or input files, 3 HPA not found, 4 wrong
namespace, 5 target not found, 6 target not scalable, 7 forbidden, 9 unauthorized.`

// loadExample is the load file simulate --help shows (in long); tests parse it.
const loadExample = "time,cpu,memory\n0s,150m,512Mi\n2m,1500m,2Gi\n"

const example = `  # The HPA web as it is and with a lower target and faster scale-up, under load.csv
  kubectl hpa simulate web -n shop --load load.csv \
    --variant fast=cpu=60%,scaleUp.policies=Pods:8/15s

  # No cluster: the HPA and the workload from files, a chart as SVG
  kubectl hpa simulate -f hpa.yaml --workload deploy.yaml --load load.yaml --plot web.svg`

// Options are the inputs of "kubectl hpa simulate".
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	// Command is the command these options are of ("simulate", "tune"), for messages.
	Command string

	Name      string
	Namespace string
	// ExplicitNamespace is whether -n named Namespace (kubectl's enforceNamespace).
	ExplicitNamespace bool

	File     string
	LoadFile string
	// Recording is --from-recording: a run --record file, rerun exactly, or its demand
	// played through the model for variants.
	Recording    string
	WorkloadFile string
	Replicas     int32
	Requests     string
	Duration     time.Duration
	Variants     []string
	VariantFiles []string
	Plot         string
	Width        int

	Model sim.Model

	// FromPrometheus takes the load from the HPA's metric history in Prometheus over the
	// last Since instead of a file (--from-prometheus, --since, --prometheus-*).
	FromPrometheus bool
	Since          time.Duration
	Prometheus     prometheus.Config
	prom           *prometheus.Reader
	// now is the end of the load read from Prometheus; tests replace it.
	now func() time.Time

	// NewClients builds the cluster clients; tests (tune's too) replace it with fakes.
	NewClients func() (*cmdutil.Clients, error)
	// newKube builds the client shell completion lists HPAs with.
	newKube func() (kubernetes.Interface, string, error)
	// termWidth sizes the chart; tests replace it.
	termWidth func(io.Writer) int

	printer    printers.ResourcePrinter
	modelFlags map[string]bool // model flags given on the command line
}

// NewOptions returns options with the model's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	printFlags := genericclioptions.NewPrintFlags("")
	printFlags.NamePrintFlags = nil
	o := &Options{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		Command:     "simulate",
		Model:       sim.DefaultModel(),
		termWidth:   terminalWidth,
		newKube:     cmdutil.KubeFromFlags(configFlags),
		Since:       6 * time.Hour,
		Prometheus:  prometheus.Config{Timeout: prometheus.DefaultTimeout, RateWindow: promRateWindow},
		now:         time.Now,
		// simulate reads no metrics: the model makes them.
		NewClients: func() (*cmdutil.Clients, error) { return cmdutil.NewClients(configFlags) },
	}
	return o
}

// NewCmdSimulate builds "kubectl hpa simulate".
func NewCmdSimulate(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "simulate NAME [-n NAMESPACE] --load FILE | simulate -f HPA.yaml --load FILE | simulate [NAME] --from-recording FILE | simulate NAME --from-prometheus --prometheus-url URL",
		DisableFlagsInUseLine: true,
		Short:                 "Play a demand curve through the exact controller over time, for the HPA and variants of it",
		Long:                  long,
		Example:               example,
		Args:                  cobra.ArbitraryArgs,
		ValidArgsFunction:     cmdutil.CompleteHPANames(o.newKube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	// A Simulation has no managedFields: the flag PrintFlags adds changes nothing here.
	_ = cmd.Flags().MarkHidden("show-managed-fields")
	o.AddInputFlags(cmd)
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Variants, "variant", nil, "A variant NAME=KEY=VALUE[,KEY=VALUE...], e.g. fast=cpu=60%,max=20,scaleUp.policies=Pods:8/15s (repeatable)")
	fs.StringArrayVar(&o.VariantFiles, "variant-file", nil, "A variant from an HPA manifest, [NAME=]FILE (repeatable)")
	fs.StringVar(&o.Plot, "plot", "", "Also draw the result into FILE.svg or FILE.png")
	fs.IntVar(&o.Width, "width", 0, "Width of the text chart in columns (default: the terminal's, else 80)")
	for flag, exts := range map[string][]string{"variant-file": {"yaml", "yml", "json"}, "plot": {"svg", "png"}} {
		_ = cmd.MarkFlagFilename(flag, exts...)
	}
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// AddInputFlags adds the flags of what is played (the HPA, its workload, the load and the
// model) to cmd: simulate's, which tune shares.
func (o *Options) AddInputFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "filename", "f", "", "Simulate the HorizontalPodAutoscaler in this file (YAML or JSON) instead of one read from the cluster")
	fs.StringVar(&o.LoadFile, "load", "", "Demand curve in total over all pods: CSV (a header time,cpu,... then rows such as 0s,150m) or YAML (kind: Load), see Load file above; required unless --from-recording or --from-prometheus")
	fs.BoolVar(&o.FromPrometheus, "from-prometheus", false, "Take the load from the HPA's metric history in Prometheus (--prometheus-url) over the last --since: per metric the total over the target's pods")
	fs.DurationVar(&o.Since, "since", o.Since, "With --from-prometheus: how far back the load goes")
	cmdutil.AddPrometheusFlags(fs, &o.Prometheus, prometheusUsage)
	fs.StringVar(&o.Recording, "from-recording", "", "A kubectl hpa run --record file: alone, replays run's decisions exactly and says whether every one is reproduced; with variants, plays its demand through the model for the HPA as recorded and each variant")
	fs.StringVar(&o.WorkloadFile, "workload", "", "With -f: the scale target's manifest (Deployment, StatefulSet or ReplicaSet), for its replicas and pod requests")
	fs.Int32Var(&o.Replicas, "replicas", 0, "With -f: the workload's replicas at the start (default: the --workload manifest's, else the HPA's minReplicas)")
	fs.StringVar(&o.Requests, "requests", "", "With -f and no --workload: each pod's requests, e.g. cpu=200m,memory=256Mi")
	fs.DurationVar(&o.Duration, "duration", 0, "How long to simulate (default: until the load's last point)")
	fs.DurationVar(&o.Model.SyncPeriod, "sync-period", o.Model.SyncPeriod, "Model: the controller's sync period (kube-controller-manager --horizontal-pod-autoscaler-sync-period)")
	fs.DurationVar(&o.Model.SyncDuration, "sync-duration", o.Model.SyncDuration, "Model: how long one sync takes (the controller syncs again a sync period after a sync ends)")
	fs.DurationVar(&o.Model.PodCreateDelay, "pod-create-delay", o.Model.PodCreateDelay, "Model: from a scale write to the new pods' creation (and a removed pod's deletion)")
	fs.DurationVar(&o.Model.PodStartDelay, "pod-start-delay", o.Model.PodStartDelay, "Model: from a pod's creationTimestamp (whole seconds) to its container's start")
	fs.DurationVar(&o.Model.PodReadyDelay, "pod-ready-delay", o.Model.PodReadyDelay, "Model: from a container's start to the pod's Ready condition")
	fs.DurationVar(&o.Model.ScrapeInterval, "scrape-interval", o.Model.ScrapeInterval, "Model: metrics-server's --metric-resolution (its usage is over one interval)")
	fs.DurationVar(&o.Model.ScrapeOffset, "scrape-offset", o.Model.ScrapeOffset, "Model: when metrics-server scrapes, relative to the HPA's first sync")
	fs.Int64Var(&o.Model.IdleCPUMilli, "idle-cpu-milli", o.Model.IdleCPUMilli, "Model: cpu a running pod uses with no demand, in millicores")
	fs.Int64Var(&o.Model.IdleMemoryBytes, "idle-memory-bytes", o.Model.IdleMemoryBytes, "Model: memory a running pod uses with no demand, in bytes")
	cmdutil.AddControllerConfigFlags(fs, &o.Model.Controller, "Model: the controller's")
	for flag, exts := range map[string][]string{
		"filename": {"yaml", "yml", "json"}, "workload": {"yaml", "yml", "json"},
		"load": {"csv", "yaml", "yml"}, "from-recording": {"jsonl", "gz"},
	} {
		_ = cmd.MarkFlagFilename(flag, exts...)
	}
}

// modelFlagNames are the flags that set a model parameter, by the parameter's printed name.
var modelFlagNames = map[string]string{
	"sync period": "sync-period", "sync duration": "sync-duration", "tolerance": "tolerance", "downscale stabilization": "downscale-stabilization",
	"cpu initialization period": "cpu-initialization-period", "initial readiness delay": "initial-readiness-delay",
	"scrape interval (metrics window)": "scrape-interval", "scrape offset": "scrape-offset",
	"scale write to pod created": "pod-create-delay", "pod created to started": "pod-start-delay",
	"pod started to Ready": "pod-ready-delay", "idle cpu per pod": "idle-cpu-milli", "idle memory per pod": "idle-memory-bytes",
}

// Complete checks the arguments and flags that need no file and no cluster.
func (o *Options) Complete(cmd *cobra.Command, args []string) error {
	if err := o.CompleteInput(cmd, args); err != nil {
		return err
	}
	if o.Recording != "" && !o.simulatesVariants() {
		if f := o.PrintFlags.OutputFormat; f != nil && *f != "" && *f != "json" {
			return cmdutil.UsageErrorf("--from-recording without a variant replays run's decisions: -o json prints them as run -o json did; -o %s is for simulations", *f)
		}
		if o.Plot != "" {
			return cmdutil.UsageErrorf("--plot draws a simulation: give a --variant to play the recording's demand through the model")
		}
	}
	if o.Width < 0 {
		return cmdutil.UsageErrorf("--width must not be negative, got %d", o.Width)
	}
	if o.Plot != "" {
		if err := plot.CheckPath(o.Plot); err != nil {
			return cmdutil.UsageErrorf("--plot %v", err)
		}
	}
	if o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" {
		p, err := cmdutil.Printer(o.PrintFlags)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		o.printer = p
	}
	return nil
}

// CompleteInput checks the arguments and the flags AddInputFlags adds, needing no file and
// no cluster: simulate's, which tune shares.
func (o *Options) CompleteInput(cmd *cobra.Command, args []string) error {
	if err := o.completePrometheus(cmd.Flags().Changed("prometheus-rate-window")); err != nil {
		return err
	}
	if o.Recording != "" {
		if err := o.completeRecording(cmd, args); err != nil {
			return err
		}
		return o.completeCommon(cmd)
	}
	switch {
	case o.File != "" && len(args) > 0:
		return cmdutil.UsageErrorf("give an HPA NAME or -f FILE, not both")
	case o.File == "" && len(args) == 0:
		return cmdutil.UsageErrorf("an HPA NAME or -f FILE is required: kubectl hpa %s NAME [-n NAMESPACE] --load FILE", o.Command)
	case len(args) > 1:
		return cmdutil.UsageErrorf("unexpected argument %q: kubectl hpa %s takes one HPA NAME", args[1], o.Command)
	}
	if len(args) == 1 {
		if err := cmdutil.OneHPAName(cmd, args); err != nil {
			return err
		}
		o.Name = cmdutil.HPANameOf(args[0])
	}
	if o.LoadFile == "" && !o.FromPrometheus {
		return cmdutil.UsageErrorf("--load FILE is required: a demand curve (CSV or YAML) to play")
	}
	if o.File == "" && (o.WorkloadFile != "" || o.Replicas != 0 || o.Requests != "") {
		return cmdutil.UsageErrorf("--workload, --replicas and --requests apply with -f: with an HPA NAME the workload is read from the cluster")
	}
	return o.completeCommon(cmd)
}

// completeCommon checks the input flags every source of the HPA shares.
func (o *Options) completeCommon(cmd *cobra.Command) error {
	if o.Replicas < 0 {
		return cmdutil.UsageErrorf("--replicas must not be negative, got %d", o.Replicas)
	}
	if o.Duration < 0 {
		return cmdutil.UsageErrorf("--duration must not be negative, got %s", o.Duration)
	}
	if o.Model.Controller.Tolerance < 0 {
		return cmdutil.UsageErrorf("--tolerance must not be negative, got %v", o.Model.Controller.Tolerance)
	}
	if err := o.Model.Validate(); err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	o.modelFlags = map[string]bool{}
	for param, flag := range modelFlagNames {
		if cmd.Flags().Changed(flag) {
			o.modelFlags[param] = true
		}
	}
	ns, explicit, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns, explicit = metav1.NamespaceDefault, false
	}
	o.Namespace, o.ExplicitNamespace = ns, explicit
	return nil
}

// Run reads every input, simulates every variant, writes the plot, and only then prints.
func (o *Options) Run(ctx context.Context) error {
	if o.Recording != "" {
		return o.runFromRecording(ctx)
	}
	in, err := o.ReadInput(ctx)
	if err != nil {
		return err
	}
	return o.play(ctx, in)
}

// play plays in's load for the HPA and each variant, and presents the simulation: every input
// (live, a load file, Prometheus, a recording) ends here.
func (o *Options) play(ctx context.Context, in *Input) error {
	variants, err := o.variants(in.HPA, validation.Options{ScaleToZero: in.Model.Controller.ScaleToZero})
	if err != nil {
		return err
	}
	spec := sim.Spec{Model: in.Model, Load: in.Load, Workload: in.Workload, Duration: o.Duration}
	res, err := simulate(ctx, spec, variants, in.LoadName)
	if err != nil {
		return err
	}
	return o.present(buildSimulation(in.HPA, in.Source, in.LoadName, in.Load, in.Workload, variants, res, o.modelFlags))
}

// readLoad reads the --load file (nothing with --from-prometheus, read once the HPA is).
func (o *Options) readLoad() (load.Curve, error) {
	if o.prom != nil {
		return load.Curve{}, nil
	}
	data, err := os.ReadFile(o.LoadFile)
	if err != nil {
		return load.Curve{}, cmdutil.UsageErrorf("--load: %v", err)
	}
	curve, err := load.Parse(o.LoadFile, data)
	if err != nil {
		return load.Curve{}, cmdutil.UsageErrorf("%v", err)
	}
	return curve, nil
}

// simulate plays spec for every variant; a load the model cannot play is bad input, named
// after loadName.
func simulate(ctx context.Context, spec sim.Spec, variants []variant, loadName string) (*sim.Result, error) {
	spec.Variants = nil
	for _, v := range variants {
		spec.Variants = append(spec.Variants, sim.Variant{Name: v.name, HPA: v.hpa})
	}
	res, err := sim.Run(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, cmdutil.UsageErrorf("%s: %v", loadName, err)
	}
	return res, nil
}

// variants are the HPA as it is (base) and every --variant and --variant-file of it.
func (o *Options) variants(base *autoscalingv2.HorizontalPodAutoscaler, vopts validation.Options) ([]variant, error) {
	variants := []variant{{name: baselineName, hpa: base}}
	seen := map[string]string{baselineName: "the HPA as it is"}
	add := func(v variant, flag string) error {
		if prev, dup := seen[v.name]; dup {
			return cmdutil.UsageErrorf("%s: variant name %q is taken by %s", flag, v.name, prev)
		}
		seen[v.name] = flag
		variants = append(variants, v)
		return nil
	}
	for _, s := range o.Variants {
		v, err := parseVariant(base, s, vopts)
		if err != nil {
			return nil, err
		}
		if err := add(v, "--variant "+s); err != nil {
			return nil, err
		}
	}
	for _, f := range o.VariantFiles {
		v, err := variantFromFile(f, base.Namespace, vopts)
		if err != nil {
			return nil, err
		}
		if err := add(v, "--variant-file "+f); err != nil {
			return nil, err
		}
	}
	return variants, nil
}

// present writes the plot, then prints the simulation.
func (o *Options) present(s *v1alpha1.Simulation) error {
	if o.Plot != "" {
		if err := plot.Write(o.Plot, s); err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--plot: %w", err)}
		}
	}
	if o.printer != nil {
		return o.printer.PrintObj(s, o.Out)
	}
	width := o.Width
	if width == 0 {
		width = o.termWidth(o.Out)
	}
	return RenderText(o.Out, s, output.ChartOptions{Width: width})
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
