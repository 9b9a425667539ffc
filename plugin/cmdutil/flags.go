package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
)

// AddControllerConfigFlags binds the kube-controller-manager settings that change HPA
// decisions. Defaults are those of a default v1.37 cluster. whose says, at the start of each
// flag's help, whose settings they are in the command: "The cluster's" for explain, whose
// decisions match the cluster's only with its values, "Model: the controller's" for simulate,
// "The loop's" for run.
func AddControllerConfigFlags(fs *pflag.FlagSet, cfg *replicas.Config, whose string) {
	fs.Float64Var(&cfg.Tolerance, "tolerance", cfg.Tolerance, whose+" tolerance (kube-controller-manager --horizontal-pod-autoscaler-tolerance)")
	fs.DurationVar(&cfg.DownscaleStabilizationWindow, "downscale-stabilization", cfg.DownscaleStabilizationWindow, whose+" downscale stabilization window (kube-controller-manager --horizontal-pod-autoscaler-downscale-stabilization)")
	fs.DurationVar(&cfg.CPUInitializationPeriod, "cpu-initialization-period", cfg.CPUInitializationPeriod, whose+" CPU initialization period (kube-controller-manager --horizontal-pod-autoscaler-cpu-initialization-period)")
	fs.DurationVar(&cfg.InitialReadinessDelay, "initial-readiness-delay", cfg.InitialReadinessDelay, whose+" initial readiness delay (kube-controller-manager --horizontal-pod-autoscaler-initial-readiness-delay)")
	fs.Var(&featureGates{cfg: cfg}, "feature-gates", whose+" feature gates that change decisions, e.g. HPAScaleToZero=false,PodLevelResources=true")
}

// AddMetricsFlags binds the metrics source settings (--metrics-source, --heapster-*,
// --metrics-max-age, --metrics-timeout) to cfg; its current values are the defaults shown.
func AddMetricsFlags(fs *pflag.FlagSet, cfg *metrics.Config) {
	fs.StringVar(&cfg.Source, "metrics-source", cfg.Source,
		"Where metrics come from: auto (the metrics APIs if the cluster serves them, else Heapster), heapster, or metrics-api (metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io).")
	fs.StringVar(&cfg.HeapsterNamespace, "heapster-namespace", cfg.HeapsterNamespace, "Namespace of the Heapster service.")
	fs.StringVar(&cfg.HeapsterService, "heapster-service", cfg.HeapsterService, "Name of the Heapster service.")
	fs.StringVar(&cfg.HeapsterScheme, "heapster-scheme", cfg.HeapsterScheme, "Scheme the API server's service proxy uses to reach Heapster (http or https).")
	fs.StringVar(&cfg.HeapsterPort, "heapster-port", cfg.HeapsterPort, "Port name or number of the Heapster service; empty means its first port.")
	fs.StringVar(&cfg.HeapsterURL, "heapster-url", cfg.HeapsterURL,
		"Reach Heapster at this base URL instead of through the service proxy, e.g. http://127.0.0.1:8082 after kubectl port-forward.")
	fs.BoolVar(&cfg.HeapsterInsecureHTTP, "heapster-insecure-http", cfg.HeapsterInsecureHTTP,
		"Allow a plain http --heapster-url on a host other than loopback (metrics then travel unencrypted).")
	fs.StringVar(&cfg.HeapsterCAFile, "heapster-certificate-authority", cfg.HeapsterCAFile,
		"PEM file of the certificate authorities trusted for an https --heapster-url, instead of the system's (for a self-signed Heapster).")
	fs.DurationVar(&cfg.MaxAge, "metrics-max-age", cfg.MaxAge,
		"Refuse metric samples whose timestamp is older than this (a source that stopped collecting); 0 disables the check.")
	fs.DurationVar(&cfg.Timeout, "metrics-timeout", cfg.Timeout,
		"Abandon a metrics read (one HPA metric from Heapster or a metrics API) that takes longer than this; it then counts as a failed read of that metric. 0 leaves only --request-timeout.")
}

