package run

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/lease"
	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// loop builds the controllers run runs (one, or one per term of the Lease) from what they
// share, and keeps the one running now for /metrics and /healthz.
type loop struct {
	opts    controller.Options
	workers int
	metrics metrics.Client
	render  *renderer
	// rec records every sync (nil without --record).
	rec *recorder
	// count notes the number of HPAs watched, across controllers.
	count func(int)

	// mon is the latest controller's monitor, served on /metrics.
	mon atomic.Pointer[monitor.Monitor]
	// active is the controller running now; nil while waiting for the Lease.
	active atomic.Pointer[controller.Controller]

	// pods is the pod cache every term of the Lease reads (nil without the Lease: the
	// controller keeps its own). The first term starts it; it runs until podsUntil closes.
	pods      *controller.PodCache
	podsUntil <-chan struct{}
}

func newLoop(o *Options, mc metrics.Client, r *renderer, rec *recorder) *loop {
	l := &loop{opts: o.Controller, workers: o.Workers, metrics: mc, render: r, rec: rec, count: o.hpaCountNotes(r)}
	l.mon.Store(monitor.New())
	return l
}

// clients are the clients a controller works through, built from one configuration: for a
// Lease term its fenced one, whose requests all end with the term. Each has its own request
// budget (--kube-api-qps): events have one apart from the status writes, so that the events
// following a fault that changed every HPA's status take nothing from those writes' budget.
type clients struct {
	kube   kubernetes.Interface
	events kubernetes.Interface
	scales *live.ScaleClient
}

func loopClients(cfg *rest.Config) (clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	events, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return clients{}, fmt.Errorf("creating the events client: %w", err)
	}
	scales, err := live.NewScaleClient(cfg)
	if err != nil {
		return clients{}, err
	}
	return clients{kube: kube, events: events, scales: scales}, nil
}

// keepPods gives every term of the Lease one pod cache, over a client of its own from cfg
// (unfenced: it only reads), run from the first term until ctx ends. A term after a lost
// Lease then decides at once, from pods its watch keeps current, instead of listing every
// pod again first; a standby that never held the Lease reads none.
func (l *loop) keepPods(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the pod cache's client: %w", err)
	}
	pods, err := controller.NewPodCache(kube, l.opts.Namespace)
	if err != nil {
		return err
	}
	l.pods, l.podsUntil = pods, ctx.Done()
	return nil
}

// newController builds a controller over cl that writes as holder (the previous holder
// last seen at prevSeen), reporting to the renderer and the recording.
func (l *loop) newController(cl clients, holder string, prevSeen time.Time) (*controller.Controller, error) {
	sink := l.render.report
	if l.rec != nil {
		// A new controller starts from what it restores: the recording says where each one starts.
		record := l.rec.sink(time.Now())
		sink = func(rep controller.Report) {
			l.render.report(rep)
			record(rep)
		}
	}
	// A fresh monitor per controller: a new term's informers count every HPA again.
	return controller.New(l.opts, controller.Deps{Kube: cl.kube, Events: cl.events, Scales: cl.scales, Metrics: l.metrics, Pods: l.pods, Monitor: monitor.New(), Sink: sink, Count: l.count,
		Note: l.note, Holder: holder, PreviousHolderSeen: prevSeen})
}

// activate makes c the controller /metrics and /healthz show.
func (l *loop) activate(c *controller.Controller) {
	l.mon.Store(c.Monitor())
	l.active.Store(c)
}

// runTerm runs a controller for one term of the Lease, as identity. Every request of the
// term's clients ends with the term: a write even already sent is cancelled the moment the
// Lease is lost, before a successor may take it.
func (l *loop) runTerm(ctx context.Context, cfg *rest.Config, identity string, term lease.Term) error {
	cl, err := loopClients(lease.FenceConfig(term.Leading, cfg))
	if err != nil {
		return err
	}
	c, err := l.newController(cl, identity, term.PreviousHolderSeen)
	if err != nil {
		return cmdutil.UsageErrorf("%w", err)
	}
	if l.pods != nil {
		l.pods.Start(l.podsUntil)
	}
	l.activate(c)
	defer l.active.Store(nil)
	err = c.Run(ctx, l.workers)
	if ctx.Err() != nil && term.Leading.Err() == nil {
		// run is stopping (the Lease is still held): this was the last controller.
		l.stopped()
	}
	return err
}

// stopped closes the recording once the last controller has returned; run's end closes it
// again to learn how that went.
func (l *loop) stopped() {
	if l.rec != nil {
		_ = l.rec.close()
	}
}

// healthz is the active controller's health; a standby waiting for the Lease is healthy: a
// liveness probe failing on it would only restart it, over and over, while the leader works.
func (l *loop) healthz() error {
	c := l.active.Load()
	if c == nil {
		return nil
	}
	return c.Healthz()
}

// handler serves the latest controller's /metrics and /healthz, and with profiling Go's
// profiles under /debug/pprof/.
func (l *loop) handler(profiling bool) http.Handler {
	monitored := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { l.mon.Load().Handler(l.healthz).ServeHTTP(w, req) })
	if !profiling {
		return monitored
	}
	mux := http.NewServeMux()
	mux.Handle("/", monitored)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// note shows a line about run itself (the Lease, the HPAs watched).
func (l *loop) note(msg string) { l.render.note(time.Now(), msg) }
