package parity

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
)

// result is what both implementations are compared on for one metric.
type result struct {
	Replicas int32
	// Status is the status.currentMetrics entry, rendered by renderStatus ("" on error).
	Status string
	// Err is the per-metric error as upstream's computeReplicasForMetric returns it, Reason the
	// condition reason that goes with it.
	Err    string
	Reason string
}

func (r result) String() string {
	if r.Err != "" {
		return fmt.Sprintf("error %q (reason %s)", r.Err, r.Reason)
	}
	return fmt.Sprintf("replicas=%d status={%s}", r.Replicas, r.Status)
}

// fakeMetrics serves one scenario's numbers through upstream's MetricsClient interface. Every
// call returns fresh maps: upstream deletes the entries of unready and ignored pods.
type fakeMetrics struct {
	s   *scenario
	now time.Time
}

var _ metricsclient.MetricsClient = fakeMetrics{}

var errFetch = errors.New(fetchErrorText)

func (f fakeMetrics) podMetrics() (metricsclient.PodMetricsInfo, time.Time, error) {
	if f.s.fetchFails {
		return nil, time.Time{}, errFetch
	}
	info := make(metricsclient.PodMetricsInfo, len(f.s.samples))
	for name, sm := range f.s.samples {
		info[name] = metricsclient.PodMetric{Value: sm.value, Timestamp: sm.at.time(f.now), Window: sm.window}
	}
	return info, f.s.metricTimestamp.time(f.now), nil
}

func (f fakeMetrics) GetResourceMetric(context.Context, corev1.ResourceName, string, labels.Selector, string) (metricsclient.PodMetricsInfo, time.Time, error) {
	return f.podMetrics()
}

func (f fakeMetrics) GetRawMetric(string, string, labels.Selector, labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	return f.podMetrics()
}

func (f fakeMetrics) GetObjectMetric(string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	if f.s.fetchFails {
		return 0, time.Time{}, errFetch
	}
	return f.s.objectValue, f.s.metricTimestamp.time(f.now), nil
}

func (f fakeMetrics) GetExternalMetric(string, string, labels.Selector) ([]int64, time.Time, error) {
	if f.s.fetchFails {
		return nil, time.Time{}, errFetch
	}
	return append([]int64(nil), f.s.externalValues...), f.s.metricTimestamp.time(f.now), nil
}

// orderedPodLister lists pods in the order given. An informer index lists them in map order,
// which makes upstream's choice of the pod named in a "missing request" error random; a fixed
// order (the one our core receives) keeps messages comparable.
type orderedPodLister []*corev1.Pod

var _ corelisters.PodLister = orderedPodLister(nil)

func (l orderedPodLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range l {
		if selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (l orderedPodLister) Pods(ns string) corelisters.PodNamespaceLister {
	var in orderedPodLister
	for _, p := range l {
		if p.Namespace == ns {
			in = append(in, p)
		}
	}
	return orderedNamespaceLister{in}
}

type orderedNamespaceLister struct{ orderedPodLister }

func (l orderedNamespaceLister) Get(name string) (*corev1.Pod, error) {
	for _, p := range l.orderedPodLister {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pod %q not found", name)
}

// indexerPodLister is the lister the controller uses (an informer's indexer); the benchmark
// measures upstream with it.
func indexerPodLister(pods []*corev1.Pod) (corelisters.PodLister, error) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			return nil, fmt.Errorf("adding pod %s to the indexer: %w", p.Name, err)
		}
	}
	return corelisters.NewPodLister(indexer), nil
}