// PrometheusUsage is the help of the --prometheus-* flags whose use differs between the
// commands: explain replays the controller's history, simulate reads a load.
type PrometheusUsage struct {
	URL, RateWindow, Query string
}

// AddPrometheusFlags binds the Prometheus source (--prometheus-*) to cfg; its current values
// are the defaults shown.
func AddPrometheusFlags(fs *pflag.FlagSet, cfg *prometheus.Config, usage PrometheusUsage) {
	fs.StringVar(&cfg.URL, "prometheus-url", cfg.URL, usage.URL)
	fs.StringVar(&cfg.TokenFile, "prometheus-token-file", cfg.TokenFile, "File holding a bearer token for --prometheus-url, read at each request; never printed.")
	fs.StringVar(&cfg.CAFile, "prometheus-certificate-authority", cfg.CAFile,
		"PEM file of the certificate authorities trusted for an https --prometheus-url, instead of the system's.")
	fs.BoolVar(&cfg.InsecureHTTP, "prometheus-insecure-http", cfg.InsecureHTTP,
		"Allow a plain http --prometheus-url on a host other than loopback (metrics and the token then travel unencrypted).")
	fs.DurationVar(&cfg.Timeout, "prometheus-timeout", cfg.Timeout, "Abandon a Prometheus request that takes longer than this.")
	fs.StringVar(&cfg.Selector, "prometheus-selector", cfg.Selector,
		`Extra label matchers for the cAdvisor series, for a Prometheus holding several clusters or jobs, e.g. cluster="prod",job="kubelet".`)
	fs.DurationVar(&cfg.RateWindow, "prometheus-rate-window", cfg.RateWindow, usage.RateWindow)
	fs.Var(&promQueries{m: &cfg.Queries}, "prometheus-query", usage.Query)
}

// promQueries is a pflag.Value collecting METRIC=QUERY pairs.
type promQueries struct {
	m   *map[string]string
	set []string
}

func (q *promQueries) String() string { return strings.Join(q.set, ",") }
func (q *promQueries) Type() string   { return "METRIC=QUERY" }

func (q *promQueries) Set(s string) error {
	name, query, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(query) == "" {
		return fmt.Errorf("want METRIC=QUERY, got %q", s)
	}
	if *q.m == nil {
		*q.m = map[string]string{}
	}
	(*q.m)[strings.TrimSpace(name)] = query
	q.set = append(q.set, strings.TrimSpace(name))
	return nil
}

// featureGates is a pflag.Value over the gates in replicas.Config.
type featureGates struct {
	cfg *replicas.Config
}

func (f *featureGates) gates() map[string]*bool {
	return map[string]*bool{
		"HPAScaleToZero":           &f.cfg.ScaleToZero,
		"HPAConfigurableTolerance": &f.cfg.ConfigurableTolerance,
		"PodLevelResources":        &f.cfg.PodLevelResources,
		"HPAGeneration":            &f.cfg.HPAGeneration,
	}
}

// String is every gate's value, so that help shows the defaults.
func (f *featureGates) String() string {
	var s []string
	for name, p := range f.gates() {
		s = append(s, fmt.Sprintf("%s=%t", name, *p))
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

func (f *featureGates) Type() string { return "mapStringBool" }

func (f *featureGates) Set(s string) error {
	gates := f.gates()
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("feature gate %q: want Name=true|false", kv)
		}
		p, known := gates[name]
		if !known {
			return fmt.Errorf("unknown feature gate %q: known gates are HPAConfigurableTolerance, HPAGeneration, HPAScaleToZero, PodLevelResources", name)
		}
		switch strings.ToLower(val) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return fmt.Errorf("feature gate %s: value %q is not true or false", name, val)
		}
	}
	return nil
}
