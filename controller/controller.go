package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/eventsink"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

// DryRun is kubectl's --dry-run strategy.
type DryRun string

const (
	// DryRunNone writes scales, statuses and events.
	DryRunNone DryRun = "none"
	// DryRunClient writes nothing at all.
	DryRunClient DryRun = "client"
	// DryRunServer sends scale and status writes with dryRun=All (validated, not persisted)
	// and records no events, which the API server cannot dry-run.
	DryRunServer DryRun = "server"
)

// EventComponent is the event source upstream's controller uses.
const EventComponent = "horizontal-pod-autoscaler"

// queueName is upstream's queue name, which labels the workqueue metrics.
const queueName = "horizontalpodautoscaler"

// Options configure the controller. The zero value is not usable; start from DefaultOptions.
type Options struct {
	// Namespace to watch; metav1.NamespaceAll for every namespace.
	Namespace string
	// HPASelector restricts the HPAs reconciled (label selector syntax, empty for all).
	HPASelector string
	// SyncPeriod is the informer resync and the fixed requeue interval.
	SyncPeriod time.Duration
	// Config is the decision core's controller-wide configuration.
	Config replicas.Config
	DryRun DryRun
	// ForceOwnership writes even for HPAs another controller reconciles.
	ForceOwnership bool
	// OwnershipWindow is how recent another manager's status write must be for the HPA to
	// count as reconciled by someone else.
	OwnershipWindow time.Duration
	// FieldManager names this controller in managedFields.
	FieldManager string
	// WriteGrace is how long a write already in flight may finish after the controller is
	// told to stop; writes not yet sent are abandoned.
	WriteGrace time.Duration
	// ScaleFromCache reads the scale of Deployments, ReplicaSets, StatefulSets and
	// ReplicationControllers from informers instead of one GET per HPA and sync.
	ScaleFromCache bool
	// PersistHistory keeps each HPA's decision history in its annotation.Key, written
	// with the status writes (and alone only when the history changed while the status did
	// not), and restores it before the first decision. Off, the history lives in memory only,
	// as upstream's, and the annotation is removed with the next status write.
	PersistHistory bool
	// OmitPodTreatments decides without the per-pod account of pod-based metrics
	// (Report.Decision.Metrics[i].Pods stays nil), for sinks that never show it.
	OmitPodTreatments bool
	// MetricsReads says whether resource metrics are read once per namespace and shared by
	// the HPAs synced while the read is valid, or once per HPA and sync as upstream does.
	MetricsReads MetricsReads
}

// DefaultOptions returns upstream's defaults (sync period 15s, v1.37 decision config).
func DefaultOptions() Options {
	return Options{
		Namespace:       metav1.NamespaceAll,
		SyncPeriod:      15 * time.Second,
		Config:          replicas.DefaultConfig(),
		DryRun:          DryRunNone,
		OwnershipWindow: 10 * time.Minute,
		FieldManager:    annotation.FieldManager,
		WriteGrace:      time.Second,
		ScaleFromCache:  true,
		MetricsReads:    MetricsReadsPerNamespace,
	}
}

// ScaleTarget reads and writes targets' scale subresources.
type ScaleTarget interface {
	evaluation.ScaleReader
	// SetReplicas writes spec.replicas, retrying conflicts; dryRun is passed to the API server.
	SetReplicas(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) error
}

// Report is what one reconcile decided and did; it is handed to Deps.Sink.
type Report struct {
	Key      string
	Input    replicas.Input
	Decision replicas.Decision
	// Outcome is what the decision settles to (Settle); a failed status write shows in Err.
	Outcome replicas.Outcome
	// DryRunReason is empty when the controller wrote; otherwise why it did not
	// ("--dry-run=client", "kube-controller-manager wrote this HPA's status 12s ago").
	DryRunReason string
	// ScaleWritten and StatusWritten report the writes sent (dryRun=All ones included).
	ScaleWritten, StatusWritten bool
	// ScaleWriteErr is the scale write's error (nil when none was sent or it succeeded),
	// PodsErr the pod list's as the reader returned it, and Kept the history kept for the
	// next sync: with Input, what a recording needs to replay this reconcile exactly.
	ScaleWriteErr, PodsErr error
	Kept                   replicas.History
	// StatusWriteErr is the status write's error (nil when none was sent or it succeeded):
	// Err then says it, as run prints it, and a replay says it again from the recording.
	StatusWriteErr error
	// Err is the reconcile error (the core's, a failed write's).
	Err error
}

