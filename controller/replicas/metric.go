package replicas

import (
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// calc holds what every metric computation of one decision shares.
type calc struct {
	pods           []*corev1.Pod
	scale          Scale
	namespace      string
	tol            Tolerances
	now            time.Time
	cpuInit, delay time.Duration
	podLevel       bool
	// omitPods: no per-pod treatments (Input.OmitPodTreatments).
	omitPods bool
}

func newCalc(in Input, tol Tolerances) *calc {
	c := calcFor(in.Pods, *in.Scale, in.HPA.Namespace, tol, in.Now, in.Config)
	c.omitPods = in.OmitPodTreatments
	return c
}

func calcFor(pods []*corev1.Pod, scale Scale, namespace string, tol Tolerances, now time.Time, cfg Config) *calc {
	return &calc{
		pods:      pods,
		scale:     scale,
		namespace: namespace,
		tol:       tol,
		now:       now,
		cpuInit:   cfg.CPUInitializationPeriod,
		delay:     cfg.InitialReadinessDelay,
		podLevel:  cfg.PodLevelResources,
	}
}

// failure is one metric's error as upstream reports it: the event and condition carry inner,
// the reconcile error carries outer.
type failure struct {
	reason       string
	inner, outer error
}

// compute is upstream's computeReplicasForMetric for spec i, filling r.
func (c *calc) compute(d *decision, i int, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) {
	r.Index = i
	r.Type = spec.Type
	r.Name = MetricName(*spec)
	var f *failure
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		f = c.object(d, spec, md, r)
	case autoscalingv2.PodsMetricSourceType:
		f = c.podsMetric(d, spec, md, r)
	case autoscalingv2.ResourceMetricSourceType:
		f = c.resourceMetric(d, spec, md, r)
	case autoscalingv2.ContainerResourceMetricSourceType:
		f = c.containerResourceMetric(d, spec, md, r)
	case autoscalingv2.ExternalMetricSourceType:
		f = c.external(d, spec, md, r)
	default:
		err := &SpecError{Err: fmt.Errorf("unknown metric source type %q", string(spec.Type))}
		f = &failure{reason: "InvalidMetricSourceType", inner: err, outer: err}
	}
	if f == nil {
		return
	}
	r.Replicas = 0
	r.Status = autoscalingv2.MetricStatus{}
	r.Err = f.outer
	r.Reason = f.reason
	r.Message = "the HPA was unable to compute the replica count: " + f.inner.Error()
	d.event(corev1.EventTypeWarning, f.reason, f.inner.Error())
	if d.tracing() {
		d.trace("metric", i, fmt.Sprintf("metric %d (%s) failed: %s: %v", i, metricLabel(r), f.reason, f.outer))
	}
}

func metricLabel(r *MetricResult) string {
	if r.Name != "" {
		return r.Name
	}
	return string(r.Type)
}

func (c *calc) resourceMetric(d *decision, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) *failure {
	const reason = "FailedGetResourceMetric"
	src := spec.Resource
	if src == nil {
		// Upstream dereferences the nil member and panics; validation makes it unreachable.
		err := errors.New("invalid resource metric source: the resource member is not set")
		return &failure{reason, err, fmt.Errorf("failed to get resource metric value: %w", err)}
	}
	value, err := c.resourceGeneric(d, r, md, src.Target, src.Name, "")
	if err != nil {
		return &failure{reason, err, fmt.Errorf("failed to get %s resource metric value: %w", src.Name, err)}
	}
	r.Status = autoscalingv2.MetricStatus{
		Type:     autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricStatus{Name: src.Name, Current: value},
	}
	return nil
}

func (c *calc) containerResourceMetric(d *decision, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) *failure {
	const reason = "FailedGetContainerResourceMetric"
	src := spec.ContainerResource
	if src == nil {
		err := errors.New("invalid container resource metric source: the containerResource member is not set")
		return &failure{reason, err, fmt.Errorf("failed to get container metric value: %w", err)}
	}
	value, err := c.resourceGeneric(d, r, md, src.Target, src.Name, src.Container)
	if err != nil {
		return &failure{reason, err, fmt.Errorf("failed to get %s container metric value: %w", src.Container, err)}
	}
	r.Status = autoscalingv2.MetricStatus{
		Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: src.Name, Container: src.Container, Current: value,
		},
	}
	return nil
}

