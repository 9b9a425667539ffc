package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	metricsclientset "k8s.io/metrics/pkg/client/clientset/versioned"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/endpoint"
)

// Values of --metrics-source.
const (
	SourceAuto       = "auto"
	SourceHeapster   = "heapster"
	SourceMetricsAPI = "metrics-api"
)

// Config chooses and configures the metrics source. The zero value is not usable; start
// from DefaultConfig. The commands bind it to their flags (--metrics-source, --heapster-*,
// --metrics-max-age, --metrics-timeout), which its errors name.
type Config struct {
	// Source is auto, heapster or metrics-api.
	Source string
	// Heapster service proxy coordinates (the Heapster-era controller's defaults).
	HeapsterNamespace, HeapsterService, HeapsterScheme, HeapsterPort string
	// HeapsterURL reaches Heapster directly instead of through the service proxy.
	HeapsterURL string
	// HeapsterInsecureHTTP allows a plain http HeapsterURL on a host other than loopback.
	HeapsterInsecureHTTP bool
	// HeapsterCAFile is a PEM bundle of the CAs trusted for an https HeapsterURL, instead
	// of the system's.
	HeapsterCAFile string
	// MaxAge refuses samples older than this; 0 disables the check.
	MaxAge time.Duration
	// Timeout bounds each metrics read; a read still going is abandoned. 0 leaves only
	// --request-timeout.
	Timeout time.Duration
}

// DefaultTimeout bounds a metrics read unless --metrics-timeout says otherwise: as
// metrics-server's kubelet request timeout, and under the default 15s sync period, so
// that a source that stopped answering costs a worker less than one period. The service
// proxy to Heapster has no timeout of its own (the API server treats proxying as long
// running), so without this bound a hung Heapster would hold a worker forever.
const DefaultTimeout = 10 * time.Second

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Source:            SourceAuto,
		HeapsterNamespace: DefaultHeapsterNamespace,
		HeapsterService:   DefaultHeapsterService,
		HeapsterScheme:    DefaultHeapsterScheme,
		HeapsterPort:      DefaultHeapsterPort,
		MaxAge:            DefaultMaxAge,
		Timeout:           DefaultTimeout,
	}
}

