package metrics

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// Values of --metrics-source.
const (
	SourceAuto       = "auto"
	SourceHeapster   = "heapster"
	SourceMetricsAPI = "metrics-api"
)

// Options are the metrics source flags shared by the commands.
type Options struct {
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

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Source:            SourceAuto,
		HeapsterNamespace: DefaultHeapsterNamespace,
		HeapsterService:   DefaultHeapsterService,
		HeapsterScheme:    DefaultHeapsterScheme,
		HeapsterPort:      DefaultHeapsterPort,
		MaxAge:            DefaultMaxAge,
		Timeout:           DefaultTimeout,
	}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Source, "metrics-source", o.Source,
		"Where metrics come from: auto (the metrics APIs if the cluster serves them, else Heapster), heapster, or metrics-api (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io).")
	fs.StringVar(&o.HeapsterNamespace, "heapster-namespace", o.HeapsterNamespace, "Namespace of the Heapster service.")
	fs.StringVar(&o.HeapsterService, "heapster-service", o.HeapsterService, "Name of the Heapster service.")
	fs.StringVar(&o.HeapsterScheme, "heapster-scheme", o.HeapsterScheme, "Scheme the API server's service proxy uses to reach Heapster (http or https).")
	fs.StringVar(&o.HeapsterPort, "heapster-port", o.HeapsterPort, "Port name or number of the Heapster service; empty means its first port.")
	fs.StringVar(&o.HeapsterURL, "heapster-url", o.HeapsterURL,
		"Reach Heapster at this base URL instead of through the service proxy, e.g. http://127.0.0.1:8082 after kubectl port-forward.")
	fs.BoolVar(&o.HeapsterInsecureHTTP, "heapster-insecure-http", o.HeapsterInsecureHTTP,
		"Allow a plain http --heapster-url on a host other than loopback (metrics then travel unencrypted).")
	fs.StringVar(&o.HeapsterCAFile, "heapster-certificate-authority", o.HeapsterCAFile,
		"PEM file of the certificate authorities trusted for an https --heapster-url, instead of the system's (for a self-signed Heapster).")
	fs.DurationVar(&o.MaxAge, "metrics-max-age", o.MaxAge,
		"Refuse metric samples whose timestamp is older than this (a source that stopped collecting); 0 disables the check.")
	fs.DurationVar(&o.Timeout, "metrics-timeout", o.Timeout,
		"Abandon a metrics read (one HPA metric from Heapster or a metrics API) that takes longer than this; the HPA then reports the timeout like any failed read. 0 leaves only --request-timeout.")
}

