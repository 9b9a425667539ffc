package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// freshContainerWindow is metrics-server's freshContainerWindowMetricsResolution: a container
// started at least this long (and less than one scrape interval) before its first scrape is
// measured from its start instead of waiting for a second scrape.
const freshContainerWindow = 10 * time.Second

// The world's instants are offsets from the start (world.start), in nanoseconds: its loop
// stops at every scrape, sync and pod change, and time.Time's Sub, Add and Before there, with
// a pointer in every point the scrape copied (each copy a write barrier), cost a quarter of
// tune's search. Truncations follow the absolute instant (world.truncate), and the instants
// the controller reads become times again (world.at).

// pod is one simulated pod: its API object (the pointer Pods returns, updated in place at each
// transition), its lifecycle instants, the kubelet's counters and metrics-server's points.
type pod struct {
	obj              *corev1.Pod
	created, started time.Duration
	ready            time.Duration
	// startTime is started in whole seconds: the status.startTime and
	// container_start_time_seconds the pod reports once started.
	startTime time.Duration
	// state: what has happened by now.
	isStarted, isReady bool
	// deleting says the ReplicaSet chose it, to delete at deleteAt.
	deleting bool
	deleteAt time.Duration

	// Kubelet counters (the node stand-in's load model): cumulative CPU seconds of the first
	// container, integrated at cpuMilli since advanced; memBytes the working set.
	cpuSeconds float64
	cpuMilli   int64
	memBytes   int64
	advanced   time.Duration
	// metrics-server's last two points per container (index = container), and whether the
	// pod is in its last batch / has a previous point for every container.
	last, prev       []msPoint
	hasLast, hasPrev bool
	// one holds last and prev of a pod with one container (the usual pod), in the pod's own
	// memory: the scrape and the metric read touch each pod at every sync.
	one [2]msPoint
	// name is obj.Name, read here without touching the object.
	name string
}

// msPoint is metrics-server's MetricsPoint.
type msPoint struct {
	start, ts time.Duration
	cpu, mem  uint64
	ok        bool
}

// world is one variant's cluster: a Deployment's pods, the kubelet's counters, metrics-server's
// storage and the HPA. It is the evaluation.Source the variant's syncs read; one goroutine owns
// it, so it needs no lock (Evaluate reads it sequentially: its metric reads reuse its sample
// sets).
type world struct {
	m     Model
	spec  *Spec
	hpa   *autoscalingv2.HorizontalPodAutoscaler
	start time.Time
	// startFrac is the start's fraction of a second, which truncations to whole seconds or
	// milliseconds of an offset need.
	startFrac time.Duration
	now       time.Duration

	specReplicas int32
	pods         []*pod // existing pods, oldest first
	objs         []*corev1.Pod
	nextName     int
	// pending are pod creations the ReplicaSet will make (their creation instants).
	pending []time.Duration
	history replicas.History
	scale   replicas.Scale
	// sets are the sample sets the metric reads fill, reused from sync to sync (the sync
	// drops its input before the next); usedSets counts those handed out this sync.
	sets     []*sampleset.Set
	usedSets int
	// ev is the Evaluation every sync fills (evaluation.Options.Into).
	ev evaluation.Evaluation

	// demand at now, per curve metric index; readyCount the Ready pods.
	cpuDemand, memDemand int64
	readyCount           int64
	// stretch is how long the demand has been above target without a break, in seconds.
	stretch float64

	selector string
	parsed   labels.Selector
	// risk are the targets the time above target is measured against.
	risk []riskTarget
}

func newWorld(s *Spec, v Variant) *world {
	w := &world{
		m:            s.Model,
		spec:         s,
		hpa:          v.HPA.DeepCopy(),
		start:        s.Start,
		startFrac:    time.Duration(s.Start.Nanosecond()),
		specReplicas: s.Workload.Replicas,
		selector:     labels.SelectorFromSet(s.Workload.Labels).String(),
	}
	risk := w.hpa.Spec.Metrics
	if v.RiskAgainst != nil {
		risk = v.RiskAgainst.Spec.Metrics
	}
	w.risk = w.riskTargets(risk)
	return w
}