// Validate checks the configuration without talking to the cluster.
func (cfg Config) Validate() error {
	switch cfg.Source {
	case SourceAuto, SourceHeapster, SourceMetricsAPI:
	default:
		return fmt.Errorf("unknown --metrics-source %q: use auto, heapster or metrics-api", cfg.Source)
	}
	if cfg.MaxAge < 0 {
		return fmt.Errorf("--metrics-max-age must not be negative, got %s", cfg.MaxAge)
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("--metrics-timeout must not be negative, got %s", cfg.Timeout)
	}
	if cfg.HeapsterURL != "" {
		if cfg.Source == SourceMetricsAPI {
			return errors.New("--heapster-url contradicts --metrics-source=metrics-api: drop one of them")
		}
		u, err := cfg.heapsterURL()
		if err != nil {
			return err
		}
		if cfg.HeapsterCAFile != "" && u.Scheme != "https" {
			return fmt.Errorf("--heapster-certificate-authority is only used with an https --heapster-url, got %s", u.Redacted())
		}
		return nil
	}
	if cfg.HeapsterCAFile != "" {
		return errors.New("--heapster-certificate-authority is only used with --heapster-url: the service proxy reaches heapster with the API server's own trust")
	}
	if errs := validation.IsDNS1123Label(cfg.HeapsterNamespace); len(errs) > 0 {
		return fmt.Errorf("invalid --heapster-namespace %q: %s", cfg.HeapsterNamespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(cfg.HeapsterService); len(errs) > 0 {
		return fmt.Errorf("invalid --heapster-service %q: %s", cfg.HeapsterService, strings.Join(errs, "; "))
	}
	switch cfg.HeapsterScheme {
	case "", "http", "https":
	default:
		return fmt.Errorf("invalid --heapster-scheme %q: use http or https", cfg.HeapsterScheme)
	}
	if strings.ContainsAny(cfg.HeapsterPort, ":/?#") {
		return fmt.Errorf("invalid --heapster-port %q: give a port name or number", cfg.HeapsterPort)
	}
	return nil
}

func (cfg Config) heapsterURL() (*url.URL, error) {
	return endpoint.URLRules{Flag: "--heapster-url", InsecureFlag: "--heapster-insecure-http", InsecureHTTP: cfg.HeapsterInsecureHTTP}.ParseBaseURL(cfg.HeapsterURL)
}

// Selection says which source was chosen and why, for the commands to print.
type Selection struct {
	// Source is SourceHeapster or SourceMetricsAPI.
	Source string
	// Reason explains the choice ("--metrics-source=heapster", "auto: the cluster serves metrics.k8s.io/v1").
	Reason string
	// Detail is the chosen client's Source(): the APIs or the Heapster address.
	Detail string
}

func (s Selection) String() string {
	return fmt.Sprintf("metrics from %s (%s)", s.Detail, s.Reason)
}

// Clients are what NewClientFrom builds a Client from; NewClient makes them from a
// rest.Config.
type Clients struct {
	// Kube reads the Heapster service, lists pods for the model API and reaches the service proxy.
	Kube      kubernetes.Interface
	Discovery discovery.DiscoveryInterface
	Resource  metricsclientset.Interface
	Custom    func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient
	External  externalclient.ExternalMetricsClient
	// HeapsterHTTP is used with --heapster-url. It must not carry cluster credentials.
	HeapsterHTTP *http.Client
}

// NewClient validates cfg, builds the clients from rc and chooses the source. disc says
// which metrics APIs the cluster serves: pass a cached one (kubectl's on-disk cache,
// genericclioptions.ConfigFlags.ToDiscoveryClient) to spare a command the discovery round
// trip. A cache is trusted for a group's presence only: its absence is asked of the server
// again (unless the cache fetched it in this process), and an API that answers 404 refreshes
// the cache (see servedGroups): a metrics APIService registered since the cache was written
// is chosen as without a cache, and one removed since fails the one read that finds it gone.
func NewClient(ctx context.Context, cfg Config, rc *rest.Config, disc discovery.DiscoveryInterface, clk clock.PassiveClock) (Client, Selection, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Selection{}, err
	}
	if disc == nil {
		return nil, Selection{}, errors.New("metrics client: a discovery client is required")
	}
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the kubernetes client: %w", err)
	}
	// The metrics API clients time out on their own; Heapster reads are bounded by
	// HeapsterConfig.Timeout, as their pod lists and service proxy share the kube client.
	readCfg := rest.CopyConfig(rc)
	if cfg.Timeout > 0 && (readCfg.Timeout == 0 || cfg.Timeout < readCfg.Timeout) {
		readCfg.Timeout = cfg.Timeout
	}
	// Resource metrics in protobuf, as kube-controller-manager reads them (its clients'
	// default content type): metrics-server encodes a PodMetrics list in it for a fraction of
	// the CPU JSON costs it, and the list is smaller on the wire. A server that does not
	// offer protobuf answers in JSON, which the client decodes as well.
	resCfg := rest.CopyConfig(readCfg)
	resCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	resCfg.ContentType = runtime.ContentTypeProtobuf
	resource, err := metricsclientset.NewForConfig(resCfg)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the metrics.k8s.io client: %w", err)
	}
	external, err := externalclient.NewForConfig(readCfg)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the external.metrics.k8s.io client: %w", err)
	}
	// The mapper of Object metrics' kinds reads the same discovery; a cached one already
	// suits it (the mapper asks again when a kind is missing from a stale cache).
	cached, ok := disc.(discovery.CachedDiscoveryInterface)
	if !ok {
		cached = memory.NewMemCacheClient(disc)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	heapsterHTTP, err := cfg.heapsterHTTPClient(rc.Timeout)
	if err != nil {
		return nil, Selection{}, err
	}
	c := Clients{
		Kube:      kube,
		Discovery: disc,
		Resource:  resource,
		Custom: func(versions customclient.AvailableAPIsGetter) customclient.CustomMetricsClient {
			return customclient.NewForConfig(rest.CopyConfig(readCfg), mapper, versions)
		},
		External:     external,
		HeapsterHTTP: heapsterHTTP,
	}
	return NewClientFrom(ctx, cfg, c, clk)
}

// heapsterHTTPClient is the client for --heapster-url: a plain one, since the cluster's
// credentials must not go to a port-forward or another URL, trusting the system's CAs or
// those of --heapster-certificate-authority.
func (cfg Config) heapsterHTTPClient(timeout time.Duration) (*http.Client, error) {
	tr, err := endpoint.Transport("--heapster-certificate-authority", cfg.HeapsterCAFile)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: timeout, Transport: tr}, nil
}

