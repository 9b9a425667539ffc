package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1 "k8s.io/metrics/pkg/apis/metrics/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclientset "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/internal/selectors"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/decode"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// defaultCustomWindow is the window of a custom metric value without windowSeconds, as upstream.
const defaultCustomWindow = time.Minute

// APIClients are the clients of the metrics APIs. Custom is built from the version getter
// the metrics client hands it (customclient.NewForConfig in production, a fake in tests).
type APIClients struct {
	Discovery discovery.DiscoveryInterface
	Resource  metricsclientset.Interface
	Custom    func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient
	External  externalclient.ExternalMetricsClient
	Clock     clock.PassiveClock
	// MaxAge refuses samples older than this; 0 disables the check.
	MaxAge time.Duration
}

// apiClient reads metrics.k8s.io, custom.metrics.k8s.io and external.metrics.k8s.io as
// the v1.37 controller does.
type apiClient struct {
	resource         metricsclientset.Interface
	custom           customclient.CustomMetricsClient
	external         externalclient.ExternalMetricsClient
	resourceVersions *versionResolver
	customVersions   *versionResolver
	externalVersions *versionResolver
	pass             *discoveryPass
	clock            clock.PassiveClock
	maxAge           time.Duration
}

var (
	_ Client          = (*apiClient)(nil)
	_ DiscoveryPasses = (*apiClient)(nil)
)

// DiscoveryPasses is a Client a command reading the metrics of many HPAs at once (list, a
// frame of list --watch) can have ask discovery once per such pass instead of once per HPA:
// without passes, each read of a metrics API the cluster does not serve asks discovery
// again, and each 404 (an adapter without the metric) refreshes the cached discovery, as a
// long run needs to notice an adapter installed or removed.
type DiscoveryPasses interface {
	// StartDiscoveryPass starts a pass: until the next, that a metrics API is not served (or
	// why its version could not be found) holds for every read, and the cached discovery is
	// refreshed at most once. The versions found are kept across passes.
	StartDiscoveryPass()
}

func (a *apiClient) StartDiscoveryPass() {
	a.pass.start()
	for _, r := range []*versionResolver{a.resourceVersions, a.customVersions, a.externalVersions} {
		r.dropFailure()
	}
}

// NewAPIClient returns a Client reading the metrics APIs. served is what discovery showed
// (group -> versions), used as the first choice of versions; nil means "ask on first use".
func NewAPIClient(c APIClients, served map[string][]string) (Client, error) {
	if c.Discovery == nil || c.Resource == nil || c.Custom == nil || c.External == nil || c.Clock == nil {
		return nil, errors.New("metrics API client: discovery, resource, custom and external clients and a clock are required")
	}
	pass := &discoveryPass{}
	resolver := func(group string, prefs []string) *versionResolver {
		known, _ := pickVersion(served, group, prefs)
		return newVersionResolver(c.Discovery, group, prefs, known, pass)
	}
	a := &apiClient{
		resource:         c.Resource,
		external:         c.External,
		resourceVersions: resolver(resourceMetricsGroup, resourceMetricsVersions),
		customVersions:   resolver(customMetricsGroup, customMetricsVersions),
		externalVersions: resolver(externalMetricsGroup, externalMetricsVersions),
		pass:             pass,
		clock:            c.Clock,
		maxAge:           c.MaxAge,
	}
	a.custom = c.Custom(a.customVersions)
	return a, nil
}

func (a *apiClient) Source() string {
	part := func(group string, r *versionResolver) string {
		if v := r.current(); v != "" {
			return group + "/" + v
		}
		return group + " (not served)"
	}
	return strings.Join([]string{
		part(resourceMetricsGroup, a.resourceVersions),
		part(customMetricsGroup, a.customVersions),
		part(externalMetricsGroup, a.externalVersions),
	}, ", ")
}

func (a *apiClient) PodResource(ctx context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	selector = orEverything(selector)
	return a.listPodResources(ctx, namespace, selector).PodResource(res, selector, container)
}

// NamespacePodResources implements NamespaceLister: one PodMetrics list of the whole namespace.
func (a *apiClient) NamespacePodResources(ctx context.Context, namespace string) *PodResources {
	p := a.listPodResources(ctx, namespace, labels.Everything())
	if p.err == nil {
		p.index()
	}
	return p
}