// Deps are the controller's collaborators.
type Deps struct {
	Kube    kubernetes.Interface
	Scales  ScaleTarget
	Metrics metrics.Client
	// Events is the client the events are written through; nil means Kube. A client of its
	// own keeps its own request budget: after a fault every HPA's status changes at once,
	// and the events that go with those changes then do not hold back the status writes.
	Events kubernetes.Interface
	// Recorder records events; nil makes Run create one that writes to Events.
	Recorder record.EventRecorder
	// Clock defaults to the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Monitor defaults to a fresh one.
	Monitor *monitor.Monitor
	// Sink receives every reconcile's report; it must not block for long.
	Sink func(Report)
	// Count, when set, is told how many HPAs the controller watches once its caches have
	// synced, and again whenever that number changes, so that a run watching none (an empty
	// namespace, a selector matching nothing) says so instead of staying silent.
	Count func(n int)
	// Note, when set, is told in one line each what history was restored and what was
	// ignored, and when the controller stops taking work.
	Note func(msg string)
	// Pods is the pod cache to read, started by the caller before Run and stopped by it;
	// nil for one of the controller's own, started by Run and stopped when it returns.
	Pods *PodCache
	// Holder names this process in the history it persists (its Lease identity).
	Holder string
	// PreviousHolderSeen is when the previous Lease holder was last seen alive (its last
	// renewal, or its release): the history it recorded had its newest recommendation still
	// current until then. Zero when unknown.
	PreviousHolderSeen time.Time
}

// Controller is the foreground HPA control loop.
type Controller struct {
	opts     Options
	kube     kubernetes.Interface
	events   kubernetes.Interface
	scales   ScaleTarget
	clock    clock.WithTickerAndDelayedExecution
	monitor  *monitor.Monitor
	sink     func(Report)
	recorder record.EventRecorder

	// count, countMu, counting and counted implement Deps.Count: counting is set once the
	// caches have synced; counted is the number last told (-1 before the first).
	count    func(n int)
	note     func(msg string)
	holder   string
	prevSeen time.Time
	countMu  sync.Mutex
	counting bool
	counted  int

	hpaFactory informers.SharedInformerFactory
	pods       *PodCache
	// ownPods is set when pods is the controller's own: Run starts and stops it.
	ownPods bool
	// cachedScales is nil without Options.ScaleFromCache.
	cachedScales *CachedScales
	hpaLister    autoscalinglisters.HorizontalPodAutoscalerLister
	synced       []cache.InformerSynced

	queue   workqueue.TypedRateLimitingInterface[string]
	source  evaluation.Source
	tracker *SelectorTracker
	mu      sync.Mutex
	history map[string]replicas.History
	// running is set once caches synced and workers started.
	running atomic.Bool
	// written is the resource version of our last status write per HPA key, until the
	// informer has caught up with it (upstream's StaleControllerConsistencyHPA guard).
	written  map[string]string
	hpaStore cache.Store
}

