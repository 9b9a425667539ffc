package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
)

// PeriodReplay is an HPA's decisions over a period replayed from Prometheus through the core,
// at every sync of one sync phase: the replay explain makes of the last stabilization window,
// made of the whole period, for kubectl hpa timeline.
type PeriodReplay struct {
	// Source is the Prometheus asked; Queries the PromQL sent: the metrics', the scrapes'
	// (when the grid is aligned with them), then kube-state-metrics' when read.
	Source  string
	Queries []string
	// From and To bound the syncs returned; the replay starts a stabilization window
	// earlier, so that the window is full at From.
	From, To          time.Time
	SyncPeriod, Phase time.Duration
	PhaseAnchor       string
	// PhaseFrom and PhaseTo are the range the anchor puts the controller's phase in (the
	// whole period without one); Phase is within it.
	PhaseFrom, PhaseTo time.Duration
	// Grid is where the metrics were read.
	Grid                   Grid
	Step, RateWindow       time.Duration
	Syncs                  []PeriodSync
	KubeStateMetrics       bool
	Notes                  []string
	firstSeen              map[string]time.Time
	observed, observedWant prometheus.Series
}

// What a replay's grid is aligned with, best first.
const (
	// GridAtSyncs: the controller's syncs, as its status puts them.
	GridAtSyncs = "syncs"
	// GridAtScrapes: Prometheus' scrapes of the pods' cpu counters.
	GridAtScrapes = "scrapes"
	// GridAtEpoch: multiples of the step since the epoch, when neither is known.
	GridAtEpoch = "epoch"
)

// Grid is where a replay read the metrics: every Step, at Phase past each multiple of it
// (Unix time), aligned with AlignedWith (Grid* constants) as Anchor puts it.
type Grid struct {
	Step, Phase time.Duration
	AlignedWith string
	Anchor      string
}

// PeriodSync is one replayed sync.
type PeriodSync struct {
	Now      time.Time
	Decision replicas.Decision
	// Observed is the desired replicas kube-state-metrics saw in the HPA's status after this
	// sync and before the next (the count the controller set), -1 without its series.
	Observed int32
}

// maxPoints bounds a range query's points (Prometheus refuses more than 11,000).
const maxPoints = 10000

// KubeStateMetricsQueries are the PromQL of kube-state-metrics' series of the HPA's status:
// the replicas the controller saw (status.currentReplicas, the scale's spec.replicas) and
// the count it decided (status.desiredReplicas).
func KubeStateMetricsQueries(namespace, name string) (current, desired string) {
	sel := fmt.Sprintf(`{namespace=%q,horizontalpodautoscaler=%q}`, namespace, name)
	return "max(kube_horizontalpodautoscaler_status_current_replicas" + sel + ")", "max(kube_horizontalpodautoscaler_status_desired_replicas" + sel + ")"
}

