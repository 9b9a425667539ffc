package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// DefaultPodAge is how long before the start the initial pods became Ready when
// Workload.Age is zero: long past the CPU initialization period, so they count from the
// first sync.
const DefaultPodAge = time.Hour

// DefaultStart is the virtual time a simulation starts at when Spec.Start is zero; any fixed
// instant keeps results reproducible.
var DefaultStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Workload is the Deployment the HPAs scale.
type Workload struct {
	// Name prefixes pod names ("web" when empty); Labels select its pods (app=Name when empty).
	Name   string
	Labels map[string]string
	// Replicas is spec.replicas at the start; that many pods are Ready then.
	Replicas int32
	// Pod is the pod template's spec: its containers' requests are what utilization is of.
	// The first container carries the pod's usage; others use the idle floor.
	Pod corev1.PodSpec
	// Age is how long before the start the initial pods started and became Ready (0 means
	// DefaultPodAge).
	Age time.Duration
}

// Variant is one HPA played on the load.
type Variant struct {
	Name string
	HPA  *autoscalingv2.HorizontalPodAutoscaler
	// RiskAgainst, when set, holds the targets the time above target is measured against
	// (its metrics, by index, as HPA's): tune compares candidates whose own targets differ
	// against one yardstick, the current spec's. Nil: HPA's own targets.
	RiskAgainst *autoscalingv2.HorizontalPodAutoscaler
}

// Spec is one simulation: the same model, load and workload for every variant.
type Spec struct {
	Model    Model
	Load     load.Curve
	Workload Workload
	Variants []Variant
	// Duration is how long to simulate (0: until the load's last point).
	Duration time.Duration
	// Start is the virtual time of the first sync (0: DefaultStart).
	Start time.Time
	// SummaryOnly keeps no Step: only each variant's Summary (tune plays hundreds of specs
	// and reads their figures only).
	SummaryOnly bool
}

// Result is every variant's run, in the order of Spec.Variants.
type Result struct {
	Model    Model
	Start    time.Time
	Duration time.Duration
	Variants []VariantResult
}

// VariantResult is one variant's run: a step per sync and the summary.
type VariantResult struct {
	Name string
	// Metrics describe the HPA's metrics, by spec index; Step.Metrics follow this order.
	Metrics []MetricInfo
	Steps   []Step
	Summary Summary
}

// MetricInfo is one HPA metric as the steps report it.
type MetricInfo struct {
	// Name is the metric's short name ("cpu", "requests_per_second").
	Name string
	Type autoscalingv2.MetricSourceType
	// TargetType is Utilization, AverageValue or Value; Target its value (a percentage of
	// request for Utilization, the metric's unit otherwise: cores for cpu, bytes for memory).
	TargetType autoscalingv2.MetricTargetType
	Target     float64
}

// Step is one sync.
type Step struct {
	// At is the sync's time since the start.
	At time.Duration
	// Current is spec.replicas before the decision, Desired the decision, Replicas
	// spec.replicas after it (Desired unless the write was not made).
	Current, Desired, Replicas int32
	// Pods exist (any phase), Ready of them are Ready, at the sync.
	Pods, Ready int32
	// Metrics is each metric's current value as the controller saw it (in MetricInfo's
	// unit; NaN when the metric failed or was not computed).
	Metrics []float64
	// Constraint held the decision back (replicas.ConstraintNone when nothing did).
	Constraint replicas.Constraint
	// Scaled says the decision wrote a new count.
	Scaled bool
}

// Summary is a variant's run in figures.
type Summary struct {
	// PeakReplicas is the highest spec.replicas; PeakAt when it was first reached.
	PeakReplicas int32
	PeakAt       time.Duration
	// PodSeconds is the cost: pods existing (any phase) integrated over time.
	PodSeconds float64
	// SecondsAboveTarget is the risk: time during which the demand per Ready pod exceeded a
	// metric's target (the true load, not what the metrics pipeline showed).
	SecondsAboveTarget float64
	// LongestAboveTarget is the longest unbroken stretch of SecondsAboveTarget, in seconds.
	LongestAboveTarget   float64
	ScaleUps, ScaleDowns int
	// HeldBackBy counts the syncs each constraint other than None bound.
	HeldBackBy map[replicas.Constraint]int
}

