//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// cmHPA is one HPA of the custom metrics test: its metrics, what the test feeds them, and the
// size kube-controller-manager settles it at.
type cmHPA struct {
	name    string
	metrics []autoscalingv2.MetricSpec
	// feed starts the values the HPA's metrics read (the adapter's external metrics are its own).
	feed func(ctx context.Context, t *testing.T, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string)
	// settles is the size its metrics ask for once it is there.
	settles int32
}

func cmTarget(kind autoscalingv2.MetricTargetType, v string) autoscalingv2.MetricTarget {
	q := resource.MustParse(v)
	if kind == autoscalingv2.ValueMetricType {
		return autoscalingv2.MetricTarget{Type: kind, Value: &q}
	}
	return autoscalingv2.MetricTarget{Type: kind, AverageValue: &q}
}

func cmPods(metric, avg string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: metric}, Target: cmTarget(autoscalingv2.AverageValueMetricType, avg)}}
}

func cmObject(ref autoscalingv2.CrossVersionObjectReference, metric string, kind autoscalingv2.MetricTargetType, v string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: ref, Metric: autoscalingv2.MetricIdentifier{Name: metric}, Target: cmTarget(kind, v)}}
}

func cmExternal(metric string, sel map[string]string, kind autoscalingv2.MetricTargetType, v string) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: metric, Selector: &metav1.LabelSelector{MatchLabels: sel}}, Target: cmTarget(kind, v)}}
}

// cmHPAs: every Deployment starts at 2 replicas (pods request 100m cpu).
func cmHPAs() []cmHPA {
	feedPods := func(name string, totalMilli int64) func(context.Context, *testing.T, *cluster.Cluster, *cluster.CustomMetrics, string) {
		return func(ctx context.Context, t *testing.T, _ *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
			t.Helper()
			if err := cm.Pods(ctx, cluster.Workload{Namespace: ns, Selector: map[string]string{"app": name}}, "rps", totalMilli); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []cmHPA{
		// A Pods metric: 600 requests per second split across the ready pods, 100 a pod wanted.
		{name: "pods-average", metrics: []autoscalingv2.MetricSpec{cmPods("rps", "100")}, feed: feedPods("pods-average", 600_000), settles: 6},
		// An Object metric against a Value: a queue's latency that falls as pods are added (500
		// divided by the ready replicas), 100 wanted.
		{name: "object-value", metrics: []autoscalingv2.MetricSpec{cmObject(autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "queue"}, "latency", autoscalingv2.ValueMetricType, "100")},
			feed: func(ctx context.Context, t *testing.T, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
				t.Helper()
				err := cm.Object(ctx, ns, "services", "queue", "latency", func(ctx context.Context) (int64, error) {
					d, err := c.Client().AppsV1().Deployments(ns).Get(ctx, "object-value", metav1.GetOptions{})
					if err != nil {
						return 0, err
					}
					return 500_000 / int64(max(d.Status.ReadyReplicas, 1)), nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}, settles: 5},
		// An Object metric against an AverageValue: a backlog of 500 on the Deployment itself,
		// 100 a replica wanted.
		{name: "object-average", metrics: []autoscalingv2.MetricSpec{cmObject(autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "object-average"}, "backlog", autoscalingv2.AverageValueMetricType, "100")},
			feed: func(ctx context.Context, t *testing.T, _ *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
				t.Helper()
				if err := cm.Object(ctx, ns, "deployments.apps", "object-average", "backlog", func(context.Context) (int64, error) { return 500_000, nil }); err != nil {
					t.Fatal(err)
				}
			}, settles: 5},
		// External metrics, the adapter's own: my-external-metric{foo=bar} is 42, 10 a replica
		// wanted; other-external-metric is 44 against a Value of 44, inside the tolerance.
		{name: "external-average", metrics: []autoscalingv2.MetricSpec{cmExternal("my-external-metric", map[string]string{"foo": "bar"}, autoscalingv2.AverageValueMetricType, "10")}, settles: 5},
		{name: "external-value", metrics: []autoscalingv2.MetricSpec{cmExternal("other-external-metric", nil, autoscalingv2.ValueMetricType, "44")}, settles: 2},
		// cpu beside a Pods metric: cpu asks for 3 (150m against 50% of 100m), rps for 4.
		{name: "cpu-and-pods", metrics: []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}},
			cmPods("rps", "100"),
		}, feed: func(ctx context.Context, t *testing.T, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
			t.Helper()
			c.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "cpu-and-pods"}}, cluster.Load{CPUMilli: 150, MemoryBytes: 64 << 20})
			feedPods("cpu-and-pods", 400_000)(ctx, t, c, cm, ns)
		}, settles: 4},
	}
}