// resourceGeneric is upstream's computeStatusForResourceMetricGeneric: the average-value target
// wins over the utilization target.
func (c *calc) resourceGeneric(d *decision, r *MetricResult, md MetricData, target autoscalingv2.MetricTarget, res corev1.ResourceName, container string) (autoscalingv2.MetricValueStatus, error) {
	if target.AverageValue != nil {
		targetValue := target.AverageValue.MilliValue()
		if err := positiveTarget("resource", "average value", targetValue); err != nil {
			return autoscalingv2.MetricValueStatus{}, err
		}
		fetchErr := md.Err
		if fetchErr != nil {
			fetchErr = fmt.Errorf("unable to get metrics for resource %s: %w", res, fetchErr)
		}
		replicas, usage, err := c.plainPods(d, r, md, fetchErr, res, targetValue)
		if err != nil {
			return autoscalingv2.MetricValueStatus{}, fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		r.Replicas = replicas
		r.Timestamp = md.Timestamp
		q := buildQuantity(res, usage)
		return autoscalingv2.MetricValueStatus{AverageValue: &q}, nil
	}
	if target.AverageUtilization == nil {
		return autoscalingv2.MetricValueStatus{}, errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	if err := positiveTarget("resource", "average utilization", int64(*target.AverageUtilization)); err != nil {
		return autoscalingv2.MetricValueStatus{}, err
	}
	replicas, util, raw, err := c.utilization(d, r, md, res, container, *target.AverageUtilization)
	if err != nil {
		return autoscalingv2.MetricValueStatus{}, fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	r.Replicas = replicas
	r.Timestamp = md.Timestamp
	q := buildQuantity(res, raw)
	return autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: &q}, nil
}

// buildQuantity formats memory in binary units as metrics-server does, everything else decimal.
func buildQuantity(res corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if res == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, format)
}

func (c *calc) podsMetric(d *decision, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) *failure {
	const reason = "FailedGetPodsMetric"
	wrap := func(err error) *failure {
		return &failure{reason, err, fmt.Errorf("failed to get pods metric value: %w", err)}
	}
	src := spec.Pods
	if src == nil {
		return wrap(errors.New("invalid pods metric source: the pods member is not set"))
	}
	if _, err := metav1.LabelSelectorAsSelector(src.Metric.Selector); err != nil {
		return wrap(err)
	}
	if src.Target.AverageValue == nil {
		// Upstream dereferences the nil target and panics; validation requires averageValue.
		return wrap(errors.New("invalid pods metric source: no average value target was set"))
	}
	if err := positiveTarget("pods", "average value", src.Target.AverageValue.MilliValue()); err != nil {
		return wrap(err)
	}
	fetchErr := md.Err
	if fetchErr != nil {
		fetchErr = fmt.Errorf("unable to get metric %s: %w", src.Metric.Name, fetchErr)
	}
	replicas, usage, err := c.plainPods(d, r, md, fetchErr, "", src.Target.AverageValue.MilliValue())
	if err != nil {
		return wrap(err)
	}
	r.Replicas = replicas
	r.Timestamp = md.Timestamp
	r.Status = autoscalingv2.MetricStatus{
		Type: autoscalingv2.PodsMetricSourceType,
		Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector.DeepCopy()},
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)},
		},
	}
	return nil
}

