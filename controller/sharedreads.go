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
	// namespace synced within sharedReadValidity of that read from it.
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
// come from one PodMetrics list per namespace (metrics.NamespaceLister), taken by the first
// worker that needs it and shared by the workers that sync an HPA of that namespace while it
// is valid; each HPA is served exactly what a list with its own selector returns (the items
// whose labels the selector matches, checked as that list's would be). Pods, Object and
// External metrics, and clients that cannot list a namespace (Heapster), are read per HPA.
type sharedMetrics struct {
	evaluation.MetricsReader
	lister   metrics.NamespaceLister
	clock    clock.PassiveClock
	validity time.Duration

	mu    sync.Mutex
	reads map[string]*sharedRead
	// swept is when the map was last cleared of expired reads (namespaces no longer synced).
	swept time.Time
}

// sharedRead is one namespace's PodMetrics list: sent at started, answered when done closes.
type sharedRead struct {
	started time.Time
	done    chan struct{}
	res     *metrics.PodResources
}

// newSharedMetrics wraps m; a client that cannot list a namespace's resource metrics is
// returned as it is.
func newSharedMetrics(m metrics.Client, clk clock.PassiveClock, validity time.Duration) evaluation.MetricsReader {
	l, ok := m.(metrics.NamespaceLister)
	if !ok {
		return m
	}
	return &sharedMetrics{MetricsReader: m, lister: l, clock: clk, validity: validity, reads: map[string]*sharedRead{}}
}

// PodResource implements evaluation.MetricsReader from the namespace's shared list.
func (s *sharedMetrics) PodResource(ctx context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	list, err := s.read(ctx, namespace)
	if err != nil {
		return nil, time.Time{}, err
	}
	return list.PodResource(res, selector, container)
}

// read returns namespace's list, sending it unless one sent less than validity ago is
// valid. A failed list serves only the syncs that waited for it: the next sync asks again,
// as a per-HPA read would.
func (s *sharedMetrics) read(ctx context.Context, namespace string) (*metrics.PodResources, error) {
	now := s.clock.Now()
	s.mu.Lock()
	r, ok := s.reads[namespace]
	if !ok || !now.Before(r.started.Add(s.validity)) {
		r = &sharedRead{started: now, done: make(chan struct{})}
		s.reads[namespace] = r
		s.sweep(now)
		s.mu.Unlock()
		r.res = s.lister.NamespacePodResources(ctx, namespace)
		if r.res.Err() != nil {
			s.mu.Lock()
			if s.reads[namespace] == r {
				delete(s.reads, namespace)
			}
			s.mu.Unlock()
		}
		close(r.done)
		return r.res, nil
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.res, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the resource metrics of namespace %s: %w", namespace, ctx.Err())
	}
}

// sweep drops the reads that expired, once per validity, so that namespaces no longer
// synced do not keep their lists; s.mu is held.
func (s *sharedMetrics) sweep(now time.Time) {
	if now.Sub(s.swept) < s.validity {
		return
	}
	s.swept = now
	for ns, r := range s.reads {
		if !now.Before(r.started.Add(s.validity)) {
			delete(s.reads, ns)
		}
	}
}