// Validate checks the flags without talking to the cluster.
func (o *Options) Validate() error {
	switch o.Source {
	case SourceAuto, SourceHeapster, SourceMetricsAPI:
	default:
		return fmt.Errorf("unknown --metrics-source %q: use auto, heapster or metrics-api", o.Source)
	}
	if o.MaxAge < 0 {
		return fmt.Errorf("--metrics-max-age must not be negative, got %s", o.MaxAge)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--metrics-timeout must not be negative, got %s", o.Timeout)
	}
	if o.HeapsterURL != "" {
		if o.Source == SourceMetricsAPI {
			return errors.New("--heapster-url contradicts --metrics-source=metrics-api: drop one of them")
		}
		u, err := o.heapsterURL()
		if err != nil {
			return err
		}
		if o.HeapsterCAFile != "" && u.Scheme != "https" {
			return fmt.Errorf("--heapster-certificate-authority is only used with an https --heapster-url, got %s", u.Redacted())
		}
		return nil
	}
	if o.HeapsterCAFile != "" {
		return errors.New("--heapster-certificate-authority is only used with --heapster-url: the service proxy reaches heapster with the API server's own trust")
	}
	if errs := validation.IsDNS1123Label(o.HeapsterNamespace); len(errs) > 0 {
		return fmt.Errorf("invalid --heapster-namespace %q: %s", o.HeapsterNamespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1035Label(o.HeapsterService); len(errs) > 0 {
		return fmt.Errorf("invalid --heapster-service %q: %s", o.HeapsterService, strings.Join(errs, "; "))
	}
	switch o.HeapsterScheme {
	case "", "http", "https":
	default:
		return fmt.Errorf("invalid --heapster-scheme %q: use http or https", o.HeapsterScheme)
	}
	if strings.ContainsAny(o.HeapsterPort, ":/?#") {
		return fmt.Errorf("invalid --heapster-port %q: give a port name or number", o.HeapsterPort)
	}
	return nil
}

func (o *Options) heapsterURL() (*url.URL, error) {
	u, err := url.Parse(o.HeapsterURL)
	if err != nil {
		return nil, fmt.Errorf("malformed --heapster-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("malformed --heapster-url %q: the scheme must be http or https", o.HeapsterURL)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("malformed --heapster-url %q: no host", o.HeapsterURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("malformed --heapster-url %q: give a base URL without query or fragment", o.HeapsterURL)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) && !o.HeapsterInsecureHTTP {
		return nil, fmt.Errorf("refusing plain http --heapster-url to %s, which is not loopback: use https, kubectl port-forward to 127.0.0.1, or pass --heapster-insecure-http", u.Hostname())
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

// NewClient validates the options, builds the clients from cfg and chooses the source.
func (o *Options) NewClient(ctx context.Context, cfg *rest.Config, clk clock.PassiveClock) (Client, Selection, error) {
	if err := o.Validate(); err != nil {
		return nil, Selection{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the kubernetes client: %w", err)
	}
	// The metrics API clients time out on their own; Heapster reads are bounded by
	// HeapsterConfig.Timeout, as their pod lists and service proxy share the kube client.
	readCfg := rest.CopyConfig(cfg)
	if o.Timeout > 0 && (readCfg.Timeout == 0 || o.Timeout < readCfg.Timeout) {
		readCfg.Timeout = o.Timeout
	}
	resource, err := metricsclientset.NewForConfig(readCfg)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the metrics.k8s.io client: %w", err)
	}
	external, err := externalclient.NewForConfig(readCfg)
	if err != nil {
		return nil, Selection{}, fmt.Errorf("building the external.metrics.k8s.io client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))
	heapsterHTTP, err := o.heapsterHTTPClient(cfg.Timeout)
	if err != nil {
		return nil, Selection{}, err
	}
	c := Clients{
		Kube:      kube,
		Discovery: kube.Discovery(),
		Resource:  resource,
		Custom: func(versions customclient.AvailableAPIsGetter) customclient.CustomMetricsClient {
			return customclient.NewForConfig(rest.CopyConfig(readCfg), mapper, versions)
		},
		External:     external,
		HeapsterHTTP: heapsterHTTP,
	}
	return o.NewClientFrom(ctx, c, clk)
}

// heapsterHTTPClient is the client for --heapster-url: a plain one, since the cluster's
// credentials must not go to a port-forward or another URL, trusting the system's CAs or
// those of --heapster-certificate-authority.
func (o *Options) heapsterHTTPClient(timeout time.Duration) (*http.Client, error) {
	c := &http.Client{Timeout: timeout}
	if o.HeapsterCAFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(o.HeapsterCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading --heapster-certificate-authority: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--heapster-certificate-authority %s holds no PEM certificate", o.HeapsterCAFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	c.Transport = tr
	return c, nil
}

// NewClientFrom chooses the source (see --metrics-source) and returns its Client.
func (o *Options) NewClientFrom(ctx context.Context, c Clients, clk clock.PassiveClock) (Client, Selection, error) {
	if err := o.Validate(); err != nil {
		return nil, Selection{}, err
	}
	if o.HeapsterURL != "" {
		return o.heapster(c, clk, "--heapster-url")
	}
	switch o.Source {
	case SourceHeapster:
		if err := o.heapsterServiceExists(ctx, c.Kube); err != nil && !apierrors.IsForbidden(errors.Unwrap(err)) {
			return nil, Selection{}, err
		}
		return o.heapster(c, clk, "--metrics-source=heapster")
	case SourceMetricsAPI:
		served, err := servedGroups(ctx, c.Discovery)
		if err != nil {
			return nil, Selection{}, fmt.Errorf("discovering the metrics APIs: %w", err)
		}
		return o.metricsAPI(c, clk, served, "--metrics-source=metrics-api")
	}

	served, err := servedGroups(ctx, c.Discovery)
	if err != nil {
		if clusterAccessFailure(err) {
			// Credentials, RBAC or the network: no choice of source would help.
			return nil, Selection{}, fmt.Errorf("discovering the metrics APIs: %w", err)
		}
		return nil, Selection{}, fmt.Errorf("discovering the metrics APIs to choose a metrics source: %w; pass --metrics-source=heapster or --metrics-source=metrics-api", err)
	}
	if v, ok := pickVersion(served, resourceMetricsGroup, resourceMetricsVersions); ok {
		return o.metricsAPI(c, clk, served, fmt.Sprintf("auto: the cluster serves %s/%s", resourceMetricsGroup, v))
	}
	// Discovery also leaves out a registered metrics API whose server is down. Falling back
	// to Heapster then would switch sources for the length of an outage (and for all of a
	// run started during one), so a registered API is chosen and its reads fail until it
	// is back, as kube-controller-manager's would.
	probe := newVersionResolver(c.Discovery, resourceMetricsGroup, resourceMetricsVersions, "")
	if _, err := probe.unlisted(ctx); !errors.Is(err, errNotServed) {
		reason := fmt.Sprintf("auto: %s is registered", resourceMetricsGroup)
		if err != nil {
			reason = fmt.Sprintf("auto: %s is registered but unavailable now", resourceMetricsGroup)
		}
		return o.metricsAPI(c, clk, served, reason)
	}
	svcErr := o.heapsterServiceExists(ctx, c.Kube)
	if svcErr == nil {
		return o.heapster(c, clk, fmt.Sprintf("auto: %s is not served, service %s/%s exists", resourceMetricsGroup, o.HeapsterNamespace, o.HeapsterService))
	}
	_, custom := pickVersion(served, customMetricsGroup, customMetricsVersions)
	_, external := pickVersion(served, externalMetricsGroup, externalMetricsVersions)
	if custom || external {
		return o.metricsAPI(c, clk, served, fmt.Sprintf("auto: no heapster service and %s is not served (resource metrics will fail), but custom or external metrics are", resourceMetricsGroup))
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

func (o *Options) heapster(c Clients, clk clock.PassiveClock, reason string) (Client, Selection, error) {
	cfg := HeapsterConfig{
		Namespace: o.HeapsterNamespace, Service: o.HeapsterService, Scheme: o.HeapsterScheme, Port: o.HeapsterPort,
		HTTPClient: c.HeapsterHTTP,
		Clock:      clk,
		MaxAge:     o.MaxAge,
		Timeout:    o.Timeout,
	}
	if c.Kube != nil {
		cfg.Services, cfg.Pods = c.Kube.CoreV1(), c.Kube.CoreV1()
	}
	if o.HeapsterURL != "" {
		u, err := o.heapsterURL()
		if err != nil {
			return nil, Selection{}, err
		}
		cfg.URL = u
	}
	cl, err := NewHeapsterClient(cfg)
	if err != nil {
		return nil, Selection{}, err
	}
	return cl, Selection{Source: SourceHeapster, Reason: reason, Detail: cl.Source()}, nil
}

func (o *Options) metricsAPI(c Clients, clk clock.PassiveClock, served map[string][]string, reason string) (Client, Selection, error) {
	cl, err := NewAPIClient(APIClients{
		Discovery: c.Discovery, Resource: c.Resource, Custom: c.Custom, External: c.External,
		Clock: clk, MaxAge: o.MaxAge,
	}, served)
	if err != nil {
		return nil, Selection{}, err
	}
	return cl, Selection{Source: SourceMetricsAPI, Reason: reason, Detail: cl.Source()}, nil
}

// heapsterServiceExists checks for the Heapster service; a forbidden check is returned
// wrapped once, so callers may tolerate it.
func (o *Options) heapsterServiceExists(ctx context.Context, kube kubernetes.Interface) error {
	if kube == nil {
		return errors.New("no kubernetes client to look for the heapster service")
	}
	_, err := kube.CoreV1().Services(o.HeapsterNamespace).Get(ctx, o.HeapsterService, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return noHeapsterService(o.HeapsterNamespace, o.HeapsterService, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("cannot check for the heapster service %s/%s: %w", o.HeapsterNamespace, o.HeapsterService, err)
	case isTimeout(err):
		return fmt.Errorf("looking for the heapster service %s/%s timed out: %w", o.HeapsterNamespace, o.HeapsterService, err)
	default:
		return fmt.Errorf("looking for the heapster service %s/%s: %w", o.HeapsterNamespace, o.HeapsterService, err)
	}
}
