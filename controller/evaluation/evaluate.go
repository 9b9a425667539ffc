package evaluation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// ScaleReader reads a target's scale subresource (any scalable kind).
type ScaleReader interface {
	Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error)
}

// PodReader lists the pods in namespace matching selector.
type PodReader interface {
	Pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error)
}

// OverlapFinder names the other HPAs ("ns/name") whose target selectors match any of pods.
// Upstream first records hpa's own selector and then asks, so an implementation backed by
// a tracker updates it as a side effect.
type OverlapFinder interface {
	OtherHPAs(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector, pods []*corev1.Pod) ([]string, error)
}

// HPAReader reads one HPA; for a missing one it returns an error apierrors.IsNotFound
// recognizes. The HPA returned is the caller's to change.
type HPAReader interface {
	HPA(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error)
}

// HistoryReader reads what a source knows of an HPA's earlier decisions. It is keyed by
// name so that Evaluate reads it beside the HPA; history.Known joins the two once both are in.
type HistoryReader interface {
	History(ctx context.Context, namespace, name string) history.Known
}

// Source is everything one evaluation reads: the HPA, its past decisions, its target's
// scale, its pods and their metrics. run's source is its informer caches and its memory,
// explain's the live API (live.Source), list's a namespace's batched reads (batch.Read); a
// recording or a load model can be one too.
// Evaluate makes independent reads concurrently, so a Source must allow that.
type Source interface {
	HPAReader
	HistoryReader
	ScaleReader
	PodReader
	MetricsReader
}

// MetricsReader reads the metrics an HPA's specs name, one autoscaling/v2 source type per
// method: metrics.Client's methods, declared here so that a source that is not live (a
// simulation, a recording) needs none of the metrics clients; an error lands in that metric's
// MetricData.Err, as upstream reports a failed metric.
type MetricsReader interface {
	PodResource(ctx context.Context, namespace string, resource corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error)
	PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error)
	ObjectMetric(ctx context.Context, namespace, metricName string, object autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	ExternalMetric(ctx context.Context, namespace, metricName string, selector labels.Selector) ([]int64, time.Time, error)
	// Source says where the numbers come from, for people (MetricData.Source).
	Source() string
}

// SelectorParser is implemented by a Source that parses its targets' selectors itself, e.g.
// once for the thousands of syncs of a simulation; Evaluate uses labels.Parse otherwise.
type SelectorParser interface {
	ParseSelector(selector string) (labels.Selector, error)
}

// Readers is a Source assembled from one reader per input.
type Readers struct {
	HPAReader
	HistoryReader
	ScaleReader
	PodReader
	MetricsReader
}

// Options say how Evaluate decides; Now and Config are required.
type Options struct {
	Now    time.Time
	Config replicas.Config
	// Overlaps, when set, finds other HPAs selecting the same pods (run's selector
	// tracker). Upstream then decides without reading metrics, so the pods are read first
	// and the metrics after; without it (and without Sequential) the two are read at the
	// same time.
	Overlaps OverlapFinder
	// WithoutHistory also decides from an empty history (Evaluation.Fresh).
	WithoutHistory bool
	// OmitPodTreatments decides without the per-pod account (replicas.Input.OmitPodTreatments),
	// for callers that never show it.
	OmitPodTreatments bool
	// OmitTrace decides without the trace's text (replicas.Input.OmitTrace), for callers that
	// never show it.
	OmitTrace bool
	// HistoryOwned lets the decision record in the history's array (replicas.Input.HistoryOwned),
	// for a caller that keeps only the decision's history.
	HistoryOwned bool
	// Sequential makes the reads one after another, as upstream does, instead of concurrently:
	// for a Source in memory (the simulator's), whose reads cost less than starting goroutines
	// for them.
	Sequential bool
	// Into, when set, is the Evaluation that Evaluate and Gather fill (overwriting all of it)
	// and return, instead of allocating one: for a caller that evaluates thousands of times
	// and keeps nothing of an Evaluation once it starts the next (the simulator).
	Into *Evaluation
}

