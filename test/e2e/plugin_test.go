//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// hpaSpec is a valid-by-default HPA "web" on Deployment "web": 1..10 replicas, cpu at 50%.
type hpaSpec struct {
	min, max         int32
	utilization      int32
	downWindowSecond *int32
}

func (h hpaSpec) build(ns string) *autoscalingv2.HorizontalPodAutoscaler {
	if h.min == 0 {
		h.min = 1
	}
	if h.max == 0 {
		h.max = 10
	}
	if h.utilization == 0 {
		h.utilization = 50
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &h.min,
			MaxReplicas:    h.max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &h.utilization},
			}}},
		},
	}
	if h.downWindowSecond != nil {
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: h.downWindowSecond},
		}
	}
	return hpa
}

func createHPA(t *testing.T, ns string, h hpaSpec) {
	t.Helper()
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), h.build(ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// loadedWorkload creates Deployment web with replicas pods requesting 100m each, gives it a
// total load, and waits until metrics-server reports every pod at its share.
func loadedWorkload(t *testing.T, ns string, replicas int32, totalMilli int64) {
	t.Helper()
	createDeployment(t, ns, deploymentSpec{replicas: replicas})
	sel := map[string]string{"app": "web"}
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: totalMilli, MemoryBytes: int64(replicas) * 64 << 20})
	waitPodCPU(t, ns, sel, int(replicas), totalMilli/int64(replicas))
}

// pluginAs returns a kubectl authenticated as a user of its own (in the plugin's group), so that
// tests running side by side can each count only their own plugin's requests.
func pluginAs(t *testing.T, user string) cluster.Kubectl {
	t.Helper()
	kubeconfig, err := shared.KubeconfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	k := plugin()
	k.Kubeconfig = kubeconfig
	return k
}

// pluginWrites returns the write requests user made since mark.
func pluginWrites(t *testing.T, mark cluster.AuditMark, user string) []cluster.AuditRequest {
	t.Helper()
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user, WritesOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func explainJSON(t *testing.T, k cluster.Kubectl, ns string, extra ...string) v1alpha1.Explanation {
	t.Helper()
	args := append([]string{"hpa", "explain", "web", "-n", ns, "-o", "json"}, extra...)
	out, err := k.Run(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	var e v1alpha1.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("decoding explain output: %v\n%s", err, out)
	}
	return e
}

func TestExplainComputesTheDecisionFromLiveMetricsAndWritesNothing(t *testing.T) {
	t.Parallel()
	// 2 pods at 90m of 100m requested: 90% against a 50% target, ratio 1.8, so ceil(3.6) = 4
	// replicas, just inside the scale-up limit of an HPA without behavior (max(2*2, 4)); a
	// millicore either way (metrics-server's rates) cannot change that.
	const wantDesired = 4
	cases := []struct {
		name   string
		source string
	}{
		{"resource metrics from metrics-server", "metrics-api"},
		{"resource metrics from Heapster through the service proxy", "heapster"},
	}
	ns := namespace(t, "explain")
	const user = "e2e:kubectl-hpa-explain"
	k := pluginAs(t, user)
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.source == "metrics-api" {
				waitMetricsAfterReadiness(t, ns)
			}
			if tc.source == "heapster" {
				// Heapster's samples span a 60s window: like upstream, explain counts a
				// young pod's CPU only once its readiness is older than that window.
				hrWaitPods(t, cluster.HeapsterService, ns, 90)
			}
			mark, err := shared.AuditMark()
			if err != nil {
				t.Fatal(err)
			}
			e := explainJSON(t, k, ns, "--metrics-source="+tc.source)
			if e.Error != nil {
				t.Fatalf("explain error: %+v", *e.Error)
			}
			if e.Decision == nil || e.Decision.DesiredReplicas != wantDesired || e.Decision.CurrentReplicas != 2 {
				t.Errorf("decision %+v, want 2 -> %d", e.Decision, wantDesired)
			}
			if len(e.Metrics) != 1 || e.Metrics[0].Ratio == nil || *e.Metrics[0].Ratio < 1.75 || *e.Metrics[0].Ratio > 1.85 {
				t.Errorf("metrics %+v, want one with ratio 1.8", e.Metrics)
			}
			if w := pluginWrites(t, mark, user); len(w) != 0 {
				t.Errorf("explain wrote %d times:\n%s", len(w), cluster.SummarizeAudit(w))
			}
		})
	}
	t.Run("text output names the decision", func(t *testing.T) {
		out, err := k.Run(context.Background(), "hpa", "explain", "web", "-n", ns)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, out, "web", fmt.Sprint(wantDesired))
	})
}

// runProcess is a `kubectl hpa run` in the background; its output is collected.
type runProcess struct {
	out  syncBuffer
	done chan error
	stop func() string
}