// newTolerances builds upstream's Tolerances. Its fields are unexported (only the controller
// fills them, from the flag and spec.behavior), so they are set through reflection and the
// result is checked against the type's own String method.
func newTolerances(down, up float64) (podautoscaler.Tolerances, error) {
	var t podautoscaler.Tolerances
	v := reflect.ValueOf(&t).Elem()
	for _, f := range []struct {
		name  string
		value float64
	}{{"scaleDown", down}, {"scaleUp", up}} {
		field := v.FieldByName(f.name)
		if !field.IsValid() || field.Kind() != reflect.Float64 {
			return t, fmt.Errorf("upstream Tolerances has no float64 field %q: update newTolerances for this Kubernetes version", f.name)
		}
		reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().SetFloat(f.value)
	}
	if got, want := t.String(), fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", down*100, up*100); got != want {
		return t, fmt.Errorf("upstream Tolerances reads back as %s, want %s", got, want)
	}
	return t, nil
}

// runUpstream decides the scenario's metric with upstream's calculator and wraps the outcome
// the way upstream's controller does (computeReplicasForMetric and computeStatusFor*Metric in
// horizontal.go), so that statuses and messages are what upstream would write.
func runUpstream(s *scenario, now time.Time, lister corelisters.PodLister) (result, error) {
	down, up := s.tolerances()
	tol, err := newTolerances(down, up)
	if err != nil {
		return result{}, err
	}
	calc := podautoscaler.NewReplicaCalculator(fakeMetrics{s: s, now: now}, lister, s.cpuInitializationPeriod, s.initialReadinessDelay)
	ctx := context.Background()
	selector := labels.SelectorFromSet(labels.Set{podLabelKey: podLabelValue})
	spec := s.metricSpec()
	metricLabelSelector := labels.SelectorFromSet(s.metricLabels)

	var (
		replicas int32
		status   autoscalingv2.MetricStatus
		calcErr  error
	)
	fail := func(reason, format string, args ...any) (result, error) {
		return result{Err: fmt.Sprintf(format, args...), Reason: reason}, nil
	}
	switch s.kind {
	case kindResourceUtilization, kindContainerUtilization:
		var util int32
		var raw int64
		replicas, util, raw, _, calcErr = calc.GetResourceReplicas(ctx, s.specReplicas, s.targetUtilization, s.resource, tol, s.ns, selector, s.container)
		if calcErr != nil {
			if s.kind == kindContainerUtilization {
				return fail("FailedGetContainerResourceMetric", "failed to get %s container metric value: failed to get %s utilization: %v", s.container, s.resource, calcErr)
			}
			return fail("FailedGetResourceMetric", "failed to get %s resource metric value: failed to get %s utilization: %v", s.resource, s.resource, calcErr)
		}
		status = resourceStatus(s, autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: ptr(quantity(s.resource, raw))})
	case kindResourceAverageValue, kindContainerAverageValue:
		var raw int64
		replicas, raw, _, calcErr = calc.GetRawResourceReplicas(ctx, s.specReplicas, s.target, s.resource, tol, s.ns, selector, s.container)
		if calcErr != nil {
			if s.kind == kindContainerAverageValue {
				return fail("FailedGetContainerResourceMetric", "failed to get %s container metric value: failed to get %s usage: %v", s.container, s.resource, calcErr)
			}
			return fail("FailedGetResourceMetric", "failed to get %s resource metric value: failed to get %s usage: %v", s.resource, s.resource, calcErr)
		}
		status = resourceStatus(s, autoscalingv2.MetricValueStatus{AverageValue: ptr(quantity(s.resource, raw))})
	case kindPodsAverageValue:
		var usage int64
		replicas, usage, _, calcErr = calc.GetMetricReplicas(s.specReplicas, s.target, s.metricName, tol, s.ns, selector, metricLabelSelector)
		if calcErr != nil {
			return fail("FailedGetPodsMetric", "failed to get pods metric value: %v", calcErr)
		}
		status = autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  spec.Pods.Metric,
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)},
		}}
	case kindObjectValue, kindObjectAverageValue:
		var usage int64
		current := autoscalingv2.MetricValueStatus{}
		ref := objectRef
		if s.kind == kindObjectValue {
			replicas, usage, _, calcErr = calc.GetObjectMetricReplicas(s.specReplicas, s.target, s.metricName, tol, s.ns, &ref, selector, metricLabelSelector)
			if calcErr != nil {
				return fail("FailedGetObjectMetric", "failed to get object metric value: %v", calcErr)
			}
			current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		} else {
			replicas, usage, _, calcErr = calc.GetObjectPerPodMetricReplicas(s.statusReplicas, s.target, s.metricName, tol, s.ns, &ref, metricLabelSelector)
			if calcErr != nil {
				return fail("FailedGetObjectMetric", "failed to get object metric value: failed to get %s object metric: %v", s.metricName, calcErr)
			}
			current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		}
		status = autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: objectRef, Metric: spec.Object.Metric, Current: current,
		}}
	case kindExternalValue, kindExternalAverageValue:
		var usage int64
		current := autoscalingv2.MetricValueStatus{}
		if s.kind == kindExternalValue {
			replicas, usage, _, calcErr = calc.GetExternalMetricReplicas(s.specReplicas, s.target, s.metricName, tol, s.ns, s.metricSelector(), selector)
			if calcErr != nil {
				return fail("FailedGetExternalMetric", "failed to get %s external metric value: failed to get external metric %s: %v", s.metricName, s.metricName, calcErr)
			}
			current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		} else {
			replicas, usage, _, calcErr = calc.GetExternalPerPodMetricReplicas(s.statusReplicas, s.target, s.metricName, tol, s.ns, s.metricSelector())
			if calcErr != nil {
				return fail("FailedGetExternalMetric", "failed to get %s external metric value: failed to get %s external metric: %v", s.metricName, s.metricName, calcErr)
			}
			current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		}
		status = autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: spec.External.Metric, Current: current,
		}}
	default:
		return result{}, fmt.Errorf("unknown metric kind %d", s.kind)
	}
	return result{Replicas: replicas, Status: renderStatus(status)}, nil
}