// NamespaceLister is a Client whose reads a command that decides for every HPA of a namespace
// can share: a whole namespace's resource metrics in one request (the metrics API's PodMetrics
// list), and a Pods metric (custom.metrics.k8s.io) of a pod selector in one request, which every
// HPA with that selector is served whole. Heapster's client is not one: its model API is asked
// per pod list.
type NamespaceLister interface {
	NamespacePodResources(ctx context.Context, namespace string) *PodResources
	NamespacePodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) *PodsMetrics
}

// PodResources is one PodMetrics list of a namespace, or why it failed. Its PodResource
// answers for any pod selector exactly what PodResource with that selector answers: the
// items whose labels the selector matches (as the server filters a list), decoded and checked
// the same way, with the same errors.
type PodResources struct {
	namespace string
	gv        string
	items     []decode.PodUsage
	labels    []map[string]string
	clock     clock.PassiveClock
	maxAge    time.Duration
	err       error

	// byLabel indexes a namespace's list (NamespacePodResources) by label key and value:
	// every HPA of the namespace reads that one list, and a Deployment's selector picks a few
	// of its pods, which a scan would find by matching every pod of the namespace per HPA. A
	// list read with an HPA's own selector holds its pods only and has no index.
	byLabel map[string]map[string][]int32
}

// Err is why the list failed (nil when it was read).
func (p *PodResources) Err() error { return p.err }

// listPodResources lists the PodMetrics of namespace matching selector.
func (a *apiClient) listPodResources(ctx context.Context, namespace string, selector labels.Selector) *PodResources {
	const what = "unable to fetch metrics from resource metrics API"
	v, err := a.resourceVersions.version(ctx)
	if err != nil {
		return &PodResources{err: versionError(what, err, "install metrics-server, or pass --metrics-source=heapster")}
	}
	gv := resourceMetricsGroup + "/" + v
	p := &PodResources{namespace: namespace, gv: gv, clock: a.clock, maxAge: a.maxAge}
	opts := metav1.ListOptions{LabelSelector: selector.String()}
	switch v {
	case "v1":
		list, err := a.resource.MetricsV1().PodMetricses(namespace).List(ctx, opts)
		if err != nil {
			p.err = a.apiError(ctx, what, gv, "list pods."+resourceMetricsGroup, namespace, a.resourceVersions, err)
			return p
		}
		p.items = podUsages(list.Items, func(m *metricsv1.PodMetrics) (string, time.Time, time.Duration, []metricsv1.ContainerMetrics) {
			return m.Name, m.Timestamp.Time, m.Window.Duration, m.Containers
		}, func(c *metricsv1.ContainerMetrics) decode.ContainerUsage {
			return decode.ContainerUsage{Name: c.Name, Usage: c.Usage}
		})
		for i := range list.Items {
			p.labels = append(p.labels, list.Items[i].Labels)
		}
	default:
		list, err := a.resource.MetricsV1beta1().PodMetricses(namespace).List(ctx, opts)
		if err != nil {
			p.err = a.apiError(ctx, what, gv, "list pods."+resourceMetricsGroup, namespace, a.resourceVersions, err)
			return p
		}
		p.items = podUsages(list.Items, func(m *metricsv1beta1.PodMetrics) (string, time.Time, time.Duration, []metricsv1beta1.ContainerMetrics) {
			return m.Name, m.Timestamp.Time, m.Window.Duration, m.Containers
		}, func(c *metricsv1beta1.ContainerMetrics) decode.ContainerUsage {
			return decode.ContainerUsage{Name: c.Name, Usage: c.Usage}
		})
		for i := range list.Items {
			p.labels = append(p.labels, list.Items[i].Labels)
		}
	}
	return p
}

// PodResource is the usage of res per pod matching selector (summed over containers, or
// of container), as Client.PodResource.
func (p *PodResources) PodResource(res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	if p.err != nil {
		return nil, time.Time{}, p.err
	}
	selector = orEverything(selector)
	items := p.matching(selector)
	if len(items) == 0 {
		return nil, time.Time{}, SourceFailure{fmt.Errorf("no metrics returned from resource metrics API (%s) for pods in %s matching %q; metrics-server may not have scraped them yet", p.gv, p.namespace, selector.String())}
	}
	got, ts, err := decode.PodResourceSamples(items, res, container, p.clock.Now(), p.maxAge)
	if err != nil {
		return nil, time.Time{}, SourceFailure{fmt.Errorf("resource metrics API (%s): %s usage: %w", p.gv, res, err)}
	}
	return got, ts, nil
}

