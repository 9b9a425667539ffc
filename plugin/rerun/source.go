// Package rerun re-decides a recording of `kubectl hpa run --record`: every recorded sync
// goes through evaluation.Evaluate from a Source serving what run read at that sync, and
// through replicas.Settle, carrying the history forward from sync to sync as run does; any
// difference from what run decided and kept is reported, sync by sync and field by field.
// Demand and SimSpec read a recording's load and the HPA's workload for a simulation of it
// (simulate --from-recording with variants).
package rerun

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
)

// Source is an evaluation.Source serving one recorded sync's inputs: the HPA, the scale (or
// its error), the pods (or their error) and each metric as run read them, and the history
// the rerun carries (not the recorded one, so that a history kept differently shows up as
// a difference). It also finds the overlapping HPAs the sync recorded.
type Source struct {
	sync    *recording.Sync
	history replicas.History
	source  string

	mu     sync.Mutex
	served []bool
}

var (
	_ evaluation.Source        = (*Source)(nil)
	_ evaluation.OverlapFinder = (*Source)(nil)
)

// NewSource serves s; history is what the rerun holds for the HPA, metricsSource what the
// recording's header says.
func NewSource(s *recording.Sync, history replicas.History, metricsSource string) *Source {
	return &Source{sync: s, history: history, source: metricsSource, served: make([]bool, len(s.Metrics))}
}

var hpaResource = schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}

// HPA implements evaluation.HPAReader: a copy of the recorded HPA.
func (s *Source) HPA(_ context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if s.sync.HPA.Namespace != namespace || s.sync.HPA.Name != name {
		return nil, apierrors.NewNotFound(hpaResource, name)
	}
	return s.sync.HPA.DeepCopy(), nil
}

// History implements evaluation.HistoryReader.
func (s *Source) History(context.Context, string, string) history.Known {
	return history.Kept(s.history)
}

// errNotRecorded is what a read run did not make at this sync gets: the rerun went further
// than run did, which shows as a difference in the decision.
var errNotRecorded = errors.New("not in the recording: run did not read it at this sync")

// Scale implements evaluation.ScaleReader.
func (s *Source) Scale(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	switch {
	case s.sync.ScaleError != nil:
		return nil, s.sync.ScaleError.Err()
	case s.sync.Scale == nil:
		return nil, fmt.Errorf("the target's scale: %w", errNotRecorded)
	}
	sc := *s.sync.Scale
	return &replicas.Scale{SpecReplicas: sc.SpecReplicas, StatusReplicas: sc.StatusReplicas, Selector: sc.Selector}, nil
}

// Pods implements evaluation.PodReader.
func (s *Source) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	if s.sync.PodsError != nil {
		return nil, s.sync.PodsError.Err()
	}
	// No pods and no error is a list that came back empty.
	pods := make([]*corev1.Pod, len(s.sync.Pods))
	copy(pods, s.sync.Pods)
	return pods, nil
}

// OtherHPAs implements evaluation.OverlapFinder.
func (s *Source) OtherHPAs(context.Context, *autoscalingv2.HorizontalPodAutoscaler, labels.Selector, []*corev1.Pod) ([]string, error) {
	if s.sync.OtherHPAs == nil {
		return nil, nil
	}
	return append([]string(nil), s.sync.OtherHPAs...), nil
}

// metric serves the recorded answer for the first spec metric matching that has not been
// served yet. Evaluate asks for every metric at once, so two identical metric specs may get
// each other's answers; run asked for them at the same moment, so they hardly differ.
func (s *Source) metric(match func(autoscalingv2.MetricSpec) bool) (recording.Metric, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, spec := range s.sync.HPA.Spec.Metrics {
		if i < len(s.sync.Metrics) && !s.served[i] && match(spec) {
			s.served[i] = true
			return s.sync.Metrics[i], nil
		}
	}
	return recording.Metric{}, fmt.Errorf("this metric: %w", errNotRecorded)
}

func selectorOf(ls *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return ""
	}
	return sel.String()
}

// PodResource implements evaluation.MetricsReader.
func (s *Source) PodResource(_ context.Context, _ string, resource corev1.ResourceName, _ labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	m, err := s.metric(func(spec autoscalingv2.MetricSpec) bool {
		switch spec.Type {
		case autoscalingv2.ResourceMetricSourceType:
			return container == "" && spec.Resource != nil && spec.Resource.Name == resource
		case autoscalingv2.ContainerResourceMetricSourceType:
			return spec.ContainerResource != nil && spec.ContainerResource.Name == resource && spec.ContainerResource.Container == container
		}
		return false
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return m.Samples(), m.Timestamp, m.Error.Err()
}

// PodsMetric implements evaluation.MetricsReader.
func (s *Source) PodsMetric(_ context.Context, _ string, name string, _ labels.Selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error) {
	m, err := s.metric(func(spec autoscalingv2.MetricSpec) bool {
		return spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil && spec.Pods.Metric.Name == name &&
			selectorOf(spec.Pods.Metric.Selector) == metricSelector.String()
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return m.Samples(), m.Timestamp, m.Error.Err()
}

// ObjectMetric implements evaluation.MetricsReader.
func (s *Source) ObjectMetric(_ context.Context, _ string, name string, object autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	m, err := s.metric(func(spec autoscalingv2.MetricSpec) bool {
		return spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil && spec.Object.Metric.Name == name &&
			spec.Object.DescribedObject == object && selectorOf(spec.Object.Metric.Selector) == metricSelector.String()
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	return m.Value, m.Timestamp, m.Error.Err()
}

// ExternalMetric implements evaluation.MetricsReader.
func (s *Source) ExternalMetric(_ context.Context, _ string, name string, metricSelector labels.Selector) ([]int64, time.Time, error) {
	m, err := s.metric(func(spec autoscalingv2.MetricSpec) bool {
		return spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil && spec.External.Metric.Name == name &&
			selectorOf(spec.External.Metric.Selector) == metricSelector.String()
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return append([]int64(nil), m.Values...), m.Timestamp, m.Error.Err()
}

// Source implements evaluation.MetricsReader: the source run named at this sync (its client may have
// changed its mind since the header was written), else the header's.
func (s *Source) Source() string {
	for _, m := range s.sync.Metrics {
		if m.Source != "" {
			return m.Source
		}
	}
	return s.source
}
