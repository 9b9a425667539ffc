package history

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// PrometheusReader is a history reader for an HPA another controller (kube-controller-manager)
// decides: it reads the rescale events as EventReader does, and its Known replays the
// metrics of the last stabilization window from Prometheus through the core.
type PrometheusReader struct {
	Events EventReader
	Reader *prometheus.Reader
	// SyncPeriod is the deciding controller's sync period (kube-controller-manager's
	// --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
}

// History reads the events; the replay waits for the gathered input (HistoryFor).
func (r PrometheusReader) History(ctx context.Context, namespace, name string) Known {
	events, _ := r.Events.History(ctx, namespace, name).(Events)
	return &Prometheus{Events: events, reader: r.Reader, syncPeriod: r.SyncPeriod}
}

// Prometheus is the past of an HPA replayed from Prometheus. Until HistoryFor ran, and when
// the replay failed (Replay.Err), its history is the Events reconstruction.
type Prometheus struct {
	Events
	// Replay is the replay's outcome, set by HistoryFor.
	Replay *PrometheusReplay

	reader     *prometheus.Reader
	syncPeriod time.Duration
}

// History implements Known: the replayed history once HistoryFor replayed it, else the
// reconstruction.
func (p *Prometheus) History(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) replicas.History {
	if p.Replay != nil && p.Replay.Err == nil {
		return p.Replay.History
	}
	return p.Events.History(hpa, now)
}

// HistoryFor implements InputDependent: it reads the series and replays them, unless a kubectl
// hpa run recorded the HPA's history (then that is the history, and nothing is replayed).
func (p *Prometheus) HistoryFor(ctx context.Context, in replicas.Input) replicas.History {
	if rec, ok, err := p.Recorded(in.HPA, in.Now); ok && err == nil {
		return rec.Restored.History
	}
	series, plan, err := readReplaySeries(ctx, p.reader, in, p.syncPeriod)
	if err != nil {
		p.Replay = &PrometheusReplay{Source: p.reader.Address(), Err: err}
		return p.Events.History(in.HPA, in.Now)
	}
	p.Replay = ReplaySeries(in, p.Events, series, plan)
	p.Replay.Source = p.reader.Address()
	if p.Replay.Err != nil {
		return p.Events.History(in.HPA, in.Now)
	}
	return p.Replay.History
}

// PrometheusReplay is what replaying the metric history from Prometheus through the core
// found.
type PrometheusReplay struct {
	// Source is the Prometheus asked.
	Source string
	// Err says why there is no replay (Prometheus unreachable, no series, a metric without
	// a query); the history is then the reconstruction from status and events.
	Err error
	// Queries are the PromQL sent, by metric.
	Queries []string
	// From and To bound the replayed kube-controller-manager syncs.
	From, To time.Time
	// Syncs is how many syncs were replayed per phase.
	Syncs int
	// SyncPeriod and the range of the controller's sync phase (its syncs fall at
	// PhaseFrom..PhaseTo modulo SyncPeriod, in Unix time); PhaseAnchor says what narrowed it.
	SyncPeriod         time.Duration
	PhaseFrom, PhaseTo time.Duration
	PhaseAnchor        string
	RateWindow, Step   time.Duration
	History            replicas.History
	// [HoldEndsFrom, HoldEndsTo) is when the first sync falls, over every phase in range,
	// at which the controller would write a different count if the metrics stay as they
	// are now (zero when none within the window: nothing held, or the hold outlasts it);
	// EndsAt is the count it would write then.
	HoldEndsFrom, HoldEndsTo time.Time
	EndsAt                   int32
	// [NextFrom, NextTo) is when the controller's next sync falls.
	NextFrom, NextTo time.Time
	// Notes say what makes the replay less than exact.
	Notes []string
}

// replayPlan is how the series were read.
type replayPlan struct {
	syncPeriod, horizon time.Duration
	grid                prometheus.Grid
	rateWindow          time.Duration
	sampleWindow        time.Duration
	queries             []string
}

// MetricSeries is one metric's history: per pod for pod metrics, per series otherwise.
type MetricSeries struct {
	Pods   prometheus.Series
	Values prometheus.Series
}

