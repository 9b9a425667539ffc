package cmdutil

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// UnavailableMetrics answers every read with why no metrics source could be chosen, so that a
// command still shows everything else of a decision.
type UnavailableMetrics struct{ Err error }

// PodResource implements evaluation.MetricsReader.
func (u UnavailableMetrics) PodResource(context.Context, string, corev1.ResourceName, labels.Selector, string) (*sampleset.Set, time.Time, error) {
	return nil, time.Time{}, u.Err
}

// PodsMetric implements evaluation.MetricsReader.
func (u UnavailableMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (*sampleset.Set, time.Time, error) {
	return nil, time.Time{}, u.Err
}

// ObjectMetric implements evaluation.MetricsReader.
func (u UnavailableMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, u.Err
}

// ExternalMetric implements evaluation.MetricsReader.
func (u UnavailableMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, u.Err
}

// Source implements evaluation.MetricsReader.
func (u UnavailableMetrics) Source() string { return "none: " + u.Err.Error() }
