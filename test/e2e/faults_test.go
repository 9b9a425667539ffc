//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
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

	restore := faultOutage(t, "the API server", shared.StopAPIServer, func() error { return shared.StartAPIServer(ctx) })
	time.Sleep(3 * faultSync) // several syncs, each failing to read metrics and to write
	faultAlive(t, r)
	restore()
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

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	phase("run decides from metrics; stopping metrics-server")
	restore := faultOutage(t, "metrics-server", func() error { return shared.StopMetricsServer(ctx) }, func() error { return shared.StartMetricsServer(ctx) })
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
	// explain, started during the outage, keeps to the registered metrics API (it does not
	// fall back to the Heapster service the cluster also has) and fails rather than
	// printing an explanation and exiting 0.
	code, stdout, stderr := hsRunExit(ctx, pluginAs(t, user), "hpa", "explain", "web", "-n", ns)
	if code != 1 || !strings.Contains(stderr, "metrics.k8s.io/v1") || !strings.Contains(stderr, "unavailable") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("explain while metrics-server is down: exit %d, stderr %q; want 1 and one line naming the unavailable metrics API; stdout:\n%s", code, stderr, stdout)
	}
	t.Logf("explain while metrics-server is down: exit %d: %s", code, stderr)

	phase("run held through the outage; starting metrics-server")
	restore()
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

// TestFaultConcurrentHPAWriterConflictIsRetriedAndNothingIsLost: another client changes the
// HPA's labels, annotations and spec.maxReplicas between run's read of the HPA and run's status
// write. The test makes that happen every time rather than hoping for it: run reads metrics from
// a Heapster URL the test serves (lifeHeapster), which holds run's first reconcile after it took
// the HPA from its cache and before it writes status, until the other writer is done.
func TestFaultConcurrentHPAWriterConflictIsRetriedAndNothingIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "fault-conflict")
	phase := faultPhases(t)
	const user = "e2e:kubectl-hpa-fault-conflict"
	loadedWorkload(t, ns, 2, 80)
	// No status yet, so run's first reconcile writes one.
	createHPA(t, ns, hpaSpec{})
	hold := newLifeHold(user)
	defer hold.Release()
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period="+faultSync.String(), "-o", "json",
		"--metrics-source=heapster", "--heapster-url="+lifeHeapster(t, ns, hold))
	select {
	case what := <-hold.arrived:
		phase("run's first reconcile is held at " + what)
	case err := <-r.done:
		t.Fatalf("run exited before its metrics read was held: %v\n%s", err, r.out.String())
	case <-time.After(90 * time.Second):
		t.Fatal("run read no metrics within 90s")
	}

	// The other writer's changes, one write each: every label and annotation under a key of its
	// own, so that losing any one write shows; maxReplicas, a new generation each time, stays
	// above the decision.
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	maxes := []int32{11, 12, 13}
	for i, m := range maxes {
		hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hpa.Status.ObservedGeneration != nil {
			t.Fatalf("the HPA has a status while run's first reconcile is held: %+v", hpa.Status)
		}
		metav1.SetMetaDataLabel(&hpa.ObjectMeta, faultWriterKey(i), "set")
		metav1.SetMetaDataAnnotation(&hpa.ObjectMeta, "e2e.kubectl-hpa.io/"+faultWriterKey(i), "set")
		hpa.Spec.MaxReplicas = m
		if _, err := hpas.Update(ctx, hpa, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("the other writer's write %d: %v", i+1, err)
		}
	}
	hold.Release()
	phase("the other writer is done; run's metrics read is released")

	// Run's first status write carries the resourceVersion it read before the other writer's
	// writes: 409. updateStatus (controller.go) then re-reads the HPA and puts the same status
	// on the fresh copy: 200.
	want := []string{"update status 409", "get 200", "update status 200"}
	var got []string
	eventually(t, time.Minute, "run's status write conflicts, run re-reads the HPA and writes status again", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: user, Namespace: ns})
		if err != nil {
			return err
		}
		got = faultHPARequests(reqs)
		if len(got) < len(want) {
			return fmt.Errorf("run's HPA requests so far %v", got)
		}
		got = got[:len(want)]
		return nil
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("run's first HPA requests (-want +got):\n%s", diff)
	}
	phase("run's status write conflicted and was retried")

	// Run catches up with the writer's last generation, and everything the writer set is there.
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
	for i := range maxes {
		k := faultWriterKey(i)
		if hpa.Labels[k] != "set" || hpa.Annotations["e2e.kubectl-hpa.io/"+k] != "set" {
			t.Errorf("the other writer's write %d is lost: labels %v, annotations %v", i+1, hpa.Labels, hpa.Annotations)
		}
	}
	if hpa.Spec.MaxReplicas != maxes[len(maxes)-1] {
		t.Errorf("maxReplicas %d, want the other writer's last %d", hpa.Spec.MaxReplicas, maxes[len(maxes)-1])
	}
	if w := faultScaleWrites(faultRequests(t, mark, user)); len(w) != 0 {
		t.Errorf("run scaled while only the HPA's limits above its decision changed:\n%s", cluster.SummarizeAudit(w))
	}
}

func faultWriterKey(i int) string { return fmt.Sprintf("fault-writer-%d", i+1) }

// faultHPARequests lists run's status updates of the HPA from the first one on, with the
// plain reads of the HPA among them, as "verb [status] code"; it stops at a request still
// in flight (no code yet), whose place is known but not its outcome.
func faultHPARequests(reqs []cluster.AuditRequest) []string {
	var out []string
	for _, q := range reqs {
		if q.Resource != "horizontalpodautoscalers" || q.APIGroup != "autoscaling" {
			continue
		}
		status := q.Verb == "update" && q.Subresource == "status"
		if !status && (len(out) == 0 || q.Verb != "get" || q.Subresource != "") {
			continue
		}
		if q.Code == 0 {
			break
		}
		if status {
			out = append(out, fmt.Sprintf("update status %d", q.Code))
		} else {
			out = append(out, fmt.Sprintf("get %d", q.Code))
		}
	}
	return out
}

// faultOutage stops a component every test shares and returns what brings it back; should the
// test end before calling it, cleanup brings it back for the tests that follow.
func faultOutage(t *testing.T, what string, stop, start func() error) (restore func()) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatalf("stopping %s: %v", what, err)
	}
	down := true
	t.Cleanup(func() {
		if down {
			if err := start(); err != nil {
				t.Errorf("starting %s again after a failed test: %v", what, err)
			}
		}
	})
	return func() {
		t.Helper()
		if err := start(); err != nil {
			t.Fatalf("starting %s again: %v", what, err)
		}
		down = false
	}
}