// replayHorizon is the longest window the stabilization looks back over.
func replayHorizon(in replicas.Input) time.Duration {
	if in.HPA.Spec.Behavior == nil {
		return in.Config.DownscaleStabilizationWindow
	}
	b := replicas.EffectiveBehavior(in.HPA, in.Config)
	return time.Duration(max(*b.ScaleUp.StabilizationWindowSeconds, *b.ScaleDown.StabilizationWindowSeconds)) * time.Second
}

// readReplaySeries reads each metric's series over the horizon, on a grid aligned with
// the live samples' timestamps (metrics-server's scrapes), so that the value at a sync is
// what the metrics API served then.
func readReplaySeries(ctx context.Context, r *prometheus.Reader, in replicas.Input, syncPeriod time.Duration) ([]MetricSeries, replayPlan, error) {
	plan := replayPlan{syncPeriod: syncPeriod}
	if in.HPA == nil || in.Scale == nil {
		return nil, plan, errors.New("the target's scale could not be read, so there is nothing to replay against")
	}
	if syncPeriod <= 0 {
		return nil, plan, errors.New("no sync period to replay with")
	}
	plan.horizon = replayHorizon(in)
	if plan.horizon == 0 {
		return nil, plan, errors.New("no stabilization window: the controller's decision does not depend on past recommendations, nothing to replay")
	}
	// The live samples say when metrics-server scraped and over which window.
	var anchor time.Time
	for _, m := range in.Metrics {
		for s := range m.PodSamples.Values() {
			if at := sampleset.Time(s.Timestamp); at.After(anchor) {
				anchor, plan.sampleWindow = at, s.Window
			}
		}
	}
	step := plan.sampleWindow.Round(time.Second)
	if anchor.IsZero() || step <= 0 {
		anchor, step = in.Now.Truncate(time.Second), time.Second
	}
	n := (plan.horizon + 2*syncPeriod + step - 1) / step
	plan.grid = prometheus.Grid{Start: anchor.Add(-n * step), End: anchor, Step: step}
	pods := replayPods(in)
	plan.rateWindow = r.Window(plan.sampleWindow)
	out, queries, err := readSeries(ctx, r, in.HPA, pods, plan.rateWindow, plan.grid)
	plan.queries = queries
	if err != nil {
		return nil, plan, err
	}
	return out, plan, nil
}

// readSeries reads each of hpa's metrics on grid: cpu as metrics-server computes it from the
// usage counter over rateWindow, other resources from cAdvisor, the rest through
// --prometheus-query; per pod for pod metrics.
func readSeries(ctx context.Context, r *prometheus.Reader, hpa *autoscalingv2.HorizontalPodAutoscaler, pods prometheus.Pods, rateWindow time.Duration, grid prometheus.Grid) ([]MetricSeries, []string, error) {
	var queries []string
	out := make([]MetricSeries, len(hpa.Spec.Metrics))
	for i, spec := range hpa.Spec.Metrics {
		name := replicas.MetricName(spec)
		var (
			s   prometheus.Series
			q   string
			err error
		)
		switch spec.Type {
		case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
			res, container := corev1.ResourceName(""), ""
			if spec.Resource != nil {
				res = spec.Resource.Name
			} else if spec.ContainerResource != nil {
				res, container = spec.ContainerResource.Name, spec.ContainerResource.Container
			}
			if res == corev1.ResourceCPU {
				// The counter's increase over the window, as metrics-server computes it.
				s, q, err = r.CPUAverages(ctx, pods, container, rateWindow, grid)
			} else {
				s, q, err = r.Resource(ctx, pods, res, container, rateWindow, grid)
			}
			out[i].Pods = s
		default:
			metric, object, key := "", "", ""
			switch {
			case spec.Pods != nil:
				metric, key = spec.Pods.Metric.Name, "pod"
			case spec.Object != nil:
				metric, object = spec.Object.Metric.Name, spec.Object.DescribedObject.Name
			case spec.External != nil:
				metric = spec.External.Metric.Name
			}
			var ok bool
			q, ok, err = r.NamedQuery(metric, pods, object, rateWindow)
			if err == nil && !ok {
				return nil, queries, fmt.Errorf("metric %d (%s) has no cAdvisor series: name its series with --prometheus-query %s=PROMQL", i, name, metric)
			}
			if err == nil {
				s, err = r.Range(ctx, q, grid, key)
			}
			if key == "pod" {
				out[i].Pods = s
			} else {
				out[i].Values = s
			}
		}
		if err != nil {
			return nil, queries, fmt.Errorf("metric %d (%s): %w", i, name, err)
		}
		queries = append(queries, q)
	}
	return out, queries, nil
}

