// Package monitor exposes the controller's Prometheus metrics under the names and labels
// the upstream HPA controller and client-go's work queue use, so dashboards built for
// kube-controller-manager work unchanged. Every metric lives in the Monitor's own
// registry; nothing is registered globally.
package monitor

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/util/workqueue"
)

// Action and error label values (upstream monitor/monitor.go).
const (
	ActionScaleUp   = "scale_up"
	ActionScaleDown = "scale_down"
	ActionNone      = "none"

	ErrorSpec     = "spec"
	ErrorInternal = "internal"
	ErrorNone     = "none"
)

const subsystem = "horizontal_pod_autoscaler_controller"

// Monitor holds the registry and the HPA controller's metrics.
type Monitor struct {
	Registry *prometheus.Registry

	reconciliations    *prometheus.CounterVec
	reconcileDuration  *prometheus.HistogramVec
	metricComputations *prometheus.CounterVec
	metricDuration     *prometheus.HistogramVec
	numHPAs            prometheus.Gauge
	desiredReplicas    *prometheus.GaugeVec
	staleSyncSkips     *prometheus.CounterVec
	workqueue          workqueueMetrics
}

// New creates a Monitor with a fresh registry holding the HPA metrics and the Go and
// process collectors.
func New() *Monitor {
	buckets := prometheus.ExponentialBuckets(0.001, 2, 15)
	m := &Monitor{
		Registry: prometheus.NewRegistry(),
		reconciliations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "reconciliations_total",
			Help: "Number of reconciliations of HPA controller. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'.",
		}, []string{"action", "error"}),
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "reconciliation_duration_seconds", Buckets: buckets,
			Help: "The time(seconds) that the HPA controller takes to reconcile once.",
		}, []string{"action", "error"}),
		metricComputations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "metric_computation_total",
			Help: "Number of metric computations. The label 'metric_type' corresponds to HPA.spec.metrics[*].type",
		}, []string{"action", "error", "metric_type"}),
		metricDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "metric_computation_duration_seconds", Buckets: buckets,
			Help: "The time(seconds) that the HPA controller takes to calculate one metric.",
		}, []string{"action", "error", "metric_type"}),
		numHPAs: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "num_horizontal_pod_autoscalers",
			Help: "Current number of controlled HPA objects.",
		}),
		desiredReplicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: subsystem, Name: "desired_replicas",
			Help: "Current desired replica count for HPA objects.",
		}, []string{"namespace", "hpa_name"}),
		staleSyncSkips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: subsystem, Name: "stale_sync_skips_total",
			Help: "Total number of HPA syncs skipped due to a stale watch cache.",
		}, []string{"group", "resource"}),
		workqueue: newWorkqueueMetrics(),
	}
	m.Registry.MustRegister(
		m.reconciliations, m.reconcileDuration, m.metricComputations, m.metricDuration,
		m.numHPAs, m.desiredReplicas, m.staleSyncSkips,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.workqueue.register(m.Registry)
	return m
}

// ObserveReconcile records one reconcile.
func (m *Monitor) ObserveReconcile(action, errLabel string, d time.Duration) {
	m.reconciliations.WithLabelValues(action, errLabel).Inc()
	m.reconcileDuration.WithLabelValues(action, errLabel).Observe(d.Seconds())
}

// ObserveMetricComputation records one metric's computation.
func (m *Monitor) ObserveMetricComputation(action, errLabel, metricType string, d time.Duration) {
	m.metricComputations.WithLabelValues(action, errLabel, metricType).Inc()
	m.metricDuration.WithLabelValues(action, errLabel, metricType).Observe(d.Seconds())
}

// HPAAdded and HPADeleted track num_horizontal_pod_autoscalers as upstream does.
func (m *Monitor) HPAAdded()   { m.numHPAs.Inc() }
func (m *Monitor) HPADeleted() { m.numHPAs.Dec() }

// SetDesiredReplicas sets desired_replicas for one HPA.
func (m *Monitor) SetDesiredReplicas(namespace, name string, n int32) {
	m.desiredReplicas.WithLabelValues(namespace, name).Set(float64(n))
}

// DeleteDesiredReplicas drops a deleted HPA's series so the endpoint does not report
// HPAs that no longer exist.
func (m *Monitor) DeleteDesiredReplicas(namespace, name string) {
	m.desiredReplicas.DeleteLabelValues(namespace, name)
}

// ObserveStaleSyncSkip counts a reconcile skipped because the cache was older than our
// last write.
func (m *Monitor) ObserveStaleSyncSkip(group, resource string) {
	m.staleSyncSkips.WithLabelValues(group, resource).Inc()
}

// WorkqueueProvider returns the provider to give the controller's work queue; the series
// carry the upstream names (workqueue_depth, ...) with label name.
func (m *Monitor) WorkqueueProvider() workqueue.MetricsProvider { return m.workqueue }

// Handler serves /metrics from the Monitor's registry and /healthz.
func (m *Monitor) Handler(healthy func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if healthy != nil {
			if err := healthy(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}
