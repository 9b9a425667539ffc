//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	// show logs explain's text of it, for the docs.
	show bool
	// scaleDownWindow, when set, is its behavior's scale-down stabilization window.
	scaleDownWindow *int32
	// fails: one of its metrics cannot be read while the adapter is up (ScalingActive=False
	// when that blocks the decision).
	fails bool
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
		{name: "pods-average", metrics: []autoscalingv2.MetricSpec{cmPods("rps", "100")}, feed: feedPods("pods-average", 600_000), settles: 6, show: true},
		// An Object metric against a Value: a queue's latency that falls as pods are added (500
		// divided by the replicas), 100 wanted. The controller multiplies a Value's ratio by the
		// current count, so a latency read before the feed caught up with a scale-up overshoots:
		// no scale-down window, so that the next sync corrects it instead of holding it 5 min.
		{name: "object-value", scaleDownWindow: ptr.To[int32](0), metrics: []autoscalingv2.MetricSpec{cmObject(autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "queue"}, "latency", autoscalingv2.ValueMetricType, "100")},
			feed: func(ctx context.Context, t *testing.T, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
				t.Helper()
				err := cm.Object(ctx, ns, "services", "queue", "latency", func(ctx context.Context) (int64, error) {
					d, err := c.Client().AppsV1().Deployments(ns).Get(ctx, "object-value", metav1.GetOptions{})
					if err != nil {
						return 0, err
					}
					return 500_000 / int64(max(ptr.Deref(d.Spec.Replicas, 1), 1)), nil
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
		{name: "external-average", metrics: []autoscalingv2.MetricSpec{cmExternal("my-external-metric", map[string]string{"foo": "bar"}, autoscalingv2.AverageValueMetricType, "10")}, settles: 5, show: true},
		{name: "external-value", metrics: []autoscalingv2.MetricSpec{cmExternal("other-external-metric", nil, autoscalingv2.ValueMetricType, "44")}, settles: 2},
		// cpu beside a Pods metric: cpu asks for 3 (150m against 50% of 100m), rps for 4.
		{name: "cpu-and-pods", metrics: []autoscalingv2.MetricSpec{cmCPU50(), cmPods("rps", "100")},
			feed: func(ctx context.Context, t *testing.T, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string) {
				t.Helper()
				cmCPU("cpu-and-pods", 150)(ctx, t, c, cm, ns)
				feedPods("cpu-and-pods", 400_000)(ctx, t, c, cm, ns)
			}, settles: 4, show: true},

		// Failures, while the adapter is up. A metric the adapter does not know: asked for by
		// name (an Object metric) the adapter answers NotFound, "the server could not find the
		// metric"; asked for by selector (a Pods metric) an empty list.
		{name: "unknown-object", fails: true, settles: 2, show: true, metrics: []autoscalingv2.MetricSpec{cmObject(autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "queue"}, "no-such-metric", autoscalingv2.ValueMetricType, "100")}},
		{name: "unknown-pods", fails: true, settles: 2, metrics: []autoscalingv2.MetricSpec{cmPods("no-such-metric", "100")}},
		// An External metric whose selector matches none of its series.
		{name: "selector-nothing", fails: true, settles: 2, show: true, metrics: []autoscalingv2.MetricSpec{cmExternal("my-external-metric", map[string]string{"foo": "nothing"}, autoscalingv2.AverageValueMetricType, "10")}},
		// One metric of two failing: cpu asking for more scales up without the other (3: 150m
		// against 50% of 100m); cpu asking for fewer (1: 40m) is blocked, as upstream blocks a
		// scale-down while any metric is unknown.
		{name: "up-one-failing", fails: true, settles: 3, show: true, metrics: []autoscalingv2.MetricSpec{cmCPU50(), cmPods("no-such-metric", "100")}, feed: cmCPU("up-one-failing", 150)},
		{name: "down-one-failing", fails: true, settles: 2, metrics: []autoscalingv2.MetricSpec{cmCPU50(), cmPods("no-such-metric", "100")}, feed: cmCPU("down-one-failing", 40)},
	}
}

func cmCPU50() autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)}}}
}