// Run plays the load for every variant, one goroutine each. An error is a spec the model
// cannot run (a bad model, a load lacking a metric an HPA reads) or ctx's.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if err := s.normalize(); err != nil {
		return nil, err
	}
	res := &Result{Model: s.Model, Start: s.Start, Duration: s.Duration, Variants: make([]VariantResult, len(s.Variants))}
	errs := make([]error, len(s.Variants))
	var wg sync.WaitGroup
	for i, v := range s.Variants {
		wg.Go(func() {
			res.Variants[i], errs[i] = runVariant(ctx, &s, v)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}

// normalize fills the defaults and refuses what cannot run.
func (s *Spec) normalize() error {
	if err := s.Model.Validate(); err != nil {
		return err
	}
	if len(s.Variants) == 0 {
		return errors.New("simulation: no variant to play")
	}
	if len(s.Load.Points) == 0 {
		return errors.New("simulation: the load has no points")
	}
	if s.Start.IsZero() {
		s.Start = DefaultStart
	}
	if s.Duration == 0 {
		s.Duration = s.Load.End()
	}
	if s.Duration <= 0 {
		return errors.New("simulation: the duration is zero: give one, or a load longer than one point")
	}
	w := &s.Workload
	if w.Name == "" {
		w.Name = "web"
	}
	if len(w.Labels) == 0 {
		w.Labels = map[string]string{"app": w.Name}
	}
	if w.Age == 0 {
		w.Age = DefaultPodAge
	}
	if w.Replicas < 0 {
		return fmt.Errorf("simulation: %d initial replicas", w.Replicas)
	}
	if len(w.Pod.Containers) == 0 {
		return errors.New("simulation: the workload's pod has no container")
	}
	for _, v := range s.Variants {
		if v.HPA == nil {
			return fmt.Errorf("simulation: variant %q has no HPA", v.Name)
		}
		if r := v.RiskAgainst; r != nil && len(r.Spec.Metrics) != len(v.HPA.Spec.Metrics) {
			return fmt.Errorf("simulation: variant %q: the risk is measured against %d metrics, the HPA has %d", v.Name, len(r.Spec.Metrics), len(v.HPA.Spec.Metrics))
		}
		for i, m := range v.HPA.Spec.Metrics {
			name, ok := CurveMetric(m)
			if !ok {
				return fmt.Errorf("simulation: variant %q: metric %d (%s) cannot be simulated", v.Name, i, m.Type)
			}
			if !s.Load.Has(name) {
				return fmt.Errorf("simulation: variant %q: metric %d reads %q but the load gives no demand for it", v.Name, i, name)
			}
		}
	}
	return nil
}

// CurveMetric is the load's metric name an HPA metric reads (load.CPU, load.Memory, or the
// metric's own name); false for a spec it cannot name.
func CurveMetric(m autoscalingv2.MetricSpec) (string, bool) {
	switch {
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return resourceMetric(m.Resource.Name)
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return resourceMetric(m.ContainerResource.Name)
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return m.Pods.Metric.Name, true
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return m.Object.Metric.Name, true
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return m.External.Metric.Name, true
	}
	return "", false
}

func resourceMetric(r corev1.ResourceName) (string, bool) {
	switch r {
	case corev1.ResourceCPU:
		return load.CPU, true
	case corev1.ResourceMemory:
		return load.Memory, true
	}
	return "", false
}

// runVariant plays one variant of a normalized spec (Run's goroutine body).
func runVariant(ctx context.Context, s *Spec, v Variant) (VariantResult, error) {
	w := newWorld(s, v)
	out := VariantResult{Name: v.Name, Metrics: w.metricInfo()}
	if err := w.loop(ctx, &out); err != nil {
		return out, fmt.Errorf("simulation: variant %q: %w", v.Name, err)
	}
	return out, nil
}

// loop runs the world from the initial pods' start to the last sync at or before the end.
// At one instant the order is: pod transitions, the load, a scrape, a sync.
func (w *world) loop(ctx context.Context, out *VariantResult) error {
	s, m := w.spec, w.m
	end := s.Duration
	begin := -s.Workload.Age
	for range s.Workload.Replicas {
		p := w.newPod(begin)
		p.started, p.ready = begin, begin
		w.startPod(p)
		w.readyPod(p)
	}
	w.now = begin
	w.setDemand()
	w.rerate()
	nextScrape := m.scrapeAtOrAfter(begin)
	var nextSync time.Duration
	nSyncs := int(s.Duration/(m.SyncPeriod+m.SyncDuration)) + 1
	var values []float64
	if !s.SummaryOnly {
		out.Steps = make([]Step, 0, nSyncs)
		values = make([]float64, 0, nSyncs*len(w.hpa.Spec.Metrics))
	}
	sum := &out.Summary
	sum.HeldBackBy = map[replicas.Constraint]int{}
	sum.PeakReplicas = w.specReplicas
	t := begin
	for nextSync <= end {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := min(nextSync, nextScrape)
		if pe, ok := w.nextPodEvent(); ok && pe < next {
			next = pe
		}
		if lc, ok := w.nextLoadChange(t); ok && lc < next {
			next = lc
		}
		w.account(t, next, end, sum)
		w.advance(next)
		t, w.now = next, next
		changed := w.transitions(t)
		if w.setDemand() || changed {
			w.rerate()
		}
		if t == nextScrape {
			w.scrape(t)
			nextScrape = m.scrapeAtOrAfter(t + 1)
		}
		if t == nextSync {
			step, err := w.sync(ctx, t)
			if err != nil {
				return err
			}
			st := step.Step
			if !s.SummaryOnly {
				n := len(values)
				values = w.appendMetrics(values, step.decision)
				st.Metrics = values[n:len(values):len(values)]
				out.Steps = append(out.Steps, st)
			}
			if st.Scaled {
				if st.Desired > st.Current {
					sum.ScaleUps++
				} else {
					sum.ScaleDowns++
				}
			}
			if st.Constraint != replicas.ConstraintNone {
				sum.HeldBackBy[st.Constraint]++
			}
			if st.Replicas > sum.PeakReplicas {
				sum.PeakReplicas, sum.PeakAt = st.Replicas, st.At
			}
			nextSync += m.SyncDuration + m.SyncPeriod
		}
	}
	// The pods after the last sync cost until the end too (the load changes nothing there that
	// the accounting misses: it only steps at points, and the step is accounted from it on).
	w.accountTail(t, end, sum)
	return nil
}

// accountTail accounts from t to end, stopping at the load's points so that the risk sees
// each step.
func (w *world) accountTail(t, end time.Duration, sum *Summary) {
	for t < end {
		next := end
		if lc, ok := w.nextLoadChange(t); ok && lc < next {
			next = lc
		}
		w.account(t, next, end, sum)
		t, w.now = next, next
		w.setDemand()
	}
}

// scrapeAtOrAfter is metrics-server's first scrape at or after t (both since the start): on
// the grid ScrapeOffset+k*ScrapeInterval, or, with Scrapes, at those instants, the grid going
// on ScrapeInterval apart before the first and after the last.
func (m Model) scrapeAtOrAfter(t time.Duration) time.Duration {
	grid := func(phase time.Duration) time.Duration {
		k := int64(math.Ceil(float64(t-phase) / float64(m.ScrapeInterval)))
		return phase + time.Duration(k)*m.ScrapeInterval
	}
	if len(m.Scrapes) == 0 {
		return grid(m.ScrapeOffset)
	}
	first, last := m.Scrapes[0], m.Scrapes[len(m.Scrapes)-1]
	switch {
	case t < first:
		return grid(first)
	case t > last:
		return grid(last)
	}
	i, _ := slices.BinarySearch(m.Scrapes, t)
	return m.Scrapes[i]
}

type syncStep struct {
	Step
	decision *replicas.Decision
}

// sync is one reconcile: Evaluate, the scale write, Settle.
func (w *world) sync(ctx context.Context, t time.Duration) (syncStep, error) {
	w.usedSets = 0 // this sync's metric reads refill the last one's sample sets
	// The steps keep neither the per-pod account nor the trace: the decision is the same
	// without them (the core's FuzzDecideBrief) at a fraction of the cost. The reads are
	// sequential: the world is in memory, and its reads hand out its sample sets. The sync
	// refills the last one's Evaluation, of which nothing is read once the sync is over, and
	// the decision records in the world's history, which Settle then replaces.
	ev, err := evaluation.Evaluate(ctx, w, w.hpa.Namespace, w.hpa.Name, evaluation.Options{
		Now: w.at(t), Config: w.m.Controller, OmitPodTreatments: true, OmitTrace: true, HistoryOwned: true, Sequential: true, Into: &w.ev,
	})
	if err != nil {
		return syncStep{}, err
	}
	d := &ev.Decision
	st := syncStep{decision: d, Step: Step{
		At: t, Current: d.CurrentReplicas, Desired: d.DesiredReplicas,
		Pods: int32(len(w.pods)), Ready: int32(w.readyCount),
		Constraint: replicas.ConstraintOf(*d), Scaled: d.Rescale,
	}}
	if d.Rescale {
		w.scaleTo(d.DesiredReplicas, t)
	}
	outcome, kept := replicas.Settle(ev.Input, *d, nil, true)
	w.hpa.Status = outcome.Status
	w.history = kept
	st.Replicas = w.specReplicas
	return st, nil
}

// scaleTo is the scale write and what the ReplicaSet makes of it PodCreateDelay later: new
// pods, or the deletion of the pods it ranks first (not yet created, not started, not Ready,
// Ready for the shortest time, newest).
func (w *world) scaleTo(n int32, t time.Duration) {
	w.specReplicas = n
	at := t + w.m.PodCreateDelay
	live := int32(len(w.pending))
	for _, p := range w.pods {
		if !p.deleting {
			live++
		}
	}
	for ; live < n; live++ {
		w.pending = append(w.pending, at)
	}
	for ; live > n && len(w.pending) > 0; live-- {
		w.pending = w.pending[:len(w.pending)-1]
	}
	for ; live > n; live-- {
		var victim *pod
		for _, p := range w.pods {
			if !p.deleting && (victim == nil || deleteFirst(p, victim)) {
				victim = p
			}
		}
		victim.deleting, victim.deleteAt = true, at
	}
}

// deleteFirst is the ReplicaSet's ranking of which pod goes first (controller.ActivePods,
// without the random tie-break of equal ranks: the newest goes).
func deleteFirst(a, b *pod) bool {
	if a.isStarted != b.isStarted {
		return !a.isStarted
	}
	if a.isReady != b.isReady {
		return !a.isReady
	}
	if a.ready != b.ready {
		return a.ready > b.ready
	}
	return a.created > b.created || a.created == b.created && a.obj.Name > b.obj.Name
}

// nextPodEvent is the next creation, start, readiness or deletion.
func (w *world) nextPodEvent() (time.Duration, bool) {
	var next time.Duration
	found := false
	consider := func(t time.Duration) {
		if !found || t < next {
			next, found = t, true
		}
	}
	for _, t := range w.pending {
		consider(t)
	}
	for _, p := range w.pods {
		switch {
		case p.deleting:
			consider(p.deleteAt)
		case !p.isStarted:
			consider(p.started)
		case !p.isReady:
			consider(p.ready)
		}
	}
	return next, found
}

// transitions applies every pod change due at t, and says whether any happened.
func (w *world) transitions(t time.Duration) bool {
	changed := false
	kept := w.pending[:0]
	for _, at := range w.pending {
		if at > t {
			kept = append(kept, at)
			continue
		}
		w.newPod(at)
		changed = true
	}
	w.pending = kept
	for i := 0; i < len(w.pods); i++ {
		p := w.pods[i]
		if p.deleting && p.deleteAt <= t {
			w.removePod(i)
			i--
			changed = true
			continue
		}
		if !p.isStarted && p.started <= t {
			w.startPod(p)
			changed = true
		}
		if p.isStarted && !p.isReady && p.ready <= t {
			w.readyPod(p)
			changed = true
		}
	}
	return changed
}

// setDemand reads the load at now (its first value before the start) and says whether the
// resource demand changed.
func (w *world) setDemand() bool {
	at := max(w.now, 0)
	cpu, mem := w.cpuDemand, w.memDemand
	if w.spec.Load.Has(load.CPU) {
		w.cpuDemand = int64(math.Round(w.spec.Load.Value(load.CPU, at)))
	}
	if w.spec.Load.Has(load.Memory) {
		w.memDemand = int64(math.Round(w.spec.Load.Value(load.Memory, at)))
	}
	return cpu != w.cpuDemand || mem != w.memDemand
}

// nextLoadChange is the next point of a step curve after t; a linear curve is read at every
// instant the loop stops at anyway (scrapes and syncs), so it adds none.
func (w *world) nextLoadChange(t time.Duration) (time.Duration, bool) {
	if w.spec.Load.Interpolation == load.Linear {
		return 0, false
	}
	return w.spec.Load.Next(max(t, 0))
}

// account adds the time from t to next (within the start and end) to the cost and risk.
func (w *world) account(t, next, end time.Duration, sum *Summary) {
	t, next = max(t, 0), min(next, end)
	if next <= t {
		return
	}
	dt := (next - t).Seconds()
	sum.PodSeconds += float64(len(w.pods)) * dt
	if !w.aboveTarget() {
		w.stretch = 0
		return
	}
	sum.SecondsAboveTarget += dt
	w.stretch += dt
	sum.LongestAboveTarget = max(sum.LongestAboveTarget, w.stretch)
}

// metricInfo describes the HPA's metrics.
func (w *world) metricInfo() []MetricInfo {
	out := make([]MetricInfo, len(w.hpa.Spec.Metrics))
	for i, m := range w.hpa.Spec.Metrics {
		name, _ := CurveMetric(m)
		t := metricTarget(m)
		out[i] = MetricInfo{Name: name, Type: m.Type, TargetType: t.Type}
		switch {
		case t.AverageUtilization != nil:
			out[i].Target = float64(*t.AverageUtilization)
		case t.AverageValue != nil:
			out[i].Target = t.AverageValue.AsApproximateFloat64()
		case t.Value != nil:
			out[i].Target = t.Value.AsApproximateFloat64()
		}
	}
	return out
}

func metricTarget(m autoscalingv2.MetricSpec) autoscalingv2.MetricTarget {
	switch {
	case m.Resource != nil && m.Type == autoscalingv2.ResourceMetricSourceType:
		return m.Resource.Target
	case m.ContainerResource != nil && m.Type == autoscalingv2.ContainerResourceMetricSourceType:
		return m.ContainerResource.Target
	case m.Pods != nil && m.Type == autoscalingv2.PodsMetricSourceType:
		return m.Pods.Target
	case m.Object != nil && m.Type == autoscalingv2.ObjectMetricSourceType:
		return m.Object.Target
	case m.External != nil && m.Type == autoscalingv2.ExternalMetricSourceType:
		return m.External.Target
	}
	return autoscalingv2.MetricTarget{}
}

// appendMetrics appends each metric's current value from the decision's statuses.
func (w *world) appendMetrics(dst []float64, d *replicas.Decision) []float64 {
	for i := range w.hpa.Spec.Metrics {
		v := math.NaN()
		if i < len(d.Metrics) && d.Metrics[i].Err == nil {
			v = currentOf(d.Metrics[i].Status)
		}
		dst = append(dst, v)
	}
	return dst
}

func currentOf(s autoscalingv2.MetricStatus) float64 {
	var c *autoscalingv2.MetricValueStatus
	switch {
	case s.Resource != nil:
		c = &s.Resource.Current
	case s.ContainerResource != nil:
		c = &s.ContainerResource.Current
	case s.Pods != nil:
		c = &s.Pods.Current
	case s.Object != nil:
		c = &s.Object.Current
	case s.External != nil:
		c = &s.External.Current
	default:
		return math.NaN()
	}
	switch {
	case c.AverageUtilization != nil:
		return float64(*c.AverageUtilization)
	case c.AverageValue != nil:
		return c.AverageValue.AsApproximateFloat64()
	case c.Value != nil:
		return c.Value.AsApproximateFloat64()
	}
	return math.NaN()
}

// riskTarget is one metric the time above target is measured against, read from its spec
// once (aboveTarget runs at every step of the loop): the load's metric and the threshold.
type riskTarget struct {
	curve string
	// perPod compares the demand per Ready pod (times 100 for a utilization), total the
	// demand itself, with threshold.
	perPod    bool
	percent   bool
	threshold float64
}

// riskTargets are the targets of metrics that aboveTarget measures against; a utilization
// target's threshold is the percentage times a pod's request (a metric without a request
// is left out: nothing to be above).
func (w *world) riskTargets(metrics []autoscalingv2.MetricSpec) []riskTarget {
	var out []riskTarget
	for _, m := range metrics {
		name, _ := CurveMetric(m)
		t := metricTarget(m)
		switch {
		case t.AverageUtilization != nil:
			req := w.requestPerPod(m)
			if req <= 0 {
				continue
			}
			out = append(out, riskTarget{curve: name, perPod: true, percent: true, threshold: float64(*t.AverageUtilization) * req})
		case t.AverageValue != nil:
			out = append(out, riskTarget{curve: name, perPod: true, threshold: t.AverageValue.AsApproximateFloat64()})
		case t.Value != nil:
			out = append(out, riskTarget{curve: name, threshold: t.Value.AsApproximateFloat64()})
		}
	}
	return out
}

// aboveTarget says whether the true demand per Ready pod exceeds any metric's target (or
// the RiskAgainst spec's) now.
func (w *world) aboveTarget() bool {
	for _, r := range w.risk {
		var total float64
		switch r.curve {
		case load.CPU:
			total = float64(w.cpuDemand) / 1000
		case load.Memory:
			total = float64(w.memDemand)
		default:
			total = w.spec.Load.Value(r.curve, max(w.now, 0))
		}
		if !r.perPod {
			if total > r.threshold {
				return true
			}
			continue
		}
		perPod := math.Inf(1)
		if w.readyCount > 0 {
			perPod = total / float64(w.readyCount)
		} else if total == 0 {
			perPod = 0
		}
		if r.percent {
			perPod *= 100
		}
		if perPod > r.threshold {
			return true
		}
	}
	return false
}

// requestPerPod is one pod's request of a resource metric's resource (cores or bytes).
func (w *world) requestPerPod(m autoscalingv2.MetricSpec) float64 {
	var (
		res       corev1.ResourceName
		container string
	)
	switch {
	case m.Resource != nil:
		res = m.Resource.Name
	case m.ContainerResource != nil:
		res, container = m.ContainerResource.Name, m.ContainerResource.Container
	default:
		return 0
	}
	var sum float64
	for _, c := range w.spec.Workload.Pod.Containers {
		if container != "" && c.Name != container {
			continue
		}
		if q, ok := c.Resources.Requests[res]; ok {
			sum += q.AsApproximateFloat64()
		}
	}
	return sum
}