// at is the instant of offset t.
func (w *world) at(t time.Duration) time.Time { return w.start.Add(t) }

// truncate is offset t rounded down to a multiple of unit (a divisor of a second) since the
// zero time, as time.Time's Truncate rounds the instant.
func (w *world) truncate(t, unit time.Duration) time.Duration {
	r := (t + w.startFrac) % unit
	if r < 0 {
		r += unit
	}
	return t - r
}

// newPod adds a pod created at t.
func (w *world) newPod(t time.Duration) *pod {
	w.nextName++
	wl := &w.spec.Workload
	created := w.truncate(t, time.Second)
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%06d", wl.Name, w.nextName), Namespace: w.hpa.Namespace, Labels: wl.Labels,
			CreationTimestamp: metav1.NewTime(w.at(created)),
		},
		Spec:   wl.Pod,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	n := len(wl.Pod.Containers)
	p := &pod{obj: obj, created: t, name: obj.Name}
	if n == 1 {
		p.last, p.prev = p.one[0:1:1], p.one[1:2:2]
	} else {
		p.last, p.prev = make([]msPoint, n), make([]msPoint, n)
	}
	p.started = max(created+w.m.PodStartDelay, t)
	p.ready = p.started + w.m.PodReadyDelay
	w.pods = append(w.pods, p)
	w.objs = append(w.objs, obj)
	return p
}

// startPod marks p Running (not yet Ready) at its start instant.
func (w *world) startPod(p *pod) {
	p.isStarted = true
	p.advanced = p.started
	p.startTime = w.truncate(p.started, time.Second)
	st := metav1.NewTime(w.at(p.startTime))
	p.obj.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &st,
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: st,
		}},
	}
	w.setRate(p)
}

// readyPod marks p Ready.
func (w *world) readyPod(p *pod) {
	p.isReady = true
	w.readyCount++
	c := &p.obj.Status.Conditions[0]
	if c.Status != corev1.ConditionTrue {
		c.Status = corev1.ConditionTrue
		c.LastTransitionTime = metav1.NewTime(w.at(w.truncate(p.ready, time.Second)))
	}
}

// removePod deletes the pod at index i: the node stand-in finishes a deletion at once, so it
// leaves the pod list, the load and metrics-server's next batch together.
func (w *world) removePod(i int) {
	p := w.pods[i]
	if p.isReady {
		w.readyCount--
	}
	w.pods = append(w.pods[:i], w.pods[i+1:]...)
	w.objs = slices.DeleteFunc(w.objs, func(o *corev1.Pod) bool { return o == p.obj })
}

// advance integrates every running pod's counter to t at its rate.
func (w *world) advance(t time.Duration) {
	// The pods were mostly advanced together: their interval's seconds are computed once.
	var dt time.Duration
	var secs float64
	for _, p := range w.pods {
		if p.isStarted {
			if d := t - p.advanced; d > 0 {
				if d != dt {
					dt, secs = d, d.Seconds()
				}
				p.cpuSeconds += float64(p.cpuMilli) / 1000 * secs
				p.advanced = t
			}
		}
	}
}

// setRate gives p its share of the demand: an even split over the Ready pods, in whole
// millicores and bytes, never below the idle floor (the node stand-in's setRate).
func (w *world) setRate(p *pod) {
	var cpu, mem int64
	if p.isReady && w.readyCount > 0 {
		cpu, mem = w.cpuDemand/w.readyCount, w.memDemand/w.readyCount
	}
	p.cpuMilli, p.memBytes = max(cpu, w.m.IdleCPUMilli), max(mem, w.m.IdleMemoryBytes)
}

func (w *world) rerate() {
	for _, p := range w.pods {
		if p.isStarted {
			w.setRate(p)
		}
	}
}