func startRun(t *testing.T, k cluster.Kubectl, args ...string) *runProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.Command(ctx, append([]string{"hpa", "run"}, args...)...)
	r := &runProcess{done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { r.done <- cmd.Wait() }()
	var once sync.Once
	r.stop = func() string {
		once.Do(func() { cancel(); <-r.done })
		return r.out.String()
	}
	t.Cleanup(func() {
		out := r.stop()
		if t.Failed() {
			t.Logf("kubectl hpa run %s output:\n%s", strings.Join(args, " "), out)
		}
	})
	return r
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitSpecReplicas(t *testing.T, ns string, want int32) {
	t.Helper()
	eventually(t, 3*time.Minute, fmt.Sprintf("deployment %s/web is scaled to %d", ns, want), func(ctx context.Context) error {
		s, err := shared.Client().AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Spec.Replicas != want {
			return fmt.Errorf("spec.replicas %d", s.Spec.Replicas)
		}
		return nil
	})
	waitReadyReplicas(t, ns, "web", want)
}

// waitMetricsAfterReadiness waits until metrics.k8s.io has, for every web pod, a sample whose
// window starts after the pod became ready: before that, upstream (and so explain) rightly
// treats a young pod's CPU as unready.
func waitMetricsAfterReadiness(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 90*time.Second, "pod metrics cover a full window after readiness", func(ctx context.Context) error {
		return samplesAfterReadiness(ctx, ns, map[string]string{"app": "web"})
	})
}

// samplesAfterReadiness says which pod selected by sel is ready and has no metrics.k8s.io sample
// whose window starts at or after its readiness (nil when none): within the CPU initialization
// period the controller counts a pod's CPU only from such a sample.
func samplesAfterReadiness(ctx context.Context, ns string, sel map[string]string) error {
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		return err
	}
	selector := labels.SelectorFromSet(sel).String()
	list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	sampled := map[string]time.Time{}
	for _, pm := range list.Items {
		sampled[pm.Name] = pm.Timestamp.Add(-pm.Window.Duration)
	}
	pods, err := shared.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodReady {
				continue
			}
			if start, ok := sampled[p.Name]; !ok || start.Before(c.LastTransitionTime.Time) {
				return fmt.Errorf("pod %s: ready since %s, newest sample window starts %s", p.Name, c.LastTransitionTime, start)
			}
		}
	}
	return nil
}

func TestRunScalesUpWhenLoadRisesAndDownAfterStabilization(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "run")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	w := cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}
	// 180m over pods requesting 100m at a 50% target: one pod at 180% asks for ceil(3.6) = 4,
	// and four at 45% stay there (ceil(4 * 0.9) = 4).
	shared.Load().Set(w, cluster.Load{CPUMilli: 180, MemoryBytes: 64 << 20})
	createHPA(t, ns, hpaSpec{max: 6})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	const user = "e2e:kubectl-hpa-run"
	// run also records every sync; once Ctrl-C stopped it, the recording replays exactly.
	recorded := filepath.Join(t.TempDir(), "run.jsonl.gz")
	k := pluginAs(t, user)
	r := startRun(t, k, "-n", ns, "--sync-period=2s", "--downscale-stabilization=10s", "-o", "json", "--record", recorded)

	waitSpecReplicas(t, ns, 4)
	shared.Load().Set(w, cluster.Load{CPUMilli: 40, MemoryBytes: 64 << 20})
	waitSpecReplicas(t, ns, 1)
	checkRecordingReplays(t, k, recorded, r.stop())

	hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hpa.Status.LastScaleTime == nil || len(hpa.Status.Conditions) == 0 || len(hpa.Status.CurrentMetrics) == 0 {
		t.Errorf("HPA status lacks lastScaleTime, conditions or currentMetrics: %+v", hpa.Status)
	}
	out, err := admin().Run(context.Background(), "describe", "hpa", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, out, "SuccessfulRescale", "New size: 4", "New size: 1", "AbleToScale", "ScalingActive")

	writes := pluginWrites(t, mark, user)
	kinds := map[string]bool{}
	for _, r := range writes {
		kinds[r.Verb+" "+r.Resource+"/"+r.Subresource] = true
	}
	for _, want := range []string{"update deployments/scale", "update horizontalpodautoscalers/status"} {
		if !kinds[want] {
			t.Errorf("no %q by the plugin; its writes:\n%s", want, cluster.SummarizeAudit(writes))
		}
	}
}