// replayPods names the pods whose series count: the current ones, and those a controller
// of the target's kind would have named (gone since, as after a scale-down).
func replayPods(in replicas.Input) prometheus.Pods {
	names := make([]string, 0, len(in.Pods))
	for _, pod := range in.Pods {
		names = append(names, pod.Name)
	}
	ref := in.HPA.Spec.ScaleTargetRef
	return prometheus.TargetPods(in.HPA.Namespace, ref.Kind, ref.Name, names)
}

// ReplaySeries replays series (one per spec metric) through the core at every sync the
// controller could have made over the horizon, for each sync phase in range, and predicts
// when the stabilization's hold ends. in is the live input (its pods, scale, behavior and
// time); rescales are the visible rescales (the sizes over time and the scale events).
func ReplaySeries(in replicas.Input, rescales Events, series []MetricSeries, plan replayPlan) *PrometheusReplay {
	p := plan.syncPeriod
	rp := &PrometheusReplay{SyncPeriod: p, Queries: plan.queries, RateWindow: plan.rateWindow, Step: plan.grid.Step}
	if len(series) != len(in.HPA.Spec.Metrics) {
		rp.Err = fmt.Errorf("replay: %d series for %d metrics", len(series), len(in.HPA.Spec.Metrics))
		return rp
	}
	var anchoredAt time.Time
	rp.PhaseFrom, rp.PhaseTo, rp.PhaseAnchor, anchoredAt = syncPhaseRange(in.HPA, p)
	if !anchoredAt.IsZero() {
		rp.Notes = append(rp.Notes, fmt.Sprintf("the sync phase comes from a sync %d periods ago; kube-controller-manager queues each sync one period after the previous one ended, so its syncs drift later by the time each takes (milliseconds, more on a loaded controller) and a restart of it moves them",
			int(in.Now.Sub(anchoredAt)/p)))
	}
	base := rescales.Infer(in.HPA, in.Scale, in.Now).History
	sizes := sizesOf(rescales, in.Now)
	maxAge := 2 * plan.grid.Step
	gone := map[string]bool{}

	type outcome struct {
		phase   time.Duration
		history replicas.History
		next    time.Time
		endAt   time.Time
		endTo   int32
	}
	var outcomes []outcome
	from := in.Now.Add(-plan.horizon - p)
	phases, spacing := phaseCandidates(rp.PhaseFrom, rp.PhaseTo, p)
	for _, phase := range phases {
		h := replicas.History{Recommendations: []replicas.Recommendation{}, ScaleUpEvents: base.ScaleUpEvents, ScaleDownEvents: base.ScaleDownEvents}
		syncs := 0
		t := firstSyncAtOrAfter(from, phase, p)
		for ; !t.After(in.Now); t = t.Add(p) {
			at := in
			at.Now = t
			at.History = h
			at.Pods = podsAt(in.Pods, t)
			at.Scale = scaleAt(in.Scale, sizes, t, series)
			at.Metrics = metricsAt(in, series, t, maxAge, plan.sampleWindow, gone)
			h = replicas.Decide(at).History
			syncs++
		}
		o := outcome{phase: phase, history: h, next: t}
		// The future, with the metrics as they are now: the first sync that rescales.
		for end := in.Now.Add(plan.horizon + 2*p); !t.After(end); t = t.Add(p) {
			at := in
			at.Now = t
			at.History = h
			d := replicas.Decide(at)
			if d.Rescale {
				o.endAt, o.endTo = t, d.DesiredReplicas
				break
			}
			h = d.History
		}
		outcomes = append(outcomes, o)
		rp.Syncs = syncs
	}
	if len(outcomes) == 0 {
		rp.Err = errors.New("replay: no sync phase to replay")
		return rp
	}
	rp.From, rp.To = from, in.Now
	// The middle phase's history is the one the decision now uses.
	mid := outcomes[len(outcomes)/2]
	rp.History = mid.history
	for i, o := range outcomes {
		if i == 0 || o.next.Before(rp.NextFrom) {
			rp.NextFrom = o.next
		}
		if o.next.After(rp.NextTo) {
			rp.NextTo = o.next
		}
		if o.endAt.IsZero() {
			continue
		}
		if rp.HoldEndsFrom.IsZero() || o.endAt.Before(rp.HoldEndsFrom) {
			rp.HoldEndsFrom = o.endAt
		}
		if o.endAt.After(rp.HoldEndsTo) {
			rp.HoldEndsTo = o.endAt
		}
		rp.EndsAt = o.endTo
	}
	// Between two candidate phases a sync moves by less than their spacing: the ends are
	// half-open ranges [From, To).
	rp.NextTo = rp.NextTo.Add(spacing)
	if !rp.HoldEndsTo.IsZero() {
		rp.HoldEndsTo = rp.HoldEndsTo.Add(spacing)
	}
	if len(gone) > 0 {
		var names []string
		for n := range gone {
			names = append(names, n)
		}
		sort.Strings(names)
		rp.Notes = append(rp.Notes, fmt.Sprintf("%d pod(s) with series in the window no longer exist (%s): their samples are not counted, as the controller would have counted them while they ran", len(names), strings.Join(names, ", ")))
	}
	return rp
}

