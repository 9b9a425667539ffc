//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Fault tests: `kubectl hpa run` while a component it depends on fails. Every outcome is read
// from the API server (objects, conditions, events) and its audit log (who sent which request
// and what it got back), never from run's own output.

const (
	// faultSync is run's --sync-period in these tests: short, so that several periods fit in
	// a fault of a few seconds.
	faultSync = 2 * time.Second
	// faultWriterPause is the concurrent HPA writer's pause between two of its writes.
	faultWriterPause = 100 * time.Millisecond
	// faultRequestMilli is the CPU request of every pod of deploymentSpec.
	faultRequestMilli = 100
)

// faultUpstreamScaleUp is the sequence of scale writes upstream's controller makes for one
// CPU utilization metric of an HPA without behavior, starting from current pods that are all
// ready with fresh samples, while the pods use totalMilli in all (replica_calculator.go,
// horizontal.go): utilization is the integer percentage of the pods' total request; a ratio
// within the 10% tolerance, or at or below 1, keeps the count (pods added by a step count at
// zero usage until they have a sample, which makes the ratio over all pods the one that
// decides); otherwise ceil(ratio × pods), limited by the scale-up limit of an HPA without
// behavior, max(2 × current, 4), and by maxReplicas.
func faultUpstreamScaleUp(current int32, totalMilli int64, target, maxReplicas int32) []int32 {
	var steps []int32
	for {
		utilization := totalMilli * 100 / (int64(current) * faultRequestMilli)
		ratio := float64(utilization) / float64(target)
		if math.Abs(1-ratio) <= 0.1 || ratio <= 1 {
			return steps
		}
		desired := min(int32(math.Ceil(ratio*float64(current))), max(2*current, 4), maxReplicas)
		if desired == current {
			return steps
		}
		steps = append(steps, desired)
		current = desired
	}
}

func faultIsMetricsRead(r cluster.AuditRequest) bool {
	return r.APIGroup == "metrics.k8s.io" && r.Resource == "pods" && (r.Verb == "list" || r.Verb == "get")
}

// faultScaleWrites are the writes to Deployments or their scale among reqs.
func faultScaleWrites(reqs []cluster.AuditRequest) []cluster.AuditRequest {
	var out []cluster.AuditRequest
	for _, r := range reqs {
		if r.IsWrite() && r.Resource == "deployments" {
			out = append(out, r)
		}
	}
	return out
}

// faultApplied keeps the requests the API server carried out (2xx).
func faultApplied(reqs []cluster.AuditRequest) []cluster.AuditRequest {
	var out []cluster.AuditRequest
	for _, r := range reqs {
		if r.Code >= 200 && r.Code < 300 {
			out = append(out, r)
		}
	}
	return out
}

func faultRequests(t *testing.T, mark cluster.AuditMark, user string) []cluster.AuditRequest {
	t.Helper()
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// faultMetricsSyncs splits user's requests into run's metrics attempts, one per sync: a read
// of pods.metrics.k8s.io, or a discovery of the API groups (run asks which metrics versions
// are served again after a failed read, and reads only when one is) together with the read
// that may follow it. Each attempt is true when it got metrics (200).
func faultMetricsSyncs(reqs []cluster.AuditRequest) []bool {
	var syncs []bool
	discovered := false
	for _, r := range reqs {
		switch {
		case r.Verb == "get" && r.Resource == "" && strings.HasPrefix(r.RequestURI, "/apis") && !strings.HasPrefix(r.RequestURI, "/apis/"):
			syncs = append(syncs, false)
			discovered = true
		case faultIsMetricsRead(r):
			if !discovered {
				syncs = append(syncs, false)
			}
			discovered = false
			syncs[len(syncs)-1] = r.Code == 200
		}
	}
	return syncs
}

// faultWaitMetricsSyncs waits until run has made n metrics attempts since mark that got
// metrics (ok) or did not (!ok).
func faultWaitMetricsSyncs(t *testing.T, mark cluster.AuditMark, user string, n int, ok bool) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("%s made %d metrics attempts that succeeded=%t", user, n, ok), func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user})
		if err != nil {
			return err
		}
		got := 0
		for _, s := range faultMetricsSyncs(reqs) {
			if s == ok {
				got++
			}
		}
		if got < n {
			return fmt.Errorf("%d so far", got)
		}
		return nil
	})
}

// faultAlive fails the test when run has exited.
func faultAlive(t *testing.T, r *runProcess) {
	t.Helper()
	if len(r.done) != 0 {
		t.Fatalf("kubectl hpa run exited during the fault:\n%s", r.out.String())
	}
}

func faultHPA(t *testing.T, ns string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hpa
}

