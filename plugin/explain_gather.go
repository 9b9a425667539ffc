package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

var vpaGVR = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// explain reads the cluster (three round trips: the HPA with its events; the scale with
// the VPAs; the pods with every metric), decides through the core and builds the Explanation.
// A non-nil error with a non-nil Explanation means: print it, then exit with the error's code.
func (o *ExplainOptions) explain(ctx context.Context) (*output.Explanation, error) {
	c := o.clients
	logger := klog.FromContext(ctx)
	now := o.Clock.Now()

	// Round trip 1: the HPA and the events about it.
	var (
		hpa               *autoscalingv2.HorizontalPodAutoscaler
		hpaErr, eventsErr error
		events            []corev1.Event
		wg                sync.WaitGroup
	)
	wg.Go(func() {
		hpa, hpaErr = c.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	})
	wg.Go(func() {
		events, eventsErr = rescaleEvents(ctx, c, o.Namespace, o.Name)
	})
	wg.Wait()
	if hpaErr != nil {
		return nil, o.hpaError(ctx, hpaErr)
	}

	// Discovery only after the HPA was read: an unreachable cluster then fails with the
	// one line of the HPA read. The VPAs go out beside the scale (round trip 2).
	served := servedGroupVersions(c.Discovery)
	var (
		vpas   *unstructured.UnstructuredList
		vpaErr error
	)
	if served[vpaGVR.GroupVersion().String()] && c.Dynamic != nil {
		wg.Go(func() {
			vpas, vpaErr = c.Dynamic.Resource(vpaGVR).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
		})
	}

	coreHPA, whatIfs, err := applySetTargets(hpa, o.whatIf)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	history, historyNote := reconstructHistory(hpa, events, now, o.Config)

	// Round trips 2 and 3 happen inside the Snapshotter; the prefetcher sends the pod list
	// and the metric reads together as soon as the scale is known.
	pf := newPrefetcher(c, o.Config, coreHPA)
	snap := controller.Snapshotter{Scales: pf, Pods: pf, Metrics: pf, Config: o.Config}
	in := snap.Input(ctx, coreHPA, history, now)
	pf.wait()
	wg.Wait()
	var before []replicas.MetricResult
	if slices.ContainsFunc(o.whatIf, func(w whatIf) bool { return w.flag == "assume" }) {
		before = replicas.Decide(in).Metrics
	}
	assumed, err := applyAssumes(&in, o.whatIf, before)
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	whatIfs = append(whatIfs, assumed...)

	d := replicas.Decide(in)
	fresh := in
	fresh.History = replicas.History{}
	var freshDesired *int32
	if fd := replicas.Decide(fresh); fd.DesiredReplicas != d.DesiredReplicas {
		freshDesired = &fd.DesiredReplicas
	}
	logger.V(2).Info("Decided", "phase", d.Phase, "current", d.CurrentReplicas, "desired", d.DesiredReplicas)

	facts := output.Facts{
		Input:         in,
		Decision:      d,
		Cluster:       hpa,
		RescaleEvents: events,
		MetricsSource: metricsSource(c),
		HistorySource: "reconstructed",
		HistoryNote:   historyNote,
		FreshDesired:  freshDesired,
		WhatIf:        whatIfs,
		Warnings:      warnings(hpa, in, vpas, vpaErr, eventsErr),
	}
	e := output.Build(facts)
	if err := o.decisionExitError(hpa, in, d, served); err != nil {
		e.Error = &output.Error{ExitCode: err.Code, Reason: ExitReason(err.Code), Message: err.Error()}
		return e, err
	}
	return e, nil
}

// rescaleEvents lists the SuccessfulRescale events of the HPA. The field selector narrows
// the list on the server; the filter here keeps fakes and old servers honest.
func rescaleEvents(ctx context.Context, c *explainClients, namespace, name string) ([]corev1.Event, error) {
	list, err := c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=SuccessfulRescale",
	})
	if err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.InvolvedObject.Name == name && ev.Reason == "SuccessfulRescale" {
			out = append(out, ev)
		}
	}
	return out, nil
}