// New wires informers, the queue and the snapshotter. Nothing runs until Run.
func New(opts Options, deps Deps) (*Controller, error) {
	if opts.SyncPeriod <= 0 {
		return nil, fmt.Errorf("sync period must be positive, got %v", opts.SyncPeriod)
	}
	if deps.Metrics == nil {
		return nil, errors.New("no metrics client configured")
	}
	if _, err := labels.Parse(opts.HPASelector); err != nil {
		return nil, fmt.Errorf("parsing the HPA label selector %q: %w", opts.HPASelector, err)
	}
	switch opts.DryRun {
	case DryRunNone, DryRunClient, DryRunServer:
	default:
		return nil, fmt.Errorf("unknown dry-run strategy %q: use none, client or server", opts.DryRun)
	}
	switch opts.MetricsReads {
	case MetricsReadsPerNamespace, MetricsReadsPerHPA:
	default:
		return nil, fmt.Errorf("unknown metrics reads %q: use %s or %s", opts.MetricsReads, MetricsReadsPerNamespace, MetricsReadsPerHPA)
	}
	c := &Controller{
		opts:     opts,
		kube:     deps.Kube,
		events:   deps.Events,
		scales:   deps.Scales,
		clock:    deps.Clock,
		monitor:  deps.Monitor,
		sink:     deps.Sink,
		recorder: deps.Recorder,
		count:    deps.Count,
		note:     deps.Note,
		holder:   deps.Holder,
		prevSeen: deps.PreviousHolderSeen,
		counted:  -1,
		tracker:  NewSelectorTracker(),
		history:  map[string]replicas.History{},
		written:  map[string]string{},
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if c.monitor == nil {
		c.monitor = monitor.New()
	}
	if c.events == nil {
		c.events = c.kube
	}
	if opts.ScaleFromCache {
		c.cachedScales = NewCachedScales(deps.Kube, opts.Namespace, deps.Scales)
		c.scales = c.cachedScales
	}
	c.hpaFactory = informers.NewSharedInformerFactoryWithOptions(deps.Kube, opts.SyncPeriod,
		informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = opts.HPASelector }))
	c.pods = deps.Pods
	if c.pods == nil {
		pods, err := NewPodCache(deps.Kube, opts.Namespace)
		if err != nil {
			return nil, err
		}
		c.pods, c.ownPods = pods, true
	}
	hpaInformer := c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers()
	c.hpaLister = hpaInformer.Lister()
	c.hpaStore = hpaInformer.Informer().GetStore()
	c.synced = []cache.InformerSynced{hpaInformer.Informer().HasSynced, c.pods.HasSynced}

	c.queue = newWorkQueue(opts, c.clock, c.monitor.WorkqueueProvider())
	if _, err := hpaInformer.Informer().AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.update,
		DeleteFunc: c.delete,
	}, cache.HandlerOptions{ResyncPeriod: &opts.SyncPeriod}); err != nil {
		return nil, fmt.Errorf("adding the HPA event handler: %w", err)
	}
	pods := c.pods.Pods()
	var mr evaluation.MetricsReader = deps.Metrics
	if opts.MetricsReads == MetricsReadsPerNamespace {
		mr = newSharedMetrics(deps.Metrics, c.clock, sharedReadValidity(opts.SyncPeriod))
	}
	c.source = evaluation.Readers{
		HPAReader:     listerHPAs{c.hpaLister},
		HistoryReader: c,
		ScaleReader:   c.scales,
		PodReader:     pods,
		MetricsReader: mr,
	}
	return c, nil
}

// Healthz reports whether the loop is serving: caches synced and workers running.
func (c *Controller) Healthz() error {
	if !c.running.Load() {
		return errors.New("not running: informer caches have not synced yet, or the loop is waiting for the lease or stopping")
	}
	return nil
}

// Monitor returns the controller's metrics.
func (c *Controller) Monitor() *monitor.Monitor { return c.monitor }

// Run starts the informers (the pod cache only when it is the controller's own), waits for
// their caches (no decision is made from a cache that has not synced), runs workers until ctx
// is cancelled, then stops taking work and waits for the workers to return.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if workers < 1 {
		return fmt.Errorf("workers must be at least 1, got %d", workers)
	}
	logger := klog.FromContext(ctx)
	var events *eventsink.Writer
	if c.recorder == nil {
		events = eventsink.New(ctx, c.events, c.clock, EventComponent)
		// On an early return there is nothing to wait for; after the workers ran, the
		// flush below waits for their events first.
		defer events.Flush(ctx)
		c.recorder = events.Recorder()
	}
	c.hpaFactory.Start(ctx.Done())
	if c.ownPods {
		c.pods.Start(ctx.Done())
	}
	if c.cachedScales != nil {
		// Scale informers start when an HPA first targets their kind; no sync waits for
		// them, since reads fall back to the API until they have synced.
		c.cachedScales.Start(ctx)
	}
	defer c.stopInformers(ctx)
	defer c.queue.ShutDown()

	logger.V(1).Info("Waiting for caches to sync", "namespace", c.opts.Namespace)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("informer caches did not sync")
	}
	c.restoreHistory(ctx)
	logger.V(1).Info("Caches synced; starting workers", "workers", workers)
	c.startCounting()
	c.running.Store(true)
	defer c.running.Store(false)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	logger.V(1).Info("Stopping: no new work is taken")
	if c.note != nil {
		c.note("stopping: no new work is taken; the writes in flight finish first")
	}
	// The decisions' writes in flight and then their events share one grace from now.
	grace, endGrace := c.writeContext(ctx)
	defer endGrace()
	c.queue.ShutDown()
	wg.Wait()
	if events != nil {
		events.Flush(grace)
	}
	return nil
}

