package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// CustomMetrics is a real custom and external metrics API: custom-metrics-apiserver's own test
// adapter (sigs.k8s.io/custom-metrics-apiserver v1.37.0, test-adapter/), an aggregated API
// server registered for custom.metrics.k8s.io v1beta1 and v1beta2 and external.metrics.k8s.io
// v1beta1, as prometheus-adapter or KEDA's metrics server would be. Its custom values are what
// the test posts to it (Pods and Object): the feeds below post them every second. Its external
// metrics are the adapter's own, fixed in its source: my-external-metric is 42 for the label
// foo=bar and 43 for foo=baz, other-external-metric 44. The cluster starts it on the first call
// to CustomMetrics; one runs per network namespace (its write endpoint is :8080, which it does
// not let anyone change).
type CustomMetrics struct {
	c      *Cluster
	proc   *process
	client *http.Client
	cancel context.CancelFunc

	mu    sync.Mutex
	feeds map[string]feed // by the object and metric it posts
	// posted are the values each feed posted last, by the feed's key: what the exporter shows.
	posted map[string][]posting
	// exporter serves every value the adapter serves as Prometheus metrics.
	exporter *http.Server
	// unregistered are the APIServices Unregister deleted, by name.
	unregistered map[string]bool
}

// feed posts values of one metric every second.
type feed func(ctx context.Context) ([]posting, error)

// posting is one value to post: the object's path under /write-metrics and the value in milli.
type posting struct {
	path  string
	milli int64
}

const (
	customMetricsService = "custom-metrics-apiserver"
	// customMetricsWrite is the adapter's plain-HTTP write endpoint (fixed in its main.go).
	customMetricsWrite = "http://127.0.0.1:8080"
)

// customMetricsAPIServices are the APIServices the adapter serves, with their version priority
// (v1beta2 preferred, as an adapter built on the library registers them).
var customMetricsAPIServices = []struct {
	group, version string
	priority       int64
}{
	{"custom.metrics.k8s.io", "v1beta1", 100},
	{"custom.metrics.k8s.io", "v1beta2", 200},
	{"external.metrics.k8s.io", "v1beta1", 100},
}

// CustomMetrics returns the cluster's custom and external metrics API, starting the adapter on
// the first call; it returns once every one of its APIServices is Available.
func (c *Cluster) CustomMetrics(ctx context.Context) (*CustomMetrics, error) {
	c.cmMu.Lock()
	defer c.cmMu.Unlock()
	if c.customMetrics != nil {
		return c.customMetrics, nil
	}
	bin := filepath.Join(c.cfg.BinDir, "custom-metrics-adapter")
	cm, err := startWhenBuilt(ctx, c, "custom metrics adapter", bin, func() (*CustomMetrics, error) { return c.startCustomMetrics(ctx, bin) })
	if err != nil {
		return nil, err
	}
	c.mu.Lock() // Pids and Stop read it under c.mu
	c.customMetrics = cm
	c.mu.Unlock()
	return cm, nil
}