// servedGroupVersions returns the group/versions the (cached) discovery client knows;
// empty when discovery fails, which only silences optional warnings.
func servedGroupVersions(dc discovery.DiscoveryInterface) map[string]bool {
	out := map[string]bool{}
	if dc == nil {
		return out
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return out
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out[v.GroupVersion] = true
		}
		out[g.Name] = true
	}
	return out
}

// hpaError turns a failed HPA GET into an actionable error; on NotFound it looks (only on
// this error path) whether the namespace exists and whether the HPA lives elsewhere.
func (o *ExplainOptions) hpaError(ctx context.Context, err error) error {
	doing := fmt.Sprintf("getting horizontalpodautoscaler %q in namespace %q", o.Name, o.Namespace)
	if !apierrors.IsNotFound(err) {
		return apiExitError(doing, err)
	}
	kube := o.clients.Kube
	// A server that is not a Kubernetes API server answers 404 to everything.
	if err := checkAPIServer(kube.Discovery(), o.host); err != nil {
		return err
	}
	_, nsErr := kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	if err := namespaceMissing(nsErr, o.Namespace); err != nil {
		return err
	}
	list, lerr := kube.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + o.Name})
	if lerr == nil {
		var elsewhere []string
		for _, h := range list.Items {
			if h.Name == o.Name && h.Namespace != o.Namespace {
				elsewhere = append(elsewhere, h.Namespace)
			}
		}
		sort.Strings(elsewhere)
		if len(elsewhere) > 0 {
			return &ExitError{Code: ExitWrongNamespace, Err: fmt.Errorf("horizontalpodautoscaler %q not found in namespace %q, but it exists in namespace %s: pass -n %s",
				o.Name, o.Namespace, strings.Join(elsewhere, ", "), elsewhere[0])}
		}
	}
	return &ExitError{Code: ExitHPANotFound, Err: fmt.Errorf("horizontalpodautoscaler %q not found in namespace %q: list them with kubectl get hpa -n %s", o.Name, o.Namespace, o.Namespace)}
}

// decisionExitError says whether an otherwise printable decision must still end with a
// failure code: the target could not be read, or a metrics API it needs is not served.
func (o *ExplainOptions) decisionExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input, d replicas.Decision, served map[string]bool) *ExitError {
	ref := hpa.Spec.ScaleTargetRef
	if in.ScaleErr != nil {
		return targetExitError(hpa, in.ScaleErr, o.clients.Discovery)
	}
	for i, m := range d.Metrics {
		if m.Err == nil || i >= len(hpa.Spec.Metrics) {
			continue
		}
		spec := hpa.Spec.Metrics[i]
		if apierrors.IsForbidden(m.Err) {
			return apiExitError(fmt.Sprintf("reading metric %s for %s/%s", output.ShortName(spec), ref.Kind, ref.Name), m.Err)
		}
		if err := o.clients.MetricsErr; err != nil {
			if apierrors.IsForbidden(err) {
				return apiExitError("choosing the metrics source", err)
			}
			return &ExitError{Code: ExitMetricsUnavailable, Err: fmt.Errorf("no metrics source for metric %s: %w", output.ShortName(spec), err)}
		}
		heapster := o.clients.MetricsSelection.Source == metrics.SourceHeapster
		// A registered API whose server is down is left out of discovery too; its reads
		// are source failures, reported below.
		if api := requiredAPI(spec.Type, heapster); api != "" && len(served) > 0 && !served[api] && !metrics.IsSourceFailure(m.Err) {
			return &ExitError{Code: ExitMetricsUnavailable, Err: fmt.Errorf("%s is not served by this cluster, so metric %s cannot be read: %s", api, output.ShortName(spec), metricsAPIHint(api))}
		}
	}
	// A source that answers badly (garbage, stale, 500s, timeouts) leaves the decision with
	// no count: the explanation is printed, but a script must see the failure too.
	if d.Phase == replicas.PhaseMetricsFailed {
		for i, m := range d.Metrics {
			if i < len(hpa.Spec.Metrics) && metrics.IsSourceFailure(m.Err) {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("metric %s of %s/%s cannot be read, so nothing would be scaled: %w", output.ShortName(hpa.Spec.Metrics[i]), ref.Kind, ref.Name, m.Err)}
			}
		}
		// Everything was read and still no count: the HPA itself cannot compute.
		reason, msg := "", ""
		for _, c := range d.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
				reason, msg = c.Reason, c.Message
			}
		}
		if reason == "" && d.Err != nil {
			reason, msg = "FailedComputeMetricsReplicas", d.Err.Error()
		}
		return &ExitError{Code: ExitCannotCompute, Err: fmt.Errorf("horizontalpodautoscaler %s/%s cannot compute a replica count, so nothing would be scaled (ScalingActive=False, %s): %s",
			hpa.Namespace, hpa.Name, reason, msg)}
	}
	return nil
}