// scrape is one metrics-server scrape at t (on the kubelet page's millisecond grid) and its
// Store: points for every running pod, the previous point kept or synthesized as
// metrics-server v0.8's podStorage does, and pods missing from the batch forgotten.
func (w *world) scrape(t time.Duration) {
	t = w.truncate(t, time.Millisecond)
	for _, p := range w.pods {
		if !p.isStarted || !w.hasData(p, t) {
			p.hasLast, p.hasPrev = false, false
			continue
		}
		hadLast, hadPrev := p.hasLast, p.hasPrev
		p.hasPrev = false
		for c := range p.last {
			np := w.point(p, c, t)
			var prev msPoint
			switch {
			case np.start < np.ts && np.ts-np.start < w.m.ScrapeInterval && np.ts-np.start >= freshContainerWindow:
				prev = np
				prev.ts, prev.cpu = np.start, 0
			case hadLast && np.start < p.last[c].ts:
				if np.ts > p.last[c].ts {
					prev = p.last[c]
				} else if hadPrev && p.prev[c].ok && p.prev[c].ts < np.ts {
					prev = p.prev[c]
				}
			}
			p.prev[c] = prev
			if prev.ok {
				p.hasPrev = true
			}
			p.last[c] = np
		}
		p.hasLast = true
	}
}

// point is container c's point of p scraped at t: the first container carries the pod's
// usage, the others the idle floor.
func (w *world) point(p *pod, c int, t time.Duration) msPoint {
	start := p.startTime // container_start_time_seconds: whole seconds
	cpu, mem := p.cpuSeconds, p.memBytes
	if c > 0 {
		cpu = float64(w.m.IdleCPUMilli) / 1000 * (t - start).Seconds()
		mem = w.m.IdleMemoryBytes
	}
	return msPoint{start: start, ts: t, cpu: uint64(cpu * 1e9), mem: uint64(mem), ok: true}
}

// hasData says whether every container of p has a point at t: a zero counter or working set
// reads as no data, and leaves the pod out of the batch.
func (w *world) hasData(p *pod, t time.Duration) bool {
	for c := range p.last {
		if pt := w.point(p, c, t); pt.cpu == 0 || pt.mem == 0 {
			return false
		}
	}
	return true
}

// podResource is metrics-server's GetMetrics for every existing pod, read by the HPA's
// resource metrics client: per container, the counter difference over the window in whole
// nanocores (a Quantity read with MilliValue, which rounds up), memory in bytes; the pod's
// timestamp as served (RFC 3339, whole seconds) and its window.
func (w *world) podResource(res corev1.ResourceName, container string) (*sampleset.Set, time.Time, error) {
	out := w.sampleSet()
	var first time.Time
	// The pods' timestamps and windows are mostly one scrape's: its Timestamp and the
	// window's seconds are computed once.
	var lastTs, lastWin time.Duration
	var lastStamp int64
	var winSecs float64
	ci := -1
	if container != "" {
		for i, c := range w.spec.Workload.Pod.Containers {
			if c.Name == container {
				ci = i
			}
		}
		if ci < 0 {
			return nil, time.Time{}, fmt.Errorf("no metrics returned from resource metrics API")
		}
	}
	for _, p := range w.pods {
		if !p.hasLast || !p.hasPrev {
			continue
		}
		complete := true
		for c := range p.last {
			if !p.prev[c].ok {
				complete = false
			}
		}
		if !complete {
			continue
		}
		var sum int64
		var ts, window time.Duration
		for c := range p.last {
			l, pr := p.last[c], p.prev[c]
			win := l.ts - pr.ts
			if c == 0 || l.ts < ts {
				ts, window = l.ts, win
			}
			if ci >= 0 && c != ci {
				continue
			}
			switch res {
			case corev1.ResourceCPU:
				if win != lastWin || winSecs == 0 {
					lastWin, winSecs = win, win.Seconds()
				}
				nano := uint64(float64(l.cpu-pr.cpu) / winSecs)
				sum += int64((nano + 999_999) / 1_000_000)
			case corev1.ResourceMemory:
				sum += int64(l.mem) * 1000
			}
		}
		ts = w.truncate(ts, time.Second)
		if lastStamp == 0 || ts != lastTs {
			lastTs, lastStamp = ts, sampleset.Timestamp(w.at(ts))
		}
		if first.IsZero() {
			first = w.at(ts)
		}
		out.Add(p.name, sampleset.Sample{MilliValue: sum, Timestamp: lastStamp, Window: window})
	}
	if out.Len() == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	return out, first, nil
}