// Evaluation is one HPA's decision with everything it was decided from.
type Evaluation struct {
	// Read is the HPA as the source returned it; Input.HPA is the one decided for.
	Read *autoscalingv2.HorizontalPodAutoscaler
	// Known is what the source knows of the HPA's earlier decisions.
	Known    history.Known
	Input    replicas.Input
	Decision replicas.Decision
	// Fresh is the decision from the same input with an empty history
	// (Options.WithoutHistory).
	Fresh *replicas.Decision
	// MetricTimes is how long each metric read took (nil when none ran), which run reports
	// as metric_computation_duration_seconds.
	MetricTimes []time.Duration
	// PodsErr is the pod list's error as the source returned it (Input.Metrics carries it
	// wrapped, as upstream does), for a recording to replay the list's failure.
	PodsErr error
}

// Evaluate is the one way every command decides for an HPA: it reads the HPA beside its
// past (Read), then the target's scale, then the pods beside their metrics (Gather), and asks
// the decision core (Decide). Only a failed HPA read is an error: every other read error lands
// in the Input fields the core turns into upstream's conditions and events (ScaleErr,
// MetricData.Err). A command that changes the HPA or the input between the steps (explain's
// what-ifs) calls them itself.
func Evaluate(ctx context.Context, src Source, namespace, name string, opts Options) (*Evaluation, error) {
	read, known, err := readHPA(ctx, src, namespace, name, opts.Sequential)
	if err != nil {
		return nil, err
	}
	ev := Gather(ctx, src, read, read, known, opts)
	Decide(ev, opts)
	return ev, nil
}

// Read reads the HPA beside what src knows of its past; the error is the HPA read's.
func Read(ctx context.Context, src Source, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, history.Known, error) {
	return readHPA(ctx, src, namespace, name, false)
}

func readHPA(ctx context.Context, src Source, namespace, name string, sequential bool) (*autoscalingv2.HorizontalPodAutoscaler, history.Known, error) {
	var (
		known history.Known
		read  *autoscalingv2.HorizontalPodAutoscaler
		err   error
	)
	if sequential {
		known = src.History(ctx, namespace, name)
		read, err = src.HPA(ctx, namespace, name)
	} else {
		read, known, err = readConcurrently(ctx, src, namespace, name)
	}
	if err != nil {
		return nil, nil, err
	}
	return read, known, nil
}

// readConcurrently reads the HPA beside its history. Its own function, so that the
// sequential path does not pay for the variables the goroutine shares.
func readConcurrently(ctx context.Context, src Source, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, history.Known, error) {
	var (
		known history.Known
		wg    sync.WaitGroup
	)
	wg.Go(func() { known = src.History(ctx, namespace, name) })
	read, err := src.HPA(ctx, namespace, name)
	wg.Wait()
	return read, known, err
}

// Gather reads the inputs of a decision for hpa: its history from known (as of read, the HPA
// as the source returned it), its target's scale, its pods and their metrics. hpa is read
// unless the caller changed it.
func Gather(ctx context.Context, src Source, read, hpa *autoscalingv2.HorizontalPodAutoscaler, known history.Known, opts Options) *Evaluation {
	ev := opts.Into
	if ev == nil {
		ev = new(Evaluation)
	}
	*ev = Evaluation{Read: read, Known: known}
	var kept replicas.History
	ip, inputDependent := known.(history.InputDependent)
	if known != nil && !inputDependent {
		// An input-dependent past is asked once the input is gathered, below.
		kept = known.History(read, opts.Now)
	}
	var g gatherResult
	ev.Input, g = gather(ctx, src, hpa, kept, opts)
	ev.MetricTimes, ev.PodsErr = g.took, g.podsErr
	if inputDependent {
		// A replayed past needs the pods, the scale and the live samples' times.
		ev.Input.History = ip.HistoryFor(ctx, ev.Input)
	}
	return ev
}

