package run

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/lease"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const (
	long = `Run the Horizontal Pod Autoscaler control loop in the foreground.

kubectl hpa run watches the HPAs of a namespace (or of every namespace with -A) and
does what the Kubernetes v1.37 HPA controller does every sync period: read the
target's scale, the pods and their metrics, decide, update the scale and the HPA
status, and record events. Use it where the built-in controller is off, or with
--dry-run=client to see what an HPA would do without touching anything.

It never fights another controller: an HPA whose status another manager (such as
kube-controller-manager) wrote recently is only watched, unless --force-ownership
is given. When writing, a Lease makes sure only one kubectl hpa run writes at a time.

Besides its decisions it says when it watches no HPA (and whenever the count changes
after), when it waits for the Lease (who holds it, since when) and when it acquires it,
and in a dry run when another kubectl hpa run holds the Lease, since what happens may
then differ from what it shows (on stderr with -o json).

Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 unexpected failure (server unreachable or
not a Kubernetes API server), 2 bad flags or arguments (or no kubeconfig), 4 the namespace
does not exist, 7 a permission run needs is missing, 8 no metrics source, 9 unauthorized.`

	example = `  # Watch what the HPAs of namespace shop would do, writing nothing
  kubectl hpa run -n shop --dry-run=client

  # Run the control loop for the HPAs labelled team=web, serving Prometheus metrics
  kubectl hpa run -n shop -l team=web --metrics-bind-address 127.0.0.1:8080

  # One JSON object per decision, for scripts
  kubectl hpa run -A --dry-run=client -o json

  # Record every input of every decision, to replay them exactly later
  kubectl hpa run -n shop --record shop.jsonl.gz`
)

// Options are the options of "kubectl hpa run".
type Options struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces bool
	// ExplicitNamespace is whether -n named the namespace (kubectl's enforceNamespace).
	ExplicitNamespace  bool
	Selector           string
	Workers            int
	DryRun             string
	Output             string
	LeaderElect        bool
	LeaseName          string
	LeaseNamespace     string
	MetricsBindAddress string
	// Profiling is --profiling: Go's profiles on /debug/pprof/ beside /metrics.
	Profiling bool
	// Record is --record: the file every sync is written to, for replay.
	Record       string
	KubeAPIQPS   float32
	KubeAPIBurst int
	Controller   controller.Options

	// LeaseDuration, RenewDeadline and RetryPeriod time the Lease as in kube-controller-manager.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// Metrics are the metrics source flags.
	Metrics metrics.Config

	// newMetrics builds the metrics client; replaced in tests.
	newMetrics func(ctx context.Context, o *Options, cfg *rest.Config) (metrics.Client, metrics.Selection, error)
	// isTerminal reports whether Out is a terminal; replaced in tests.
	isTerminal func() bool
}

// NewOptions returns options with kube-controller-manager's defaults.
func NewOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *Options {
	return &Options{
		ConfigFlags: configFlags,
		IOStreams:   streams,
		Workers:     5,
		DryRun:      string(controller.DryRunNone),
		LeaderElect: true,
		LeaseName:   "kubectl-hpa",
		Controller:  controllerDefaults(),
		// kube-controller-manager's defaults.
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		// client-go's own default (5/s) caps a sync pass at 5 HPAs a second: measured on the
		// real cluster, 1,000 HPAs took 3m20s per pass instead of one 15s sync period.
		KubeAPIQPS:   100,
		KubeAPIBurst: 200,
		Metrics:      metrics.DefaultConfig(),
		newMetrics: func(ctx context.Context, o *Options, cfg *rest.Config) (metrics.Client, metrics.Selection, error) {
			// No discovery cache: run chooses once per start, where a cache saves little,
			// and it asks discovery again whenever it reads an API it found unserved.
			dc, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return nil, metrics.Selection{}, fmt.Errorf("creating the discovery client: %w", err)
			}
			return metrics.NewClient(ctx, o.Metrics, cfg, dc, clock.RealClock{})
		},
		isTerminal: func() bool {
			f, ok := streams.Out.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		},
	}
}

// NewCmdRun builds "kubectl hpa run".
func NewCmdRun(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmd(NewOptions(configFlags, streams))
}