func (c *calc) object(d *decision, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) *failure {
	const reason = "FailedGetObjectMetric"
	wrap := func(inner, outer error) *failure {
		return &failure{reason, inner, fmt.Errorf("failed to get object metric value: %w", outer)}
	}
	src := spec.Object
	if src == nil {
		err := errors.New("invalid object metric source: the object member is not set")
		return wrap(err, err)
	}
	if _, err := metav1.LabelSelectorAsSelector(src.Metric.Selector); err != nil {
		return wrap(err, err)
	}
	status := autoscalingv2.MetricStatus{
		Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: src.DescribedObject,
			Metric:          autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector.DeepCopy()},
		},
	}
	fetchErr := func() error {
		return fmt.Errorf("unable to get metric %s on %s %s/%s: %w", src.Metric.Name, src.DescribedObject.Kind, c.namespace, src.DescribedObject.Name, md.Err)
	}
	t := src.Target
	switch {
	case t.Type == autoscalingv2.ValueMetricType && t.Value != nil:
		if err := positiveTarget("object", "value", t.Value.MilliValue()); err != nil {
			return wrap(err, err)
		}
		if md.Err != nil {
			err := fetchErr()
			return wrap(err, err)
		}
		target := t.Value.MilliValue()
		usage := md.Value
		ratio := float64(usage) / float64(target)
		replicas, err := c.usageRatioReplicas(d, r, ratio)
		if err != nil {
			return wrap(err, err)
		}
		r.Replicas = replicas
		status.Object.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		if d.tracing() {
			d.trace("metric", r.Index, fmt.Sprintf("%s: value %s vs target %s -> ratio %.3f -> %d replicas",
				r.Name, milli(usage), milli(target), ratio, replicas))
		}
	case t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil:
		if err := positiveTarget("object", "average value", t.AverageValue.MilliValue()); err != nil {
			return wrap(err, err)
		}
		if md.Err != nil {
			err := fetchErr()
			return wrap(err, fmt.Errorf("failed to get %s object metric: %w", src.Metric.Name, err))
		}
		replicas, avg, ratio, within := c.perPod(md.Value, t.AverageValue.MilliValue(), false)
		r.Replicas = replicas
		r.Ratio, r.RebalancedRatio, r.WithinTolerance = ratio, ratio, within
		r.Timestamp = md.Timestamp
		status.Object.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
		if d.tracing() {
			d.trace("metric", r.Index, fmt.Sprintf("%s: value %s over status.replicas %d vs target %s per pod -> ratio %.3f%s -> %d replicas",
				r.Name, milli(md.Value), c.scale.StatusReplicas, milli(t.AverageValue.MilliValue()), ratio, withinText(within), replicas))
		}
	default:
		err := errors.New("invalid object metric source: neither a value target nor an average value target was set")
		return wrap(err, err)
	}
	r.Status = status
	return nil
}

func (c *calc) external(d *decision, spec *autoscalingv2.MetricSpec, md MetricData, r *MetricResult) *failure {
	const reason = "FailedGetExternalMetric"
	src := spec.External
	if src == nil {
		err := errors.New("invalid external metric source: the external member is not set")
		return &failure{reason, err, fmt.Errorf("failed to get external metric value: %w", err)}
	}
	name := src.Metric.Name
	outer := func(err error) error {
		return fmt.Errorf("failed to get %s external metric value: %w", name, err)
	}
	status := autoscalingv2.MetricStatus{
		Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricStatus{
			Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: src.Metric.Selector.DeepCopy()},
		},
	}
	fetch := func() error {
		if _, err := metav1.LabelSelectorAsSelector(src.Metric.Selector); err != nil {
			return err
		}
		if md.Err != nil {
			// Upstream formats the client error with %s here; %w prints the same words and
			// keeps the error, so that a command tells a failed source from the metric.
			return fmt.Errorf("unable to get external metric %s/%s/%+v: %w", c.namespace, name, src.Metric.Selector, md.Err)
		}
		return nil
	}
	t := src.Target
	switch {
	case t.AverageValue != nil:
		if err := positiveTarget("external", "average value", t.AverageValue.MilliValue()); err != nil {
			return &failure{reason, err, outer(err)}
		}
		if err := fetch(); err != nil {
			return &failure{reason, err, outer(fmt.Errorf("failed to get %s external metric: %w", name, err))}
		}
		var usage int64
		for _, v := range md.Values {
			usage += v
			if usage < 0 {
				usage = math.MaxInt64
				break
			}
		}
		replicas, avg, ratio, within := c.perPod(usage, t.AverageValue.MilliValue(), true)
		r.Replicas = replicas
		r.Ratio, r.RebalancedRatio, r.WithinTolerance = ratio, ratio, within
		r.Timestamp = md.Timestamp
		status.External.Current.AverageValue = resource.NewMilliQuantity(avg, resource.DecimalSI)
		if d.tracing() {
			d.trace("metric", r.Index, fmt.Sprintf("%s: %d samples summing to %s over status.replicas %d vs target %s per pod -> ratio %.3f%s -> %d replicas",
				r.Name, len(md.Values), milli(usage), c.scale.StatusReplicas, milli(t.AverageValue.MilliValue()), ratio, withinText(within), replicas))
		}
	case t.Value != nil:
		if err := positiveTarget("external", "value", t.Value.MilliValue()); err != nil {
			return &failure{reason, err, outer(err)}
		}
		if err := fetch(); err != nil {
			return &failure{reason, err, outer(fmt.Errorf("failed to get external metric %s: %w", name, err))}
		}
		var usage int64
		for _, v := range md.Values {
			if v > 0 && usage > math.MaxInt64-v {
				usage = math.MaxInt64
				break
			}
			usage += v
		}
		target := t.Value.MilliValue()
		ratio := float64(usage) / float64(target)
		replicas, err := c.usageRatioReplicas(d, r, ratio)
		if err != nil {
			return &failure{reason, err, outer(fmt.Errorf("failed to get external metric %s: %w", name, err))}
		}
		r.Replicas = replicas
		status.External.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		if d.tracing() {
			d.trace("metric", r.Index, fmt.Sprintf("%s: %d samples summing to %s vs target %s -> ratio %.3f -> %d replicas",
				r.Name, len(md.Values), milli(usage), milli(target), ratio, replicas))
		}
	default:
		err := errors.New("invalid external metric source: neither a value target nor an average value target was set")
		return &failure{reason, err, outer(err)}
	}
	r.Status = status
	return nil
}

