package metrics

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/decode"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// The Heapster-era controller's defaults (kube-controller-manager 1.11): the service
// kube-system/heapster, plain http, the service's first port.
const (
	DefaultHeapsterNamespace = "kube-system"
	DefaultHeapsterService   = "heapster"
	DefaultHeapsterScheme    = "http"
	DefaultHeapsterPort      = ""
)

// heapsterQueryWindow is how far back the model API is asked for samples (start=now-5m).
const heapsterQueryWindow = 5 * time.Minute

// maxHeapsterBody caps what is read from a direct Heapster URL.
const maxHeapsterBody = 64 << 20

// HeapsterConfig says how to reach Heapster: through the API server's service proxy
// (Services) or, when URL is set, directly (HTTPClient).
type HeapsterConfig struct {
	Namespace, Service, Scheme, Port string
	// Services reaches the service proxy; unused when URL is set.
	Services corev1client.ServicesGetter
	// URL is a direct base URL, e.g. http://127.0.0.1:8082 after kubectl port-forward.
	URL *url.URL
	// HTTPClient is used with URL; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Pods lists the pods whose names the model API is asked about.
	Pods corev1client.PodsGetter
	// Clock gives "now" for the model API's start time and the staleness check.
	Clock clock.PassiveClock
	// MaxAge refuses samples older than this; 0 disables the check.
	MaxAge time.Duration
	// Timeout bounds each read (PodResource, PodsMetric) as a whole; when it passes, the
	// requests in flight are abandoned. 0 leaves only the caller's context.
	Timeout time.Duration
}

// noHeapsterService is the error for a missing Heapster service, from the service proxy
// or from the existence check of NewClient.
func noHeapsterService(namespace, service string, cause error) error {
	return fmt.Errorf("no heapster service in %s (looked for service %q); pass --heapster-namespace, --heapster-service or --heapster-url, or --metrics-source=metrics-api: %w", namespace, service, cause)
}

// heapsterClient reads resource metrics from Heapster's metrics/v1alpha1 API and pod
// custom metrics from its model API, as the Kubernetes 1.3-1.11 controller did.
type heapsterClient struct {
	cfg   HeapsterConfig
	where string
	get   func(ctx context.Context, path string, params map[string]string) ([]byte, error)
	// resourceAPI is the index in heapsterResourceAPIs of the path that answered last.
	resourceAPI atomic.Int32
}

// heapsterResourceAPIs are where Heapster serves its PodMetricsList: Kubernetes 1.11's client
// asked Heapster 1.3 and 1.4's path; Heapster 1.5 and 1.6 serve the same list only under
// metrics.k8s.io/v1alpha1. A client asks the path that answered last, the older first.
func heapsterResourceAPIs() [2]struct{ path, versions string } {
	return [2]struct{ path, versions string }{
		{"/apis/metrics/v1alpha1/namespaces/%s/pods", "heapster 1.3, 1.4"},
		{"/apis/metrics.k8s.io/v1alpha1/namespaces/%s/pods", "heapster 1.5, 1.6"},
	}
}

// errNoSuchPath marks a 404 from Heapster itself (not from the API server's service proxy).
var errNoSuchPath = errors.New("no such path")

var _ Client = (*heapsterClient)(nil)

// NewHeapsterClient returns a Client reading from Heapster.
func NewHeapsterClient(cfg HeapsterConfig) (Client, error) {
	if cfg.Pods == nil || cfg.Clock == nil {
		return nil, errors.New("heapster client: pods getter and clock are required")
	}
	h := &heapsterClient{cfg: cfg}
	if cfg.URL != nil {
		if cfg.HTTPClient == nil {
			h.cfg.HTTPClient = http.DefaultClient
		}
		h.where = "heapster at " + cfg.URL.Redacted()
		h.get = h.getDirect
		return h, nil
	}
	if cfg.Services == nil {
		return nil, errors.New("heapster client: a services getter is required for the service proxy")
	}
	h.where = fmt.Sprintf("heapster via service proxy %s/%s", cfg.Namespace, utilnet.JoinSchemeNamePort(cfg.Scheme, cfg.Service, cfg.Port))
	h.get = h.getProxy
	return h, nil
}

func (h *heapsterClient) Source() string { return h.where }

// bounded returns ctx limited by the read timeout; the deadline's cause tells our
// timeout from the caller's.
func (h *heapsterClient) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.cfg.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, h.cfg.Timeout, errReadTimeout)
}