// informerStopGrace bounds the wait for informers to stop: a reflector backing off after a
// failed watch sleeps without looking at its stop channel (up to 30s), and a person
// pressing Ctrl-C should not wait for that.
const informerStopGrace = 300 * time.Millisecond

func (c *Controller) stopInformers(ctx context.Context) {
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if c.ownPods {
			c.pods.Shutdown()
		}
		c.hpaFactory.Shutdown()
		if c.cachedScales != nil {
			c.cachedScales.Shutdown()
		}
	}()
	t := time.NewTimer(informerStopGrace)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		klog.FromContext(ctx).V(2).Info("Informers are still backing off; not waiting for them to stop")
	}
}

// newWorkQueue is client-go's work queue, named as upstream's. With per-HPA metrics reads it
// is upstream's: first in, first out, each HPA requeued a period after its sync. With
// per-namespace reads, the HPAs are requeued to their namespace's instants (namespacePasses)
// and handed out grouped by namespace (namespaceOrder).
func newWorkQueue(opts Options, clk clock.WithTicker, metrics workqueue.MetricsProvider) workqueue.TypedRateLimitingInterface[string] {
	if opts.MetricsReads != MetricsReadsPerNamespace {
		return workqueue.NewTypedRateLimitingQueueWithConfig[string](fixedInterval{opts.SyncPeriod},
			workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName, MetricsProvider: metrics, Clock: clk})
	}
	ordered := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: queueName, MetricsProvider: metrics, Clock: clk, Queue: newNamespaceOrder()})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: queueName, MetricsProvider: metrics, Clock: clk, Queue: ordered})
	return workqueue.NewTypedRateLimitingQueueWithConfig[string](newNamespacePasses(opts.SyncPeriod, clk),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: queueName, MetricsProvider: metrics, Clock: clk, DelayingQueue: delaying})
}

// fixedInterval is upstream's HPA rate limiter: every requeue waits exactly the sync
// period, with no back-off, errors included.
type fixedInterval struct{ interval time.Duration }

func (f fixedInterval) When(string) time.Duration { return f.interval }
func (fixedInterval) Forget(string)               {}
func (fixedInterval) NumRequeues(string) int      { return 1 }

// startCounting reports the number of HPAs watched and reports each change from now on.
func (c *Controller) startCounting() {
	c.countMu.Lock()
	c.counting = true
	c.countMu.Unlock()
	c.recount()
}

// recount tells Deps.Count the number of HPAs in the informer's store if it changed.
func (c *Controller) recount() {
	if c.count == nil {
		return
	}
	c.countMu.Lock()
	defer c.countMu.Unlock()
	if !c.counting {
		return
	}
	if n := len(c.hpaStore.ListKeys()); n != c.counted {
		c.counted = n
		c.count(n)
	}
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	if c.tracker.Register(ns, name) {
		c.monitor.HPAAdded()
		c.recount()
	}
	c.queue.Add(key)
}

func (c *Controller) update(oldObj, newObj any) {
	oldHPA, ok1 := oldObj.(*autoscalingv2.HorizontalPodAutoscaler)
	newHPA, ok2 := newObj.(*autoscalingv2.HorizontalPodAutoscaler)
	if ok1 && ok2 && c.opts.Config.HPAGeneration && oldHPA.Generation != newHPA.Generation {
		c.enqueue(newHPA)
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(newObj)
	if err != nil {
		return
	}
	c.queue.AddRateLimited(key)
}

func (c *Controller) delete(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.queue.Forget(key)
	c.mu.Lock()
	delete(c.written, key)
	delete(c.history, key)
	c.mu.Unlock()
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	c.tracker.Forget(ns, name)
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
		if f, ok := c.scales.(scaleForgetter); ok {
			f.Forget(ns, hpa.Spec.ScaleTargetRef)
		}
	}
	c.monitor.HPADeleted()
	c.monitor.DeleteDesiredReplicas(ns, name)
	c.recount()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if ctx.Err() != nil {
		// Stopping: what is still due is left undone, as the stop note says. A sync started
		// now would only fail on its cancelled reads and say so, with events, for every HPA.
		return true
	}
	deleted, reported, err := c.reconcileKey(ctx, key)
	var stale staleCacheError
	switch {
	case err == nil:
	case errors.As(err, &stale):
		// Counted (stale_sync_skips_total) and retried within a second: a line per retry would
		// flood the output while a watch is down.
		klog.FromContext(ctx).V(2).Info("Not reconciling HPA from a cache older than our own status write; retrying", "hpa", key, "err", err)
		if ctx.Err() == nil {
			c.queue.AddAfter(key, min(staleCacheRetry, c.opts.SyncPeriod))
		}
		return true
	case reported:
		// The sink shows the failure in run's output once per sync already; a log line
		// at -v 0 would say it twice.
		klog.FromContext(ctx).V(2).Info("Reconciling HPA failed", "hpa", key, "err", err)
	default:
		klog.FromContext(ctx).Error(err, "Reconciling HPA failed", "hpa", key)
	}
	if !deleted && ctx.Err() == nil {
		c.queue.AddRateLimited(key)
	}
	return true
}

