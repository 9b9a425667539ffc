package simulate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// promRateWindow is --prometheus-rate-window's default: the window of rate() over the CPU
// usage counter when the load comes from Prometheus (Reader.Window's default with no live
// samples to take it from).
const promRateWindow = time.Minute

// prometheusUsage is what the --prometheus-* flags do in simulate: read the load.
var prometheusUsage = cmdutil.PrometheusUsage{
	URL:        "With --from-prometheus, the Prometheus (base URL, e.g. http://127.0.0.1:9090 after kubectl port-forward) whose history of the HPA's metrics gives the load.",
	RateWindow: "With --from-prometheus, the window of rate() over the CPU usage counter, or the load's step (--since/720, at least 15s) when longer.",
	Query:      `PromQL template giving the load of a Pods, Object or External metric, METRIC=QUERY (repeatable): the sum of its series at each step; it may use {{.Namespace}}, {{.Pods}} (a regexp of the pods' names), {{.Object}}, {{.Window}} and {{.Selector}}.`,
}

// promLoadPoints is about how many points a load read from Prometheus has (its step is
// --since over it, at least promLoadMinStep): enough for a chart, far under Prometheus'
// 11,000 points a query.
const (
	promLoadPoints  = 720
	promLoadMinStep = 15 * time.Second
)

// promStep is the step of a load read from Prometheus over since.
func promStep(since time.Duration) time.Duration {
	return max(since/promLoadPoints, promLoadMinStep).Round(time.Second)
}