// usageRatioReplicas is upstream's getUsageRatioReplicaCount for Object and External value
// targets: tolerance and ready-pod count apply except when scaling from zero.
func (c *calc) usageRatioReplicas(d *decision, r *MetricResult, ratio float64) (int32, error) {
	r.Ratio, r.RebalancedRatio = ratio, ratio
	current := c.scale.SpecReplicas
	if current == 0 {
		d.trace("metric", r.Index, "scaling from zero: the ratio is rounded up without tolerance or pod count")
		return int32(math.Ceil(ratio)), nil
	}
	if c.tol.Within(ratio) {
		r.WithinTolerance = true
		return current, nil
	}
	if len(c.pods) == 0 {
		return 0, fmt.Errorf("unable to calculate ready pods: %w", ErrNoPods)
	}
	ready := 0
	for _, p := range c.pods {
		if p != nil && p.Status.Phase == corev1.PodRunning && PodIsReady(p) {
			ready++
		}
	}
	r.ReadyPods = ready
	f := ratio * float64(int64(ready))
	if f > math.MaxInt32 {
		return math.MaxInt32, nil
	}
	return int32(math.Ceil(f)), nil
}

// perPod is the per-pod Object/External average-value algorithm over scale.status.replicas.
// saturate selects the External variant, which caps the count and the reported average.
func (c *calc) perPod(usage, target int64, saturate bool) (replicas int32, avg int64, ratio float64, within bool) {
	status := c.scale.StatusReplicas
	replicas = status
	ratio = float64(usage) / (float64(target) * float64(replicas))
	within = c.tol.Within(ratio)
	if !within {
		f := math.Ceil(float64(usage) / float64(target))
		if saturate && f > float64(math.MaxInt32) {
			replicas = math.MaxInt32
		} else {
			replicas = int32(f)
		}
	}
	if saturate && float64(usage) >= float64(math.MaxInt64) {
		return replicas, math.MaxInt64, ratio, within
	}
	return replicas, int64(math.Ceil(float64(usage) / float64(status))), ratio, within
}

// positiveTarget rejects a target of zero or less. API validation never lets one through;
// upstream would divide by it and convert an infinite ratio to an int32 (a platform-dependent
// value), so the core fails the metric instead of presenting that as a decision.
func positiveTarget(source, kind string, v int64) error {
	if v > 0 {
		return nil
	}
	got := milli(v)
	if kind == "average utilization" {
		got = fmt.Sprintf("%d%%", v)
	}
	return fmt.Errorf("invalid %s metric source: the %s target must be positive, got %s", source, kind, got)
}

// PodIsReady reports whether the pod's Ready condition is True.
func PodIsReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func withinText(within bool) string {
	if within {
		return " (within tolerance)"
	}
	return ""
}

// milli renders a milli-value as a quantity would print it ("1500m", "2").
func milli(v int64) string {
	return resource.NewMilliQuantity(v, resource.DecimalSI).String()
}