// reconcileKey reconciles one HPA by key and reports whether it no longer exists, and
// whether its error (if any) went to the sink in a report.
func (c *Controller) reconcileKey(ctx context.Context, key string) (deleted, reported bool, err error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return true, false, err
	}
	if err := c.ensureCaughtUp(key); err != nil {
		return false, false, err
	}
	start := c.clock.Now()
	// The decision is timed by the wall clock alone. A time read from the clock also carries
	// a monotonic reading, and two such times compare by it; the status, the persisted
	// history and the recording keep only the wall clock. Had the host stepped its wall clock
	// between two syncs, a recommendation at a window's edge would fall on one side for this
	// decision and on the other for a replay of it.
	now := start.Round(0)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "hpa", klog.KRef(ns, name))
	ctx = klog.NewContext(ctx, logger)
	ev, err := evaluation.Evaluate(ctx, c.source, ns, name, evaluation.Options{Now: now, Config: c.opts.Config, Overlaps: c.tracker, OmitPodTreatments: c.opts.OmitPodTreatments})
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.history, key)
		c.mu.Unlock()
		return true, false, nil
	}
	if err != nil {
		return false, false, err
	}
	rep := c.reconcile(ctx, ev, start)
	if c.sink != nil {
		c.sink(rep)
	}
	return false, c.sink != nil, rep.Err
}

// listerHPAs reads HPAs from the informer cache.
type listerHPAs struct {
	lister autoscalinglisters.HorizontalPodAutoscalerLister
}

// HPA implements HPAReader with a private copy of the cached HPA.
func (l listerHPAs) HPA(_ context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	shared, err := l.lister.HorizontalPodAutoscalers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	return shared.DeepCopy(), nil
}

// History implements evaluation.HistoryReader: run's history is what it kept from its own
// decisions.
func (c *Controller) History(_ context.Context, namespace, name string) history.Known {
	c.mu.Lock()
	defer c.mu.Unlock()
	return history.Kept(c.history[namespace+"/"+name])
}

// staleCacheError is upstream's consistency guard refusing a sync: the HPA informer has not
// seen the controller's own last status write of the HPA yet.
type staleCacheError struct{ read, wrote string }

func (e staleCacheError) Error() string {
	return fmt.Sprintf("read version: %s is not as new as written version: %s for group resource horizontalpodautoscalers.autoscaling", e.read, e.wrote)
}

// staleCacheRetry is how soon a sync the guard refused is tried again. Upstream requeues it a
// period later, a period without a decision; the guard is only a look at the cache, so trying
// again every second decides the HPA as soon as the informer has caught up (a watch delayed
// under load, or re-established after the API server came back).
const staleCacheRetry = time.Second

// ensureCaughtUp refuses to reconcile from an HPA cache older than our own last status
// write, so a decision never reads the status it just replaced.
func (c *Controller) ensureCaughtUp(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	wrote, ok := c.written[key]
	if !ok {
		return nil
	}
	read := c.hpaStore.LastStoreSyncResourceVersion()
	if read == "" {
		return nil
	}
	if cmp, err := resourceversion.CompareResourceVersion(wrote, read); err == nil && cmp > 0 {
		c.monitor.ObserveStaleSyncSkip("autoscaling", "horizontalpodautoscalers")
		return staleCacheError{read: read, wrote: wrote}
	}
	delete(c.written, key)
	return nil
}