func metricsAPIHint(api string) string {
	switch api {
	case "metrics.k8s.io":
		return "install metrics-server or pass --metrics-source=heapster"
	case "custom.metrics.k8s.io":
		return "install a custom metrics adapter (for example prometheus-adapter)"
	case "external.metrics.k8s.io":
		return "install an external metrics adapter (for example KEDA's or prometheus-adapter)"
	}
	return "install the API's adapter"
}

// targetExitError classifies a scale read failure: missing object, unscalable kind, or RBAC.
func targetExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, err error, dc discovery.DiscoveryInterface) *ExitError {
	ref := hpa.Spec.ScaleTargetRef
	doing := fmt.Sprintf("reading the scale of %s %q (spec.scaleTargetRef of horizontalpodautoscaler %s/%s)", ref.Kind, ref.Name, hpa.Namespace, hpa.Name)
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return apiExitError(doing, err)
	}
	notScalable := &ExitError{Code: ExitTargetNotScalable, Err: fmt.Errorf("%s: %w: scaleTargetRef must name a kind with a scale subresource (Deployment, StatefulSet, ReplicaSet or a custom resource with /scale)", doing, err)}
	var se *replicas.ScaleError
	if errors.As(err, &se) && se.Stage != replicas.ScaleErrorGet {
		return notScalable
	}
	if apierrors.IsNotFound(err) {
		if hasScale, known := scaleSubresourceServed(dc, ref); known && !hasScale {
			return notScalable
		}
		return &ExitError{Code: ExitTargetNotFound, Err: fmt.Errorf("%s: %w: create it or fix spec.scaleTargetRef", doing, err)}
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w", doing, err)}
}

// scaleSubresourceServed looks in (cached) discovery whether ref's kind has /scale.
func scaleSubresourceServed(dc discovery.DiscoveryInterface, ref autoscalingv2.CrossVersionObjectReference) (hasScale, known bool) {
	if dc == nil {
		return false, false
	}
	list, err := dc.ServerResourcesForGroupVersion(ref.APIVersion)
	if err != nil {
		return false, false
	}
	resource := ""
	for _, r := range list.APIResources {
		if r.Kind == ref.Kind && !strings.Contains(r.Name, "/") {
			resource = r.Name
		}
	}
	if resource == "" {
		return false, true
	}
	for _, r := range list.APIResources {
		if r.Name == resource+"/scale" {
			return true, true
		}
	}
	return false, true
}

