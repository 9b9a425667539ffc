package plugin

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
)

// Exit codes of kubectl hpa commands. They are part of the CLI contract: scripts and the
// e2e tests rely on them, so existing values never change.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: an unexpected failure (network, server error, bug).
	ExitFailure = 1
	// ExitUsage: bad flags or arguments.
	ExitUsage = 2
	// ExitHPANotFound: the named HPA does not exist in the namespace (nor, as far as we may
	// look, in any other).
	ExitHPANotFound = 3
	// ExitWrongNamespace: the namespace does not exist, or the HPA exists in another namespace.
	ExitWrongNamespace = 4
	// ExitTargetNotFound: the HPA's scaleTargetRef names an object that does not exist.
	ExitTargetNotFound = 5
	// ExitTargetNotScalable: the target's kind is unknown or has no scale subresource, or the
	// apiVersion does not parse.
	ExitTargetNotScalable = 6
	// ExitForbidden: RBAC denied a read the command needs (explain), or a permission the
	// command needs is missing (run's check at start).
	ExitForbidden = 7
	// ExitMetricsUnavailable: a metrics API the HPA needs is not served by the cluster.
	ExitMetricsUnavailable = 8
	// ExitUnauthorized: the API server rejected the credentials.
	ExitUnauthorized = 9
	// ExitCannotCompute: the HPA's metrics were read (or there was nothing to read) but no
	// replica count can be computed from them, so the controller sets ScalingActive=False
	// and scales nothing: a Utilization target on pods without requests, an invalid or
	// ambiguous selector, a metric spec the controller refuses.
	ExitCannotCompute = 10
)

// Stable reasons for structured errors (output.Error.Reason), one per exit code.
var exitReasons = map[int]string{
	ExitFailure:            "Failure",
	ExitUsage:              "UsageError",
	ExitHPANotFound:        "HPANotFound",
	ExitWrongNamespace:     "WrongNamespace",
	ExitTargetNotFound:     "TargetNotFound",
	ExitTargetNotScalable:  "TargetNotScalable",
	ExitForbidden:          "Forbidden",
	ExitMetricsUnavailable: "MetricsAPIUnavailable",
	ExitUnauthorized:       "Unauthorized",
	ExitCannotCompute:      "CannotComputeReplicas",
}

// ExitReason is the stable CamelCase reason for an exit code.
func ExitReason(code int) string {
	if r, ok := exitReasons[code]; ok {
		return r
	}
	return "Failure"
}

// exitCode returns the exit code an error carries (ExitFailure when none).
func exitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailure
}

// usageErrorf is a bad-input error with ExitUsage.
func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// noArgs refuses positional arguments, saying what the command takes instead. (cobra's
// NoArgs calls an argument an "unknown command", which misleads on a command without
// subcommands.)
func noArgs(instead string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErrorf("unexpected argument %q: %s takes no arguments%s", args[0], cmd.CommandPath(), instead)
		}
		return nil
	}
}

// withUsageExitCodes makes cobra's own flag and argument errors exit with ExitUsage.
func withUsageExitCodes(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: err}
	})
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			return nil
		}
	}
}

// apiExitError maps an API error met while doing something to an exit code, keeping the
// message actionable. doing is lowercase ("getting horizontalpodautoscaler shop/web").
func apiExitError(doing string, err error) *ExitError {
	switch {
	case apierrors.IsForbidden(err):
		if perm, user, ok := deniedPermission(err); ok {
			return &ExitError{Code: ExitForbidden, Err: &forbiddenError{doing: doing, perm: perm, user: user, role: explainRole, err: err}}
		}
		return &ExitError{Code: ExitForbidden, Err: fmt.Errorf("%s: %w (ask your cluster admin for get/list on horizontalpodautoscalers, pods, events, the target's scale subresource and the metrics APIs)", doing, err)}
	case apierrors.IsUnauthorized(err):
		return &ExitError{Code: ExitUnauthorized, Err: fmt.Errorf("%s: %w (check your kubeconfig credentials, --context and --user)", doing, err)}
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w (the API server's certificate is not trusted by the kubeconfig's certificate-authority: fix certificate-authority or certificate-authority-data; verification is never skipped unless the kubeconfig sets insecure-skip-tls-verify)", doing, err)}
	}
	if unreachable(err) {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w (is the API server reachable? check the kubeconfig, --context or --server)", doing, err)}
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w", doing, err)}
}

// unreachable reports whether err is a failure to reach the API server at all (network, TLS),
// rather than an answer from it.
func unreachable(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr)
}

