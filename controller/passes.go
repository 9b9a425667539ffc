package controller

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// namespacePasses is the requeue schedule of --metrics-reads=per-namespace: the HPAs of a
// namespace are due together, at the namespace's instants, one sync period apart, so that one
// PodMetrics list of the namespace serves every one of them each period (sharedMetrics shares
// a read among the syncs that start within its validity). Upstream requeues each HPA a period
// after its own sync ended (fixedInterval), so a namespace's HPAs drift apart by their syncs'
// durations and, read by read, would each need a list of their own.
//
// A namespace's instants start at its first requeue (anchor) and go on every period. An HPA
// is requeued to the first instant at least a quarter of a period away: an HPA synced at an
// instant is due again exactly a period later, and one synced off them (created, or edited to a
// new generation, which upstream syncs at once) joins them after between a quarter of a period
// and a period and a quarter. Requeues from the HPA informer (resync, updates) ask for the same
// instant or a later one; the queue keeps the earlier.
type namespacePasses struct {
	period time.Duration
	clock  clock.PassiveClock

	mu      sync.Mutex
	anchors map[string]passAnchor
	// swept is when anchors no longer used were last dropped.
	swept time.Time
}

// passAnchor is a namespace's first instant and when an HPA of it was last requeued.
type passAnchor struct{ at, used time.Time }

// passLeadDivisor sets the least time from a requeue to the instant it is given: a period
// divided by it.
const passLeadDivisor = 4

func newNamespacePasses(period time.Duration, c clock.PassiveClock) *namespacePasses {
	return &namespacePasses{period: period, clock: c, anchors: map[string]passAnchor{}}
}

// When is how long the HPA key waits for its namespace's next instant.
func (p *namespacePasses) When(key string) time.Duration {
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil || p.period <= 0 {
		return p.period
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(now)
	a, ok := p.anchors[ns]
	if !ok {
		a.at = now
	}
	a.used = now
	p.anchors[ns] = a
	lead := now.Add(p.period / passLeadDivisor).Sub(a.at)
	periods := (lead + p.period - 1) / p.period
	return a.at.Add(periods * p.period).Sub(now)
}

// sweep drops, at most once a period, the anchors of namespaces none of whose HPAs was
// requeued for two periods (every HPA of a live namespace is, each period).
func (p *namespacePasses) sweep(now time.Time) {
	if now.Sub(p.swept) < p.period {
		return
	}
	p.swept = now
	for ns, a := range p.anchors {
		if now.Sub(a.used) > 2*p.period {
			delete(p.anchors, ns)
		}
	}
}

// Forget and NumRequeues are upstream's fixed interval's: no back-off to reset.
func (*namespacePasses) Forget(string)          {}
func (*namespacePasses) NumRequeues(string) int { return 1 }