func newCmd(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "run [-n NAMESPACE | -A] [-l SELECTOR]",
		Short:   "Run the HPA control loop in the foreground",
		Long:    long,
		Example: example,
		Args:    cmdutil.NoArgs("; select HPAs with -n NAMESPACE, -A or -l SELECTOR"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Reconcile the HPAs of every namespace")
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "Reconcile only the HPAs matching this label selector")
	fs.IntVar(&o.Workers, "workers", o.Workers, "HPAs reconciled in parallel (--concurrent-horizontal-pod-autoscaler-syncs)")
	fs.DurationVar(&o.Controller.SyncPeriod, "sync-period", o.Controller.SyncPeriod, "How often each HPA is reconciled (kube-controller-manager --horizontal-pod-autoscaler-sync-period)")
	cmdutil.AddControllerConfigFlags(fs, &o.Controller.Config, "The loop's")
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, `"none" writes; "client" writes nothing; "server" sends every write with dryRun=All (validated, not persisted)`)
	fs.BoolVar(&o.Controller.ForceOwnership, "force-ownership", o.Controller.ForceOwnership, "Write even for HPAs whose status another controller wrote recently")
	fs.DurationVar(&o.Controller.OwnershipWindow, "ownership-window", o.Controller.OwnershipWindow, "How recent another manager's status write must be for an HPA to count as reconciled by someone else")
	fs.BoolVar(&o.Controller.PersistHistory, "persist-history", o.Controller.PersistHistory, "Keep each HPA's decision history (the recommendations and scale events its next decisions depend on) in its annotation "+annotation.Key+", written with the status, and restore it when starting or taking the Lease over; false keeps it in memory only, as kube-controller-manager does")
	fs.StringVar((*string)(&o.Controller.MetricsReads), "metrics-reads", string(o.Controller.MetricsReads), `"per-namespace" syncs a namespace's HPAs together each period and decides every HPA of it synced within the next second from shared reads: its resource metrics (metrics.k8s.io) once, each HPA on the samples of the pods its own selector picks, and its Pods metrics (custom.metrics.k8s.io) once per metric and label selector, each HPA on every value the adapter returns for its selector, as upstream; "per-hpa" reads them once per HPA and sync and requeues each HPA a period after its sync, as kube-controller-manager does`)
	fs.BoolVar(&o.Controller.ScaleFromCache, "scale-from-cache", o.Controller.ScaleFromCache, "Read the scale of Deployments, ReplicaSets, StatefulSets and ReplicationControllers from watch caches instead of one GET per HPA and sync; other kinds, and kinds that may not be listed, are read live")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Hold a Lease while writing so two kubectl hpa run never both write (off with --dry-run=client)")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", o.LeaseName, "Name of the Lease")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-lease-namespace", o.LeaseNamespace, "Namespace of the Lease (default: the namespace watched, or the kubeconfig's with -A)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits after the holder's last renewal before taking the Lease over (whole seconds)")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the holder keeps retrying a renewal before it stops writing and campaigns for the Lease again; with the retry period and 1s more, less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often the holder renews and a standby tries to acquire the Lease")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second each API client (Kubernetes, events, scales, metrics) may send; in steady state a sync pass costs one metrics request per namespace (per HPA with --metrics-reads=per-hpa)")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests each API client may send in a burst above --kube-api-qps")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address serving Prometheus /metrics and /healthz, e.g. 127.0.0.1:8080 (off when empty)")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's runtime profiles (heap, CPU, goroutines) on /debug/pprof/ at --metrics-bind-address, as kube-controller-manager's --profiling does")
	fs.StringVar(&o.Record, "record", o.Record, "Write every input and result of every sync to this file (JSON Lines, gzipped when it ends in .gz), to replay run's decisions exactly")
	cmdutil.AddMetricsFlags(fs, &o.Metrics)
	fs.StringVarP(&o.Output, "output", "o", o.Output, `Output format: "" (a live table on a terminal, one line per decision otherwise) or "json" (one hpa.kubectl-hpa.io/v1alpha1 Explanation per decision, the schema of explain -o json; history.source is "controller" and a DryRun warning says when nothing was applied)`)
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Complete resolves the namespace and defaults that depend on it.
func (o *Options) Complete() error {
	ns, explicit, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return cmdutil.UsageErrorf("resolving the namespace: %w", err)
	}
	o.Controller.Namespace, o.ExplicitNamespace = ns, explicit
	if o.AllNamespaces {
		o.Controller.Namespace = metav1.NamespaceAll
	}
	if o.LeaseNamespace == "" {
		o.LeaseNamespace = ns
	}
	o.Controller.HPASelector = o.Selector
	o.Controller.DryRun = controller.DryRun(o.DryRun)
	// Only -o json shows a decision's per-pod account; the line and table outputs spare
	// building it for every pod and sync.
	o.Controller.OmitPodTreatments = o.Output != "json"
	return nil
}