// Decide asks the core for ev's decision from ev.Input, and with Options.WithoutHistory also
// for the one from an empty history.
func Decide(ev *Evaluation, opts Options) {
	ev.Decision = replicas.Decide(ev.Input)
	if opts.WithoutHistory {
		fresh := ev.Input
		fresh.History = replicas.History{}
		d := replicas.Decide(fresh)
		ev.Fresh = &d
	}
}

// gatherResult is what gather learnt besides the Input: how long each metric read took, and the
// pod list's own error (the Input carries it wrapped).
type gatherResult struct {
	took    []time.Duration
	podsErr error
}

// gather builds the core's Input for hpa.
func gather(ctx context.Context, src Source, hpa *autoscalingv2.HorizontalPodAutoscaler, history replicas.History, opts Options) (replicas.Input, gatherResult) {
	in := replicas.Input{HPA: hpa, History: history, Now: opts.Now, Config: opts.Config, OmitPodTreatments: opts.OmitPodTreatments, OmitTrace: opts.OmitTrace, HistoryOwned: opts.HistoryOwned}
	scale, err := src.Scale(ctx, hpa.Namespace, hpa.Spec.ScaleTargetRef)
	if err != nil {
		in.ScaleErr = err
		return in, gatherResult{}
	}
	in.Scale = scale
	if !replicas.NeedsMetrics(in) {
		return in, gatherResult{}
	}
	// An empty or unparsable selector is the core's to report (SelectorRequired/InvalidSelector);
	// upstream fetches nothing then.
	if scale.Selector == "" {
		in.Metrics = failAll(hpa, errors.New("selector is required"))
		return in, gatherResult{}
	}
	var selector labels.Selector
	if p, ok := src.(SelectorParser); ok {
		selector, err = p.ParseSelector(scale.Selector)
	} else {
		selector, err = labels.Parse(scale.Selector)
	}
	if err != nil {
		in.Metrics = failAll(hpa, fmt.Errorf("parsing the target's selector %q: %w", scale.Selector, err))
		return in, gatherResult{}
	}
	var (
		pods    []*corev1.Pod
		podsErr error
		data    []replicas.MetricData
		took    []time.Duration
	)
	// The pods and the metrics are read at the same time unless the overlap check must come
	// between them or the reads are sequential.
	concurrent := opts.Overlaps == nil && !opts.Sequential
	if concurrent {
		data, took, pods, podsErr = podsBesideMetrics(ctx, src, hpa, selector)
	} else {
		pods, podsErr = src.Pods(ctx, hpa.Namespace, selector)
	}
	if podsErr != nil {
		in.Metrics = failAll(hpa, fmt.Errorf("unable to get pods while calculating replica count: %w", podsErr))
		return in, gatherResult{podsErr: podsErr}
	}
	// Listers return pods in map order. The decision does not depend on it (the core's
	// FuzzDecideOrderIndependence), but the per-pod account lists pods in input order, so
	// sorting by name makes run -o json and explain show the same account. Without the account,
	// run's path, the sort would cost as much as the decision at 1,000 pods.
	if !opts.OmitPodTreatments {
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	}
	in.Pods = pods
	if opts.Overlaps != nil {
		others, err := opts.Overlaps.OtherHPAs(ctx, hpa, selector, pods)
		if err != nil {
			in.Metrics = failAll(hpa, err)
			return in, gatherResult{}
		}
		in.OtherHPAsSelectingPods = others
		if len(others) > 0 {
			// Upstream stops before fetching metrics when the selector is ambiguous.
			in.Metrics = failAll(hpa, fmt.Errorf("pods are controlled by more than one HPA (e.g. %v)", others))
			return in, gatherResult{}
		}
	}
	if !concurrent {
		data, took = fetchAll(ctx, src, hpa, selector, opts.Sequential)
	}
	in.Metrics = data
	return in, gatherResult{took: took}
}