// prometheusLoad is --from-prometheus: the load of the last --since read from Prometheus for
// hpa, and its name.
func (o *Options) prometheusLoad(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (load.Curve, string, error) {
	curve, err := loadFromPrometheus(ctx, o.prom, hpa, o.Since, o.now())
	if errors.Is(err, prometheus.ErrNoSeries) {
		// Prometheus answered, with nothing over the period: the period or the selector is wrong.
		return load.Curve{}, "", cmdutil.UsageErrorf("--from-prometheus: no data for %s/%s's pods over the last %s (check --since, --prometheus-selector and that Prometheus scrapes them): %v", hpa.Namespace, hpa.Name, o.Since, err)
	}
	if err != nil {
		return load.Curve{}, "", &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--from-prometheus: %w", err)}
	}
	return curve, fmt.Sprintf("prometheus %s, the last %s", o.prom.Address(), o.Since), nil
}

// CPUCounterResets counts the resets of the CPU usage counters of hpa's pods over the last
// --since (restarted containers), for the first cpu metric hpa reads; false when the load is
// not read from Prometheus or hpa reads no cpu.
func (o *Options) CPUCounterResets(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (int, bool, error) {
	if o.prom == nil {
		return 0, false, nil
	}
	for _, spec := range hpa.Spec.Metrics {
		container := ""
		switch {
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil && spec.Resource.Name == corev1.ResourceCPU:
		case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil && spec.ContainerResource.Name == corev1.ResourceCPU:
			container = spec.ContainerResource.Container
		default:
			continue
		}
		ref := hpa.Spec.ScaleTargetRef
		now := o.now()
		grid := prometheus.Grid{Start: now.Add(-o.Since), End: now, Step: promStep(o.Since)}
		resets, err := o.prom.CPUResets(ctx, prometheus.TargetPods(hpa.Namespace, ref.Kind, ref.Name, nil), container, grid)
		if err != nil {
			return 0, false, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("--from-prometheus: %w", err)}
		}
		return resets, true, nil
	}
	return 0, false, nil
}

// loadFromPrometheus is simulate's load read from the HPA's metric history in Prometheus
// over [now-since, now]: per metric the total over the target's pods, as the load file
// would give it (cpu in millicores, memory in bytes, a custom metric in its unit).
func loadFromPrometheus(ctx context.Context, r *prometheus.Reader, hpa *autoscalingv2.HorizontalPodAutoscaler, since time.Duration, now time.Time) (load.Curve, error) {
	step := promStep(since)
	grid := prometheus.Grid{Start: now.Add(-since).Truncate(step), End: now, Step: step}
	window := max(step, r.Window(0))
	ref := hpa.Spec.ScaleTargetRef
	pods := prometheus.TargetPods(hpa.Namespace, ref.Kind, ref.Name, nil)
	if pods.Pattern == "" {
		return load.Curve{}, fmt.Errorf("the pods of a %s have no name pattern to find their series by: give the load with --load", ref.Kind)
	}
	var (
		names  []string
		series = map[string]prometheus.Series{}
	)
	for i, spec := range hpa.Spec.Metrics {
		name, res, container, object := "", corev1.ResourceName(""), "", ""
		switch {
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
			res = spec.Resource.Name
		case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
			res, container = spec.ContainerResource.Name, spec.ContainerResource.Container
		case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
			name = spec.Pods.Metric.Name
		case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
			name, object = spec.Object.Metric.Name, spec.Object.DescribedObject.Name
		case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
			name = spec.External.Metric.Name
		default:
			return load.Curve{}, fmt.Errorf("metric %d: type %s has no load", i, spec.Type)
		}
		var (
			s   prometheus.Series
			err error
		)
		switch res {
		case "":
			q, ok, qerr := r.NamedQuery(name, pods, object, window)
			switch {
			case qerr != nil:
				err = qerr
			case !ok:
				err = fmt.Errorf("no --prometheus-query %s=PROMQL names its series", name)
			default:
				s, err = r.Range(ctx, q, grid, "")
			}
		case corev1.ResourceCPU, corev1.ResourceMemory:
			name = string(res)
			s, _, err = r.Resource(ctx, pods, res, container, window, grid)
		default:
			err = fmt.Errorf("resource %s has no load (cpu and memory have)", res)
		}
		if err != nil {
			return load.Curve{}, fmt.Errorf("metric %d (%s): %w", i, name, err)
		}
		if _, dup := series[name]; dup {
			continue // two metrics of one resource read the same demand
		}
		names = append(names, name)
		series[name] = s
	}
	return curveFromSeries(names, series)
}

// curveFromSeries turns series (by metric name) into a load curve: at each instant the sum
// over a metric's series, in the load's units (millicores for cpu; bytes for memory and
// whole units for the rest, the series being in milli-units). The curve starts at the first
// instant every metric has a value, and keeps only those instants.
func curveFromSeries(names []string, series map[string]prometheus.Series) (load.Curve, error) {
	totals := map[time.Time]map[string]float64{}
	for _, name := range names {
		for _, pts := range series[name] {
			for _, p := range pts {
				if totals[p.Time] == nil {
					totals[p.Time] = map[string]float64{}
				}
				v := float64(p.MilliValue)
				if name != load.CPU {
					v /= 1000
				}
				totals[p.Time][name] += v
			}
		}
	}
	var times []time.Time
	for t, vals := range totals {
		if len(vals) == len(names) {
			times = append(times, t)
		}
	}
	if len(times) == 0 {
		return load.Curve{}, fmt.Errorf("no instant at which every metric (%v) has a value", names)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	c := load.Curve{Metrics: names, Interpolation: load.Linear}
	for _, t := range times {
		c.Points = append(c.Points, load.Point{At: t.Sub(times[0]), Values: totals[t]})
	}
	return c, nil
}

// completePrometheus checks --from-prometheus and the --prometheus-* flags and builds the
// reader. rateWindowSet says --prometheus-rate-window was given.
func (o *Options) completePrometheus(rateWindowSet bool) error {
	if !o.FromPrometheus {
		if o.Prometheus.Enabled() {
			return cmdutil.UsageErrorf("--prometheus-url is read with --from-prometheus: give both, or neither")
		}
		cfg := o.Prometheus
		// Its default asks for nothing: only a window given on the command line needs --prometheus-url.
		if !rateWindowSet {
			cfg.RateWindow = 0
		}
		if err := cfg.Validate(); err != nil {
			return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
		}
		return nil
	}
	switch {
	case o.LoadFile != "":
		return cmdutil.UsageErrorf("--load and --from-prometheus both give the load: give one")
	case o.Recording != "":
		return cmdutil.UsageErrorf("--from-recording and --from-prometheus both give the load: give one")
	case o.File != "":
		return cmdutil.UsageErrorf("--from-prometheus reads the series of the HPA's pods in the cluster: give an HPA NAME, not -f")
	case !o.Prometheus.Enabled():
		return cmdutil.UsageErrorf("--from-prometheus needs --prometheus-url")
	case o.Since <= 0:
		return cmdutil.UsageErrorf("--since must be positive, got %s", o.Since)
	}
	r, err := prometheus.New(o.Prometheus)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	o.prom = r
	return nil
}