// syncPhaseRange narrows where the controller's syncs fall modulo p: each condition's
// lastTransitionTime, status.lastScaleTime and the time of the last status write (the
// managedFields entry of the status subresource) is the time of one of its syncs, written to
// the second (truncated), so the latest of them puts the phase within one second. Without
// one, any phase is possible. The latest matters: the syncs drift later by the time each
// takes, and the status is written at most syncs (whenever a metric's value moved), where a
// rescale or a condition's transition can lie many periods back.
func syncPhaseRange(hpa *autoscalingv2.HorizontalPodAutoscaler, p time.Duration) (from, to time.Duration, anchor string, at time.Time) {
	if lst := hpa.Status.LastScaleTime; lst != nil {
		at, anchor = lst.Time, "status.lastScaleTime "+lst.UTC().Format(time.RFC3339)
	}
	for _, c := range hpa.Status.Conditions {
		if c.LastTransitionTime.After(at) {
			at, anchor = c.LastTransitionTime.Time, fmt.Sprintf("condition %s's lastTransitionTime %s", c.Type, c.LastTransitionTime.UTC().Format(time.RFC3339))
		}
	}
	for _, e := range hpa.ManagedFields {
		if e.Subresource == "status" && e.Time != nil && e.Time.After(at) {
			at, anchor = e.Time.Time, fmt.Sprintf("the status write by %s at %s", e.Manager, e.Time.UTC().Format(time.RFC3339))
		}
	}
	if at.IsZero() || p <= time.Second {
		return 0, p, "", time.Time{}
	}
	from = time.Duration(at.UnixNano() % int64(p))
	return from, from + time.Second, anchor, at
}

// phaseCandidates spreads phases over [from, to) (the second a truncated timestamp leaves
// open, or the whole period): every 250ms over a narrowed second, every second over a
// whole period. It returns the spacing too: a phase between two candidates moves a sync
// time by less than it.
func phaseCandidates(from, to, p time.Duration) ([]time.Duration, time.Duration) {
	step := time.Second
	if to-from <= time.Second {
		step = 250 * time.Millisecond
	}
	var out []time.Duration
	for ph := from; ph < to; ph += step {
		out = append(out, ph%p)
	}
	return out, step
}