// timeoutErr is the error of a request abandoned at ctx's deadline, naming the flag that
// set it when it was our read timeout.
func (h *heapsterClient) timeoutErr(ctx context.Context, err error, hint string) error {
	if errors.Is(context.Cause(ctx), errReadTimeout) {
		return fmt.Errorf("%s timed out after %s (--metrics-timeout), the request was abandoned: %w; check that heapster is running and not overloaded, or raise --metrics-timeout", h.where, h.cfg.Timeout, err)
	}
	return fmt.Errorf("%s did not answer in time: %w; %s", h.where, err, hint)
}

func (h *heapsterClient) PodResource(ctx context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	if selector == nil {
		selector = labels.Everything()
	}
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	body, path, err := h.getPodMetrics(ctx, namespace, map[string]string{"labelSelector": selector.String()})
	if err != nil {
		return nil, time.Time{}, SourceFailure{err}
	}
	items, err := decode.HeapsterPodMetrics(body)
	if err != nil {
		return nil, time.Time{}, SourceFailure{badAnswer(h.where, path, err)}
	}
	if len(items) == 0 {
		return nil, time.Time{}, SourceFailure{fmt.Errorf("no metrics returned from heapster (%s) for pods in %s matching %q; heapster may not have scraped them yet", h.where, namespace, selector.String())}
	}
	got, ts, err := decode.PodResourceSamples(items, res, container, h.cfg.Clock.Now(), h.cfg.MaxAge)
	if err != nil {
		return nil, time.Time{}, SourceFailure{fmt.Errorf("%s: %s usage from GET %s: %w", h.where, res, path, err)}
	}
	return got, ts, nil
}

func (h *heapsterClient) PodsMetric(ctx context.Context, namespace, metricName string, selector, metricSelector labels.Selector) (*sampleset.Set, time.Time, error) {
	// The controller turns an absent selector into labels.Nothing(), as upstream does, so
	// only a selector with requirements asks for a filter Heapster cannot apply.
	var filter labels.Requirements
	if metricSelector != nil {
		filter, _ = metricSelector.Requirements()
	}
	if len(filter) > 0 {
		return nil, time.Time{}, fmt.Errorf("%s cannot filter metric %s by the metric selector %q; remove the selector or use --metrics-source=metrics-api with a custom metrics adapter", h.where, metricName, metricSelector.String())
	}
	if selector == nil {
		selector = labels.Everything()
	}
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	pods, err := h.cfg.Pods.Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("listing pods in %s matching %q to ask %s about: %w", namespace, selector.String(), h.where, err)
	}
	if len(pods.Items) == 0 {
		return nil, time.Time{}, fmt.Errorf("no pods matched the provided selector %q in %s", selector.String(), namespace)
	}
	names := make([]string, len(pods.Items))
	for i, p := range pods.Items {
		names[i] = p.Name
	}
	now := h.cfg.Clock.Now()
	// The metric name goes verbatim into the path: Heapster-era HPAs named custom metrics
	// "custom/<name>" themselves.
	path := fmt.Sprintf("/api/v1/model/namespaces/%s/pod-list/%s/metrics/%s", namespace, strings.Join(names, ","), metricName)
	body, err := h.get(ctx, path, map[string]string{"start": now.Add(-heapsterQueryWindow).Format(time.RFC3339)})
	if err != nil {
		return nil, time.Time{}, SourceFailure{err}
	}
	list, err := decode.HeapsterModel(body)
	if err != nil {
		return nil, time.Time{}, SourceFailure{badAnswer(h.where, path, err)}
	}
	got, ts, err := decode.HeapsterPodsSamples(names, list, now, h.cfg.MaxAge)
	if err != nil {
		return nil, time.Time{}, SourceFailure{fmt.Errorf("%s: metric %s from GET %s: %w", h.where, metricName, path, err)}
	}
	return got, ts, nil
}

// getPodMetrics GETs the PodMetricsList of namespace from the path that answered last and, if
// Heapster has no such path, from the other one; it returns the body and the path it came from.
func (h *heapsterClient) getPodMetrics(ctx context.Context, namespace string, params map[string]string) ([]byte, string, error) {
	apis := heapsterResourceAPIs()
	first := int(h.resourceAPI.Load())
	var paths [len(apis)]string
	for i := range apis {
		idx := (first + i) % len(apis)
		paths[idx] = fmt.Sprintf(apis[idx].path, namespace)
		body, err := h.get(ctx, paths[idx], params)
		if err == nil {
			h.resourceAPI.Store(int32(idx))
			return body, paths[idx], nil
		}
		if !errors.Is(err, errNoSuchPath) {
			return nil, paths[idx], err
		}
	}
	return nil, paths[first], fmt.Errorf("%s has neither %s (%s) nor %s (%s); is it heapster 1.3 or later running in Kubernetes mode?",
		h.where, paths[0], apis[0].versions, paths[1], apis[1].versions)
}