// faultWaitCondition waits until the HPA's status carries the condition with status and reason.
func faultWaitCondition(t *testing.T, ns string, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
	t.Helper()
	var found autoscalingv2.HorizontalPodAutoscalerCondition
	eventually(t, time.Minute, fmt.Sprintf("HPA %s/web has %s=%s (%s)", ns, typ, status, reason), func(ctx context.Context) error {
		hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range hpa.Status.Conditions {
			if c.Type == typ {
				if c.Status == status && c.Reason == reason {
					found = c
					return nil
				}
				return fmt.Errorf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no %s condition in %+v", typ, hpa.Status.Conditions)
	})
	return found
}

// faultPhases returns a logger of the test's phases with the time since the test started,
// to see where a fault test spends its wall time (-v).
func faultPhases(t *testing.T) func(string) {
	start := time.Now()
	return func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
}

func faultSpecReplicas(t *testing.T, ns string) int32 {
	t.Helper()
	s, err := shared.Client().AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s.Spec.Replicas
}

// TestFaultAPIServerOutageRunResumesAndDecidesAsUpstream is not parallel: it stops the API
// server every test uses.
func TestFaultAPIServerOutageRunResumesAndDecidesAsUpstream(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fault-apiserver")
	phase := faultPhases(t)
	const (
		user        = "e2e:kubectl-hpa-fault-apiserver"
		load        = 280
		maxReplicas = 12
		first       = 50 // % target before the outage
		then        = 32 // % target set after it
	)
	loadedWorkload(t, ns, 2, load)
	createHPA(t, ns, hpaSpec{max: maxReplicas, utilization: first})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	// No scale-down window: a decision taken from a failed or half-synced read (pods or
	// metrics missing, taken as idle) would scale down at once and show in the audit log.
	// The Lease keeps its default timing: should the outage outlast the renew deadline, run
	// campaigns again and carries on (outage_test.go proves that part on its own).
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period="+faultSync.String(),
		"--downscale-stabilization=0s", "-o", "json")
	beforeSteps := faultUpstreamScaleUp(2, load, first, maxReplicas)
	before := beforeSteps[len(beforeSteps)-1]
	waitSpecReplicas(t, ns, before)
	phase(fmt.Sprintf("scaled to %d; stopping the API server", before))

	stopped := true
	t.Cleanup(func() {
		if stopped {
			if err := shared.StartAPIServer(ctx); err != nil {
				t.Errorf("starting the API server again after a failed test: %v", err)
			}
		}
	})
	if err := shared.StopAPIServer(); err != nil {
		stopped = false
		t.Fatal(err)
	}
	time.Sleep(3 * faultSync) // several syncs, each failing to read metrics and to write
	faultAlive(t, r)
	if err := shared.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = false
	phase("API server ready again")
	restarted, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}

	// Run resumes by itself: its syncs read metrics again.
	faultWaitMetricsSyncs(t, restarted, user, 2, true)
	faultAlive(t, r)
	if got := faultSpecReplicas(t, ns); got != before {
		t.Errorf("after the outage the Deployment has %d replicas, want %d (upstream's for %dm on %d pods at %d%%)", got, before, load, before, first)
	}
	phase("run reads metrics again")

	// And it decides again from a change made after the outage: its HPA watch is back. The
	// change comes once every pod has a sample taken after its readiness, so that upstream
	// takes one step to the new count.
	waitMetricsAfterReadiness(t, ns)
	changed, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hpa := faultHPA(t, ns)
		target := int32(then)
		hpa.Spec.Metrics[0].Resource.Target.AverageUtilization = &target
		_, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Update(ctx, hpa, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	afterSteps := faultUpstreamScaleUp(before, load, then, maxReplicas)
	after := afterSteps[len(afterSteps)-1]
	waitSpecReplicas(t, ns, after)
	phase(fmt.Sprintf("scaled to %d", after))
	// Let run sync a few more times from every pod's clean samples: a wrong decision would
	// be another scale write.
	waitMetricsAfterReadiness(t, ns)
	steady, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	faultWaitMetricsSyncs(t, steady, user, 2, true)
	faultAlive(t, r)
	phase("two more syncs from clean samples")

	if got := faultSpecReplicas(t, ns); got != after {
		t.Errorf("final replicas %d, want %d (upstream's for %dm on %d pods at %d%%)", got, after, load, before, then)
	}
	writes := faultScaleWrites(faultRequests(t, mark, user))
	applied := faultApplied(writes)
	if want := len(beforeSteps) + len(afterSteps); len(applied) != want {
		t.Errorf("run's applied Deployment writes: %d, want exactly %d (upstream's steps 2 -> %v before the outage, %d -> %v after):\n%s",
			len(applied), want, beforeSteps, before, afterSteps, cluster.SummarizeAudit(writes))
	}
	for _, w := range writes {
		if w.Subresource != "scale" || w.Verb != "update" || (w.Code != 200 && w.Code != 409) {
			t.Errorf("unexpected Deployment write by run (want scale updates, retried only on conflict): %s", w)
		}
	}
	// Nothing was decided from the outage: between the restart and the HPA change, no scale
	// write at all.
	if w := faultScaleWrites(faultRequests(t, restarted, user)); len(w) != len(faultScaleWrites(faultRequests(t, changed, user))) {
		t.Errorf("run wrote the Deployment after the restart before the HPA changed:\n%s", cluster.SummarizeAudit(w))
	}
	// The outcome agrees with explain's reading of the same cluster.
	if e := explainJSON(t, pluginAs(t, user), ns); e.Decision == nil || e.Decision.DesiredReplicas != after {
		t.Errorf("explain decides %+v, want %d replicas", e.Decision, after)
	}
}

// TestFaultMetricsAPIUnavailableStopsScalingUntilItIsBack is not parallel: it stops the
// metrics-server every test uses.
func TestFaultMetricsAPIUnavailableStopsScalingUntilItIsBack(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "fault-metrics")
	phase := faultPhases(t)
	const (
		user = "e2e:kubectl-hpa-fault-metrics"
		low  = 80  // 40% of request at a 50% target: hold
		high = 280 // what the pods use while metrics are unavailable
	)
	loadedWorkload(t, ns, 2, low)
	createHPA(t, ns, hpaSpec{})
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period="+faultSync.String(), "-o", "json")
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	const hold = 2
	if steps := faultUpstreamScaleUp(hold, low, 50, 10); len(steps) != 0 {
		t.Fatalf("test set-up: upstream would scale %d pods at %dm to %v, want a hold", hold, low, steps)
	}

	stopped := true
	t.Cleanup(func() {
		if stopped {
			if err := shared.StartMetricsServer(ctx); err != nil {
				t.Errorf("starting metrics-server again after a failed test: %v", err)
			}
		}
	})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	phase("run decides from metrics; stopping metrics-server")
	if err := shared.StopMetricsServer(ctx); err != nil {
		stopped = false
		t.Fatal(err)
	}
	phase("APIService not Available")
	// Were the metrics read, this load would scale the Deployment up.
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}, cluster.Load{CPUMilli: high, MemoryBytes: 2 * 64 << 20})

	cond := faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	// Upstream's wording (horizontal.go, replica_calculator.go, metrics/client.go) up to the
	// cause, which is the metrics client's own.
	const wantPrefix = "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API"
	if !strings.HasPrefix(cond.Message, wantPrefix) {
		t.Errorf("ScalingActive message %q, want upstream's %q...", cond.Message, wantPrefix)
	}
	faultWaitMetricsSyncs(t, mark, user, 3, false) // several syncs without metrics
	faultAlive(t, r)
	events, err := shared.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "FailedGetResourceMetric").String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Error("no FailedGetResourceMetric event recorded")
	}
	if w := faultScaleWrites(faultRequests(t, mark, user)); len(w) != 0 {
		t.Errorf("run wrote the Deployment while metrics were unavailable:\n%s", cluster.SummarizeAudit(w))
	}
	if got := faultSpecReplicas(t, ns); got != hold {
		t.Errorf("replicas %d while metrics were unavailable, want %d", got, hold)
	}

	phase("run held through the outage; starting metrics-server")
	if err := shared.StartMetricsServer(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = false
	phase("APIService Available and serving")
	available, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	steps := faultUpstreamScaleUp(hold, high, 50, 10)
	want := steps[len(steps)-1]
	waitSpecReplicas(t, ns, want)
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
	phase(fmt.Sprintf("scaled to %d, ScalingActive=True", want))

	// Within two sync periods of the metrics API serving again: of run's syncs since then,
	// the first or the second got metrics, and every later one did too. Counted in syncs
	// (one metrics attempt each in the audit log), not in seconds.
	reqs := faultRequests(t, available, user)
	syncs := faultMetricsSyncs(reqs)
	firstOK := slices.Index(syncs, true)
	if firstOK < 0 || firstOK > 1 {
		t.Errorf("run's metrics attempts after the metrics API was back succeeded %v: want a success within its first two syncs", syncs)
	}
	if firstOK >= 0 && slices.Contains(syncs[firstOK:], false) {
		t.Errorf("run's metrics attempts after recovery succeeded %v: want no failure after the first success", syncs)
	}
	writes := faultScaleWrites(reqs)
	if applied := faultApplied(writes); len(applied) != len(steps) {
		t.Errorf("run's Deployment writes after recovery, want upstream's %d scale updates (%d -> %v):\n%s", len(steps), hold, steps, cluster.SummarizeAudit(writes))
	}
}

