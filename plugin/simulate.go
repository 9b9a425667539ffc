package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/controller/sim"
	"github.com/kubectl-hpa/kubectl-hpa/controller/sim/load"
	"github.com/kubectl-hpa/kubectl-hpa/controller/validation"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/plot"
)

const simulateLong = `Play a demand curve through a model of the cluster and the exact HPA controller, in virtual
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

Nothing is printed until every input is read and every variant simulated: bad input exits
with one line naming the flag or file, line and field. Exit codes as for explain: 0 done,
1 unexpected failure, 2 bad flags, arguments or input files, 3 HPA not found, 4 wrong
namespace, 5 target not found, 6 target not scalable, 7 forbidden, 9 unauthorized.`

const simulateExample = `  # The HPA web as it is and with a lower target and faster scale-up, under load.csv
  kubectl hpa simulate web -n shop --load load.csv \
    --variant fast=cpu=60%,scaleUp.policies=Pods:8/15s

  # No cluster: the HPA and the workload from files, a chart as SVG
  kubectl hpa simulate -f hpa.yaml --workload deploy.yaml --load load.yaml --plot web.svg`

// SimulateOptions are the inputs of "kubectl hpa simulate".
type SimulateOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	PrintFlags  *genericclioptions.PrintFlags
	genericiooptions.IOStreams

	Name      string
	Namespace string

	File     string
	LoadFile string
	// Recording is --from-recording: a run --record file, replayed exactly, or its demand
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

	// newClients builds the cluster clients; tests replace it with fakes.
	newClients func(ctx context.Context) (*explainClients, string, error)
	// newKube builds the client shell completion lists HPAs with.
	newKube func() (kubernetes.Interface, string, error)
	// termWidth sizes the chart; tests replace it.
	termWidth func(io.Writer) int

	printer    printers.ResourcePrinter
	modelFlags map[string]bool // model flags given on the command line
}

// NewSimulateOptions returns options with the model's defaults.
func NewSimulateOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *SimulateOptions {
	printFlags := genericclioptions.NewPrintFlags("")
	printFlags.NamePrintFlags = nil
	o := &SimulateOptions{
		ConfigFlags: configFlags,
		PrintFlags:  printFlags,
		IOStreams:   streams,
		Model:       sim.DefaultModel(),
		termWidth:   terminalWidth,
		newKube:     kubeFromFlags(configFlags),
		Since:       6 * time.Hour,
		now:         time.Now,
	}
	o.newClients = func(ctx context.Context) (*explainClients, string, error) {
		eo := NewExplainOptions(configFlags, streams)
		// simulate reads no metrics: the model makes them.
		eo.newMetrics = func(context.Context, *ExplainOptions, *rest.Config, discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error) {
			return nil, metrics.Selection{}, errors.New("simulate reads no metrics")
		}
		c, err := clientsFromFlags(ctx, eo)
		return c, eo.host, err
	}
	return o
}

// NewCmdSimulate builds "kubectl hpa simulate".
func NewCmdSimulate(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdSimulate(NewSimulateOptions(configFlags, streams))
}