func (c *Cluster) startCustomMetrics(ctx context.Context, bin string) (*CustomMetrics, error) {
	for _, addr := range []string{c.hostPort(c.cfg.CustomMetricsPort), "127.0.0.1:8080"} {
		if err := checkPortFree("custom metrics adapter", addr); err != nil {
			return nil, err
		}
	}
	ns := metav1.NamespaceSystem
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: customMetricsService, Namespace: ns},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(c.cfg.CustomMetricsPort)),
		}}},
	}
	if err := c.createService(ctx, svc, nil); err != nil {
		return nil, fmt.Errorf("custom metrics adapter: %w", err)
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return nil, fmt.Errorf("custom metrics adapter: dynamic client: %w", err)
	}
	for _, s := range customMetricsAPIServices {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": s.version + "." + s.group},
			"spec": map[string]any{
				"group": s.group, "version": s.version,
				"service":               map[string]any{"name": customMetricsService, "namespace": ns, "port": int64(443)},
				"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": s.priority,
			},
		}}
		if _, err := dyn.Resource(apiServiceGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("custom metrics adapter: registering %s: %w", obj.GetName(), err)
		}
	}
	// The adapter reads pods and namespaces and delegates authentication and authorization
	// as metrics-server does; it acts with metrics-server's credentials.
	kubeconfig := c.kubeconfig("metrics-server")
	p, err := startProcess("custom-metrics-adapter", bin, []string{
		"--lister-kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--secure-port=" + strconv.Itoa(c.cfg.CustomMetricsPort), "--bind-address=" + c.ip.String(),
		"--cert-dir=" + filepath.Join(c.dir, "custom-metrics-certs"),
	}, c.logDir)
	if err != nil {
		return nil, err
	}
	cm := &CustomMetrics{c: c, proc: p, client: &http.Client{Timeout: 5 * time.Second}, feeds: map[string]feed{}, posted: map[string][]posting{}, unregistered: map[string]bool{}}
	if err := cm.startExporter(c.hostPort(c.cfg.CustomMetricsExporterPort)); err != nil {
		c.stopProcess(p)
		return nil, err
	}
	err = p.waitReady(ctx, 60*time.Second, func(ctx context.Context) error {
		var errs []error
		for _, s := range customMetricsAPIServices {
			errs = append(errs, c.apiServiceAvailable(ctx, dyn, s.version+"."+s.group, true))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		c.stopProcess(p)
		return nil, err
	}
	feedCtx, cancel := context.WithCancel(context.Background())
	cm.cancel = cancel
	go cm.loop(feedCtx)
	return cm, nil
}

// Pods feeds a Pods metric of w's pods: total (in milli-units) split evenly across its pods
// that are Running and Ready, as a load balancer splits requests; a pod not ready gets nothing
// posted, so the adapter has no value for a pod until it is.
func (cm *CustomMetrics) Pods(ctx context.Context, w Workload, metric string, totalMilli int64) error {
	sel := labels.SelectorFromSet(w.Selector).String()
	f := func(ctx context.Context) ([]posting, error) {
		pods, err := cm.c.client.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		var ready []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
				ready = append(ready, p.Name)
			}
		}
		out := make([]posting, 0, len(ready))
		for _, name := range ready {
			out = append(out, posting{path: "namespaces/" + w.Namespace + "/pods/" + name + "/" + metric, milli: totalMilli / int64(len(ready))})
		}
		return out, nil
	}
	return cm.add(ctx, w.Namespace+"/pods/"+sel+"/"+metric, f)
}

// Object feeds the metric of one object (resource as the custom metrics API names it:
// "services", "deployments.apps"), its value whatever value returns at each post.
func (cm *CustomMetrics) Object(ctx context.Context, namespace, resource, name, metric string, value func(context.Context) (int64, error)) error {
	path := "namespaces/" + namespace + "/" + resource + "/" + name + "/" + metric
	return cm.add(ctx, path, func(ctx context.Context) ([]posting, error) {
		v, err := value(ctx)
		if err != nil {
			return nil, err
		}
		return []posting{{path: path, milli: v}}, nil
	})
}

// add registers a feed and posts its values once, so that they are there when it returns.
func (cm *CustomMetrics) add(ctx context.Context, key string, f feed) error {
	if err := cm.post(ctx, key, f); err != nil {
		return err
	}
	cm.mu.Lock()
	cm.feeds[key] = f
	cm.mu.Unlock()
	return nil
}

func (cm *CustomMetrics) loop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cm.mu.Lock()
		feeds := maps.Clone(cm.feeds)
		cm.mu.Unlock()
		for key, f := range feeds {
			if err := cm.post(ctx, key, f); err != nil && ctx.Err() == nil {
				cm.c.cfg.Progress("custom metrics feed: %v", err)
			}
		}
	}
}