// TestFaultConcurrentHPAWriterConflictIsRetriedAndNothingIsLost: another client rewrites the
// HPA's labels, annotations and spec.maxReplicas in a tight loop (about ten writes a second)
// while run writes status.
func TestFaultConcurrentHPAWriterConflictIsRetriedAndNothingIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fault-conflict")
	phase := faultPhases(t)
	const user = "e2e:kubectl-hpa-fault-conflict"
	loadedWorkload(t, ns, 2, 80)
	createHPA(t, ns, hpaSpec{})
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period="+faultSync.String(), "-o", "json")
	phase("workload ready; run and the concurrent writer start")

	// The writer changes spec.maxReplicas every time (a new generation, so run writes a new
	// status.observedGeneration each time), between two values above the decision.
	type written struct {
		seq int
		max int32
	}
	var (
		mu   sync.Mutex
		last written
		wErr error
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	go func() {
		defer close(done)
		for seq := 1; ; seq++ {
			select {
			case <-stop:
				return
			default:
			}
			hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				mu.Lock()
				wErr = err
				mu.Unlock()
				return
			}
			s := strconv.Itoa(seq)
			if hpa.Labels == nil {
				hpa.Labels = map[string]string{}
			}
			if hpa.Annotations == nil {
				hpa.Annotations = map[string]string{}
			}
			hpa.Labels["fault-writer"] = s
			hpa.Annotations["e2e.kubectl-hpa.io/fault-writer"] = "seq-" + s
			hpa.Spec.MaxReplicas = 10 + int32(seq%2)
			if _, err := hpas.Update(ctx, hpa, metav1.UpdateOptions{}); err != nil {
				if apierrors.IsConflict(err) {
					continue // run wrote status meanwhile; read again
				}
				mu.Lock()
				wErr = err
				mu.Unlock()
				return
			}
			mu.Lock()
			last = written{seq, hpa.Spec.MaxReplicas}
			mu.Unlock()
			// Faster than about ten writes a second, a writer starves every read-modify-write
			// of the HPA on a busy API server (its own as much as run's): a conflict needs a
			// write landing between run's read and run's write, not a write every millisecond.
			time.Sleep(faultWriterPause)
		}
	}()
	stopWriter := sync.OnceFunc(func() { close(stop); <-done })
	t.Cleanup(stopWriter)

	// Run's status write met a conflict, re-read the HPA, and wrote again successfully.
	isStatusWrite := func(q cluster.AuditRequest) bool {
		return q.Verb == "update" && q.Resource == "horizontalpodautoscalers" && q.Subresource == "status"
	}
	eventually(t, 90*time.Second, "run's status write conflicts and is retried", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user, Namespace: ns})
		if err != nil {
			return err
		}
		conflict, reread := false, false
		for _, q := range reqs {
			switch {
			case isStatusWrite(q) && q.Code == 409:
				conflict = true
			case conflict && q.Verb == "get" && q.Resource == "horizontalpodautoscalers" && q.Subresource == "":
				reread = true
			case conflict && reread && isStatusWrite(q) && q.Code == 200:
				return nil
			}
		}
		return fmt.Errorf("conflict %t, re-read after it %t, no successful status write after them yet", conflict, reread)
	})
	stopWriter()
	phase("run's status write conflicted and was retried")
	mu.Lock()
	final, writerErr := last, wErr
	mu.Unlock()
	if writerErr != nil {
		t.Fatalf("the concurrent writer failed: %v", writerErr)
	}
	if final.seq == 0 {
		t.Fatal("the concurrent writer never got a write through")
	}

	// Run catches up with the writer's last generation, then the writer's changes are all there.
	eventually(t, time.Minute, "run's status observes the writer's last generation", func(ctx context.Context) error {
		hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hpa.Status.ObservedGeneration == nil || *hpa.Status.ObservedGeneration != hpa.Generation {
			return fmt.Errorf("generation %d, observed %v", hpa.Generation, hpa.Status.ObservedGeneration)
		}
		return nil
	})
	faultAlive(t, r)
	hpa := faultHPA(t, ns)
	s := strconv.Itoa(final.seq)
	if hpa.Labels["fault-writer"] != s || hpa.Annotations["e2e.kubectl-hpa.io/fault-writer"] != "seq-"+s || hpa.Spec.MaxReplicas != final.max {
		t.Errorf("the writer's last write (seq %d, maxReplicas %d) is not what the HPA holds: labels %v, annotations %v, maxReplicas %d",
			final.seq, final.max, hpa.Labels, hpa.Annotations, hpa.Spec.MaxReplicas)
	}
	if w := faultScaleWrites(faultRequests(t, mark, user)); len(w) != 0 {
		t.Errorf("run scaled while only the HPA's limits above its decision changed:\n%s", cluster.SummarizeAudit(w))
	}
}