func TestRunDryRunClientWritesNothing(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "dryrun")
	loadedWorkload(t, ns, 2, 180)
	createHPA(t, ns, hpaSpec{})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	const user = "e2e:kubectl-hpa-dry-run"
	r := startRun(t, pluginAs(t, user), "-n", ns, "--dry-run=client", "--sync-period=2s", "-o", "json")
	eventually(t, 60*time.Second, "dry run reports a decision to scale to 4", func(context.Context) error {
		if out := r.out.String(); !strings.Contains(out, `"desiredReplicas":4`) {
			return fmt.Errorf("output so far:\n%s", out)
		}
		return nil
	})
	r.stop()
	if w := pluginWrites(t, mark, user); len(w) != 0 {
		t.Errorf("--dry-run=client wrote %d times:\n%s", len(w), cluster.SummarizeAudit(w))
	}
	s, err := shared.Client().AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Spec.Replicas != 2 {
		t.Errorf("dry run changed replicas to %d", s.Spec.Replicas)
	}
}

func TestSecondRunDoesNotWriteWhileTheFirstHoldsTheLease(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "lease")
	loadedWorkload(t, ns, 2, 280)
	createHPA(t, ns, hpaSpec{})
	startRun(t, pluginAs(t, "e2e:kubectl-hpa-first"), "-n", ns, "--sync-period=2s", "-o", "json")
	waitSpecReplicas(t, ns, 6)

	const second = "e2e:kubectl-hpa-second"
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, pluginAs(t, second), "-n", ns, "--sync-period=2s", "-o", "json")
	// Let the second one try for several sync periods and lease retries.
	eventually(t, 60*time.Second, "the second run has read the lease a few times", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: second})
		if err != nil {
			return err
		}
		leaseReads := 0
		for _, q := range reqs {
			if q.Resource == "leases" && !q.IsWrite() {
				leaseReads++
			}
		}
		if leaseReads < 3 {
			return fmt.Errorf("%d lease reads so far", leaseReads)
		}
		return nil
	})
	out := r.stop()
	if w := pluginWrites(t, mark, second); len(w) != 0 {
		t.Errorf("the second run wrote %d times while the first held the lease:\n%s", len(w), cluster.SummarizeAudit(w))
	}
	// The standby says so in its output, naming the holder (-o json: on stderr).
	if want := "kubectl hpa run: standby: Lease " + ns + "/kubectl-hpa is held by "; !strings.Contains(out, want) {
		t.Errorf("the second run never said it waits for the Lease (want %q):\n%s", want, out)
	}
}

// TestRunLeavesHPAsOfTheUpstreamControllerAlone is not parallel: while kube-controller-manager
// runs its HPA controller, every HPA in the cluster is its. It goes on with the same HPA and
// controller to explainPredictsUpstreamHoldFromPrometheus.
func TestRunLeavesHPAsOfTheUpstreamControllerAlone(t *testing.T) {
	ctx := context.Background()
	if err := shared.RestartControllerManager(ctx, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shared.RestartControllerManager(ctx, false); err != nil {
			t.Errorf("turning the upstream HPA controller off again: %v", err)
		}
	})
	ns := namespace(t, "upstream")
	// Prometheus starts beside the scale-up, for explainPredictsUpstreamHoldFromPrometheus.
	type promStart struct {
		p   *cluster.Prometheus
		up  time.Time
		err error
	}
	promCh := make(chan promStart, 1)
	go func() {
		p, err := shared.Prometheus(ctx)
		promCh <- promStart{p, time.Now(), err}
	}()
	loadedWorkload(t, ns, 2, 280)
	createHPA(t, ns, hpaSpec{})
	waitSpecReplicas(t, ns, 6) // upstream's own decision
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, plugin(), "-n", ns, "--sync-period=2s", "-o", "json")
	eventually(t, 60*time.Second, "run reports the HPA as another controller's", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: cluster.PluginUser, Namespace: ns})
		if err != nil {
			return err
		}
		if len(reqs) < 5 || !strings.Contains(r.out.String(), "pass --force-ownership to write anyway") {
			return fmt.Errorf("%d requests, output %q", len(reqs), r.out.String())
		}
		return nil
	})
	time.Sleep(5 * time.Second) // a few more sync periods in which a fight would show
	out := r.stop()
	var fights []cluster.AuditRequest
	for _, w := range pluginWrites(t, mark, cluster.PluginUser) {
		if w.Resource == "horizontalpodautoscalers" || w.Resource == "deployments" {
			fights = append(fights, w)
		}
	}
	if len(fights) != 0 {
		t.Errorf("run wrote to an HPA or scale the upstream controller owns:\n%s\noutput:\n%s", cluster.SummarizeAudit(fights), out)
	}
	ps := <-promCh
	if ps.err != nil {
		t.Fatal(ps.err)
	}
	explainPredictsUpstreamHoldFromPrometheus(t, ns, ps.p, ps.up)
}
