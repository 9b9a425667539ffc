package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/lease"
	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

const (
	runLong = `Run the Horizontal Pod Autoscaler control loop in the foreground.

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

	runExample = `  # Watch what the HPAs of namespace shop would do, writing nothing
  kubectl hpa run -n shop --dry-run=client

  # Run the control loop for the HPAs labelled team=web, serving Prometheus metrics
  kubectl hpa run -n shop -l team=web --metrics-bind-address 127.0.0.1:8080

  # One JSON object per decision, for scripts
  kubectl hpa run -A --dry-run=client -o json

  # Record every input of every decision, to replay them exactly later
  kubectl hpa run -n shop --record shop.jsonl.gz`
)

// RunOptions are the options of "kubectl hpa run".
type RunOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	AllNamespaces      bool
	Selector           string
	Workers            int
	DryRun             string
	Output             string
	LeaderElect        bool
	LeaseName          string
	LeaseNamespace     string
	MetricsBindAddress string
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
	newMetrics func(ctx context.Context, o *RunOptions, cfg *rest.Config) (metrics.Client, metrics.Selection, error)
	// isTerminal reports whether Out is a terminal; replaced in tests.
	isTerminal func() bool
}

// NewRunOptions returns options with kube-controller-manager's defaults.
func NewRunOptions(configFlags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *RunOptions {
	return &RunOptions{
		ConfigFlags: configFlags,
		IOStreams:   streams,
		Workers:     5,
		DryRun:      string(controller.DryRunNone),
		LeaderElect: true,
		LeaseName:   "kubectl-hpa",
		Controller:  runControllerDefaults(),
		// kube-controller-manager's defaults.
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
		// client-go's own default (5/s) caps a sync pass at 5 HPAs a second: measured on the
		// real cluster, 1,000 HPAs took 3m20s per pass instead of one 15s sync period.
		KubeAPIQPS:   100,
		KubeAPIBurst: 200,
		Metrics:      metrics.DefaultConfig(),
		newMetrics: func(ctx context.Context, o *RunOptions, cfg *rest.Config) (metrics.Client, metrics.Selection, error) {
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
	return newCmdRun(NewRunOptions(configFlags, streams))
}

func newCmdRun(o *RunOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "run [-n NAMESPACE | -A] [-l SELECTOR]",
		Short:   "Run the HPA control loop in the foreground",
		Long:    runLong,
		Example: runExample,
		Args:    noArgs("; select HPAs with -n NAMESPACE, -A or -l SELECTOR"),
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
	AddSyncPeriodFlag(fs, &o.Controller.SyncPeriod)
	AddControllerConfigFlags(fs, &o.Controller.Config)
	fs.StringVar(&o.DryRun, "dry-run", o.DryRun, `"none" writes; "client" writes nothing; "server" sends every write with dryRun=All (validated, not persisted)`)
	fs.BoolVar(&o.Controller.ForceOwnership, "force-ownership", o.Controller.ForceOwnership, "Write even for HPAs whose status another controller wrote recently")
	fs.DurationVar(&o.Controller.OwnershipWindow, "ownership-window", o.Controller.OwnershipWindow, "How recent another manager's status write must be for an HPA to count as reconciled by someone else")
	fs.BoolVar(&o.Controller.PersistHistory, "persist-history", o.Controller.PersistHistory, "Keep each HPA's decision history (the recommendations and scale events its next decisions depend on) in its annotation "+annotation.Key+", written with the status, and restore it when starting or taking the Lease over; false keeps it in memory only, as kube-controller-manager does")
	fs.BoolVar(&o.Controller.ScaleFromCache, "scale-from-cache", o.Controller.ScaleFromCache, "Read the scale of Deployments, ReplicaSets, StatefulSets and ReplicationControllers from watch caches instead of one GET per HPA and sync; other kinds, and kinds that may not be listed, are read live")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Hold a Lease while writing so two kubectl hpa run never both write (off with --dry-run=client)")
	fs.StringVar(&o.LeaseName, "leader-elect-lease-name", o.LeaseName, "Name of the Lease")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-lease-namespace", o.LeaseNamespace, "Namespace of the Lease (default: the namespace watched, or the kubeconfig's with -A)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a standby waits after the holder's last renewal before taking the Lease over (whole seconds)")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the holder keeps retrying a renewal before it stops writing and campaigns for the Lease again; with the retry period and 1s more, less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often the holder renews and a standby tries to acquire the Lease")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Requests per second each API client (Kubernetes, scales, metrics) may send; a sync costs one request per HPA in steady state")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests each API client may send in a burst above --kube-api-qps")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address serving Prometheus /metrics and /healthz, e.g. 127.0.0.1:8080 (off when empty)")
	fs.StringVar(&o.Record, "record", o.Record, "Write every input and result of every sync to this file (JSON Lines, gzipped when it ends in .gz), to replay run's decisions exactly")
	AddMetricsFlags(fs, &o.Metrics)
	fs.StringVarP(&o.Output, "output", "o", o.Output, `Output format: "" (a live table on a terminal, one line per decision otherwise) or "json" (one hpa.kubectl-hpa.io/v1alpha1 Explanation per decision, the schema of explain -o json; history.source is "controller" and a DryRun warning says when nothing was applied)`)
	withUsageExitCodes(cmd)
	return cmd
}

// Complete resolves the namespace and defaults that depend on it.
func (o *RunOptions) Complete() error {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return usageErrorf("resolving the namespace: %w", err)
	}
	o.Controller.Namespace = ns
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
func (o *RunOptions) Validate() error {
	switch controller.DryRun(o.DryRun) {
	case controller.DryRunNone, controller.DryRunClient, controller.DryRunServer:
	default:
		return usageErrorf(`--dry-run must be "none", "client" or "server", got %q`, o.DryRun)
	}
	if o.Output != "" && o.Output != "json" {
		return usageErrorf(`--output must be "json" or empty, got %q`, o.Output)
	}
	if o.Workers < 1 {
		return usageErrorf("--workers must be at least 1, got %d", o.Workers)
	}
	if o.Controller.SyncPeriod <= 0 {
		return usageErrorf("--sync-period must be positive, got %v", o.Controller.SyncPeriod)
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		return usageErrorf("--kube-api-qps must be positive and --kube-api-burst at least 1, got %v and %d", o.KubeAPIQPS, o.KubeAPIBurst)
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return usageErrorf("--selector %q: %w", o.Selector, err)
	}
	if err := o.Metrics.Validate(); err != nil {
		return usageErrorf("%w", err)
	}
	if o.writes() && o.LeaderElect && (o.LeaseName == "" || o.LeaseNamespace == "") {
		return usageErrorf("--leader-elect needs --leader-elect-lease-name and --leader-elect-lease-namespace")
	}
	if o.writes() && o.LeaderElect {
		if err := o.leaseConfig().Validate(); err != nil {
			return usageErrorf("--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period: %w", err)
		}
	}
	return nil
}

func (o *RunOptions) leaseConfig() lease.Config {
	return lease.Config{Namespace: o.LeaseNamespace, Name: o.LeaseName,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod}
}

// writes reports whether anything will be sent to the API server.
func (o *RunOptions) writes() bool { return controller.DryRun(o.DryRun) != controller.DryRunClient }

// Run runs the loop until ctx is cancelled.
func (o *RunOptions) Run(ctx context.Context) (err error) {
	logger := klog.FromContext(ctx)
	var rec *runRecorder
	if o.Record != "" {
		if rec, err = openRecording(o.Record); err != nil {
			return err
		}
		// Every way out closes the recording after the controller stopped: the syncs it
		// reported, those finished during the stop included, are all in the file.
		defer func() {
			if cerr := rec.close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	cfg, err := restConfig(o.ConfigFlags)
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	scales, err := live.NewScaleClient(cfg)
	if err != nil {
		return err
	}
	// Bad credentials, a wrong address or a server that is not an API server fail here,
	// as what they are, rather than as a metrics source that could not be chosen.
	if err := checkAPIServer(kube.Discovery(), cfg.Host); err != nil {
		return err
	}
	mc, sel, err := o.newMetrics(ctx, o, cfg)
	if err != nil {
		if ee := clusterAccessError("choosing a metrics source", err); ee != nil {
			return ee
		}
		return &ExitError{Code: ExitMetricsUnavailable, Err: fmt.Errorf("choosing a metrics source: %w", err)}
	}
	logger.Info("Metrics source chosen", "source", sel.Source, "detail", sel.Detail, "reason", sel.Reason)
	if err := o.preflight(ctx, kube, sel, scales.Mapper); err != nil {
		return err
	}

	r := newRunRenderer(o, mc.Source())
	if rec != nil {
		if err := rec.start(o.recordingHeader(mc.Source(), time.Now()), r.note); err != nil {
			return err
		}
	}
	leased := o.writes() && o.LeaderElect
	counts := o.hpaCountNotes(r)
	host, _ := os.Hostname()
	note := func(msg string) { r.note(time.Now(), msg) }
	newController := func(kube kubernetes.Interface, scales controller.ScaleTarget, holder string, prevSeen time.Time) (*controller.Controller, error) {
		sink := r.report
		if rec != nil {
			// A new controller starts from what it restores: the recording says where each one starts.
			record := rec.sink(time.Now())
			sink = func(rep controller.Report) {
				r.report(rep)
				record(rep)
			}
		}
		// A fresh monitor per controller: a new term's informers count every HPA again.
		return controller.New(o.Controller, controller.Deps{Kube: kube, Scales: scales, Metrics: mc, Monitor: monitor.New(), Sink: sink, Count: counts,
			Note: note, Holder: holder, PreviousHolderSeen: prevSeen})
	}
	if o.Controller.DryRun != controller.DryRunNone {
		o.noteOtherWriter(ctx, kube, r)
	}
	var (
		// mon is the latest controller's monitor, served on /metrics.
		mon atomic.Pointer[monitor.Monitor]
		// active is the controller running now; nil while waiting for the Lease.
		active atomic.Pointer[controller.Controller]
		c      *controller.Controller
	)
	mon.Store(monitor.New())
	if !leased {
		if c, err = newController(kube, scales, host, time.Time{}); err != nil {
			return usageErrorf("%w", err)
		}
		mon.Store(c.Monitor())
		active.Store(c)
	}
	healthz := func() error {
		c := active.Load()
		if c == nil {
			// A standby waiting for the Lease is healthy: a liveness probe failing on it
			// would only restart it, over and over, while the leader works.
			return nil
		}
		return c.Healthz()
	}
	if o.MetricsBindAddress != "" {
		h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { mon.Load().Handler(healthz).ServeHTTP(w, req) })
		stop, err := runServeMetrics(ctx, o.MetricsBindAddress, h)
		if err != nil {
			return err
		}
		defer stop()
	}
	renderDone := r.start(ctx)
	defer renderDone()

	if !leased {
		return c.Run(ctx, o.Workers)
	}
	leaseCfg := o.leaseConfig()
	leaseCfg.Identity = host + "_" + string(uuid.NewUUID())
	leaseCfg.OnWaiting = func(holder string, since time.Time) {
		held := ""
		if !since.IsZero() {
			held = " since " + since.UTC().Format(time.RFC3339)
		}
		r.note(time.Now(), fmt.Sprintf("standby: Lease %s/%s is held by %s%s; this run writes nothing until it takes the Lease over", leaseCfg.Namespace, leaseCfg.Name, holder, held))
	}
	leaseCfg.OnAcquired = func() {
		r.note(time.Now(), fmt.Sprintf("acquired Lease %s/%s: this run writes", leaseCfg.Namespace, leaseCfg.Name))
	}
	logger.Info("Waiting for the lease before writing", "lease", klog.KRef(leaseCfg.Namespace, leaseCfg.Name), "identity", leaseCfg.Identity)
	return lease.RunTerms(ctx, kube, leaseCfg, func(ctx context.Context, term lease.Term) error {
		// Every request of this term's clients ends with the term: a write even already
		// sent is cancelled the moment the Lease is lost, before a successor may take it.
		fenced := lease.FenceConfig(term.Leading, cfg)
		kube, err := kubernetes.NewForConfig(fenced)
		if err != nil {
			return fmt.Errorf("creating the Kubernetes client: %w", err)
		}
		scales, err := live.NewScaleClient(fenced)
		if err != nil {
			return err
		}
		c, err := newController(kube, scales, leaseCfg.Identity, term.PreviousHolderSeen)
		if err != nil {
			return usageErrorf("%w", err)
		}
		mon.Store(c.Monitor())
		active.Store(c)
		defer active.Store(nil)
		return c.Run(ctx, o.Workers)
	})
}

// hpaCountNotes returns the controller's Count callback: it notes a run that watches no
// HPA at the start, and every change of the count after.
func (o *RunOptions) hpaCountNotes(r *runRenderer) func(int) {
	var (
		mu      sync.Mutex
		started bool
		last    int
	)
	where := fmt.Sprintf("in namespace %q", o.Controller.Namespace)
	if o.Controller.Namespace == metav1.NamespaceAll {
		where = "in any namespace"
	}
	if o.Selector != "" {
		where += fmt.Sprintf(" matching -l %s", o.Selector)
	}
	return func(n int) {
		mu.Lock()
		defer mu.Unlock()
		// A new term's controller counts again from its own start.
		if (started && n == last) || (!started && n > 0) {
			started, last = true, n
			return
		}
		started, last = true, n
		switch n {
		case 0:
			r.note(time.Now(), fmt.Sprintf("no HPA %s: nothing to do; watching for HPAs to appear", where))
		case 1:
			r.note(time.Now(), fmt.Sprintf("watching 1 HPA %s", where))
		default:
			r.note(time.Now(), fmt.Sprintf("watching %d HPAs %s", n, where))
		}
	}
}

// noteOtherWriter says, in a dry run, that another kubectl hpa run holds the Lease: it
// writes these HPAs, from its own history, so what happens may differ from what this run
// shows. A Lease that cannot be read (RBAC, none) says nothing.
func (o *RunOptions) noteOtherWriter(ctx context.Context, kube kubernetes.Interface, r *runRenderer) {
	if o.LeaseNamespace == "" || o.LeaseName == "" {
		return
	}
	l, err := kube.CoordinationV1().Leases(o.LeaseNamespace).Get(ctx, o.LeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return
	}
	if time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
		return
	}
	since := ""
	if l.Spec.AcquireTime != nil {
		since = " since " + l.Spec.AcquireTime.UTC().Format(time.RFC3339)
	}
	r.note(time.Now(), fmt.Sprintf("dry run beside a writer: Lease %s/%s is held by %s%s, which writes these HPAs from its own history; what happens may differ from the decisions shown here",
		o.LeaseNamespace, o.LeaseName, *l.Spec.HolderIdentity, since))
}

// checkNamespace fails with ExitWrongNamespace when the namespace watched does not exist:
// its informers would list nothing and a Lease could never be created in it, so run would
// wait without a word. It is asked only when no HPA matched, as explain asks only when the
// HPA is not found; a check RBAC does not allow proves nothing and is let through.
func (o *RunOptions) checkNamespace(ctx context.Context, kube kubernetes.Interface) error {
	if o.Controller.Namespace == metav1.NamespaceAll {
		return nil
	}
	_, err := kube.CoreV1().Namespaces().Get(ctx, o.Controller.Namespace, metav1.GetOptions{})
	return namespaceMissing(err, o.Controller.Namespace)
}

// preflight checks, before anything starts, that every permission run needs is granted, and
// fails naming all that are missing: without it a missing list or watch keeps the caches from
// ever syncing (run would wait silently) and a missing write fails on every sync.
func (o *RunOptions) preflight(ctx context.Context, kube kubernetes.Interface, sel metrics.Selection, mapper meta.RESTMapper) error {
	logger := klog.FromContext(ctx)
	scope := newRunPermissionScope(o, sel)
	static := scope.static()
	denied, err := deniedOf(ctx, kube.AuthorizationV1(), static)
	if err != nil {
		return preflightFailed(ctx, err)
	}
	listHPAs := static[0]
	if !slices.Contains(denied, listHPAs) {
		hpas, err := kube.AutoscalingV2().HorizontalPodAutoscalers(scope.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		if err != nil {
			return preflightFailed(ctx, err)
		}
		if len(hpas.Items) == 0 {
			if err := o.checkNamespace(ctx, kube); err != nil {
				return err
			}
		}
		mapKind := func(gk schema.GroupKind, version string) (schema.GroupResource, error) {
			m, err := mapper.RESTMapping(gk, version)
			if err != nil {
				return schema.GroupResource{}, err
			}
			return m.Resource.GroupResource(), nil
		}
		more, err := deniedOf(ctx, kube.AuthorizationV1(), scope.forHPAs(hpas.Items, mapKind, sel.Source == metrics.SourceMetricsAPI))
		if err != nil {
			return preflightFailed(ctx, err)
		}
		denied = append(denied, more...)
	}
	if len(denied) > 0 {
		role := runRole
		if !o.writes() {
			role = explainRole
		}
		return &ExitError{Code: ExitForbidden, Err: &missingPermissionsError{command: "kubectl hpa run", missing: denied, role: role}}
	}
	logger.V(2).Info("Permissions checked", "count", len(static))
	return nil
}

// preflightFailed decides what a failed permission check means: bad credentials end the
// run; anything else (an authorizer that cannot answer reviews, a slow server) only costs
// the early warning, and the loop itself reports what it cannot do.
func preflightFailed(ctx context.Context, err error) error {
	if apierrors.IsUnauthorized(err) || ctx.Err() != nil {
		return apiExitError("checking permissions", err)
	}
	klog.FromContext(ctx).Info("Could not check permissions ahead; continuing", "err", err)
	return nil
}

// runServeMetrics serves h on addr until stop is called or ctx ends.
func runServeMetrics(ctx context.Context, addr string, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErrorf("--metrics-bind-address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server stopped", "address", addr)
		}
	}()
	klog.FromContext(ctx).Info("Serving metrics", "address", ln.Addr().String())
	return func() {
		// Scrapes are short; do not let one hold up the exit.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 200*time.Millisecond)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// runControllerDefaults are the controller's defaults with the history persisted.
func runControllerDefaults() controller.Options {
	o := controller.DefaultOptions()
	o.PersistHistory = true
	return o
}