// cmCPU sets the cpu the Deployment name's pods use, totalMilli split across them.
func cmCPU(name string, totalMilli int64) func(context.Context, *testing.T, *cluster.Cluster, *cluster.CustomMetrics, string) {
	return func(_ context.Context, _ *testing.T, c *cluster.Cluster, _ *cluster.CustomMetrics, ns string) {
		c.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": name}}, cluster.Load{CPUMilli: totalMilli, MemoryBytes: 64 << 20})
	}
}

// TestCustomAndExternalMetricsExplainAndListDecideAsKubeControllerManager: on a cluster of its
// own whose custom and external metrics API is a real aggregated API server
// (custom-metrics-apiserver's test adapter), kube-controller-manager's HPA controller scales
// six HPAs (a Pods metric, an Object metric against a Value and one against an AverageValue,
// two External metrics, cpu beside a Pods metric) to the sizes their metrics ask for, and
// five whose metrics fail. explain and list then decide each as kube-controller-manager's
// status says it decided: the same count, the same conditions (type, status, reason) and the
// same current metric values. Then, each against kube-controller-manager: kubectl hpa run in
// its place and back; timeline and tune from Prometheus; the adapter serving v1beta1 only;
// KEDA-owned HPAs; the adapter down.
func TestCustomAndExternalMetricsExplainAndListDecideAsKubeControllerManager(t *testing.T) {
	t.Parallel()
	c := cmStartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	t0 := time.Now()
	cm, err := c.CustomMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("custom metrics adapter Available in %.1fs", time.Since(t0).Seconds())
	// Prometheus scrapes what the adapter serves from the start (the timeline phase reads it).
	prom, err := c.Prometheus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Now()
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
	// The workloads are running and their metrics in Prometheus before the HPAs exist, as in
	// a cluster where HPAs are added to running workloads: the timeline reads the metrics of
	// the HPAs' first syncs at its grid's point before, up to a sync period earlier, and cpu
	// over a 10s window, so Prometheus scrapes (every 5s) for two periods and a scrape first.
	for _, h := range hpas {
		if h.feed != nil {
			h.feed(ctx, t, c, cm, ns)
		}
	}
	eventually(t, time.Minute, "every workload's pods ready", func(ctx context.Context) error {
		for _, h := range hpas {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, h.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != 2 {
				return fmt.Errorf("%s: %d ready", h.name, d.Status.ReadyReplicas)
			}
		}
		return nil
	})
	time.Sleep(2*memSyncPeriod + cluster.DefaultPrometheusScrapeInterval)
	for _, h := range hpas {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: h.name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: h.name},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, Metrics: h.metrics,
			},
		}
		if h.scaleDownWindow != nil {
			hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: h.scaleDownWindow}}
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
			// An HPA whose metrics fail keeps the desired count of its last decision: none
			// (0) when it never made one.
			undecided := h.fails && cmUndecided(hpa)
			if (st.DesiredReplicas != h.settles && !undecided) || st.CurrentReplicas != h.settles || d.Status.ReadyReplicas != h.settles {
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
	up := cmCompare(ctx, t, cmUp, k, c, ns, hpas, nil)

	// kubectl hpa run in kube-controller-manager's place, and back (custom_metrics_run_test.go).
	up = cmRunPhase(ctx, t, k, c, cm, ns, hpas, up)

	// timeline --prometheus-url over all of it (custom_metrics_timeline_test.go).
	cmTimelinePhase(ctx, t, k, c, prom, ns, from)

	// Only custom.metrics.k8s.io/v1beta1 served, as by an older adapter: kube-controller-manager
	// rediscovers the versions every sync period and reads v1beta1; so do explain and list.
	if err := cm.Unregister(ctx, "custom.metrics.k8s.io", "v1beta2"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*memSyncPeriod + 5*time.Second)
	old := cmCompare(ctx, t, cmV1beta1, k, c, ns, hpas, up)

	// KEDA-owned HPAs beside their ScaledObjects (keda_test.go).
	kedaPhase(ctx, t, k, c)

	// The adapter down: its APIServices unavailable, every custom and external read fails.
	// kube-controller-manager syncs every HPA twice more; explain and list then say what it
	// did: no scale, and the failing metric in the conditions (the cpu-and-pods HPA keeps its
	// size: a failing metric blocks the scale-down cpu alone asks for).
	if err := cm.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	time.Sleep(2*memSyncPeriod + 5*time.Second)
	t.Logf("the adapter stopped %.0fs ago: every HPA synced twice since", time.Since(down).Seconds())
	cmCompare(ctx, t, cmDown, k, c, ns, hpas, old)
}