// reconcile applies one evaluation, started at start (its duration is measured from it):
// writes, events, status, history.
func (c *Controller) reconcile(ctx context.Context, ev *evaluation.Evaluation, start time.Time) Report {
	hpa, in, d, took := ev.Read, ev.Input, ev.Decision, ev.MetricTimes
	now := in.Now
	key := hpa.Namespace + "/" + hpa.Name
	logger := klog.FromContext(ctx)
	rep := Report{Key: key, Input: in, Decision: d, PodsErr: ev.PodsErr}

	dryRun, reason := c.writeMode(hpa, now)
	rep.DryRunReason = reason
	write := reason == "" || c.opts.DryRun == DryRunServer
	events := reason == ""

	c.record(hpa, d.Events, events)
	// A decision's writes share one context that outlives ctx by WriteGrace: once its scale
	// write is sent, the status write recording it follows even if stop was asked meanwhile,
	// so no rescale is left without its status (lastScaleTime, currentReplicas, conditions).
	wctx, endWrites := c.writeContext(ctx)
	defer endWrites()
	var scaleErr error
	if d.Rescale && write {
		scaleErr = c.writeGuarded(ctx, wctx, func(wctx context.Context) error {
			return c.scales.SetReplicas(wctx, hpa.Namespace, hpa.Spec.ScaleTargetRef, d.DesiredReplicas, dryRun)
		})
		rep.ScaleWritten = scaleErr == nil
	}
	rep.ScaleWriteErr = scaleErr
	out, kept := replicas.Settle(in, d, scaleErr, reason == "")
	rep.Outcome, rep.Kept = out, kept
	c.record(hpa, out.Events, events)

	var annotate func(*autoscalingv2.HorizontalPodAutoscaler)
	historyChanged := false
	if reason == "" {
		annotate, historyChanged = c.historyAnnotation(hpa, kept, now)
	}
	if (out.StatusChanged || historyChanged) && write {
		startIfStopping := ctx
		if rep.ScaleWritten {
			startIfStopping = wctx
		}
		err := c.writeGuarded(startIfStopping, wctx, func(wctx context.Context) error {
			rv, err := c.updateStatus(wctx, hpa, out.Status, annotate, dryRun)
			if err == nil && dryRun == nil {
				c.mu.Lock()
				c.written[key] = rv
				c.mu.Unlock()
			}
			return err
		})
		if err != nil {
			c.record(hpa, []replicas.Event{{Type: corev1.EventTypeWarning, Reason: "FailedUpdateStatus", Message: err.Error()}}, events)
			rep.StatusWriteErr = err
			out.Err = replicas.StatusWriteFailed(hpa.Name, err)
		} else {
			rep.StatusWritten = true
		}
	}
	rep.Err = out.Err

	c.mu.Lock()
	c.history[key] = kept
	c.mu.Unlock()

	c.observe(hpa, d, scaleErr, out.Err, took, c.clock.Since(start))
	logger.V(2).Info("Reconciled", "current", d.CurrentReplicas, "desired", d.DesiredReplicas, "rescale", d.Rescale, "reason", d.Reason, "dryRun", reason)
	return rep
}

// writeMode says how this HPA may be written: the dryRun option for the API server and, when
// anything is held back, why.
func (c *Controller) writeMode(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) ([]string, string) {
	switch c.opts.DryRun {
	case DryRunClient, DryRunServer:
		var dryRun []string
		if c.opts.DryRun == DryRunServer {
			dryRun = []string{metav1.DryRunAll}
		}
		reason := "--dry-run=" + string(c.opts.DryRun)
		// Another controller scales this HPA: its history and its writes, not these
		// decisions, are what happens.
		if who, age, ok := ForeignStatusWriter(hpa, c.opts.FieldManager, now, c.opts.OwnershipWindow); ok {
			reason += fmt.Sprintf("; %s wrote this HPA's status %s ago and scales it, so what happens may differ from this decision", who, age.Round(time.Second))
		}
		return dryRun, reason
	}
	if !c.opts.ForceOwnership {
		if who, age, ok := ForeignStatusWriter(hpa, c.opts.FieldManager, now, c.opts.OwnershipWindow); ok {
			return nil, fmt.Sprintf("%s wrote this HPA's status %s ago; pass --force-ownership to write anyway", who, age.Round(time.Second))
		}
	}
	return nil, ""
}