// ReplayPeriod replays in.HPA's metrics over [from, in.Now] at every sync of the controller's
// phase (the one its status' latest write puts it at, as explain narrows it; the middle of
// the range), every syncPeriod, reading the metrics at those syncs (else at Prometheus'
// scrapes: alignGrid). in is the live input: the HPA, its target's scale and pods
// now. At each sync the pods are those with a sample then (the current ones as they are; a
// pod gone since as a copy of a current one, Ready from its first sample), the target's
// replicas kube-state-metrics' status.currentReplicas when Prometheus has it, else the
// replay's own count; the history is carried from sync to sync as run keeps it.
func ReplayPeriod(ctx context.Context, r *prometheus.Reader, in replicas.Input, from time.Time, syncPeriod time.Duration) (*PeriodReplay, error) {
	switch {
	case in.HPA == nil || in.Scale == nil:
		return nil, errors.New("the target's scale could not be read, so there is nothing to replay against")
	case syncPeriod <= 0:
		return nil, errors.New("no sync period to replay with")
	case !from.Before(in.Now):
		return nil, errors.New("an empty period")
	}
	rp := &PeriodReplay{Source: r.Address(), From: from, To: in.Now, SyncPeriod: syncPeriod}
	start := from.Add(-replayHorizon(in))
	rp.Step = syncPeriod
	if span := in.Now.Sub(start); span/rp.Step > maxPoints {
		rp.Step = (span/maxPoints + time.Second).Truncate(time.Second)
	}
	var anchor string
	rp.PhaseFrom, rp.PhaseTo, anchor, _ = syncPhaseRange(in.HPA, syncPeriod)
	// Whole seconds: a timeline's times are written to the second.
	rp.Phase, rp.PhaseAnchor = ((rp.PhaseFrom + (rp.PhaseTo-rp.PhaseFrom)/2) % syncPeriod).Truncate(time.Second), anchor
	pods := replayPods(in)
	scrapeQuery, err := rp.alignGrid(ctx, r, pods, in.Now)
	if err != nil {
		return nil, err
	}
	grid := prometheus.Grid{Start: firstSyncAtOrAfter(start.Add(-2*rp.Step), rp.Grid.Phase, rp.Step), End: in.Now, Step: rp.Step}
	rp.RateWindow = r.Window(0)
	series, queries, err := readSeries(ctx, r, in.HPA, pods, rp.RateWindow, grid)
	rp.Queries = queries
	if err != nil {
		return nil, err
	}
	if scrapeQuery != "" {
		rp.Queries = append(rp.Queries, scrapeQuery)
	}
	rp.firstSeen = firstSeen(series)
	current, desired := KubeStateMetricsQueries(in.HPA.Namespace, in.HPA.Name)
	// A sync's status is scraped after it: a period longer by one sync.
	statusGrid := grid
	statusGrid.End = in.Now.Add(syncPeriod)
	rp.observed, err = r.Range(ctx, current, statusGrid, "")
	switch {
	case errors.Is(err, prometheus.ErrNoSeries):
		rp.Notes = append(rp.Notes, "Prometheus has no kube-state-metrics series of this HPA (kube_horizontalpodautoscaler_status_current_replicas): the replicas at each sync are the replay's own, from the pods with a sample at its start")
	case err != nil:
		return nil, err
	default:
		rp.KubeStateMetrics = true
		rp.Queries = append(rp.Queries, current)
		if rp.observedWant, err = r.Range(ctx, desired, statusGrid, ""); err == nil {
			rp.Queries = append(rp.Queries, desired)
		} else if !errors.Is(err, prometheus.ErrNoSeries) {
			return nil, err
		}
	}

	rp.Notes = append(rp.Notes, "a pod is counted from its first sample on, Ready, with the requests of the pods there now (a pod gone since is a copy of one); pods that never had a sample (Pending) are not seen")

	hpa := in.HPA.DeepCopy()
	h := replicas.History{Recommendations: []replicas.Recommendation{}}
	maxAge := 2 * rp.Step
	var cur int32
	// No controller decided before the HPA existed: it syncs a new HPA at once, with the pods
	// there then and an empty history, then every period on.
	t := firstSyncAtOrAfter(start, rp.Phase, syncPeriod)
	created := in.HPA.CreationTimestamp.Time
	if created.After(start) {
		t = created
	}
	for ; !t.After(in.Now); t = rp.nextSync(t, created, syncPeriod) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := in
		at.HPA, at.Now, at.History, at.Metrics = hpa, t, h, nil
		at.Pods = rp.podsAt(in.Pods, series, t, maxAge)
		if len(at.Pods) == 0 {
			at.Pods = podsAt(in.Pods, t)
			if t.Equal(created) {
				at.Pods = createdBefore(at.Pods, created)
			}
		}
		if cur == 0 {
			cur = int32(len(at.Pods))
			if cur == 0 {
				cur = in.Scale.SpecReplicas
			}
		}
		scale := *in.Scale
		scale.SpecReplicas = cur
		// The status this sync writes holds the replicas it read (currentReplicas) and the
		// count it decides (desiredReplicas) until the next sync: the latest scrape before it.
		seen := t.Add(syncPeriod - time.Millisecond)
		if n, ok := valueAt(rp.observed, seen); ok {
			scale.SpecReplicas = n
		}
		scale.StatusReplicas = scale.SpecReplicas
		at.Scale = &scale
		at.Metrics = metricsAt(at, series, t, maxAge, rp.RateWindow, map[string]bool{})
		d := replicas.Decide(at)
		out, kept := replicas.Settle(at, d, nil, true)
		hpa.Status, h = out.Status, kept
		cur = d.DesiredReplicas
		if t.Before(from) {
			continue
		}
		s := PeriodSync{Now: t, Decision: d, Observed: -1}
		if n, ok := valueAt(rp.observedWant, seen); ok {
			s.Observed = n
		}
		rp.Syncs = append(rp.Syncs, s)
	}
	return rp, nil
}