// AddControllerConfigFlags binds the kube-controller-manager settings that change HPA
// decisions. Defaults are those of a default v1.37 cluster; set them to your cluster's
// values for decisions that match it.
func AddControllerConfigFlags(fs *pflag.FlagSet, cfg *replicas.Config) {
	fs.Float64Var(&cfg.Tolerance, "tolerance", cfg.Tolerance, "Cluster tolerance (kube-controller-manager --horizontal-pod-autoscaler-tolerance)")
	fs.DurationVar(&cfg.DownscaleStabilizationWindow, "downscale-stabilization", cfg.DownscaleStabilizationWindow, "Cluster downscale stabilization window (--horizontal-pod-autoscaler-downscale-stabilization)")
	fs.DurationVar(&cfg.CPUInitializationPeriod, "cpu-initialization-period", cfg.CPUInitializationPeriod, "CPU initialization period (--horizontal-pod-autoscaler-cpu-initialization-period)")
	fs.DurationVar(&cfg.InitialReadinessDelay, "initial-readiness-delay", cfg.InitialReadinessDelay, "Initial readiness delay (--horizontal-pod-autoscaler-initial-readiness-delay)")
	fs.Var(&featureGates{cfg: cfg}, "feature-gates", "Feature gates of the cluster that change decisions, e.g. HPAScaleToZero=false,PodLevelResources=true")
}

// AddSyncPeriodFlag binds --sync-period (kube-controller-manager --horizontal-pod-autoscaler-sync-period).
func AddSyncPeriodFlag(fs *pflag.FlagSet, p *time.Duration) {
	fs.DurationVar(p, "sync-period", *p, "How often to re-decide (--horizontal-pod-autoscaler-sync-period)")
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
		"Abandon a metrics read (one HPA metric from Heapster or a metrics API) that takes longer than this; the HPA then reports the timeout like any failed read. 0 leaves only --request-timeout.")
}

// AddPrometheusFlags binds the Prometheus history source (--prometheus-*) to cfg; its
// current values are the defaults shown.
func AddPrometheusFlags(fs *pflag.FlagSet, cfg *prometheus.Config) {
	fs.StringVar(&cfg.URL, "prometheus-url", cfg.URL,
		"Replay the HPA's metrics of the last stabilization window from this Prometheus (base URL, e.g. http://127.0.0.1:9090 after kubectl port-forward) to reconstruct the recommendations kube-controller-manager keeps in memory.")
	fs.StringVar(&cfg.TokenFile, "prometheus-token-file", cfg.TokenFile, "File holding a bearer token for --prometheus-url, read at each request; never printed.")
	fs.StringVar(&cfg.CAFile, "prometheus-certificate-authority", cfg.CAFile,
		"PEM file of the certificate authorities trusted for an https --prometheus-url, instead of the system's.")
	fs.BoolVar(&cfg.InsecureHTTP, "prometheus-insecure-http", cfg.InsecureHTTP,
		"Allow a plain http --prometheus-url on a host other than loopback (metrics and the token then travel unencrypted).")
	fs.DurationVar(&cfg.Timeout, "prometheus-timeout", cfg.Timeout, "Abandon a Prometheus request that takes longer than this.")
	fs.StringVar(&cfg.Selector, "prometheus-selector", cfg.Selector,
		`Extra label matchers for the cAdvisor series, for a Prometheus holding several clusters or jobs, e.g. cluster="prod",job="kubelet".`)
	fs.DurationVar(&cfg.RateWindow, "prometheus-rate-window", cfg.RateWindow,
		"Window of rate() over the CPU usage counter; 0 takes the live samples' window (metrics-server's), at least two scrape intervals.")
	fs.Var(&promQueries{m: &cfg.Queries}, "prometheus-query",
		`PromQL template for a Pods, Object or External metric, METRIC=QUERY (repeatable); it may use {{.Namespace}}, {{.Pods}} (a regexp of the pods' names), {{.Object}}, {{.Window}} and {{.Selector}}. A Pods metric's query must give one series per pod label.`)
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
	set []string
}

func (f *featureGates) gates() map[string]*bool {
	return map[string]*bool{
		"HPAScaleToZero":           &f.cfg.ScaleToZero,
		"HPAConfigurableTolerance": &f.cfg.ConfigurableTolerance,
		"PodLevelResources":        &f.cfg.PodLevelResources,
		"HPAGeneration":            &f.cfg.HPAGeneration,
	}
}

func (f *featureGates) String() string { return strings.Join(f.set, ",") }
func (f *featureGates) Type() string   { return "mapStringBool" }

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
		f.set = append(f.set, name+"="+strings.ToLower(val))
	}
	return nil
}