func newCmdSimulate(o *SimulateOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "simulate NAME [-n NAMESPACE] --load FILE | simulate -f HPA.yaml --load FILE",
		DisableFlagsInUseLine: true,
		Short:                 "Play a demand curve through the exact controller over time, for the HPA and variants of it",
		Long:                  simulateLong,
		Example:               simulateExample,
		Args:                  cobra.ArbitraryArgs,
		ValidArgsFunction:     completeHPANames(o.newKube),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.PrintFlags.AddFlags(cmd)
	fs := cmd.Flags()
	fs.StringVarP(&o.File, "filename", "f", "", "Simulate the HorizontalPodAutoscaler in this file (YAML or JSON) instead of one read from the cluster")
	fs.StringVar(&o.LoadFile, "load", "", "Demand curve: CSV (time,cpu,... per row) or YAML (kind Load); required unless --from-recording or --from-prometheus")
	fs.BoolVar(&o.FromPrometheus, "from-prometheus", false, "Take the load from the HPA's metric history in Prometheus (--prometheus-url) over the last --since: per metric the total over the target's pods")
	fs.DurationVar(&o.Since, "since", o.Since, "With --from-prometheus: how far back the load goes")
	AddPrometheusFlags(fs, &o.Prometheus)
	fs.StringVar(&o.Recording, "from-recording", "", "A kubectl hpa run --record file: alone, replays run's decisions exactly and says whether every one is reproduced; with variants, plays its demand through the model for the HPA as recorded and each variant")
	fs.StringVar(&o.WorkloadFile, "workload", "", "With -f: the scale target's manifest (Deployment, StatefulSet or ReplicaSet), for its replicas and pod requests")
	fs.Int32Var(&o.Replicas, "replicas", 0, "With -f: the workload's replicas at the start (default: the --workload manifest's, else the HPA's minReplicas)")
	fs.StringVar(&o.Requests, "requests", "", "With -f and no --workload: each pod's requests, e.g. cpu=200m,memory=256Mi")
	fs.DurationVar(&o.Duration, "duration", 0, "How long to simulate (default: until the load's last point)")
	fs.StringArrayVar(&o.Variants, "variant", nil, "A variant NAME=KEY=VALUE[,KEY=VALUE...], e.g. fast=cpu=60%,max=20,scaleUp.policies=Pods:8/15s (repeatable)")
	fs.StringArrayVar(&o.VariantFiles, "variant-file", nil, "A variant from an HPA manifest, [NAME=]FILE (repeatable)")
	fs.StringVar(&o.Plot, "plot", "", "Also draw the result into FILE.svg or FILE.png")
	fs.IntVar(&o.Width, "width", 0, "Width of the text chart in columns (default: the terminal's, else 80)")
	AddSyncPeriodFlag(fs, &o.Model.SyncPeriod)
	fs.DurationVar(&o.Model.SyncDuration, "sync-duration", o.Model.SyncDuration, "Model: how long one sync takes (the controller syncs again a sync period after a sync ends)")
	fs.DurationVar(&o.Model.PodCreateDelay, "pod-create-delay", o.Model.PodCreateDelay, "Model: from a scale write to the new pods' creation (and a removed pod's deletion)")
	fs.DurationVar(&o.Model.PodStartDelay, "pod-start-delay", o.Model.PodStartDelay, "Model: from a pod's creationTimestamp (whole seconds) to its container's start")
	fs.DurationVar(&o.Model.PodReadyDelay, "pod-ready-delay", o.Model.PodReadyDelay, "Model: from a container's start to the pod's Ready condition")
	fs.DurationVar(&o.Model.ScrapeInterval, "scrape-interval", o.Model.ScrapeInterval, "Model: metrics-server's --metric-resolution (its usage is over one interval)")
	fs.DurationVar(&o.Model.ScrapeOffset, "scrape-offset", o.Model.ScrapeOffset, "Model: when metrics-server scrapes, relative to the HPA's first sync")
	fs.Int64Var(&o.Model.IdleCPUMilli, "idle-cpu-milli", o.Model.IdleCPUMilli, "Model: cpu a running pod uses with no demand, in millicores")
	fs.Int64Var(&o.Model.IdleMemoryBytes, "idle-memory-bytes", o.Model.IdleMemoryBytes, "Model: memory a running pod uses with no demand, in bytes")
	AddControllerConfigFlags(fs, &o.Model.Controller)
	for flag, exts := range map[string][]string{
		"filename": {"yaml", "yml", "json"}, "workload": {"yaml", "yml", "json"}, "variant-file": {"yaml", "yml", "json"},
		"load": {"csv", "yaml", "yml"}, "plot": {"svg", "png"}, "from-recording": {"jsonl", "gz"},
	} {
		_ = cmd.MarkFlagFilename(flag, exts...)
	}
	withUsageExitCodes(cmd)
	return cmd
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
func (o *SimulateOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.completePrometheus(); err != nil {
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
		return usageErrorf("give an HPA NAME or -f FILE, not both")
	case o.File == "" && len(args) == 0:
		return usageErrorf("an HPA NAME or -f FILE is required: kubectl hpa simulate NAME [-n NAMESPACE] --load FILE")
	case len(args) > 1:
		return usageErrorf("unexpected argument %q: kubectl hpa simulate takes one HPA NAME", args[1])
	}
	if len(args) == 1 {
		if err := oneHPAName(cmd, args); err != nil {
			return err
		}
		o.Name = hpaNameOf(args[0])
	}
	if o.LoadFile == "" && !o.FromPrometheus {
		return usageErrorf("--load FILE is required: a demand curve (CSV or YAML) to play")
	}
	if o.File == "" && (o.WorkloadFile != "" || o.Replicas != 0 || o.Requests != "") {
		return usageErrorf("--workload, --replicas and --requests apply with -f: with an HPA NAME the workload is read from the cluster")
	}
	return o.completeCommon(cmd)
}

// completeCommon checks the flags every source of the HPA shares.
func (o *SimulateOptions) completeCommon(cmd *cobra.Command) error {
	if o.Replicas < 0 {
		return usageErrorf("--replicas must not be negative, got %d", o.Replicas)
	}
	if o.Duration < 0 {
		return usageErrorf("--duration must not be negative, got %s", o.Duration)
	}
	if o.Width < 0 {
		return usageErrorf("--width must not be negative, got %d", o.Width)
	}
	if o.Model.Controller.Tolerance < 0 {
		return usageErrorf("--tolerance must not be negative, got %v", o.Model.Controller.Tolerance)
	}
	if err := o.Model.Validate(); err != nil {
		return usageErrorf("%v", err)
	}
	if o.Plot != "" {
		if err := plot.CheckPath(o.Plot); err != nil {
			return usageErrorf("--plot %v", err)
		}
	}
	o.modelFlags = map[string]bool{}
	for param, flag := range modelFlagNames {
		if cmd.Flags().Changed(flag) {
			o.modelFlags[param] = true
		}
	}
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = metav1.NamespaceDefault
	}
	o.Namespace = ns
	if o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != "" {
		p, err := o.PrintFlags.ToPrinter()
		if err != nil {
			return usageErrorf("%v", err)
		}
		o.printer = p
	}
	return nil
}