// reconstructHistory rebuilds what can be known of the cluster controller's in-memory
// history: each visible SuccessfulRescale is a moment the controller settled on a size.
// Raw recommendations between rescales are not visible and are not invented.
func reconstructHistory(hpa *autoscalingv2.HorizontalPodAutoscaler, events []corev1.Event, now time.Time, cfg replicas.Config) (replicas.History, string) {
	type sized struct {
		size int32
		at   time.Time
	}
	var seen []sized
	for _, ev := range events {
		var n int32
		if _, err := fmt.Sscanf(ev.Message, "New size: %d;", &n); err != nil {
			continue
		}
		t := output.EventTime(ev)
		if t.After(now) {
			t = now
		}
		seen = append(seen, sized{n, t})
	}
	sort.Slice(seen, func(i, j int) bool { return seen[i].at.Before(seen[j].at) })

	h := replicas.History{Recommendations: []replicas.Recommendation{}}
	for _, s := range seen {
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: s.size, Timestamp: s.at})
	}
	fromLastScale := false
	if lst := hpa.Status.LastScaleTime; lst != nil && (len(seen) == 0 || lst.Time.Sub(seen[len(seen)-1].at) > time.Second) {
		// A rescale whose event has expired or was not visible: its size is the one the
		// controller has seen since (status.currentReplicas), the best available estimate.
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: hpa.Status.CurrentReplicas, Timestamp: lst.Time})
		fromLastScale = true
	}
	if hpa.Spec.Behavior != nil {
		// Upstream records scale events only with behavior; the first visible rescale's
		// previous size is unknown, so only changes between visible rescales count.
		for i := 1; i < len(seen); i++ {
			change := seen[i].size - seen[i-1].size
			switch {
			case change > 0:
				h.ScaleUpEvents = append(h.ScaleUpEvents, replicas.ScaleEvent{ReplicaChange: change, Timestamp: seen[i].at})
			case change < 0:
				h.ScaleDownEvents = append(h.ScaleDownEvents, replicas.ScaleEvent{ReplicaChange: -change, Timestamp: seen[i].at})
			}
		}
	}
	var b strings.Builder
	b.WriteString("The cluster's HPA controller keeps its recommendation history in its own memory; it cannot be read from the API. ")
	switch {
	case len(seen) == 0 && !fromLastScale:
		b.WriteString("No rescale is visible (no SuccessfulRescale events, no status.lastScaleTime), so this decision uses an empty history: nothing holds it back except what it computes now.")
	default:
		fmt.Fprintf(&b, "This decision uses what can be reconstructed: %d SuccessfulRescale event(s)", len(seen))
		if fromLastScale {
			b.WriteString(" and status.lastScaleTime (with status.currentReplicas as its size)")
		}
		b.WriteString(" as recommendations")
		if hpa.Spec.Behavior != nil && len(seen) > 1 {
			b.WriteString(", and the changes between them as scale events for the policies")
		}
		b.WriteString(". Recommendations made between rescales are not visible, so the cluster's stabilization window may hold a different value.")
	}
	return h, b.String()
}

// prefetcher decorates the readers the Snapshotter uses: once the scale is read it sends the
// pod list and every metric read at the same time, and hands their results to the
// Snapshotter's later calls. The Snapshotter asks for pods before metrics; without this,
// explain would need a fourth round trip.
type prefetcher struct {
	c   *explainClients
	cfg replicas.Config

	mu    sync.Mutex
	calls map[string]*call
	wg    sync.WaitGroup
	hpa   *autoscalingv2.HorizontalPodAutoscaler
}

type call struct {
	done chan struct{}
	val  any
	ts   time.Time
	err  error
}

func newPrefetcher(c *explainClients, cfg replicas.Config, hpa *autoscalingv2.HorizontalPodAutoscaler) *prefetcher {
	return &prefetcher{c: c, cfg: cfg, hpa: hpa, calls: map[string]*call{}}
}

// wait returns when every started read has finished.
func (p *prefetcher) wait() { p.wg.Wait() }

// do runs f once per key; later callers with the same key get the first result.
func (p *prefetcher) do(key string, f func() (any, time.Time, error)) (any, time.Time, error) {
	p.mu.Lock()
	c, ok := p.calls[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		p.calls[key] = c
		p.mu.Unlock()
		c.val, c.ts, c.err = f()
		close(c.done)
	} else {
		p.mu.Unlock()
		<-c.done
	}
	return c.val, c.ts, c.err
}

func (p *prefetcher) start(f func()) {
	p.wg.Go(f)
}

// Scale implements controller.ScaleReader and starts the next round trip's reads.
func (p *prefetcher) Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	s, err := p.c.Scales.Scale(ctx, namespace, ref)
	if err != nil {
		return s, err
	}
	if !replicas.NeedsMetrics(replicas.Input{HPA: p.hpa, Scale: s, Config: p.cfg}) || s.Selector == "" {
		return s, err
	}
	selector, perr := labels.Parse(s.Selector)
	if perr != nil {
		return s, err
	}
	p.start(func() { _, _ = p.Pods(ctx, namespace, selector) })
	for _, spec := range p.hpa.Spec.Metrics {
		p.start(func() { p.prefetchMetric(ctx, namespace, spec, selector) })
	}
	return s, err
}