// TestCustomAndExternalMetricsExplainAndListDecideAsKubeControllerManager: on a cluster of its
// own whose custom and external metrics API is a real aggregated API server
// (custom-metrics-apiserver's test adapter), kube-controller-manager's HPA controller scales
// six HPAs (a Pods metric, an Object metric against a Value and one against an AverageValue,
// two External metrics, cpu beside a Pods metric) to the sizes their metrics ask for. explain
// and list then decide each as kube-controller-manager's status says it decided: the same
// count, the same conditions (type, status, reason) and the same current metric values.
func TestCustomAndExternalMetricsExplainAndListDecideAsKubeControllerManager(t *testing.T) {
	t.Parallel()
	c := cmStartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	t0 := time.Now()
	cm, err := c.CustomMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("custom metrics adapter Available in %.1fs", time.Since(t0).Seconds())
	const ns = "custom"
	cs := c.Client()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "queue"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hpas := cmHPAs()
	for _, h := range hpas {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploymentSpec{name: h.name, replicas: 2}.build(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hpas {
		if h.feed != nil {
			h.feed(ctx, t, c, cm, ns)
		}
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: h.name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: h.name},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, Metrics: h.metrics,
			},
		}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// kube-controller-manager settles every HPA: its status says the size, every pod of it is
	// ready, and it has synced once more since (so that its current metrics are of all of them).
	settledAt := map[string]time.Time{}
	eventually(t, 4*time.Minute, "kube-controller-manager settles every HPA at the size its metrics ask for", func(ctx context.Context) error {
		var off []string
		for _, h := range hpas {
			hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, h.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, h.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := hpa.Status
			if st.DesiredReplicas != h.settles || st.CurrentReplicas != h.settles || d.Status.ReadyReplicas != h.settles {
				delete(settledAt, h.name)
				off = append(off, fmt.Sprintf("%s: status %d -> %d, %d ready (want %d)", h.name, st.CurrentReplicas, st.DesiredReplicas, d.Status.ReadyReplicas, h.settles))
				continue
			}
			if _, ok := settledAt[h.name]; !ok {
				settledAt[h.name] = time.Now()
			}
			if time.Since(settledAt[h.name]) < 2*memSyncPeriod {
				off = append(off, h.name+": settled, waiting for a sync of all its pods")
			}
		}
		if len(off) > 0 {
			return fmt.Errorf("%s", strings.Join(off, "; "))
		}
		return nil
	})
	t.Logf("every HPA settled %.0fs after the adapter was up", time.Since(t0).Seconds())

	k := c.Kubectl(c.PluginKubeconfig(), os.Getenv(pluginDirEnv))
	out, err := k.Run(ctx, "hpa", "list", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var list v1alpha1.List
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decoding list -o json: %v", err)
	}
	listed := map[string]*v1alpha1.Explanation{}
	for _, it := range list.Items {
		listed[it.Metadata.Name] = it
	}
	for _, h := range hpas {
		hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, h.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := k.Run(ctx, "hpa", "explain", h.name, "-n", ns, "-o", "json")
		if err != nil {
			t.Errorf("explain %s: %v", h.name, err)
			continue
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("decoding explain %s -o json: %v", h.name, err)
		}
		for tool, got := range map[string]*v1alpha1.Explanation{"explain": &e, "list": listed[h.name]} {
			if got == nil {
				t.Errorf("%s: not in list's output", h.name)
				continue
			}
			for _, d := range cmDifferences(hpa, got) {
				t.Errorf("%s %s: %s", tool, h.name, d)
			}
		}
		if e.Verdict != nil {
			t.Logf("%s: kube-controller-manager %d -> %d %s; explain: %s", h.name, hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, cmConditions(hpa.Status.Conditions), e.Verdict.Sentence)
		}
	}
}