func resourceStatus(s *scenario, current autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
	if s.kind.container() {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: s.resource, Container: s.container, Current: current,
		}}
	}
	return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: s.resource, Current: current,
	}}
}

func ptr[T any](v T) *T { return &v }

// renderStatus writes a MetricStatus as one line; quantities appear in their serialized form, so
// both the value and its format (DecimalSI/BinarySI) are compared.
func renderStatus(st autoscalingv2.MetricStatus) string {
	value := func(v autoscalingv2.MetricValueStatus) string {
		out := ""
		if v.AverageUtilization != nil {
			out += fmt.Sprintf(" averageUtilization=%d", *v.AverageUtilization)
		}
		if v.AverageValue != nil {
			out += " averageValue=" + v.AverageValue.String()
		}
		if v.Value != nil {
			out += " value=" + v.Value.String()
		}
		return out
	}
	id := func(m autoscalingv2.MetricIdentifier) string {
		return fmt.Sprintf("metric=%s selector=%s", m.Name, metav1.FormatLabelSelector(m.Selector))
	}
	switch {
	case st.Resource != nil:
		return fmt.Sprintf("%s %s:%s", st.Type, st.Resource.Name, value(st.Resource.Current))
	case st.ContainerResource != nil:
		return fmt.Sprintf("%s %s container=%s:%s", st.Type, st.ContainerResource.Name, st.ContainerResource.Container, value(st.ContainerResource.Current))
	case st.Pods != nil:
		return fmt.Sprintf("%s %s:%s", st.Type, id(st.Pods.Metric), value(st.Pods.Current))
	case st.Object != nil:
		o := st.Object.DescribedObject
		return fmt.Sprintf("%s %s/%s/%s %s:%s", st.Type, o.APIVersion, o.Kind, o.Name, id(st.Object.Metric), value(st.Object.Current))
	case st.External != nil:
		return fmt.Sprintf("%s %s:%s", st.Type, id(st.External.Metric), value(st.External.Current))
	default:
		return string(st.Type)
	}
}