// prefetchMetric issues the same call the Snapshotter will make for spec.
func (p *prefetcher) prefetchMetric(ctx context.Context, namespace string, spec autoscalingv2.MetricSpec, selector labels.Selector) {
	sel := func(ls *metav1.LabelSelector) (labels.Selector, bool) {
		s, err := metav1.LabelSelectorAsSelector(ls)
		return s, err == nil
	}
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		_, _, _ = p.PodResource(ctx, namespace, spec.Resource.Name, selector, "")
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		_, _, _ = p.PodResource(ctx, namespace, spec.ContainerResource.Name, selector, spec.ContainerResource.Container)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		if ms, ok := sel(spec.Pods.Metric.Selector); ok {
			_, _, _ = p.PodsMetric(ctx, namespace, spec.Pods.Metric.Name, selector, ms)
		}
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		if ms, ok := sel(spec.Object.Metric.Selector); ok {
			_, _, _ = p.ObjectMetric(ctx, namespace, spec.Object.Metric.Name, spec.Object.DescribedObject, ms)
		}
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		if ms, ok := sel(spec.External.Metric.Selector); ok {
			_, _, _ = p.ExternalMetric(ctx, namespace, spec.External.Metric.Name, ms)
		}
	}
}

// Pods implements controller.PodReader.
func (p *prefetcher) Pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	v, _, err := p.do("pods|"+namespace+"|"+selector.String(), func() (any, time.Time, error) {
		pods, err := p.c.Pods.Pods(ctx, namespace, selector)
		return pods, time.Time{}, err
	})
	pods, _ := v.([]*corev1.Pod)
	return pods, err
}

// PodResource implements metrics.Client.
func (p *prefetcher) PodResource(ctx context.Context, namespace string, resource corev1.ResourceName, selector labels.Selector, container string) (metrics.PodSamples, time.Time, error) {
	key := strings.Join([]string{"resource", namespace, string(resource), selector.String(), container}, "|")
	v, ts, err := p.do(key, func() (any, time.Time, error) {
		return p.c.Metrics.PodResource(ctx, namespace, resource, selector, container)
	})
	s, _ := v.(metrics.PodSamples)
	return s, ts, err
}

// PodsMetric implements metrics.Client.
func (p *prefetcher) PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (metrics.PodSamples, time.Time, error) {
	key := strings.Join([]string{"pods", namespace, metricName, selector.String(), metricSelector.String()}, "|")
	v, ts, err := p.do(key, func() (any, time.Time, error) {
		return p.c.Metrics.PodsMetric(ctx, namespace, metricName, selector, metricSelector)
	})
	s, _ := v.(metrics.PodSamples)
	return s, ts, err
}

// ObjectMetric implements metrics.Client.
func (p *prefetcher) ObjectMetric(ctx context.Context, namespace, metricName string, object autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	key := strings.Join([]string{"object", namespace, metricName, object.APIVersion, object.Kind, object.Name, metricSelector.String()}, "|")
	v, ts, err := p.do(key, func() (any, time.Time, error) {
		return p.c.Metrics.ObjectMetric(ctx, namespace, metricName, object, metricSelector)
	})
	n, _ := v.(int64)
	return n, ts, err
}

// ExternalMetric implements metrics.Client.
func (p *prefetcher) ExternalMetric(ctx context.Context, namespace, metricName string, selector labels.Selector) ([]int64, time.Time, error) {
	key := strings.Join([]string{"external", namespace, metricName, selector.String()}, "|")
	v, ts, err := p.do(key, func() (any, time.Time, error) {
		return p.c.Metrics.ExternalMetric(ctx, namespace, metricName, selector)
	})
	n, _ := v.([]int64)
	return n, ts, err
}

// Source implements metrics.Client.
func (p *prefetcher) Source() string { return p.c.Metrics.Source() }

// requiredAPI is the metrics API group a metric type is read from; Heapster serves
// resource and pods metrics itself.
func requiredAPI(t autoscalingv2.MetricSourceType, heapster bool) string {
	if heapster && (isResourceMetric(t) || t == autoscalingv2.PodsMetricSourceType) {
		return ""
	}
	switch t {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		return "metrics.k8s.io"
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType:
		return "custom.metrics.k8s.io"
	case autoscalingv2.ExternalMetricSourceType:
		return "external.metrics.k8s.io"
	}
	return ""
}

// metricsSource says where numbers came from and why that source was chosen.
func metricsSource(c *explainClients) string {
	if sel := c.MetricsSelection; sel.Detail != "" {
		return sel.String()
	}
	return c.Metrics.Source()
}