// The phases of the custom metrics test.
const (
	cmUp      = "adapter up"
	cmV1beta1 = "v1beta1 only"
	cmDown    = "adapter down"
)

// cmUsesCustom says whether h reads custom.metrics.k8s.io (a Pods or an Object metric).
func cmUsesCustom(h cmHPA) bool {
	for _, m := range h.metrics {
		if m.Type == autoscalingv2.PodsMetricSourceType || m.Type == autoscalingv2.ObjectMetricSourceType {
			return true
		}
	}
	return false
}

// cmCompare holds list's and explain's decision of every HPA to kube-controller-manager's last
// one, as its status says, and returns the HPAs as read; before are the HPAs as the previous
// phase read them (nil for the first). A decision a tool could not make (an explain that
// exits with an error) must be one kube-controller-manager could not make either:
// ScalingActive=False, nothing scaled.
func cmCompare(ctx context.Context, t *testing.T, phase string, k cluster.Kubectl, c *cluster.Cluster, ns string, hpas []cmHPA,
	before map[string]*autoscalingv2.HorizontalPodAutoscaler) map[string]*autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	read := map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	cs := c.Client()
	out, err := k.Run(ctx, "hpa", "list", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatalf("%s: list: %v", phase, err)
	}
	var list v1alpha1.List
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%s: decoding list -o json: %v", phase, err)
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
		read[h.name] = hpa
		out, err := k.Run(ctx, "hpa", "explain", h.name, "-n", ns, "-o", "json")
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: explain %s: %v", phase, h.name, err)
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("%s: decoding explain %s -o json (exit %d): %v", phase, h.name, code, err)
		}
		if e.Error != nil && (code == 0 || e.Error.ExitCode != code || e.Error.Reason == "") {
			t.Errorf("%s: explain %s exited %d with error %+v: the exit code is the error's, documented in docs/exit-codes.md", phase, h.name, code, e.Error)
		}
		if e.Error == nil && code != 0 {
			t.Errorf("%s: explain %s exited %d without an error in its output", phase, h.name, code)
		}
		// A metrics API whose server is down is a source that failed (docs/exit-codes.md: 1),
		// custom or external alike, and explain says which APIService to check.
		if phase == cmDown && e.Error != nil && (code != 1 || !strings.Contains(e.Error.Message, "is registered but unavailable: check the APIService")) {
			t.Errorf("%s: explain %s exited %d (%+v), want 1 naming the APIService registered but unavailable", phase, h.name, code, e.Error)
		}
		// A metric the adapter has no value for (unknown, or a selector matching none of its
		// series): the HPA cannot compute (docs/exit-codes.md: 10), and explain says where to look.
		if phase != cmDown && h.fails && e.Error != nil && (code != 10 || !strings.Contains(e.Error.Message, "the adapter has no value for metric no-such-metric") && !strings.Contains(e.Error.Message, "the adapter has no value for metric my-external-metric")) {
			t.Errorf("%s: explain %s exited %d (%+v), want 10 naming the metric the adapter has no value for", phase, h.name, code, e.Error)
		}
		if cmUndecided(hpa) != (e.Error != nil) {
			t.Errorf("%s: explain %s exited %d (%+v) where kube-controller-manager's ScalingActive is %+v: an error is where the controller could not decide, and only there", phase, h.name, code, e.Error, hpaCondition(hpa, autoscalingv2.ScalingActive))
		}
		if phase == cmV1beta1 && cmUsesCustom(h) && e.Error == nil && !strings.Contains(e.MetricsSource, "custom.metrics.k8s.io/v1beta1") {
			t.Errorf("%s: explain %s read its metrics from %q, want custom.metrics.k8s.io/v1beta1, the only version served", phase, h.name, e.MetricsSource)
		}
		for tool, got := range map[string]*v1alpha1.Explanation{"explain": &e, "list": listed[h.name]} {
			if got == nil {
				t.Errorf("%s: %s: not in list's output", phase, h.name)
				continue
			}
			for _, d := range cmDifferences(hpa, before[h.name], got) {
				t.Errorf("%s: %s %s: %s", phase, tool, h.name, d)
			}
		}
		verdict := ""
		if e.Verdict != nil {
			verdict = e.Verdict.Sentence
		}
		t.Logf("%s: %s: kube-controller-manager %d -> %d %s; explain exit %d: %s", phase, h.name, hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, cmConditions(hpa.Status.Conditions), code, verdict)
		if h.show {
			// What a person sees (docs/metrics.md shows it).
			text, err := k.Run(ctx, "hpa", "explain", h.name, "-n", ns)
			t.Logf("%s: kubectl hpa explain %s -n %s (%v):\n%s", phase, h.name, ns, err, text)
		}
	}
	return read
}