// Validate checks flag values.
func (o *Options) Validate() error {
	switch controller.DryRun(o.DryRun) {
	case controller.DryRunNone, controller.DryRunClient, controller.DryRunServer:
	default:
		return cmdutil.UsageErrorf(`--dry-run must be "none", "client" or "server", got %q`, o.DryRun)
	}
	switch o.Controller.MetricsReads {
	case controller.MetricsReadsPerNamespace, controller.MetricsReadsPerHPA:
	default:
		return cmdutil.UsageErrorf(`--metrics-reads must be %q or %q, got %q`, controller.MetricsReadsPerNamespace, controller.MetricsReadsPerHPA, o.Controller.MetricsReads)
	}
	if o.Output != "" && o.Output != "json" {
		return cmdutil.UsageErrorf(`--output must be "json" or empty, got %q`, o.Output)
	}
	if o.Workers < 1 {
		return cmdutil.UsageErrorf("--workers must be at least 1, got %d", o.Workers)
	}
	if o.Controller.SyncPeriod <= 0 {
		return cmdutil.UsageErrorf("--sync-period must be positive, got %v", o.Controller.SyncPeriod)
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		return cmdutil.UsageErrorf("--kube-api-qps must be positive and --kube-api-burst at least 1, got %v and %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return cmdutil.UsageErrorf("--selector %q: %w", o.Selector, err)
	}
	if err := o.Metrics.Validate(); err != nil {
		return cmdutil.UsageErrorf("%w", err)
	}
	if o.writes() && o.LeaderElect && (o.LeaseName == "" || o.LeaseNamespace == "") {
		return cmdutil.UsageErrorf("--leader-elect needs --leader-elect-lease-name and --leader-elect-lease-namespace")
	}
	if o.Profiling && o.MetricsBindAddress == "" {
		return cmdutil.UsageErrorf("--profiling serves on --metrics-bind-address: give both")
	}
	if o.writes() && o.LeaderElect {
		if err := o.leaseConfig().Validate(); err != nil {
			return cmdutil.UsageErrorf("--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period: %w", err)
		}
	}
	return nil
}

func (o *Options) leaseConfig() lease.Config {
	return lease.Config{Namespace: o.LeaseNamespace, Name: o.LeaseName,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod}
}

// writes reports whether anything will be sent to the API server.
func (o *Options) writes() bool { return controller.DryRun(o.DryRun) != controller.DryRunClient }

// Run runs the loop until ctx is cancelled or the reader of its output has gone: it opens
// the recording, connects, chooses the metrics source, checks the permissions, then runs one
// controller, or one per term of the Lease, with /metrics and the live output beside it.
func (o *Options) Run(ctx context.Context) (err error) {
	survivePipeClose()
	ctx, stopOnClosedOutput := context.WithCancel(ctx)
	defer stopOnClosedOutput()
	rec, err := o.openRecording()
	if err != nil {
		return err
	}
	if rec != nil {
		// Every way out closes the recording after the controller stopped: the syncs it
		// reported, those finished during the stop included, are all in the file.
		defer func() {
			if cerr := rec.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	cfg, cl, err := o.connect()
	if err != nil {
		return err
	}
	mc, sel, err := o.chooseMetrics(ctx, cfg)
	if err != nil {
		return err
	}
	if err := o.preflight(ctx, cl.kube, sel, cl.scales.Mapper); err != nil {
		return err
	}
	r := newRenderer(o, mc.Source(), stopOnClosedOutput)
	if err := o.startRecording(rec, mc.Source(), r); err != nil {
		return err
	}
	l := newLoop(o, mc, r, rec)
	if o.Controller.DryRun != controller.DryRunNone {
		o.noteOtherWriter(ctx, cl.kube, r)
	}
	host, _ := os.Hostname()
	var c *controller.Controller
	if !o.leased() {
		if c, err = l.newController(cl, host, time.Time{}); err != nil {
			return cmdutil.UsageErrorf("%w", err)
		}
		l.activate(c)
	}
	if o.MetricsBindAddress != "" {
		stop, bound, err := serveMetrics(ctx, o.MetricsBindAddress, l.handler(o.Profiling))
		if err != nil {
			return err
		}
		defer stop()
		served := "/metrics and /healthz"
		if o.Profiling {
			served = "/metrics, /healthz and /debug/pprof/"
		}
		l.note("serving " + served + " on " + bound)
	}
	renderDone := r.start(ctx)
	defer renderDone()
	if !o.leased() {
		err = c.Run(ctx, o.Workers)
		l.stopped()
		return err
	}
	return o.runLeased(ctx, cfg, cl.kube, l, host)
}

// leased reports whether run holds a Lease: only while it writes.
func (o *Options) leased() bool { return o.writes() && o.LeaderElect }

// openRecording creates the --record file, if any (nil without --record).
func (o *Options) openRecording() (*recorder, error) {
	if o.Record == "" {
		return nil, nil
	}
	return openRecording(o.Record)
}

// startRecording writes the recording's header and starts flushing it (nothing without
// --record); a failure later is noted through r.
func (o *Options) startRecording(rec *recorder, metricsSource string, r *renderer) error {
	if rec == nil {
		return nil
	}
	return rec.start(o.recordingHeader(metricsSource, time.Now()), r.note)
}

// connect builds the clients of the API server the kubeconfig names, at run's request
// rates, and checks that it is one.
func (o *Options) connect() (*rest.Config, clients, error) {
	cfg, err := cmdutil.RESTConfig(o.ConfigFlags)
	if err != nil {
		return nil, clients{}, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	cl, err := loopClients(cfg)
	if err != nil {
		return nil, clients{}, err
	}
	// Bad credentials, a wrong address or a server that is not an API server fail here,
	// as what they are, rather than as a metrics source that could not be chosen.
	if err := cmdutil.CheckAPIServer(cl.kube.Discovery(), cfg.Host); err != nil {
		return nil, clients{}, err
	}
	return cfg, cl, nil
}

// chooseMetrics chooses the metrics source: a cluster that cannot be reached is reported as
// that, a cluster serving no metrics as ExitMetricsUnavailable.
func (o *Options) chooseMetrics(ctx context.Context, cfg *rest.Config) (metrics.Client, metrics.Selection, error) {
	mc, sel, err := o.newMetrics(ctx, o, cfg)
	if err != nil {
		if ee := cmdutil.ClusterAccessError("choosing a metrics source", err); ee != nil {
			return nil, sel, ee
		}
		return nil, sel, &cmdutil.ExitError{Code: cmdutil.ExitMetricsUnavailable, Err: fmt.Errorf("choosing a metrics source: %w", err)}
	}
	klog.FromContext(ctx).V(1).Info("Metrics source chosen", "source", sel.Source, "detail", sel.Detail, "reason", sel.Reason)
	return mc, sel, nil
}

// runLeased waits for the Lease and runs a controller for every term run holds it, as
// identity host_UUID; it notes when it waits and when it acquires the Lease.
func (o *Options) runLeased(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface, l *loop, host string) error {
	leaseCfg := o.leaseConfig()
	leaseCfg.Identity = host + "_" + string(uuid.NewUUID())
	leaseCfg.OnWaiting = func(holder string, since time.Time) {
		held := ""
		if !since.IsZero() {
			held = " since " + since.UTC().Format(time.RFC3339)
		}
		l.note(fmt.Sprintf("standby: Lease %s/%s is held by %s%s; this run (%s) writes nothing until it takes the Lease over", leaseCfg.Namespace, leaseCfg.Name, holder, held, leaseCfg.Identity))
	}
	leaseCfg.OnAcquired = func() {
		l.note(fmt.Sprintf("acquired Lease %s/%s as %s: this run writes", leaseCfg.Namespace, leaseCfg.Name, leaseCfg.Identity))
	}
	leaseCfg.OnLost = func(reason string) {
		l.note(fmt.Sprintf("lost Lease %s/%s: %s; stopped writing, campaigning for it again", leaseCfg.Namespace, leaseCfg.Name, reason))
	}
	if err := l.keepPods(ctx, cfg); err != nil {
		return err
	}
	klog.FromContext(ctx).V(1).Info("Waiting for the lease before writing", "lease", klog.KRef(leaseCfg.Namespace, leaseCfg.Name), "identity", leaseCfg.Identity)
	return lease.RunTerms(ctx, kube, leaseCfg, func(ctx context.Context, term lease.Term) error {
		return l.runTerm(ctx, cfg, leaseCfg.Identity, term)
	})
}

// controllerDefaults are the controller's defaults with the history persisted.
func controllerDefaults() controller.Options {
	o := controller.DefaultOptions()
	o.PersistHistory = true
	return o
}