func (cm *CustomMetrics) post(ctx context.Context, key string, f feed) error {
	ps, err := f(ctx)
	if err != nil {
		return err
	}

	for _, p := range ps {
		body := strconv.Quote(strconv.FormatInt(p.milli, 10) + "m")
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, customMetricsWrite+"/write-metrics/"+p.path, bytes.NewBufferString(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := cm.client.Do(req)
		if err != nil {
			return fmt.Errorf("posting %s: %w", p.path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("posting %s: %s", p.path, resp.Status)
		}
	}
	cm.mu.Lock()
	cm.posted[key] = ps
	cm.mu.Unlock()
	return nil
}

// Stop stops posting values and the adapter, and returns once the aggregator reports every
// one of its APIServices not Available: from then on a custom or external metrics read fails
// as it does in a cluster whose adapter is down.
func (cm *CustomMetrics) Stop(ctx context.Context) error {
	cm.cancel()
	_ = cm.exporter.Close()
	c := cm.c
	if err := c.stopComponent(&cm.proc, "custom-metrics-adapter", stopGrace); err != nil {
		return err
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return fmt.Errorf("custom metrics adapter: dynamic client: %w", err)
	}
	for _, s := range customMetricsAPIServices {
		name := s.version + "." + s.group
		cm.mu.Lock()
		gone := cm.unregistered[name]
		cm.mu.Unlock()
		if gone {
			continue
		}
		if err := c.waitFor(ctx, "APIService "+name+" not Available", time.Minute, c.availabilityOf(dyn, name, false)); err != nil {
			return err
		}
	}
	return nil
}

// Unregister deletes the adapter's APIService of one group and version, as a cluster whose
// adapter serves only the others would be, and returns once discovery no longer lists it.
func (cm *CustomMetrics) Unregister(ctx context.Context, group, version string) error {
	c := cm.c
	name := version + "." + group
	dyn, err := c.Dynamic()
	if err != nil {
		return fmt.Errorf("custom metrics adapter: dynamic client: %w", err)
	}
	if err := dyn.Resource(apiServiceGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("custom metrics adapter: unregistering %s: %w", name, err)
	}
	cm.mu.Lock()
	cm.unregistered[name] = true
	cm.mu.Unlock()
	return c.waitFor(ctx, "discovery without "+group+"/"+version, time.Minute, func(context.Context) error {
		if _, err := c.client.Discovery().ServerResourcesForGroupVersion(group + "/" + version); err == nil {
			return fmt.Errorf("%s/%s is still served", group, version)
		}
		return nil
	})
}

// customMetricsExternal are the adapter's own External metrics (fixed in its source,
// test-adapter/provider/provider.go), which the exporter shows as well.
var customMetricsExternal = []struct {
	metric, labels string
	value          int64
}{
	{"my-external-metric", `foo="bar"`, 42},
	{"my-external-metric", `foo="baz"`, 43},
	{"other-external-metric", "", 44},
}

// startExporter serves at addr, as Prometheus metrics, every value the adapter serves: the
// application's own /metrics, which a Prometheus scrapes and a prometheus-adapter would
// serve from. e2e_custom_metric{namespace, resource, name, metric} (and pod, for a pod) is a
// Pods or Object metric as last posted, e2e_external_metric{metric, ...} an External one.
func (cm *CustomMetrics) startExporter(addr string) error {
	if err := checkPortFree("custom metrics exporter", addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("custom metrics exporter: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		cm.mu.Lock()
		var lines []string
		for _, ps := range cm.posted {
			for _, p := range ps {
				// namespaces/NS/RESOURCE/NAME/METRIC
				f := strings.Split(p.path, "/")
				if len(f) != 5 {
					continue
				}
				labels := fmt.Sprintf(`namespace=%q,resource=%q,name=%q,metric=%q`, f[1], f[2], f[3], f[4])
				if f[2] == "pods" {
					labels += fmt.Sprintf(`,pod=%q`, f[3])
				}
				lines = append(lines, fmt.Sprintf("e2e_custom_metric{%s} %g", labels, float64(p.milli)/1000))
			}
		}
		cm.mu.Unlock()
		for _, e := range customMetricsExternal {
			labels := fmt.Sprintf("metric=%q", e.metric)
			if e.labels != "" {
				labels += "," + e.labels
			}
			lines = append(lines, fmt.Sprintf("e2e_external_metric{%s} %d", labels, e.value))
		}
		slices.Sort(lines)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE e2e_custom_metric gauge\n# TYPE e2e_external_metric gauge\n%s\n", strings.Join(lines, "\n"))
	})
	cm.exporter = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = cm.exporter.Serve(ln) }()
	return nil
}

// customMetricsProc is the adapter's process, nil when it was not started. c.mu is held.
func (c *Cluster) customMetricsProc() *process {
	if c.customMetrics == nil {
		return nil
	}
	return c.customMetrics.proc
}

// stopCustomMetricsFeeds stops posting values and serving them to Prometheus. c.mu is held.
func (c *Cluster) stopCustomMetricsFeeds() {
	if c.customMetrics != nil {
		c.customMetrics.cancel()
		_ = c.customMetrics.exporter.Close()
	}
}
