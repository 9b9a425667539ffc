// Package metrics is where kubectl-hpa's numbers come from: Heapster (through the API
// server's service proxy or a direct URL) and the metrics APIs that replaced it
// (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io). It turns wire
// objects into plain samples in milli-units; it never logs and knows nothing of the
// decision core.
//
// A Config (the commands bind it to --metrics-source, --heapster-*, --metrics-max-age and
// --metrics-timeout) chooses the source; NewClient builds its Client and returns it with a
// Selection saying what was chosen and why, asking the discovery client its caller passes
// which metrics APIs the cluster serves. Every read is bounded by --metrics-timeout (default 10s) and abandoned at
// it; an https --heapster-url is verified (--heapster-certificate-authority), and plain http
// to a host other than loopback needs --heapster-insecure-http.
//
// Beyond upstream, every implementation refuses rather than passes on: negative values,
// values above decode.MaxMilliValue, pods listed twice, and samples older than --metrics-max-age
// (default DefaultMaxAge, 10m; 0 disables; timestamps in the future are accepted). Such a
// sample fails the whole request with an error naming the pod, never a silently partial
// answer. Pods the source simply has no value for are left out, as upstream.
package metrics

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// Client is what the controller asks for numbers. Each method mirrors one metric
// source type of autoscaling/v2; errors name the source and say what to do next. The
// sample sets a call returns are the caller's from then on (the controller hands them to the
// decision core as they are), so they are never reused or changed by the client.
type Client interface {
	// PodResource returns the usage of resource per pod for pods in namespace matching
	// selector, summed over containers, or of the one named container when container
	// is not empty. A pod lacking the resource in any container in scope is omitted.
	// The time is the first item's timestamp.
	PodResource(ctx context.Context, namespace string, resource corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error)
	// PodsMetric returns a per-pod custom metric for pods matching selector.
	PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error)
	// ObjectMetric returns one object's metric value in milli-units.
	ObjectMetric(ctx context.Context, namespace, metricName string, object autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	// ExternalMetric returns every value of an external metric matching selector, in milli-units.
	ExternalMetric(ctx context.Context, namespace, metricName string, selector labels.Selector) ([]int64, time.Time, error)
	// Source describes where numbers come from, for people ("metrics.k8s.io/v1beta1, custom.metrics.k8s.io/v1beta2",
	// "heapster via service proxy kube-system/http:heapster:").
	Source() string
}