// ForeignStatusWriter finds the most recent status write to hpa by a field manager other
// than own within window before now: the sign that another controller (typically
// kube-controller-manager) reconciles it.
func ForeignStatusWriter(hpa *autoscalingv2.HorizontalPodAutoscaler, own string, now time.Time, window time.Duration) (string, time.Duration, bool) {
	var (
		who    string
		latest time.Time
	)
	for _, e := range hpa.ManagedFields {
		if e.Subresource != "status" || e.Manager == own || e.Time == nil {
			continue
		}
		if e.Time.After(latest) {
			who, latest = e.Manager, e.Time.Time
		}
	}
	if who == "" || now.Sub(latest) > window {
		return "", 0, false
	}
	return who, now.Sub(latest), true
}

// writeContext returns the context a decision's writes are sent with: it is cancelled
// WriteGrace after ctx is (or by end), so writes in flight when stop is asked may finish.
func (c *Controller) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := c.clock.NewTimer(c.opts.WriteGrace)
		select {
		case <-t.C():
			cancel()
		case <-wctx.Done():
			t.Stop()
		}
	})
	return wctx, func() {
		stop()
		cancel()
	}
}

// writeGuarded sends one write with wctx unless startIfStopping is done: a write not yet
// sent when the controller is told to stop is abandoned.
func (c *Controller) writeGuarded(startIfStopping, wctx context.Context, write func(context.Context) error) error {
	if err := startIfStopping.Err(); err != nil {
		return fmt.Errorf("write abandoned, the controller is stopping: %w", err)
	}
	return write(wctx)
}

// updateStatus writes status onto the HPA, re-reading it and retrying on conflicts so
// concurrent spec and metadata changes are kept; annotate, when set, edits the history
// annotation (the status subresource keeps metadata changes, it resets only spec).
// It returns the resource version written.
func (c *Controller) updateStatus(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, status autoscalingv2.HorizontalPodAutoscalerStatus, annotate func(*autoscalingv2.HorizontalPodAutoscaler), dryRun []string) (string, error) {
	obj := hpa.DeepCopy()
	obj.Status = status
	if annotate != nil {
		annotate(obj)
	}
	client := c.kube.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace)
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		updated, err := client.UpdateStatus(ctx, obj, metav1.UpdateOptions{DryRun: dryRun, FieldManager: c.opts.FieldManager})
		if err == nil {
			rv = updated.ResourceVersion
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		fresh, getErr := client.Get(ctx, hpa.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("re-reading the HPA after a conflict: %w", getErr)
		}
		fresh.Status = status
		if annotate != nil {
			annotate(fresh)
		}
		obj = fresh
		return err
	})
	return rv, err
}

func (c *Controller) record(hpa *autoscalingv2.HorizontalPodAutoscaler, events []replicas.Event, enabled bool) {
	if !enabled {
		return
	}
	for _, e := range events {
		c.recorder.Event(hpa, e.Type, e.Reason, e.Message)
	}
}

// observe records upstream's monitoring metrics for one reconcile.
func (c *Controller) observe(hpa *autoscalingv2.HorizontalPodAutoscaler, d replicas.Decision, scaleErr, err error, took []time.Duration, total time.Duration) {
	action := monitor.ActionNone
	if d.Rescale && scaleErr == nil {
		action = actionFor(d.DesiredReplicas, d.CurrentReplicas)
	}
	c.monitor.ObserveReconcile(action, errorLabel(err), total)
	for i, m := range d.Metrics {
		if i >= len(hpa.Spec.Metrics) {
			break
		}
		ma, me := actionFor(m.Replicas, hpa.Status.CurrentReplicas), errorLabel(m.Err)
		if m.Err != nil {
			ma = monitor.ActionNone
		}
		var dur time.Duration
		if i < len(took) {
			dur = took[i]
		}
		c.monitor.ObserveMetricComputation(ma, me, string(hpa.Spec.Metrics[i].Type), dur)
	}
	// Upstream sets desired_replicas only when reconcile reached setStatus.
	if d.Phase != replicas.PhaseScaleFailed && d.Phase != replicas.PhaseMetricsFailed && scaleErr == nil {
		c.monitor.SetDesiredReplicas(hpa.Namespace, hpa.Name, d.DesiredReplicas)
	}
}

func actionFor(desired, current int32) string {
	switch {
	case desired > current:
		return monitor.ActionScaleUp
	case desired < current:
		return monitor.ActionScaleDown
	}
	return monitor.ActionNone
}

func errorLabel(err error) string {
	switch {
	case err == nil:
		return monitor.ErrorNone
	case errors.As(err, new(*replicas.SpecError)):
		return monitor.ErrorSpec
	}
	return monitor.ErrorInternal
}