// sampleSet is an empty set for a metric read of this sync.
func (w *world) sampleSet() *sampleset.Set {
	if w.usedSets == len(w.sets) {
		w.sets = append(w.sets, sampleset.New(len(w.pods)))
	} else {
		w.sets[w.usedSets].Reset()
	}
	w.usedSets++
	return w.sets[w.usedSets-1]
}

// Source: the world as the controller reads it.

func (w *world) HPA(context.Context, string, string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return w.hpa, nil
}

// History is the history the world keeps, by pointer: boxing the struct would allocate at
// every sync, and the sync reads it before Settle replaces it.
func (w *world) History(context.Context, string, string) history.Known {
	return (*history.Kept)(&w.history)
}

// Scale is the target's scale now, in the world's one Scale (the sync reads it before the
// next).
func (w *world) Scale(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	w.scale = replicas.Scale{SpecReplicas: w.specReplicas, StatusReplicas: int32(len(w.pods)), Selector: w.selector}
	return &w.scale, nil
}

func (w *world) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	// The decision does not depend on the pods' order (the core's FuzzDecideOrderIndependence)
	// and Evaluate sorts them only for the per-pod account, which the sync omits; removePod
	// finds a pod's object by pointer, whatever the order.
	return w.objs, nil
}

func (w *world) PodResource(_ context.Context, _ string, res corev1.ResourceName, _ labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	return w.podResource(res, container)
}

func (w *world) PodsMetric(_ context.Context, _ string, name string, _, _ labels.Selector) (*sampleset.Set, time.Time, error) {
	return w.podsMetric(name)
}

func (w *world) ObjectMetric(_ context.Context, _ string, name string, _ autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	v, err := w.total(name)
	return v, w.at(w.truncate(w.now, time.Second)), err
}

func (w *world) ExternalMetric(_ context.Context, _ string, name string, _ labels.Selector) ([]int64, time.Time, error) {
	v, err := w.total(name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return []int64{v}, w.at(w.truncate(w.now, time.Second)), nil
}

func (w *world) Source() string { return "simulation" }

// ParseSelector implements evaluation.SelectorParser: the workload's one selector is parsed
// once, not at every sync.
func (w *world) ParseSelector(s string) (labels.Selector, error) {
	if s != w.selector {
		return labels.Parse(s)
	}
	if w.parsed == nil {
		sel, err := labels.Parse(s)
		if err != nil {
			return nil, err
		}
		w.parsed = sel
	}
	return w.parsed, nil
}

// total is a custom metric's demand now in milli-units.
func (w *world) total(name string) (int64, error) {
	if !w.spec.Load.Has(name) {
		return 0, fmt.Errorf("the load gives no demand for metric %q", name)
	}
	return milli(w.spec.Load.Value(name, w.now)), nil
}

// podsMetric spreads a Pods metric's demand evenly over the Ready pods (the others report 0),
// as an adapter reading the pods' own counters would see it.
func (w *world) podsMetric(name string) (*sampleset.Set, time.Time, error) {
	total, err := w.total(name)
	if err != nil {
		return nil, time.Time{}, err
	}
	ts := w.at(w.truncate(w.now, time.Second))
	out := w.sampleSet()
	for _, p := range w.pods {
		if !p.isStarted {
			continue
		}
		var v int64
		if p.isReady && w.readyCount > 0 {
			v = total / w.readyCount
		}
		out.Add(p.name, sampleset.Sample{MilliValue: v, Timestamp: sampleset.Timestamp(ts), Window: time.Minute})
	}
	if out.Len() == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	return out, ts, nil
}

func milli(v float64) int64 { return int64(math.Round(v * 1000)) }