// matching returns the items whose labels selector matches, in the list's order.
func (p *PodResources) matching(selector labels.Selector) []decode.PodUsage {
	if selector.Empty() {
		return p.items
	}
	key, value, whole, ok := selectors.Pinned(selector)
	if !ok || p.byLabel == nil {
		items := make([]decode.PodUsage, 0, len(p.items))
		for i := range p.items {
			if selector.Matches(labels.Set(p.labels[i])) {
				items = append(items, p.items[i])
			}
		}
		return items
	}
	pos := p.byLabel[key][value]
	items := make([]decode.PodUsage, 0, len(pos))
	for _, i := range pos {
		if whole || selector.Matches(labels.Set(p.labels[i])) {
			items = append(items, p.items[i])
		}
	}
	return items
}

// index builds byLabel; the list is not shared yet.
func (p *PodResources) index() {
	p.byLabel = map[string]map[string][]int32{}
	for i, l := range p.labels {
		for k, v := range l {
			values := p.byLabel[k]
			if values == nil {
				values = map[string][]int32{}
				p.byLabel[k] = values
			}
			values[v] = append(values[v], int32(i))
		}
	}
}

// podUsages turns a PodMetrics list of either served version into the decoder's input, one
// array holding every pod's containers instead of one per pod; pod and usage read one
// version's types.
func podUsages[M, C any](list []M, pod func(*M) (string, time.Time, time.Duration, []C), usage func(*C) decode.ContainerUsage) []decode.PodUsage {
	n := 0
	for i := range list {
		_, _, _, cs := pod(&list[i])
		n += len(cs)
	}
	items := make([]decode.PodUsage, len(list))
	containers := make([]decode.ContainerUsage, 0, n)
	for i := range list {
		name, at, window, cs := pod(&list[i])
		start := len(containers)
		for j := range cs {
			containers = append(containers, usage(&cs[j]))
		}
		items[i] = decode.PodUsage{Name: name, Timestamp: at, Window: window, Containers: containers[start:len(containers):len(containers)]}
	}
	return items
}

func (a *apiClient) PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error) {
	return a.listPodsMetric(ctx, namespace, metricName, selector, metricSelector).PodsMetric()
}

// NamespacePodsMetric implements NamespaceLister: the read PodsMetric sends (metricName of the
// pods selector picks), not yet checked, so that the syncs of HPAs with that selector share it.
func (a *apiClient) NamespacePodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) *PodsMetrics {
	return a.listPodsMetric(ctx, namespace, metricName, selector, metricSelector)
}

// PodsMetrics is one custom-metrics read of a Pods metric (custom.metrics.k8s.io) for a pod
// selector, or why it failed. Its items name their pods but carry no labels; as upstream's, every
// item the adapter returned for the selector is used, including pods no longer in a pod list.
type PodsMetrics struct {
	namespace, metricName, gv string
	selector                  labels.Selector
	items                     []cmv1beta2.MetricValue
	clock                     clock.PassiveClock
	maxAge                    time.Duration
	err                       error
}

// Err is why the read failed (nil when it was read).
func (p *PodsMetrics) Err() error { return p.err }

func (a *apiClient) listPodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) *PodsMetrics {
	const what = "unable to fetch metrics from custom metrics API"
	selector, metricSelector = orEverything(selector), orEverything(metricSelector)
	v, err := a.customVersions.version(ctx)
	if err != nil {
		return &PodsMetrics{err: versionError(what, err, "install a custom metrics adapter (for example prometheus-adapter) to use Pods metrics")}
	}
	list, v, err := readOnVersion(ctx, a.customVersions, v, func() (*cmv1beta2.MetricValueList, error) {
		return a.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metricName, metricSelector)
	})
	p := &PodsMetrics{namespace: namespace, metricName: metricName, gv: customMetricsGroup + "/" + v, selector: selector, clock: a.clock, maxAge: a.maxAge}
	if err != nil {
		p.err = a.apiError(ctx, what, p.gv, "get pods."+customMetricsGroup+" (metric "+metricName+")", namespace, a.customVersions, err)
		return p
	}
	p.items = list.Items
	return p
}