// firstSyncAtOrAfter is the first time at or after t that falls at phase modulo p.
func firstSyncAtOrAfter(t time.Time, phase, p time.Duration) time.Time {
	rem := time.Duration(t.UnixNano() % int64(p))
	d := (phase - rem + p) % p
	return t.Add(d)
}

// podsAt are the pods that existed at t.
func podsAt(pods []*corev1.Pod, t time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if !p.CreationTimestamp.After(t) {
			out = append(out, p)
		}
	}
	return out
}

type sizeAt struct {
	at   time.Time
	size int32
}

// sizesOf are the sizes the visible rescales set, in time order.
func sizesOf(r Events, now time.Time) []sizeAt {
	var out []sizeAt
	for _, ev := range r.Events {
		var n int32
		if _, err := fmt.Sscanf(ev.Message, "New size: %d;", &n); err != nil {
			continue
		}
		t := EventTime(ev)
		if t.After(now) {
			t = now
		}
		out = append(out, sizeAt{t, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// scaleAt is the target's scale at t: the size of the last visible rescale before t; before
// the first one, the number of pods with a series then; with none, the current scale.
func scaleAt(now *replicas.Scale, sizes []sizeAt, t time.Time, series []MetricSeries) *replicas.Scale {
	s := *now
	i := sort.Search(len(sizes), func(i int) bool { return sizes[i].at.After(t) })
	switch {
	case i > 0:
		s.SpecReplicas = sizes[i-1].size
	case len(sizes) > 0:
		n := 0
		for _, m := range series {
			if m.Pods != nil {
				n = max(n, len(m.Pods.At(t, 0)))
			}
		}
		if n > 0 {
			s.SpecReplicas = int32(n)
		}
	}
	s.StatusReplicas = s.SpecReplicas
	return &s
}

// metricsAt is what the metrics APIs would have served at t: the live sample from its time
// on, the series before; samples of pods that no longer exist are noted in gone.
func metricsAt(in replicas.Input, series []MetricSeries, t time.Time, maxAge, window time.Duration, gone map[string]bool) []replicas.MetricData {
	exists := map[string]bool{}
	for _, p := range in.Pods {
		exists[p.Name] = true
	}
	out := make([]replicas.MetricData, len(series))
	for i, m := range series {
		if i < len(in.Metrics) && in.Metrics[i].Err == nil && !in.Metrics[i].Timestamp.IsZero() && !t.Before(in.Metrics[i].Timestamp) {
			// Since the live sample the metrics API has served it: it is exact, where
			// Prometheus may not have scraped since.
			out[i] = in.Metrics[i]
			continue
		}
		d := replicas.MetricData{Source: "prometheus"}
		switch {
		case m.Pods != nil:
			at := m.Pods.At(t, maxAge)
			d.PodSamples = sampleset.New(len(at))
			for _, pod := range slices.Sorted(maps.Keys(at)) {
				pt := at[pod]
				if !exists[pod] {
					gone[pod] = true
					continue
				}
				d.PodSamples.Add(pod, sampleset.Sample{MilliValue: pt.MilliValue, Timestamp: sampleset.Timestamp(pt.Time), Window: window})
				if pt.Time.After(d.Timestamp) {
					d.Timestamp = pt.Time
				}
			}
			if d.PodSamples.Len() == 0 {
				d.Err = fmt.Errorf("no samples at %s", t.UTC().Format(time.RFC3339))
			}
		default:
			keys := make([]string, 0, len(m.Values))
			for k := range m.Values {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			vals := m.Values.At(t, maxAge)
			for _, k := range keys {
				if pt, ok := vals[k]; ok {
					d.Values = append(d.Values, pt.MilliValue)
					d.Timestamp = pt.Time
				}
			}
			if len(d.Values) == 0 {
				d.Err = fmt.Errorf("no samples at %s", t.UTC().Format(time.RFC3339))
			} else {
				d.Value = d.Values[0]
			}
		}
		if i < len(in.HPA.Spec.Metrics) && in.HPA.Spec.Metrics[i].Type == autoscalingv2.ObjectMetricSourceType {
			d.Values = nil
		}
		out[i] = d
	}
	return out
}
