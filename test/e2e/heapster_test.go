//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Tests on the real Heapster (v1.6.0-beta.1 at e1e8341, built by hack/build-heapster.sh) behind
// kube-system/heapster, reading the node stand-in's Summary API every 5 s. The faults it cannot
// be made to show on demand are tested on the stand-in (faults_heapster_test.go).

// hrPod is one pod of Heapster 1.6's metrics.k8s.io/v1alpha1 answer.
type hrPod struct {
	cpuMilli, memBytes int64
	timestamp          time.Time
	window             time.Duration
}

// hrPodMetrics reads Heapster's metrics.k8s.io/v1alpha1 PodMetricsList for the web pods of ns through
// the service proxy of kube-system/service, summed over containers.
func hrPodMetrics(ctx context.Context, service, ns string) (map[string]hrPod, error) {
	raw, err := shared.Client().CoreV1().RESTClient().Get().
		AbsPath("/api/v1/namespaces/kube-system/services/http:"+service+":/proxy/apis/metrics.k8s.io/v1alpha1/namespaces/"+ns+"/pods").
		Param("labelSelector", "app=web").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata   metav1.ObjectMeta `json:"metadata"`
			Timestamp  metav1.Time       `json:"timestamp"`
			Window     metav1.Duration   `json:"window"`
			Containers []struct {
				Usage corev1.ResourceList `json:"usage"`
			} `json:"containers"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", raw, err)
	}
	out := map[string]hrPod{}
	for _, it := range list.Items {
		p := hrPod{timestamp: it.Timestamp.Time, window: it.Window.Duration}
		for _, c := range it.Containers {
			p.cpuMilli += c.Usage.Cpu().MilliValue()
			p.memBytes += c.Usage.Memory().Value()
		}
		out[it.Metadata.Name] = p
	}
	return out, nil
}

// hrWaitPods waits until Heapster behind service reports every web pod of ns at wantMilli
// (±1m, see hrCheckAgainstModel) with a sample whose window starts after the pod became ready:
// before that, upstream (and so explain and run) rightly treat a young pod's CPU as unready.
// It returns the pods' metrics.
func hrWaitPods(t *testing.T, service, ns string, wantMilli int64) map[string]hrPod {
	t.Helper()
	var got map[string]hrPod
	eventually(t, 2*time.Minute, fmt.Sprintf("heapster %s reports the web pods of %s at %dm over a full window after readiness", service, ns, wantMilli), func(ctx context.Context) error {
		var err error
		if got, err = hrPodMetrics(ctx, service, ns); err != nil {
			return err
		}
		pods := podsOf(t, ns, map[string]string{"app": "web"})
		if len(got) != len(pods) {
			return fmt.Errorf("heapster lists %d pods, the deployment has %d: %+v", len(got), len(pods), got)
		}
		for _, p := range pods {
			m, ok := got[p.Name]
			if !ok {
				return fmt.Errorf("no metrics for pod %s: %+v", p.Name, got)
			}
			if m.cpuMilli < wantMilli-1 || m.cpuMilli > wantMilli+1 {
				return fmt.Errorf("pod %s at %dm", p.Name, m.cpuMilli)
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && m.timestamp.Add(-m.window).Before(c.LastTransitionTime.Time) {
					return fmt.Errorf("pod %s: ready since %s, newest sample window starts %s", p.Name, c.LastTransitionTime, m.timestamp.Add(-m.window))
				}
			}
		}
		return nil
	})
	return got
}

// hrCheckAgainstModel requires Heapster's per-pod usage to be the load model's: CPU within 1m
// (Heapster's rate is 1000 x the counter difference over the time difference, truncated to
// whole millicores), memory exactly (the working set is a gauge).
func hrCheckAgainstModel(t *testing.T, ns string, got map[string]hrPod) {
	t.Helper()
	for name, m := range got {
		want, ok := shared.Load().Sample(types.NamespacedName{Namespace: ns, Name: name})
		if !ok {
			t.Errorf("heapster reports pod %s, which the load model does not know", name)
			continue
		}
		if d := m.cpuMilli - want.CPUMilli; d < -1 || d > 1 {
			t.Errorf("pod %s: heapster %dm, load model %dm (want within 1m)", name, m.cpuMilli, want.CPUMilli)
		}
		// The first container carries the pod's working set, the others the idle floor.
		if wantMem := want.MemoryBytes + int64(len(want.Containers)-1)*(4<<20); m.memBytes != wantMem {
			t.Errorf("pod %s: heapster working set %d bytes, load model %d", name, m.memBytes, wantMem)
		}
	}
}

// hrExplainReads are the only requests explain --metrics-source=heapster makes
// (docs/heapster.md, "What explain reads from it"): discovery, the HPA, its target's scale, the
// pods, the rescale events, the namespace's HPAs (overlaps), Deployments and
// PodDisruptionBudgets (its findings), the Service kube-system/heapster (it exists?) and Heapster's
// PodMetricsList through the service proxy, all GET or LIST; discovery (GET /api, /apis) too
// when client-go's disk cache of it is cold.
var hrExplainReads = []string{
	"get horizontalpodautoscalers",
	"get deployments/scale",
	"list pods",
	"list events",
	"get leases",
	"list horizontalpodautoscalers",
	"list deployments",
	"list poddisruptionbudgets",
	"get services kube-system/heapster",
	"get services/proxy kube-system/http:heapster:",
}

// TestHeapsterRealExplainAgreesWithTheLoadModelAndMetricsServer: 2 pods at 90m of 100m
// requested against a 50% target. Heapster's per-pod usage is the load model's; explain from
// Heapster and from metrics-server decide the same 4 replicas, with utilizations at most one
// point apart: both derive 90m from the same exact counters, Heapster truncating to whole
// millicores and metrics-server rounding nanocores, so each pod reads 89m to 91m and the
// integer utilization 89% to 91%; a ratio of 1.78 to 1.82 gives ceil(3.56..3.64) = 4 either way.
func TestHeapsterRealExplainAgreesWithTheLoadModelAndMetricsServer(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "hr-explain")
	const user = "e2e:kubectl-hpa-hr-explain"
	k := pluginAs(t, user)
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})
	waitMetricsAfterReadiness(t, ns)
	hrCheckAgainstModel(t, ns, hrWaitPods(t, cluster.HeapsterService, ns, 90))

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	fromHeapster := explainJSON(t, k, ns, "--metrics-source=heapster")
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
	if err != nil {
		t.Fatal(err)
	}
	fromMetricsServer := explainJSON(t, k, ns, "--metrics-source=metrics-api")

	for name, e := range map[string]struct {
		source string
		e      *v1alpha1.Explanation
	}{"heapster": {"heapster via service proxy kube-system/http:heapster:", &fromHeapster}, "metrics-server": {"metrics.k8s.io", &fromMetricsServer}} {
		if e.e.Error != nil {
			t.Fatalf("explain from %s: error %+v", name, *e.e.Error)
		}
		if !strings.Contains(e.e.MetricsSource, e.source) {
			t.Errorf("explain from %s: metrics source %q, want it to name %q", name, e.e.MetricsSource, e.source)
		}
		if d := e.e.Decision; d == nil || d.DesiredReplicas != 4 || d.CurrentReplicas != 2 {
			t.Errorf("explain from %s: decision %+v, want 2 -> 4", name, d)
		}
		if len(e.e.Metrics) != 1 || len(e.e.Metrics[0].Pods) != 2 {
			t.Fatalf("explain from %s: metrics %+v, want one metric over 2 pods", name, e.e.Metrics)
		}
		for _, p := range e.e.Metrics[0].Pods {
			if p.Treatment != "ready" || p.UsageMilli == nil || *p.UsageMilli < 89 || *p.UsageMilli > 91 {
				t.Errorf("explain from %s: pod %+v, want ready at 90m (±1m)", name, p)
			}
		}
	}
	utilization := func(e v1alpha1.Explanation) int32 {
		if s := e.Metrics[0].Status; s != nil && s.Resource != nil && s.Resource.Current.AverageUtilization != nil {
			return *s.Resource.Current.AverageUtilization
		}
		t.Fatalf("no utilization in %+v", e.Metrics[0])
		return 0
	}
	uh, um := utilization(fromHeapster), utilization(fromMetricsServer)
	if d := uh - um; d < -1 || d > 1 || uh < 89 || uh > 91 {
		t.Errorf("utilization from heapster %d%%, from metrics-server %d%%: want both 89%%-91%% and at most 1 point apart", uh, um)
	}

	// explain from Heapster: reads only, and Heapster only through the service proxy.
	var got []string
	for _, r := range reqs {
		if r.IsWrite() {
			t.Errorf("explain wrote: %s", r)
		}
		if r.APIGroup == "metrics.k8s.io" {
			t.Errorf("explain --metrics-source=heapster read metrics.k8s.io: %s", r)
		}
		if tuple := hrTuple(r); tuple != "get discovery" {
			got = append(got, tuple)
		}
	}
	if missing, extra := hrSetDiff(hrExplainReads, got); len(missing)+len(extra) > 0 {
		t.Errorf("explain's requests: missing %v, not listed in docs/heapster.md %v; all:\n%s", missing, extra, cluster.SummarizeAudit(reqs))
	}
}

// hrTuple names a request the way hrExplainReads does: verb, resource[/subresource], and for
// the service proxy the service it went to; discovery is "get discovery".
func hrTuple(r cluster.AuditRequest) string {
	switch {
	case r.Resource == "":
		return "get discovery"
	case r.Resource == "services" && r.Subresource == "proxy":
		return fmt.Sprintf("%s services/proxy %s/%s", r.Verb, r.Namespace, r.Name)
	case r.Resource == "services":
		return fmt.Sprintf("%s services %s/%s", r.Verb, r.Namespace, r.Name)
	case r.Subresource != "":
		return r.Verb + " " + r.Resource + "/" + r.Subresource
	}
	return r.Verb + " " + r.Resource
}

// hrSetDiff returns what want has and got lacks, and what got has and want lacks (as sets).
func hrSetDiff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	seen := map[string]bool{}
	for _, g := range got {
		if !slices.Contains(want, g) && !seen[g] {
			seen[g] = true
			extra = append(extra, g)
		}
	}
	sort.Strings(extra)
	return missing, extra
}

// TestHeapsterRealRunScalesUpAndDown: run reads the real Heapster and scales a Deployment from
// 1 to 4 replicas (180m on pods requesting 100m at a 50% target) and, once the load falls to
// 40m, back to 1 after the 10s stabilization window, writing upstream's conditions and
// SuccessfulRescale events. --cpu-initialization-period=1s: Heapster stamps every sample with a
// 60s window, so with the 5m default a new pod's CPU would count as unready for its first
// minute, and the test would mostly wait.
func TestHeapsterRealRunScalesUpAndDown(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "hr-run")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	w := cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}
	shared.Load().Set(w, cluster.Load{CPUMilli: 180, MemoryBytes: 64 << 20})
	hrCheckAgainstModel(t, ns, hrWaitPods(t, cluster.HeapsterService, ns, 180))
	createHPA(t, ns, hpaSpec{max: 6})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	const user = "e2e:kubectl-hpa-hr-run"
	r := startRun(t, pluginAs(t, user), "-n", ns, "--metrics-source=heapster", "--sync-period=2s",
		"--downscale-stabilization=10s", "--cpu-initialization-period=1s", "-o", "json")

	waitSpecReplicas(t, ns, 4)
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	shared.Load().Set(w, cluster.Load{CPUMilli: 40, MemoryBytes: 64 << 20})
	waitSpecReplicas(t, ns, 1)
	faultWaitCondition(t, ns, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale")
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	r.stop()

	hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hpa.Status.LastScaleTime == nil || len(hpa.Status.CurrentMetrics) != 1 || hpa.Status.DesiredReplicas != 1 {
		t.Errorf("HPA status %+v, want lastScaleTime, one current metric and 1 desired", hpa.Status)
	}
	events, err := shared.Client().CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", "SuccessfulRescale").String()})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range events.Items {
		msgs = append(msgs, e.Message)
	}
	sort.Strings(msgs)
	// One scale-up to 4, and down to 1. On the way down, a Heapster sample whose 5s rate window
	// straddles the load change reads between the two loads; if it was taken after the three new
	// pods had their first rate, its recommendation (2 or 3) is still in the stabilization window
	// when the last 4 leaves it, and the count steps down through it, as upstream's would.
	up, down := "New size: 4; reason: cpu resource utilization (percentage of request) above target", "New size: 1; reason: All metrics below target"
	var ups, downs int
	for _, m := range msgs {
		switch m {
		case up:
			ups++
		case down:
			downs++
		case "New size: 2; reason: All metrics below target", "New size: 3; reason: All metrics below target":
		default:
			t.Errorf("unexpected SuccessfulRescale event %q", m)
		}
	}
	if ups != 1 || downs != 1 {
		t.Errorf("SuccessfulRescale events %q, want one %q, one %q and, between them, only steps down", msgs, up, down)
	}

	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
	if err != nil {
		t.Fatal(err)
	}
	proxied := 0
	for _, q := range reqs {
		if q.APIGroup == "metrics.k8s.io" {
			t.Errorf("run --metrics-source=heapster read metrics.k8s.io: %s", q)
		}
		if q.Resource == "services" && q.Subresource == "proxy" {
			if q.Verb != "get" || q.Namespace != "kube-system" || q.Name != "http:heapster:" {
				t.Errorf("unexpected service proxy request: %s", q)
			}
			proxied++
		}
	}
	if proxied < 3 {
		t.Errorf("run read heapster %d times through the service proxy, want one per sync", proxied)
	}
}

// Ports of the Heapsters the outage tests start for themselves (the cluster's own is on 8082,
// the stand-in on 8083).
const (
	hrStoppedPort     = 8084
	hrNoEndpointsPort = 8085
)

// TestHeapsterRealOutageFailsSafe: a real Heapster that stops, or whose Service loses its
// endpoints, is a metrics outage like the others: explain exits 1 with the cause on one line;
// run writes no scale, sets ScalingActive=False with upstream's reason and the cause, though
// the good data read before would scale 2 -> 4. Each case starts a Heapster of its own behind a
// Service of its own (--heapster-service), so the cluster's stays up for the other tests.
func TestHeapsterRealOutageFailsSafe(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, service string
		port          int
		fault         func(context.Context, *cluster.Heapster) error
		wantErr       []string
	}{{
		name: "heapster stopped", service: "heapster-stopped", port: hrStoppedPort,
		fault:   func(_ context.Context, h *cluster.Heapster) error { return h.Stop() },
		wantErr: []string{"heapster via service proxy kube-system/http:heapster-stopped: is unavailable", "dial tcp 10.200.0.1:8084: connect: connection refused"},
	}, {
		name: "service without endpoints", service: "heapster-noendpoints", port: hrNoEndpointsPort,
		fault:   func(ctx context.Context, h *cluster.Heapster) error { return h.RemoveEndpoints(ctx) },
		wantErr: []string{"heapster via service proxy kube-system/http:heapster-noendpoints: is unavailable", `no endpoints available for service "heapster-noendpoints"`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h, err := shared.StartHeapster(ctx, tc.service, tc.port)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Stop() })
			ns := namespace(t, "hr-"+tc.service)
			createDeployment(t, ns, deploymentSpec{replicas: 2})
			shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}, cluster.Load{CPUMilli: 180, MemoryBytes: 128 << 20})
			createHPA(t, ns, hpaSpec{})
			// Good data first: what goes wrong afterwards is the outage.
			hrWaitPods(t, tc.service, ns, 90)
			if err := tc.fault(ctx, h); err != nil {
				t.Fatal(err)
			}
			user := "e2e:kubectl-hpa-" + tc.service
			k := pluginAs(t, user)
			mark, err := shared.AuditMark()
			if err != nil {
				t.Fatal(err)
			}
			service := "--heapster-service=" + tc.service
			code, stdout, stderr := hsRunExit(ctx, k, "hpa", "explain", "web", "-n", ns, "--metrics-source=heapster", service)
			line := strings.TrimSpace(stderr)
			t.Logf("explain: %s", line)
			if code != 1 {
				t.Errorf("explain exited %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if strings.Contains(line, "\n") {
				t.Errorf("explain's error is not one line:\n%s", stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(line, w) {
					t.Errorf("explain's error lacks %q:\n%s", w, line)
				}
			}

			startRun(t, k, "-n", ns, "--metrics-source=heapster", service, "--sync-period=2s", "--cpu-initialization-period=1s", "-o", "json")
			cond := hsWaitScalingActive(t, ns, corev1.ConditionFalse, "FailedGetResourceMetric")
			for _, w := range tc.wantErr {
				if !strings.Contains(cond.Message, w) {
					t.Errorf("ScalingActive message lacks %q:\n%s", w, cond.Message)
				}
			}
			// A few more syncs under the outage, in which a wrong scale would show.
			eventually(t, time.Minute, "run asked heapster three more times", func(context.Context) error {
				reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
				if err != nil {
					return err
				}
				n := 0
				for _, r := range reqs {
					if r.Resource == "services" && r.Subresource == "proxy" {
						n++
					}
				}
				if n < 5 { // explain's one, the sync that set the condition, three more
					return fmt.Errorf("%d service proxy requests so far", n)
				}
				return nil
			})
			hsNoScaleWrites(t, mark, user, ns)
		})
	}
}
