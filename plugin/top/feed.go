package top

import (
	"context"
	"maps"
	"time"

	tea "charm.land/bubbletea/v2"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
)

// feed asks list for a pass of the fleet every period and whenever poked, and sends each pass
// to the program.
type feed struct {
	rows   func(context.Context) ([]list.Row, error)
	clock  clock.WithTicker
	period time.Duration
	send   func(tea.Msg)
	now    chan struct{}
}

func newFeed(rows func(context.Context) ([]list.Row, error), clk clock.WithTicker, period time.Duration, send func(tea.Msg)) *feed {
	return &feed{rows: rows, clock: clk, period: period, send: send, now: make(chan struct{}, 1)}
}

// poke asks for a pass as soon as the one under way (if any) ends; pokes in between are one.
func (f *feed) poke() {
	select {
	case f.now <- struct{}{}:
	default:
	}
}

// run passes every period and after each poke until ctx is done; the first pass is the
// caller's, so run waits first.
func (f *feed) run(ctx context.Context) {
	t := f.clock.NewTicker(f.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-f.now:
		}
		at := f.clock.Now()
		rows, err := f.rows(ctx)
		if ctx.Err() != nil {
			return
		}
		f.send(passMsg{rows: rows, at: at, err: err})
	}
}

// watchSpecs calls changed when an HPA of namespace (every namespace for "") that selector
// selects is created or deleted, or its spec or labels change: not at the status write every
// sync brings, which the period's pass shows anyway. (The spec is compared, not the
// generation: the API server counts an HPA's generations only with the HPAGeneration feature
// gate.) It returns when ctx is done.
func watchSpecs(ctx context.Context, kube kubernetes.Interface, namespace, selector string, changed func()) {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				changed()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			was, ok1 := oldObj.(*autoscalingv2.HorizontalPodAutoscaler)
			is, ok2 := newObj.(*autoscalingv2.HorizontalPodAutoscaler)
			if !ok1 || !ok2 || !equality.Semantic.DeepEqual(was.Spec, is.Spec) || !maps.Equal(was.Labels, is.Labels) {
				changed()
			}
		},
		DeleteFunc: func(any) { changed() },
	})
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
}