// cmDifferences are the ways a tool's decision differs from the one kube-controller-manager
// wrote in hpa's status: the count, the conditions and the current metric values.
func cmDifferences(hpa *autoscalingv2.HorizontalPodAutoscaler, e *v1alpha1.Explanation) []string {
	if e.Decision == nil {
		return []string{fmt.Sprintf("no decision (%+v)", e.Error)}
	}
	var out []string
	if e.Decision.DesiredReplicas != hpa.Status.DesiredReplicas {
		out = append(out, fmt.Sprintf("desired %d, kube-controller-manager %d", e.Decision.DesiredReplicas, hpa.Status.DesiredReplicas))
	}
	// The conditions this sync sets are kube-controller-manager's; the ones it leaves as they
	// were may only be ScaledToZero, which upstream writes on a rescale only (the rescale that
	// brought the HPA to its size).
	set := map[string]string{}
	for _, c := range e.Decision.Conditions {
		set[c.Type] = c.Status + "/" + c.Reason
	}
	for _, c := range hpa.Status.Conditions {
		mine, ok := set[string(c.Type)]
		switch {
		case !ok && c.Type != autoscalingv2.ScaledToZero:
			out = append(out, fmt.Sprintf("condition %s not set, kube-controller-manager %s/%s", c.Type, c.Status, c.Reason))
		case ok && mine != string(c.Status)+"/"+c.Reason:
			out = append(out, fmt.Sprintf("condition %s %s, kube-controller-manager %s/%s", c.Type, mine, c.Status, c.Reason))
		}
		delete(set, string(c.Type))
	}
	for typ, v := range set {
		out = append(out, fmt.Sprintf("condition %s %s, which kube-controller-manager has not written", typ, v))
	}
	if len(e.Metrics) != len(hpa.Status.CurrentMetrics) {
		return append(out, fmt.Sprintf("%d metrics, kube-controller-manager's status %d", len(e.Metrics), len(hpa.Status.CurrentMetrics)))
	}
	for i, m := range e.Metrics {
		if m.Status == nil || !apiequality.Semantic.DeepEqual(*m.Status, hpa.Status.CurrentMetrics[i]) {
			got, _ := json.Marshal(m.Status)
			want, _ := json.Marshal(hpa.Status.CurrentMetrics[i])
			out = append(out, fmt.Sprintf("metric %d (%s) current %s, kube-controller-manager %s", i, m.Short, got, want))
		}
	}
	return out
}

func cmConditions(cs []autoscalingv2.HorizontalPodAutoscalerCondition) string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Type)+"="+string(c.Status)+"/"+c.Reason)
	}
	return strings.Join(out, " ")
}

// cmStartCluster starts the custom metrics test's own cluster (ports of its own, no Heapster)
// with kube-controller-manager's HPA controller syncing every 10s.
func cmStartCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	var binWait time.Duration
	if v := os.Getenv(testbinWaitEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		binWait = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{
		BinDir: os.Getenv(testbinEnv), BinWait: binWait,
		EtcdPort: 24790, APIPort: 17443, KubeletPort: 21250, MetricsServerPort: 28443,
		HeapsterPort: 28082, HeapsterStandInPort: 28083, PrometheusPort: 29090, CustomMetricsPort: 28444,
		WithoutHeapster: true, UpstreamHPA: true,
		ControllerManagerArgs: []string{"--horizontal-pod-autoscaler-sync-period=" + memSyncPeriod.String()},
		Progress:              func(f string, a ...any) { t.Logf("custom metrics cluster: "+f, a...) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the custom metrics test's cluster: %v", err)
		}
	})
	return c
}