// Run reads every input, simulates every variant, writes the plot, and only then prints.
func (o *SimulateOptions) Run(ctx context.Context) error {
	if o.Recording != "" {
		return o.runFromRecording(ctx)
	}
	var (
		curve    load.Curve
		loadName = o.LoadFile
	)
	if o.prom == nil {
		data, err := os.ReadFile(o.LoadFile)
		if err != nil {
			return usageErrorf("--load: %v", err)
		}
		if curve, err = load.Parse(o.LoadFile, data); err != nil {
			return usageErrorf("%v", err)
		}
	}
	vopts := validation.Options{ScaleToZero: o.Model.Controller.ScaleToZero}
	base, workload, source, err := o.readHPAAndWorkload(ctx, vopts)
	if err != nil {
		return err
	}
	if o.prom != nil {
		if curve, err = loadFromPrometheus(ctx, o.prom, base, o.Since, o.now()); err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("--from-prometheus: %w", err)}
		}
		loadName = fmt.Sprintf("prometheus %s, the last %s", o.prom.Address(), o.Since)
	}
	variants, err := o.variants(base, vopts)
	if err != nil {
		return err
	}
	spec := sim.Spec{Model: o.Model, Load: curve, Workload: workload, Duration: o.Duration}
	for _, v := range variants {
		spec.Variants = append(spec.Variants, sim.Variant{Name: v.name, HPA: v.hpa})
	}
	res, err := sim.Run(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return usageErrorf("%s: %v", loadName, err)
	}
	return o.present(buildSimulation(base, source, loadName, curve, workload, variants, res, o.modelFlags))
}