// NewClientFrom chooses the source (see --metrics-source) from clients already built and
// returns its Client.
func NewClientFrom(ctx context.Context, cfg Config, c Clients, clk clock.PassiveClock) (Client, Selection, error) {
	if err := cfg.Validate(); err != nil {
		return nil, Selection{}, err
	}
	if cfg.HeapsterURL != "" {
		return cfg.heapster(c, clk, "--heapster-url")
	}
	switch cfg.Source {
	case SourceHeapster:
		if err := cfg.heapsterServiceExists(ctx, c.Kube); err != nil && !apierrors.IsForbidden(errors.Unwrap(err)) {
			return nil, Selection{}, err
		}
		return cfg.heapster(c, clk, "--metrics-source=heapster")
	case SourceMetricsAPI:
		served, err := servedGroups(ctx, c.Discovery, resourceMetricsGroup, resourceMetricsVersions, true)
		if err != nil {
			return nil, Selection{}, fmt.Errorf("discovering the metrics APIs: %w", err)
		}
		return cfg.metricsAPI(c, clk, served, "--metrics-source=metrics-api")
	}

	served, err := servedGroups(ctx, c.Discovery, resourceMetricsGroup, resourceMetricsVersions, true)
	if err != nil {
		if clusterAccessFailure(err) {
			// Credentials, RBAC or the network: no choice of source would help.
			return nil, Selection{}, fmt.Errorf("discovering the metrics APIs: %w", err)
		}
		return nil, Selection{}, fmt.Errorf("discovering the metrics APIs to choose a metrics source: %w; pass --metrics-source=heapster or --metrics-source=metrics-api", err)
	}
	if v, ok := pickVersion(served, resourceMetricsGroup, resourceMetricsVersions); ok {
		return cfg.metricsAPI(c, clk, served, fmt.Sprintf("auto: the cluster serves %s/%s", resourceMetricsGroup, v))
	}
	// Discovery also leaves out a registered metrics API whose server is down. Falling back
	// to Heapster then would switch sources for the length of an outage (and for all of a
	// run started during one), so a registered API is chosen and its reads fail until it
	// is back, as kube-controller-manager's would.
	probe := newVersionResolver(c.Discovery, resourceMetricsGroup, resourceMetricsVersions, "", &discoveryPass{})
	if _, err := probe.unlisted(ctx); !errors.Is(err, errNotServed) {
		reason := fmt.Sprintf("auto: %s is registered", resourceMetricsGroup)
		if err != nil {
			reason = fmt.Sprintf("auto: %s is registered but unavailable now", resourceMetricsGroup)
		}
		return cfg.metricsAPI(c, clk, served, reason)
	}
	svcErr := cfg.heapsterServiceExists(ctx, c.Kube)
	if svcErr == nil {
		return cfg.heapster(c, clk, fmt.Sprintf("auto: %s is not served, service %s/%s exists", resourceMetricsGroup, cfg.HeapsterNamespace, cfg.HeapsterService))
	}
	_, custom := pickVersion(served, customMetricsGroup, customMetricsVersions)
	_, external := pickVersion(served, externalMetricsGroup, externalMetricsVersions)
	if custom || external {
		return cfg.metricsAPI(c, clk, served, fmt.Sprintf("auto: no heapster service and %s is not served (resource metrics will fail), but custom or external metrics are", resourceMetricsGroup))
	}
	return nil, Selection{}, fmt.Errorf("no metrics source: the cluster serves none of %s, %s, %s, and %w; install metrics-server",
		resourceMetricsGroup, customMetricsGroup, externalMetricsGroup, svcErr)
}

// clusterAccessFailure reports whether err says the cluster itself could not be used: bad
// credentials, RBAC, or no connection at all.
func clusterAccessFailure(err error) bool {
	var urlErr *url.Error
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || errors.As(err, &urlErr)
}

func (cfg Config) heapster(c Clients, clk clock.PassiveClock, reason string) (Client, Selection, error) {
	hc := HeapsterConfig{
		Namespace: cfg.HeapsterNamespace, Service: cfg.HeapsterService, Scheme: cfg.HeapsterScheme, Port: cfg.HeapsterPort,
		HTTPClient: c.HeapsterHTTP,
		Clock:      clk,
		MaxAge:     cfg.MaxAge,
		Timeout:    cfg.Timeout,
	}
	if c.Kube != nil {
		hc.Services, hc.Pods = c.Kube.CoreV1(), c.Kube.CoreV1()
	}
	if cfg.HeapsterURL != "" {
		u, err := cfg.heapsterURL()
		if err != nil {
			return nil, Selection{}, err
		}
		hc.URL = u
	}
	cl, err := NewHeapsterClient(hc)
	if err != nil {
		return nil, Selection{}, err
	}
	return cl, Selection{Source: SourceHeapster, Reason: reason, Detail: cl.Source()}, nil
}

func (cfg Config) metricsAPI(c Clients, clk clock.PassiveClock, served map[string][]string, reason string) (Client, Selection, error) {
	cl, err := NewAPIClient(APIClients{
		Discovery: c.Discovery, Resource: c.Resource, Custom: c.Custom, External: c.External,
		Clock: clk, MaxAge: cfg.MaxAge,
	}, served)
	if err != nil {
		return nil, Selection{}, err
	}
	return cl, Selection{Source: SourceMetricsAPI, Reason: reason, Detail: cl.Source()}, nil
}

// heapsterServiceExists checks for the Heapster service; a forbidden check is returned
// wrapped once, so callers may tolerate it.
func (cfg Config) heapsterServiceExists(ctx context.Context, kube kubernetes.Interface) error {
	if kube == nil {
		return errors.New("no kubernetes client to look for the heapster service")
	}
	_, err := kube.CoreV1().Services(cfg.HeapsterNamespace).Get(ctx, cfg.HeapsterService, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return noHeapsterService(cfg.HeapsterNamespace, cfg.HeapsterService, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot check for the heapster service %s/%s: %w", cfg.HeapsterNamespace, cfg.HeapsterService, err)
	case isTimeout(err):
		return fmt.Errorf("looking for the heapster service %s/%s timed out: %w", cfg.HeapsterNamespace, cfg.HeapsterService, err)
	default:
		return fmt.Errorf("looking for the heapster service %s/%s: %w", cfg.HeapsterNamespace, cfg.HeapsterService, err)
	}
}