// createdBefore are the pods created before the HPA's creation second, or all of them when
// none was: creation times are whole seconds, and the pods of the HPA's own second are more
// often its first sync's rescale than pods it found.
func createdBefore(pods []*corev1.Pod, created time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.CreationTimestamp.Before(&metav1.Time{Time: created}) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return pods
	}
	return out
}

// nextSync is the replay's sync after the one at t: on the grid of its phase, the first one at
// least half a period after the HPA's creation when t is that.
func (rp *PeriodReplay) nextSync(t, created time.Time, syncPeriod time.Duration) time.Time {
	if t.Equal(created) {
		return firstSyncAtOrAfter(t.Add(syncPeriod/2), rp.Phase, syncPeriod)
	}
	return t.Add(syncPeriod)
}

// alignGrid sets where the metrics are read: at the controller's syncs when its status puts
// them (rp.Phase), so that each sync reads the window ending at it, as the controller read
// metrics-server's latest sample; else at Prometheus' scrapes of the pods' cpu counters, so
// that a sync reads the latest scrape before it (between two scrapes a counter is
// interpolated towards the next one, which no reader had then); else at multiples of the
// step since the epoch. It returns the query that found the scrapes, if one was sent.
func (rp *PeriodReplay) alignGrid(ctx context.Context, r *prometheus.Reader, pods prometheus.Pods, now time.Time) (string, error) {
	rp.Grid = Grid{Step: rp.Step, AlignedWith: GridAtEpoch}
	if rp.PhaseAnchor != "" {
		rp.Grid.Phase, rp.Grid.AlignedWith, rp.Grid.Anchor = rp.Phase%rp.Step, GridAtSyncs, rp.PhaseAnchor
		return "", nil
	}
	last, q, err := r.LastCPUScrape(ctx, pods, now)
	switch {
	case errors.Is(err, prometheus.ErrNoSeries):
		rp.Notes = append(rp.Notes, fmt.Sprintf("the metrics are read at multiples of %s since the epoch: neither the controller's syncs nor Prometheus' scrapes of %s are known, so a sync may see a change up to a sync before or after the controller did", rp.Step, prometheus.CPUSeries))
		return "", nil
	case err != nil:
		return q, err
	}
	rp.Grid.Phase = time.Duration(last.UnixNano() % int64(rp.Step))
	rp.Grid.AlignedWith, rp.Grid.Anchor = GridAtScrapes, fmt.Sprintf("Prometheus' scrape of %s at %s", prometheus.CPUSeries, last.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	return q, nil
}

// valueAt is a single-series count at t (the latest sample at or before it, at most 5
// minutes old: kube-state-metrics is scraped every 30s or so).
func valueAt(s prometheus.Series, t time.Time) (int32, bool) {
	for _, pt := range s.At(t, 5*time.Minute) {
		return int32((pt.MilliValue + 500) / 1000), true
	}
	return 0, false
}

// firstSeen is when each pod's first sample is, over every pod metric.
func firstSeen(series []MetricSeries) map[string]time.Time {
	out := map[string]time.Time{}
	for _, m := range series {
		for pod, pts := range m.Pods {
			if len(pts) == 0 {
				continue
			}
			if at, ok := out[pod]; !ok || pts[0].Time.Before(at) {
				out[pod] = pts[0].Time
			}
		}
	}
	return out
}

// podsAt are the pods with a sample at t: the current pod of that name, or, for a pod gone
// since, a copy of a current pod named after it, started and Ready a rate window before its
// first sample (so its first sample counts, as a Ready pod's does).
func (rp *PeriodReplay) podsAt(current []*corev1.Pod, series []MetricSeries, t time.Time, maxAge time.Duration) []*corev1.Pod {
	names := map[string]bool{}
	for _, m := range series {
		for pod := range m.Pods.At(t, maxAge) {
			names[pod] = true
		}
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range current {
		byName[p.Name] = p
	}
	out := make([]*corev1.Pod, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if p, ok := byName[name]; ok {
			out = append(out, p)
			continue
		}
		if len(current) == 0 {
			continue
		}
		p := current[0].DeepCopy()
		started := metav1.NewTime(rp.firstSeen[name].Add(-rp.RateWindow))
		p.Name, p.UID, p.CreationTimestamp, p.DeletionTimestamp = name, "", started, nil
		p.Status.StartTime, p.Status.Phase = &started, corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}
		out = append(out, p)
	}
	return out
}
