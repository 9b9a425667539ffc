package controller

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

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
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

// Snapshotter builds the core's Input for one HPA.
type Snapshotter struct {
	Scales  ScaleReader
	Pods    PodReader
	Metrics metrics.Client
	Config  replicas.Config
	// Overlaps is optional: nil means no overlap detection (OtherHPAsSelectingPods stays empty).
	Overlaps OverlapFinder
}

// Input gathers everything the decision core needs for hpa at now. It never fails: read
// errors land in the Input fields the core turns into upstream's conditions and events
// (ScaleErr, MetricData.Err).
func (s *Snapshotter) Input(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, history replicas.History, now time.Time) replicas.Input {
	in, _ := s.input(ctx, hpa, history, now)
	return in
}

// input is Input plus how long each metric fetch took (nil when none ran), which the
// controller reports as metric_computation_duration_seconds.
func (s *Snapshotter) input(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, history replicas.History, now time.Time) (replicas.Input, []time.Duration) {
	in := replicas.Input{HPA: hpa, History: history, Now: now, Config: s.Config}
	scale, err := s.Scales.Scale(ctx, hpa.Namespace, hpa.Spec.ScaleTargetRef)
	if err != nil {
		in.ScaleErr = err
		return in, nil
	}
	in.Scale = scale
	if !replicas.NeedsMetrics(in) {
		return in, nil
	}
	// An empty or unparsable selector is the core's to report (SelectorRequired/InvalidSelector);
	// upstream fetches nothing then.
	if scale.Selector == "" {
		in.Metrics = failAll(hpa, errors.New("selector is required"))
		return in, nil
	}
	selector, err := labels.Parse(scale.Selector)
	if err != nil {
		in.Metrics = failAll(hpa, fmt.Errorf("parsing the target's selector %q: %w", scale.Selector, err))
		return in, nil
	}
	pods, err := s.Pods.Pods(ctx, hpa.Namespace, selector)
	if err != nil {
		in.Metrics = failAll(hpa, fmt.Errorf("unable to get pods while calculating replica count: %w", err))
		return in, nil
	}
	// Listers return pods in map order; a stable order makes run and explain traces identical.
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	in.Pods = pods
	if s.Overlaps != nil {
		others, err := s.Overlaps.OtherHPAs(ctx, hpa, selector, pods)
		if err != nil {
			in.Metrics = failAll(hpa, err)
			return in, nil
		}
		in.OtherHPAsSelectingPods = others
		if len(others) > 0 {
			// Upstream stops before fetching metrics when the selector is ambiguous.
			in.Metrics = failAll(hpa, fmt.Errorf("pods are controlled by more than one HPA (e.g. %v)", others))
			return in, nil
		}
	}
	var took []time.Duration
	in.Metrics, took = s.fetchAll(ctx, hpa, selector)
	return in, took
}

// failAll gives every metric the same error so Input.Metrics keeps its length contract.
func failAll(hpa *autoscalingv2.HorizontalPodAutoscaler, err error) []replicas.MetricData {
	out := make([]replicas.MetricData, len(hpa.Spec.Metrics))
	for i := range out {
		out[i].Err = err
	}
	return out
}

// fetchAll reads every metric spec in parallel; upstream reads them one after another,
// which only changes latency, not the values.
func (s *Snapshotter) fetchAll(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector) ([]replicas.MetricData, []time.Duration) {
	if s.Metrics == nil {
		return failAll(hpa, errors.New("no metrics client configured")), nil
	}
	out := make([]replicas.MetricData, len(hpa.Spec.Metrics))
	took := make([]time.Duration, len(hpa.Spec.Metrics))
	var wg sync.WaitGroup
	for i := range hpa.Spec.Metrics {
		wg.Go(func() {
			start := time.Now()
			out[i] = s.fetch(ctx, hpa.Namespace, hpa.Spec.Metrics[i], selector)
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	return out, took
}

// fetch reads one metric spec. Unknown metric types fetch nothing: the core reports
// InvalidMetricSourceType for them.
func (s *Snapshotter) fetch(ctx context.Context, namespace string, spec autoscalingv2.MetricSpec, selector labels.Selector) replicas.MetricData {
	d := replicas.MetricData{Source: s.Metrics.Source()}
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			d.Err = errors.New("metric type Resource has no resource field")
			return d
		}
		samples, ts, err := s.Metrics.PodResource(ctx, namespace, spec.Resource.Name, selector, "")
		d.PodSamples, d.Timestamp, d.Err = toSamples(samples), ts, err
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			d.Err = errors.New("metric type ContainerResource has no containerResource field")
			return d
		}
		samples, ts, err := s.Metrics.PodResource(ctx, namespace, spec.ContainerResource.Name, selector, spec.ContainerResource.Container)
		d.PodSamples, d.Timestamp, d.Err = toSamples(samples), ts, err
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
		samples, ts, err := s.Metrics.PodsMetric(ctx, namespace, spec.Pods.Metric.Name, selector, metricSelector)
		d.PodSamples, d.Timestamp, d.Err = toSamples(samples), ts, err
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
		d.Value, d.Timestamp, d.Err = s.Metrics.ObjectMetric(ctx, namespace, spec.Object.Metric.Name, spec.Object.DescribedObject, metricSelector)
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
		d.Values, d.Timestamp, d.Err = s.Metrics.ExternalMetric(ctx, namespace, spec.External.Metric.Name, metricSelector)
	}
	return d
}

func toSamples(in metrics.PodSamples) map[string]replicas.Sample {
	if in == nil {
		return nil
	}
	out := make(map[string]replicas.Sample, len(in))
	for name, s := range in {
		out[name] = replicas.Sample{MilliValue: s.MilliValue, Timestamp: s.Timestamp, Window: s.Window}
	}
	return out
}