// cmDifferences are the ways a tool's decision differs from the one kube-controller-manager
// wrote in hpa's status: the count, the conditions and the current metric values. before is
// the HPA as read before (nil when there is none).
func cmDifferences(hpa, before *autoscalingv2.HorizontalPodAutoscaler, e *v1alpha1.Explanation) []string {
	// ScalingActive=False: kube-controller-manager could not compute a count, scaled nothing
	// and left the desired count of its last decision in the status (0 when it never made one).
	undecided := cmUndecided(hpa)
	if e.Decision == nil {
		if !undecided {
			return []string{fmt.Sprintf("no decision (%+v), where kube-controller-manager decided %d -> %d %s", e.Error, hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, cmConditions(hpa.Status.Conditions))}
		}
		return nil
	}
	var out []string
	want := hpa.Status.DesiredReplicas
	if undecided {
		want = hpa.Status.CurrentReplicas
	}
	if e.Decision.DesiredReplicas != want {
		out = append(out, fmt.Sprintf("desired %d, kube-controller-manager %d %s", e.Decision.DesiredReplicas, want, cmConditions(hpa.Status.Conditions)))
	}
	// The conditions this sync sets are kube-controller-manager's; the ones it does not set,
	// kube-controller-manager left as they were: as the previous read found them, or, at the
	// first, ScaledToZero only, which upstream writes on a rescale (the one that brought the
	// HPA to its size).
	set := map[string]string{}
	for _, c := range e.Decision.Conditions {
		set[c.Type] = c.Status + "/" + c.Reason
	}
	for _, c := range hpa.Status.Conditions {
		mine, ok := set[string(c.Type)]
		kept := before == nil && c.Type == autoscalingv2.ScaledToZero
		if before != nil {
			prev := hpaCondition(before, c.Type)
			kept = prev != nil && prev.Status == c.Status && prev.Reason == c.Reason
		}
		switch {
		case !ok && !kept:
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
		// A metric that failed has no status; the controller writes an empty entry for it.
		status := ptr.Deref(m.Status, autoscalingv2.MetricStatus{})
		if !apiequality.Semantic.DeepEqual(status, hpa.Status.CurrentMetrics[i]) {
			got, _ := json.Marshal(m.Status)
			want, _ := json.Marshal(hpa.Status.CurrentMetrics[i])
			out = append(out, fmt.Sprintf("metric %d (%s) current %s, kube-controller-manager %s", i, m.Short, got, want))
		}
	}
	return out
}

// cmUndecided says whether kube-controller-manager's last sync of hpa could not compute a
// count (ScalingActive=False).
func cmUndecided(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	active := hpaCondition(hpa, autoscalingv2.ScalingActive)
	return active != nil && active.Status == corev1.ConditionFalse
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
	return startOwnCluster(t, "custom metrics", cluster.Config{
		EtcdPort: 24790, APIPort: 17443, KubeletPort: 21250, MetricsServerPort: 28443,
		HeapsterPort: 28082, HeapsterStandInPort: 28083, PrometheusPort: 29090, CustomMetricsPort: 28444, CustomMetricsExporterPort: 28445,
		WithoutHeapster: true, UpstreamHPA: true,
		ControllerManagerArgs: []string{"--horizontal-pod-autoscaler-sync-period=" + memSyncPeriod.String()},
	})
}
