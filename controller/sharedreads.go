package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// MetricsReads says how run reads resource metrics: kubectl's flag values of --metrics-reads.
type MetricsReads string

const (
	// MetricsReadsPerNamespace reads a namespace's PodMetrics once and serves every HPA of the
	// namespace synced within sharedReadValidity of that read from it; the loop brings the
	// namespace's HPAs due together each period (namespacePasses).
	MetricsReadsPerNamespace MetricsReads = "per-namespace"
	// MetricsReadsPerHPA reads each HPA's pod metrics with its own selector at each sync, as
	// upstream's controller does.
	MetricsReadsPerHPA MetricsReads = "per-hpa"
)

// maxSharedReadValidity is how long after its request a namespace's PodMetrics list still
// serves a sync. metrics-server has a new sample at most once per resolution (15 s by default,
// 10 s at least), so a sync served a read this old sees what a read at its own start would
// have seen unless a scrape landed within that second, and then the scrape before it: the
// decision upstream makes when its sync starts up to 1 s earlier. It is short of a sync period
// many times over, so no HPA is ever decided twice on one read.
const maxSharedReadValidity = time.Second

// sharedReadValidity is maxSharedReadValidity, or half the sync period when that is shorter
// (tests' short periods): an HPA's next sync always needs a newer read than its last one.
func sharedReadValidity(syncPeriod time.Duration) time.Duration {
	return min(maxSharedReadValidity, syncPeriod/2)
}

// sharedMetrics is run's MetricsReader with --metrics-reads=per-namespace: resource metrics
// come from one PodMetrics list per namespace, and a Pods metric from one read per namespace,
// metric name, metric selector and pod selector (metrics.NamespaceLister), taken by the first
// worker that needs it and shared by the workers that sync an HPA of that namespace while it is
// valid. Each HPA is served what a read with its own selector returns: the PodMetrics whose
// labels its selector matches, or every value of the Pods metric's read with its selector
// (custom metrics carry no labels to filter a namespace's read by, and upstream keeps values of
// pods gone from its pod lister), checked as that read's would be. Object and External metrics,
// and clients that cannot list a namespace (Heapster), are read per HPA.
type sharedMetrics struct {
	evaluation.MetricsReader
	lister   metrics.NamespaceLister
	clock    clock.WithDelayedExecution
	validity time.Duration

	mu sync.Mutex
	// reads are the reads still valid (or in flight) by sharedKey; each is dropped when it
	// expires, so that between passes no namespace's list stays in memory.
	reads map[sharedKey]*sharedRead
}

// sharedKey names a shared read: a namespace's PodMetrics (metric empty), or its Pods metric
// of that name, metric selector and pod selector.
type sharedKey struct {
	namespace, metric, metricSelector, selector string
}

// sharedRead is one shared read: sent at started, answered when done closes.
type sharedRead struct {
	started time.Time
	done    chan struct{}
	res     readResult
}

// readResult is a shared read's answer (*metrics.PodResources, *metrics.PodsMetrics).
type readResult interface{ Err() error }

// newSharedMetrics wraps m; a client that cannot list a namespace's metrics is returned as it
// is.
func newSharedMetrics(m metrics.Client, clk clock.WithDelayedExecution, validity time.Duration) evaluation.MetricsReader {
	l, ok := m.(metrics.NamespaceLister)
	if !ok {
		return m
	}
	return &sharedMetrics{MetricsReader: m, lister: l, clock: clk, validity: validity, reads: map[sharedKey]*sharedRead{}}
}

// PodResource implements evaluation.MetricsReader from the namespace's shared list.
func (s *sharedMetrics) PodResource(ctx context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	r, err := s.read(ctx, sharedKey{namespace: namespace}, func() readResult {
		return s.lister.NamespacePodResources(ctx, namespace)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return r.(*metrics.PodResources).PodResource(res, selector, container)
}

// PodsMetric implements evaluation.MetricsReader from the shared read of the metric with
// selector, sent as upstream's (with the HPA's selector) and served whole: the adapter's
// values of pods already gone from the pod cache count, as upstream's.
func (s *sharedMetrics) PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error) {
	if selector == nil {
		selector = labels.Everything()
	}
	if metricSelector == nil {
		metricSelector = labels.Everything()
	}
	key := sharedKey{namespace: namespace, metric: metricName, metricSelector: metricSelector.String(), selector: selector.String()}
	r, err := s.read(ctx, key, func() readResult {
		return s.lister.NamespacePodsMetric(ctx, namespace, metricName, selector, metricSelector)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return r.(*metrics.PodsMetrics).PodsMetric()
}

// read returns the read of key, sending it with send unless one sent less than validity ago
// is valid. A failed read serves only the syncs that waited for it: the next sync asks again,
// as a per-HPA read would.
func (s *sharedMetrics) read(ctx context.Context, key sharedKey, send func() readResult) (readResult, error) {
	now := s.clock.Now()
	s.mu.Lock()
	r, ok := s.reads[key]
	if !ok || !now.Before(r.started.Add(s.validity)) {
		r = &sharedRead{started: now, done: make(chan struct{})}
		s.reads[key] = r
		s.mu.Unlock()
		r.res = send()
		if r.res.Err() != nil {
			s.drop(key, r)
		} else {
			s.clock.AfterFunc(r.started.Add(s.validity).Sub(s.clock.Now()), func() { s.drop(key, r) })
		}
		close(r.done)
		return r.res, nil
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the metrics of namespace %s read by another sync: %w", key.namespace, ctx.Err())
	}
}

// drop forgets r unless a newer read of key replaced it; the syncs it is serving keep it.
func (s *sharedMetrics) drop(key sharedKey, r *sharedRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reads[key] == r {
		delete(s.reads, key)
	}
}