// PodsMetric is the metric's value per pod of the read, every item in the read's order,
// checked as Client.PodsMetric checks them.
func (p *PodsMetrics) PodsMetric() (*sampleset.Set, time.Time, error) {
	if p.err != nil {
		return nil, time.Time{}, p.err
	}
	if len(p.items) == 0 {
		return nil, time.Time{}, MetricNotFound{GroupVersion: p.gv, Err: fmt.Errorf("no metrics returned from custom metrics API (%s) for metric %s of pods in %s matching %q", p.gv, p.metricName, p.namespace, p.selector.String())}
	}
	now := p.clock.Now()
	out := sampleset.New(len(p.items))
	for _, m := range p.items {
		name := m.DescribedObject.Name
		s, err := customSample(m, "pod "+name, now, p.maxAge)
		if err == nil && name == "" {
			err = errors.New("an item names no pod")
		}
		if err == nil && !out.Add(name, s) {
			err = fmt.Errorf("pod %s is listed twice", name)
		}
		if err != nil {
			return nil, time.Time{}, SourceFailure{fmt.Errorf("custom metrics API (%s): metric %s: %w", p.gv, p.metricName, err)}
		}
	}
	return out, p.items[0].Timestamp.Time, nil
}

func (a *apiClient) ObjectMetric(ctx context.Context, namespace, metricName string, object autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	const what = "unable to fetch metrics from custom metrics API"
	metricSelector = orEverything(metricSelector)
	gv, err := schema.ParseGroupVersion(object.APIVersion)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("%s: object %s/%s has a malformed apiVersion %q: %w", what, object.Kind, object.Name, object.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: object.Kind}
	v, err := a.customVersions.version(ctx)
	if err != nil {
		return 0, time.Time{}, versionError(what, err, "install a custom metrics adapter (for example prometheus-adapter) to use Object metrics")
	}
	value, v, err := readOnVersion(ctx, a.customVersions, v, func() (*cmv1beta2.MetricValue, error) {
		if gk.Kind == "Namespace" && gk.Group == "" {
			// As upstream: the namespace metric is the HPA's own namespace, whatever name the
			// reference gives, so an HPA cannot read another namespace's metric.
			return a.custom.RootScopedMetrics().GetForObject(gk, namespace, metricName, metricSelector)
		}
		return a.custom.NamespacedMetrics(namespace).GetForObject(gk, object.Name, metricName, metricSelector)
	})
	apiGV := customMetricsGroup + "/" + v
	if err != nil {
		return 0, time.Time{}, a.apiError(ctx, what, apiGV, fmt.Sprintf("get %s %s (metric %s)", object.Kind, object.Name, metricName), namespace, a.customVersions, err)
	}
	s, err := customSample(*value, object.Kind+" "+object.Name, a.clock.Now(), a.maxAge)
	if err != nil {
		return 0, time.Time{}, SourceFailure{fmt.Errorf("custom metrics API (%s): metric %s: %w", apiGV, metricName, err)}
	}
	return s.MilliValue, value.Timestamp.Time, nil
}

