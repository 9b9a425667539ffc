// Package sim plays a demand curve through a model of a cluster and the exact HPA controller:
// every sync decides through evaluation.Evaluate, the decision core and replicas.Settle, as
// kubectl hpa run does, in virtual time, against a simulated Source that models the
// Deployment's pods, the kubelet's counters (the node stand-in's load model) and
// metrics-server v0.8's storage.
package sim

import (
	"fmt"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Model is the cluster the simulation assumes. Every field is printed with where its value
// came from (Params), so that a result is never read without its assumptions.
type Model struct {
	// SyncPeriod is --horizontal-pod-autoscaler-sync-period: the HPA is reconciled when it is
	// created (the simulation's start) and every SyncPeriod after.
	SyncPeriod time.Duration
	// SyncDuration is how long one reconcile takes. Upstream's work queue requeues an HPA
	// SyncPeriod after its reconcile ends, so syncs are SyncPeriod+SyncDuration apart; without
	// it a recommendation would fall exactly on a stabilization window's edge, which upstream
	// keeps, and every scale-down after a window would come one sync late.
	SyncDuration time.Duration
	// PodCreateDelay is from a scale write to the new pods' creation (the Deployment and
	// ReplicaSet controllers), and to a removed pod's deletion.
	PodCreateDelay time.Duration
	// PodStartDelay is from a pod's creationTimestamp as stored (whole seconds) to its
	// container's start (scheduling, image, start): its status.startTime, when it begins to
	// report metrics. Counted from the stored second, as the node stand-in starts a pod; for
	// a real kubelet the delay is an assumption either way.
	PodStartDelay time.Duration
	// PodReadyDelay is from the container's start to the pod's Ready condition (readiness
	// probe); only Ready pods take a share of the demand.
	PodReadyDelay time.Duration
	// ScrapeInterval is metrics-server's --metric-resolution. Its usage is the difference of a
	// pod's last two scraped counters over the time between them, so the metrics window is
	// one scrape interval.
	ScrapeInterval time.Duration
	// ScrapeOffset is when metrics-server scrapes relative to the HPA's syncs: it scrapes at
	// Start+ScrapeOffset and every ScrapeInterval before and after.
	ScrapeOffset time.Duration
	// Scrapes, when set, are metrics-server's scrape instants since the start, ascending (a
	// recording's, jitter included), in place of the grid ScrapeOffset sets; the grid goes on
	// ScrapeInterval apart before the first and after the last.
	Scrapes []time.Duration
	// IdleCPUMilli and IdleMemoryBytes are what a running pod uses with no demand (and what
	// a pod that is not Ready uses): the node stand-in's floors.
	IdleCPUMilli    int64
	IdleMemoryBytes int64
	// Controller is the controller-wide configuration: tolerance, downscale stabilization
	// window, CPU initialization period, initial readiness delay and the feature gates.
	Controller replicas.Config
}

// DefaultModel is upstream's defaults where upstream has one, metrics-server's manifest for
// the scrape, the node stand-in's idle floors, and labelled assumptions for the pod delays.
func DefaultModel() Model {
	return Model{
		SyncPeriod:      15 * time.Second,
		SyncDuration:    15 * time.Millisecond,
		PodCreateDelay:  time.Second,
		PodStartDelay:   2 * time.Second,
		PodReadyDelay:   5 * time.Second,
		ScrapeInterval:  15 * time.Second,
		ScrapeOffset:    0,
		IdleCPUMilli:    1,
		IdleMemoryBytes: 4 << 20,
		Controller:      replicas.DefaultConfig(),
	}
}

// Where a Param's value came from.
const (
	SourceUpstream      = "upstream default"
	SourceMetricsServer = "metrics-server"
	SourceStandIn       = "node stand-in"
	SourceAssumed       = "assumed"
	SourceSet           = "set"
)

// Param is one model parameter as printed: its name, value and where the value came from.
type Param struct {
	Name, Value, Source string
}

// Params lists the model's parameters in a stable order; a value differing from
// DefaultModel's is marked SourceSet (the caller may relabel it, e.g. "flag").
func (m Model) Params() []Param {
	d := DefaultModel()
	src := func(same bool, def string) string {
		if same {
			return def
		}
		return SourceSet
	}
	c, dc := m.Controller, d.Controller
	ps := []Param{
		{"sync period", m.SyncPeriod.String(), src(m.SyncPeriod == d.SyncPeriod, SourceUpstream)},
		{"sync duration", m.SyncDuration.String(), src(m.SyncDuration == d.SyncDuration, SourceAssumed+" (6 to 89 ms, median 17 ms, on the test cluster)")},
		{"tolerance", fmt.Sprintf("%g", c.Tolerance), src(c.Tolerance == dc.Tolerance, SourceUpstream)},
		{"downscale stabilization", c.DownscaleStabilizationWindow.String(), src(c.DownscaleStabilizationWindow == dc.DownscaleStabilizationWindow, SourceUpstream)},
		{"cpu initialization period", c.CPUInitializationPeriod.String(), src(c.CPUInitializationPeriod == dc.CPUInitializationPeriod, SourceUpstream)},
		{"initial readiness delay", c.InitialReadinessDelay.String(), src(c.InitialReadinessDelay == dc.InitialReadinessDelay, SourceUpstream)},
		{"scrape interval (metrics window)", m.ScrapeInterval.String(), src(m.ScrapeInterval == d.ScrapeInterval, SourceMetricsServer+" manifest")},
		{"scrape offset", m.ScrapeOffset.String(), src(m.ScrapeOffset == d.ScrapeOffset, SourceAssumed)},
		{"scale write to pod created", m.PodCreateDelay.String(), src(m.PodCreateDelay == d.PodCreateDelay, SourceAssumed)},
		{"pod created to started", m.PodStartDelay.String(), src(m.PodStartDelay == d.PodStartDelay, SourceAssumed)},
		{"pod started to Ready", m.PodReadyDelay.String(), src(m.PodReadyDelay == d.PodReadyDelay, SourceAssumed)},
		{"demand spread", "evenly over Ready pods", SourceStandIn},
		{"idle cpu per pod", fmt.Sprintf("%dm", m.IdleCPUMilli), src(m.IdleCPUMilli == d.IdleCPUMilli, SourceStandIn)},
		{"idle memory per pod", fmt.Sprintf("%dMi", m.IdleMemoryBytes>>20), src(m.IdleMemoryBytes == d.IdleMemoryBytes, SourceStandIn)},
	}
	if len(m.Scrapes) > 0 {
		ps = append(ps, Param{"scrape instants", fmt.Sprintf("%d given, %s to %s (the interval before and after)", len(m.Scrapes), m.Scrapes[0], m.Scrapes[len(m.Scrapes)-1]), SourceSet})
	}
	return ps
}

// Validate refuses a model the loop cannot run.
func (m Model) Validate() error {
	switch {
	case m.SyncPeriod <= 0:
		return fmt.Errorf("model: sync period %s is not positive", m.SyncPeriod)
	case m.ScrapeInterval <= 0:
		return fmt.Errorf("model: scrape interval %s is not positive", m.ScrapeInterval)
	case !strictlyAscending(m.Scrapes):
		return fmt.Errorf("model: the scrape instants are not strictly ascending")
	case m.SyncDuration < 0:
		return fmt.Errorf("model: sync duration %s is negative", m.SyncDuration)
	case m.PodCreateDelay < 0, m.PodStartDelay < 0, m.PodReadyDelay < 0:
		return fmt.Errorf("model: a pod delay is negative (create %s, start %s, ready %s)", m.PodCreateDelay, m.PodStartDelay, m.PodReadyDelay)
	case m.IdleCPUMilli < 0, m.IdleMemoryBytes < 0:
		return fmt.Errorf("model: an idle floor is negative")
	}
	return nil
}

func strictlyAscending(ds []time.Duration) bool {
	for i := 1; i < len(ds); i++ {
		if ds[i] <= ds[i-1] {
			return false
		}
	}
	return true
}