// podsBesideMetrics lists the pods while the metrics are read. Its own function, so that
// the other paths do not pay for the variables the goroutine shares.
func podsBesideMetrics(ctx context.Context, src Source, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector) ([]replicas.MetricData, []time.Duration, []*corev1.Pod, error) {
	var (
		data []replicas.MetricData
		took []time.Duration
		wg   sync.WaitGroup
	)
	wg.Go(func() { data, took = fetchAll(ctx, src, hpa, selector, false) })
	pods, err := src.Pods(ctx, hpa.Namespace, selector)
	wg.Wait()
	return data, took, pods, err
}

// failAll gives every metric the same error so Input.Metrics keeps its length contract.
func failAll(hpa *autoscalingv2.HorizontalPodAutoscaler, err error) []replicas.MetricData {
	out := make([]replicas.MetricData, len(hpa.Spec.Metrics))
	for i := range out {
		out[i].Err = err
	}
	return out
}

// fetchAll reads every metric spec, in parallel unless sequential; upstream reads them one
// after another, which only changes latency, not the values.
func fetchAll(ctx context.Context, m MetricsReader, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector, sequential bool) ([]replicas.MetricData, []time.Duration) {
	out := make([]replicas.MetricData, len(hpa.Spec.Metrics))
	took := make([]time.Duration, len(hpa.Spec.Metrics))
	if sequential {
		for i := range hpa.Spec.Metrics {
			out[i], took[i] = timedFetch(ctx, m, hpa.Namespace, hpa.Spec.Metrics[i], selector)
		}
		return out, took
	}
	var wg sync.WaitGroup
	for i := range hpa.Spec.Metrics {
		wg.Go(func() { out[i], took[i] = timedFetch(ctx, m, hpa.Namespace, hpa.Spec.Metrics[i], selector) })
	}
	wg.Wait()
	return out, took
}

// timedFetch is fetch and how long it took.
func timedFetch(ctx context.Context, m MetricsReader, namespace string, spec autoscalingv2.MetricSpec, selector labels.Selector) (replicas.MetricData, time.Duration) {
	start := time.Now()
	d := fetch(ctx, m, namespace, spec, selector)
	return d, time.Since(start)
}

// fetch reads one metric spec. Unknown metric types fetch nothing: the core reports
// InvalidMetricSourceType for them. Pod samples go to the core as the client decoded them (one
// sampleset.Set, which the core reads).
func fetch(ctx context.Context, m MetricsReader, namespace string, spec autoscalingv2.MetricSpec, selector labels.Selector) replicas.MetricData {
	d := replicas.MetricData{Source: m.Source()}
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			d.Err = errors.New("metric type Resource has no resource field")
			return d
		}
		samples, ts, err := m.PodResource(ctx, namespace, spec.Resource.Name, selector, "")
		d.PodSamples, d.Timestamp, d.Err = samples, ts, err
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			d.Err = errors.New("metric type ContainerResource has no containerResource field")
			return d
		}
		samples, ts, err := m.PodResource(ctx, namespace, spec.ContainerResource.Name, selector, spec.ContainerResource.Container)
		d.PodSamples, d.Timestamp, d.Err = samples, ts, err
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			d.Err = errors.New("metric type Pods has no pods field")
			return d
		}
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector)
		if err != nil {
			d.Err = err
			return d
		}
		samples, ts, err := m.PodsMetric(ctx, namespace, spec.Pods.Metric.Name, selector, metricSelector)
		d.PodSamples, d.Timestamp, d.Err = samples, ts, err
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			d.Err = errors.New("metric type Object has no object field")
			return d
		}
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Object.Metric.Selector)
		if err != nil {
			d.Err = err
			return d
		}
		d.Value, d.Timestamp, d.Err = m.ObjectMetric(ctx, namespace, spec.Object.Metric.Name, spec.Object.DescribedObject, metricSelector)
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			d.Err = errors.New("metric type External has no external field")
			return d
		}
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.External.Metric.Selector)
		if err != nil {
			d.Err = err
			return d
		}
		d.Values, d.Timestamp, d.Err = m.ExternalMetric(ctx, namespace, spec.External.Metric.Name, metricSelector)
	}
	return d
}