// variants are the HPA as it is (base) and every --variant and --variant-file of it.
func (o *SimulateOptions) variants(base *autoscalingv2.HorizontalPodAutoscaler, vopts validation.Options) ([]variant, error) {
	variants := []variant{{name: baselineName, hpa: base}}
	seen := map[string]string{baselineName: "the HPA as it is"}
	add := func(v variant, flag string) error {
		if prev, dup := seen[v.name]; dup {
			return usageErrorf("%s: variant name %q is taken by %s", flag, v.name, prev)
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
func (o *SimulateOptions) present(s *output.Simulation) error {
	if o.Plot != "" {
		if err := plot.Write(o.Plot, s); err != nil {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("--plot: %w", err)}
		}
	}
	if o.printer != nil {
		return o.printer.PrintObj(s, o.Out)
	}
	width := o.Width
	if width == 0 {
		width = o.termWidth(o.Out)
	}
	return output.RenderSimulationText(o.Out, s, output.SimulationTextOptions{Width: width})
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

// readHPAAndWorkload reads the HPA and its workload from files (-f) or from the cluster.
func (o *SimulateOptions) readHPAAndWorkload(ctx context.Context, vopts validation.Options) (*autoscalingv2.HorizontalPodAutoscaler, sim.Workload, string, error) {
	if o.File != "" {
		hpa, err := readHPAFile(o.File, o.Namespace, vopts)
		if err != nil {
			return nil, sim.Workload{}, "", err
		}
		// As kubectl apply -f: a namespace given with -n must not contradict the file's.
		if ns := o.ConfigFlags.Namespace; ns != nil && *ns != "" && *ns != hpa.Namespace {
			return nil, sim.Workload{}, "", usageErrorf("%s: the HPA's namespace %q does not match -n %s", o.File, hpa.Namespace, *ns)
		}
		w, err := o.workloadFromFlags(hpa)
		return hpa, w, "file " + o.File, err
	}
	c, host, err := o.newClients(ctx)
	if err != nil {
		return nil, sim.Workload{}, "", err
	}
	eo := &ExplainOptions{Name: o.Name, Namespace: o.Namespace, clients: c, host: host}
	hpa, err := c.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, sim.Workload{}, "", eo.hpaError(ctx, err)
	}
	ref := hpa.Spec.ScaleTargetRef
	sc, err := c.Scales.Scale(ctx, o.Namespace, ref)
	if err != nil {
		return nil, sim.Workload{}, "", targetExitError(hpa, err, c.Discovery)
	}
	sel, err := labels.Parse(sc.Selector)
	if err != nil {
		return nil, sim.Workload{}, "", &ExitError{Code: ExitFailure, Err: fmt.Errorf("the scale of %s/%s has selector %q: %w", ref.Kind, ref.Name, sc.Selector, err)}
	}
	pods, err := c.Pods.Pods(ctx, o.Namespace, sel)
	if err != nil {
		return nil, sim.Workload{}, "", apiExitError(fmt.Sprintf("listing the pods of %s/%s", ref.Kind, ref.Name), err)
	}
	// The newest pod's spec is the template's as of the latest rollout.
	var newest *corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	if newest == nil {
		return nil, sim.Workload{}, "", usageErrorf("%s/%s has no pods to read the requests from: simulate with -f and --requests instead", ref.Kind, ref.Name)
	}
	return hpa, sim.Workload{Name: ref.Name, Replicas: sc.SpecReplicas, Pod: *newest.Spec.DeepCopy()}, "cluster", nil
}

// workloadFromFlags is the -f workload: --workload's manifest, or --replicas and --requests.
func (o *SimulateOptions) workloadFromFlags(hpa *autoscalingv2.HorizontalPodAutoscaler) (sim.Workload, error) {
	w := sim.Workload{Name: hpa.Spec.ScaleTargetRef.Name, Replicas: 1}
	if hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas > 0 {
		w.Replicas = *hpa.Spec.MinReplicas
	}
	switch {
	case o.WorkloadFile != "" && o.Requests != "":
		return w, usageErrorf("--requests and --workload both give the pods' requests: give one")
	case o.WorkloadFile != "":
		replicas, pod, err := readWorkloadFile(o.WorkloadFile)
		if err != nil {
			return w, err
		}
		w.Pod = pod
		if replicas != nil {
			w.Replicas = *replicas
		}
	case o.Requests != "":
		reqs, err := parseRequests(o.Requests)
		if err != nil {
			return w, err
		}
		w.Pod = corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: reqs}}}}
	default:
		return w, usageErrorf("-f needs the workload's pod requests: --requests cpu=200m[,memory=256Mi] or --workload deploy.yaml")
	}
	if o.Replicas > 0 {
		w.Replicas = o.Replicas
	}
	return w, nil
}