// badAnswer is the error for an answer that is not the JSON asked for.
func badAnswer(where, path string, err error) error {
	return fmt.Errorf("%s: the answer to GET %s is %w; check that it is heapster, and its logs", where, path, err)
}

func (h *heapsterClient) ObjectMetric(_ context.Context, _, metricName string, object autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, fmt.Errorf("object metric %s of %s/%s: object metrics are not supported by heapster; use --metrics-source=metrics-api with a custom metrics adapter (custom.metrics.k8s.io)", metricName, object.Kind, object.Name)
}

func (h *heapsterClient) ExternalMetric(_ context.Context, _, metricName string, _ labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, fmt.Errorf("external metric %s: external metrics are not supported by heapster; use --metrics-source=metrics-api with an external metrics adapter (external.metrics.k8s.io)", metricName)
}

func (h *heapsterClient) getProxy(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	c := h.cfg
	body, err := c.Services.Services(c.Namespace).ProxyGet(c.Scheme, c.Service, c.Port, path, params).DoRaw(ctx)
	if err == nil {
		return body, nil
	}
	// DoRaw reports a refusal by the API server itself generically; its Status body says
	// more, and tells a missing service from a 404 of Heapster's.
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" && st.Status == metav1.StatusFailure {
		err = &apierrors.StatusError{ErrStatus: st}
	}
	svc := c.Namespace + "/" + c.Service
	var status apierrors.APIStatus
	switch {
	case isTimeout(err):
		return nil, h.timeoutErr(ctx, err, "check that heapster is running, or raise --request-timeout")
	case apierrors.IsNotFound(err) && errors.As(err, &status) && status.Status().Details != nil &&
		status.Status().Details.Kind == "services" && status.Status().Details.Name == c.Service:
		return nil, noHeapsterService(c.Namespace, c.Service, err)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("%s: forbidden to use the service proxy of %s: %w; you need 'get' on services/proxy in %s, or use kubectl port-forward with --heapster-url", h.where, svc, err, c.Namespace)
	case apierrors.IsServiceUnavailable(err):
		return nil, fmt.Errorf("%s is unavailable (the service has no ready endpoints?): %w; check the heapster pod in %s", h.where, err, c.Namespace)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s has no %s: %w (%w); is it heapster 1.3 or later running in Kubernetes mode?", h.where, path, err, errNoSuchPath)
	case errors.As(err, &status) && status.Status().Code >= http.StatusInternalServerError:
		// The proxy passes Heapster's own failure on; client-go quotes its body.
		return nil, fmt.Errorf("%s answered %d to GET %s: %w; check the heapster pod's logs in %s", h.where, status.Status().Code, path, err, c.Namespace)
	default:
		return nil, fmt.Errorf("%s: GET %s: %w", h.where, path, err)
	}
}

func (h *heapsterClient) getDirect(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	u := *h.cfg.URL
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: building request: %w", h.where, err)
	}
	resp, err := h.cfg.HTTPClient.Do(req)
	if err != nil {
		if isTimeout(err) {
			return nil, h.timeoutErr(ctx, err, "check that the port-forward is alive, or raise --request-timeout")
		}
		if errors.As(err, new(*tls.CertificateVerificationError)) {
			return nil, fmt.Errorf("%s presented a certificate this client does not trust: %w; pass --heapster-certificate-authority with the CA that signed it, or use the host name the certificate is for", h.where, err)
		}
		return nil, fmt.Errorf("%s is unreachable: %w; check --heapster-url and that the port-forward is alive", h.where, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHeapsterBody+1))
	if err != nil {
		if isTimeout(err) {
			return nil, h.timeoutErr(ctx, err, "check that the port-forward is alive, or raise --request-timeout")
		}
		return nil, fmt.Errorf("%s: reading the answer to %s: %w", h.where, path, err)
	}
	if len(body) > maxHeapsterBody {
		return nil, fmt.Errorf("%s: the answer to %s is larger than %d bytes", h.where, path, maxHeapsterBody)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusForbidden, http.StatusUnauthorized:
		return nil, fmt.Errorf("%s refused %s (%s): %s; check the URL's credentials", h.where, path, resp.Status, decode.BodySnippet(body))
	case http.StatusNotFound:
		return nil, fmt.Errorf("%s has no %s (%s, %w); is --heapster-url pointing at heapster 1.3 or later?", h.where, path, resp.Status, errNoSuchPath)
	default:
		return nil, fmt.Errorf("%s answered %s to %s: %s", h.where, resp.Status, path, decode.BodySnippet(body))
	}
}