func (a *apiClient) ExternalMetric(ctx context.Context, namespace, metricName string, selector labels.Selector) ([]int64, time.Time, error) {
	const what = "unable to fetch metrics from external metrics API"
	selector = orEverything(selector)
	v, err := a.externalVersions.version(ctx)
	if err != nil {
		return nil, time.Time{}, versionError(what, err, "install an external metrics adapter (for example KEDA) to use External metrics")
	}
	list, v, err := readOnVersion(ctx, a.externalVersions, v, func() (*emv1beta1.ExternalMetricValueList, error) {
		return a.external.NamespacedMetrics(namespace).List(metricName, selector)
	})
	gv := externalMetricsGroup + "/" + v
	if err != nil {
		return nil, time.Time{}, a.apiError(ctx, what, gv, "list "+metricName+"."+externalMetricsGroup, namespace, a.externalVersions, err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, MetricNotFound{GroupVersion: gv, Err: fmt.Errorf("no metrics returned from external metrics API (%s) for metric %s matching %q in %s", gv, metricName, selector.String(), namespace)}
	}
	now := a.clock.Now()
	out := make([]int64, 0, len(list.Items))
	for i, m := range list.Items {
		v, err := decode.MilliValue(m.Value)
		if err == nil {
			err = decode.CheckFresh(m.Timestamp.Time, now, a.maxAge, fmt.Sprintf("value %d", i))
		}
		if err != nil {
			return nil, time.Time{}, SourceFailure{fmt.Errorf("external metrics API (%s): metric %s: %w", gv, metricName, err)}
		}
		out = append(out, v)
	}
	return out, list.Items[0].Timestamp.Time, nil
}

func customSample(m cmv1beta2.MetricValue, what string, now time.Time, maxAge time.Duration) (sampleset.Sample, error) {
	v, err := decode.MilliValue(m.Value)
	if err != nil {
		return sampleset.Sample{}, fmt.Errorf("%s: %w", what, err)
	}
	window := defaultCustomWindow
	if m.WindowSeconds != nil {
		if *m.WindowSeconds < 0 {
			return sampleset.Sample{}, fmt.Errorf("%s: negative windowSeconds %d", what, *m.WindowSeconds)
		}
		window = time.Duration(*m.WindowSeconds) * time.Second
	}
	if err := decode.CheckFresh(m.Timestamp.Time, now, maxAge, "the value of "+what); err != nil {
		return sampleset.Sample{}, err
	}
	return sampleset.Sample{MilliValue: v, Timestamp: sampleset.Timestamp(m.Timestamp.Time), Window: window}, nil
}

// versionError explains why no version of a metrics API could be chosen; hint says
// what to install when the cluster does not serve it.
func versionError(what string, err error, hint string) error {
	switch {
	case errors.Is(err, errNotServed):
		return fmt.Errorf("%s: %w; %s", what, err, hint)
	case isTimeout(err):
		return SourceFailure{fmt.Errorf("%s: no answer in time: %w", what, err)}
	case sourceFailed(err):
		return SourceFailure{fmt.Errorf("%s: %w", what, err)}
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// readOnVersion reads (under callCtx) on version v of r's group, the one the client asks r
// for, and returns the version it read on. After a 404 it forgets v, and when discovery, asked
// again, names another version, reads once more on that one: v came from a discovery cache
// older than the adapter's last change (kubectl's lives for hours). A metric the adapter does
// not know keeps its version and is not read again.
func readOnVersion[T any](ctx context.Context, r *versionResolver, v string, read func() (T, error)) (T, string, error) {
	out, err := callCtx(ctx, read)
	if !apierrors.IsNotFound(err) {
		return out, v, err
	}
	r.forget(ctx)
	if now, verr := r.version(ctx); verr == nil && now != v {
		out, err = callCtx(ctx, read)
		return out, now, err
	}
	return out, v, err
}

// apiError explains a failed metrics API request and, for resource metrics, forgets the
// resolved version when the API seems gone, so the next call asks discovery again (custom and
// external reads forget it in readOnVersion).
func (a *apiClient) apiError(ctx context.Context, what, gv, verb, namespace string, r *versionResolver, err error) error {
	group, _, _ := strings.Cut(gv, "/")
	switch {
	case isTimeout(err):
		return SourceFailure{fmt.Errorf("%s (%s): no answer in time: %w; check the APIService (kubectl get apiservices) and the server behind it, or raise --request-timeout", what, gv, err)}
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s (%s): forbidden: %w; you need RBAC permission to %s in %s", what, gv, err, verb, namespace)
	case apierrors.IsNotFound(err):
		err = fmt.Errorf("%s (%s): %w; the metric or object may not exist, or %s is no longer served (kubectl get apiservices)", what, gv, err, group)
		if group == resourceMetricsGroup {
			r.forget(ctx)
			return err
		}
		// An adapter's 404; readOnVersion forgot the version already.
		return MetricNotFound{GroupVersion: gv, Err: err}
	case apierrors.IsServiceUnavailable(err):
		// The aggregator answers 503 for a registered APIService it cannot reach: the
		// version stays known, so the next read says the same rather than "not served".
		return SourceFailure{fmt.Errorf("%s: %w; %s is registered but unavailable: check the APIService (kubectl get apiservices) and the server behind it", what, err, gv)}
	case sourceFailed(err):
		return SourceFailure{fmt.Errorf("%s (%s): %w", what, gv, err)}
	default:
		return fmt.Errorf("%s (%s): %w", what, gv, err)
	}
}

// sourceFailed reports an error of the server rather than of the request: no answer, an
// unreadable one, or a 5xx or 429 status. A 4xx says what was asked is wrong (a bad
// selector, no such metric, no permission) and is reported as such.
func sourceFailed(err error) bool {
	if isTimeout(err) {
		return true
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code >= 500 || code == http.StatusTooManyRequests
	}
	return true
}

func orEverything(s labels.Selector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	return s
}