// parseRequests reads --requests cpu=200m,memory=256Mi.
func parseRequests(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, usageErrorf("--requests %q: want RESOURCE=QUANTITY[,...], e.g. cpu=200m,memory=256Mi", s)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() <= 0 {
			return nil, usageErrorf("--requests %s: %q is not a positive quantity", kv, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// readWorkloadFile reads the replicas and pod template of a Deployment, StatefulSet or
// ReplicaSet manifest, strictly.
func readWorkloadFile(path string) (*int32, corev1.PodSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, corev1.PodSpec{}, usageErrorf("--workload: %v", err)
	}
	var meta metav1.TypeMeta
	if err := sigsyaml.Unmarshal(data, &meta); err != nil {
		return nil, corev1.PodSpec{}, usageErrorf("--workload %s: %v", path, err)
	}
	decode := func(into any) error {
		if err := sigsyaml.UnmarshalStrict(data, into); err != nil {
			return usageErrorf("--workload %s: %v", path, err)
		}
		return nil
	}
	switch meta.Kind {
	case "Deployment":
		var d appsv1.Deployment
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	case "StatefulSet":
		var d appsv1.StatefulSet
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	case "ReplicaSet":
		var d appsv1.ReplicaSet
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	}
	return nil, corev1.PodSpec{}, usageErrorf("--workload %s: kind %q: want a Deployment, StatefulSet or ReplicaSet", path, meta.Kind)
}

// buildSimulation is the versioned object of a run.
func buildSimulation(base *autoscalingv2.HorizontalPodAutoscaler, source, loadFile string, curve load.Curve, w sim.Workload, variants []variant, res *sim.Result, modelFlags map[string]bool) *output.Simulation {
	s := output.NewSimulation()
	s.Metadata = output.Metadata{Name: base.Name, Namespace: base.Namespace, UID: base.UID, Generation: base.Generation, ResourceVersion: base.ResourceVersion}
	s.Source = source
	s.Load = output.SimLoad{File: loadFile, Metrics: slices.Clone(curve.Metrics), Interpolation: curve.Interpolation.String(), Points: len(curve.Points)}
	s.DurationSeconds = res.Duration.Seconds()
	for _, p := range res.Model.Params() {
		src := p.Source
		if modelFlags[p.Name] {
			src = "flag --" + modelFlagNames[p.Name]
		}
		s.Model = append(s.Model, output.SimParam{Name: p.Name, Value: p.Value, Source: src})
	}
	s.Workload = output.SimWorkload{Kind: base.Spec.ScaleTargetRef.Kind, Name: base.Spec.ScaleTargetRef.Name, Replicas: w.Replicas, Requests: podRequests(w.Pod)}
	for i, vr := range res.Variants {
		v := variants[i]
		ov := output.SimVariant{Name: vr.Name, Changes: v.changes, MaxReplicas: v.hpa.Spec.MaxReplicas, MinReplicas: 1}
		if v.hpa.Spec.MinReplicas != nil {
			ov.MinReplicas = *v.hpa.Spec.MinReplicas
		}
		for _, m := range v.hpa.Spec.Metrics {
			if t := targetOf(&m); t != nil {
				ov.Targets = append(ov.Targets, output.SimTarget{Metric: output.ShortName(m), Target: output.FormatTarget(*t)})
			}
		}
		sm := vr.Summary
		ov.Summary = output.SimSummary{
			PeakReplicas: sm.PeakReplicas, PeakAtSeconds: sm.PeakAt.Seconds(), PodSeconds: sm.PodSeconds,
			SecondsAboveTarget: sm.SecondsAboveTarget, ScaleUps: sm.ScaleUps, ScaleDowns: sm.ScaleDowns,
		}
		for c, n := range sm.HeldBackBy {
			if ov.Summary.HeldBackBy == nil {
				ov.Summary.HeldBackBy = map[string]int{}
			}
			ov.Summary.HeldBackBy[string(c)] = n
		}
		ov.Steps = make([]output.SimStep, 0, len(vr.Steps))
		for _, st := range vr.Steps {
			step := output.SimStep{AtSeconds: st.At.Seconds(), Replicas: st.Replicas, Ready: st.Ready, Desired: st.Desired, Scaled: st.Scaled}
			if st.Constraint != replicas.ConstraintNone {
				step.Constraint = string(st.Constraint)
			}
			for j, val := range st.Metrics {
				if j >= len(vr.Metrics) || math.IsNaN(val) || vr.Metrics[j].Target == 0 { // not measured
					continue
				}
				if step.Utilization == nil {
					step.Utilization = map[string]float64{}
				}
				mi := vr.Metrics[j]
				step.Utilization[mi.Name] = roundTo(val/mi.Target*100, 1)
			}
			ov.Steps = append(ov.Steps, step)
		}
		s.Variants = append(s.Variants, ov)
	}
	return s
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// podRequests sums the containers' requests of a pod template, as quantities.
func podRequests(spec corev1.PodSpec) map[string]string {
	sum := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			acc := sum[name]
			acc.Add(q)
			sum[name] = acc
		}
	}
	out := map[string]string{}
	for name, q := range sum {
		out[string(name)] = q.String()
	}
	return out
}

// completePrometheus checks --from-prometheus and the --prometheus-* flags and builds the
// reader.
func (o *SimulateOptions) completePrometheus() error {
	if !o.FromPrometheus {
		if o.Prometheus.Enabled() {
			return usageErrorf("--prometheus-url is read with --from-prometheus: give both, or neither")
		}
		if err := o.Prometheus.Validate(); err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		return nil
	}
	switch {
	case o.LoadFile != "":
		return usageErrorf("--load and --from-prometheus both give the load: give one")
	case o.Recording != "":
		return usageErrorf("--from-recording and --from-prometheus both give the load: give one")
	case o.File != "":
		return usageErrorf("--from-prometheus reads the series of the HPA's pods in the cluster: give an HPA NAME, not -f")
	case !o.Prometheus.Enabled():
		return usageErrorf("--from-prometheus needs --prometheus-url")
	case o.Since <= 0:
		return usageErrorf("--since must be positive, got %s", o.Since)
	}
	r, err := prometheus.New(o.Prometheus)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	o.prom = r
	return nil
}
