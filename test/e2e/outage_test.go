//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// outageFor is how long the API server stays down: well past run's renew deadline (2s) and
// lease duration (4s), so that run loses the Lease and the Lease expires.
const outageFor = 8 * time.Second

// outageLeaseWrites keeps the applied writes of leases among reqs.
func outageLeaseWrites(reqs []cluster.AuditRequest) []cluster.AuditRequest {
	var out []cluster.AuditRequest
	for _, r := range reqs {
		if r.IsWrite() && r.Resource == "leases" && r.Code/100 == 2 {
			out = append(out, r)
		}
	}
	return out
}

// TestOutageLongerThanTheRenewDeadlineRunCampaignsAgainAndWritesAgain is not parallel: it
// stops the API server every test uses. run loses the Lease during the outage; it must stay
// up, write nothing until it holds the Lease again, take it back under the same identity
// (nobody else took it over), and apply a change made after the restart.
func TestOutageLongerThanTheRenewDeadlineRunCampaignsAgainAndWritesAgain(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "outage")
	const user = "e2e:kubectl-hpa-outage"
	// Below minReplicas: decisions that need no metrics, so writes come at once.
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	createHPA(t, ns, hpaSpec{min: 2})
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period=1s", "-o", "json",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms")
	waitSpecReplicas(t, ns, 2)
	before, err := lifeGetLease(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	holder, transitions := ptr.Deref(before.Spec.HolderIdentity, ""), ptr.Deref(before.Spec.LeaseTransitions, 0)
	if holder == "" || !strings.Contains(r.out.String(), holder) {
		t.Fatalf("the Lease holder %q is not this run", holder)
	}

	restore := faultOutage(t, "the API server", shared.StopAPIServer, func() error { return shared.StartAPIServer(ctx) })
	// Everything after this mark was sent after the restart.
	down, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(outageFor)
	faultAlive(t, r)
	restore()

	var reacquired cluster.AuditRequest
	eventually(t, time.Minute, "run writes the Lease again", func(context.Context) error {
		w := outageLeaseWrites(pluginWrites(t, down, user))
		if len(w) == 0 {
			return errors.New("no Lease write since the restart")
		}
		reacquired = w[0]
		return nil
	})
	after, err := lifeGetLease(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if h, n := ptr.Deref(after.Spec.HolderIdentity, ""), ptr.Deref(after.Spec.LeaseTransitions, 0); h != holder || n != transitions {
		t.Errorf("Lease after the outage: holder %q, leaseTransitions %d; want the same run, %q, %d", h, n, holder, transitions)
	}

	// A change made after the restart: the run that holds the Lease again applies it.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
		hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		hpa.Spec.MinReplicas = ptr.To[int32](3)
		_, err = hpas.Update(ctx, hpa, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitSpecReplicas(t, ns, 3)
	faultAlive(t, r)

	var early []cluster.AuditRequest
	scales := 0
	for _, w := range pluginWrites(t, down, user) {
		if w.Resource == "leases" {
			continue
		}
		if w.Received.Before(reacquired.Received) {
			early = append(early, w)
		}
		if w.Resource == "deployments" && w.Subresource == "scale" && w.Code/100 == 2 {
			scales++
		}
	}
	if len(early) > 0 {
		t.Errorf("run wrote after the restart before it held the Lease again (%s):\n%s", reacquired, cluster.SummarizeAudit(early))
	}
	if scales != 1 {
		t.Errorf("run's applied scale writes since the restart: %d, want exactly 1 (to minReplicas 3)\n%s", scales, cluster.SummarizeAudit(pluginWrites(t, down, user)))
	}
	// The one line saying why run stopped writing.
	out := r.out.String()
	for _, want := range []string{"lost Lease " + ns + "/kubectl-hpa: ", "; stopped writing, campaigning for it again", "renewing it failed for the renew deadline (2s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("run's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "another kubectl hpa run took over") {
		t.Errorf("run blames another run for an outage:\n%s", out)
	}
}

// TestOutageMetricsServerDownIsReportedUnavailableNotUninstalled is not parallel: it stops
// the metrics-server every test uses. While the APIService is registered but unavailable,
// every failed sync's ScalingActive message quotes the server's answer, as upstream's does,
// and never tells to install what is installed.
func TestOutageMetricsServerDownIsReportedUnavailableNotUninstalled(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t, "outage-metrics")
	const user = "e2e:kubectl-hpa-outage-metrics"
	loadedWorkload(t, ns, 2, 80)
	createHPA(t, ns, hpaSpec{})
	r := startRun(t, pluginAs(t, user), "-n", ns, "--sync-period=1s", "-o", "json")
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	restore := faultOutage(t, "metrics-server", func() error { return shared.StopMetricsServer(ctx) }, func() error { return shared.StartMetricsServer(ctx) })
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	// Several failed syncs after the first: the message must not change its story.
	faultWaitMetricsSyncs(t, mark, user, 4, false)
	faultAlive(t, r)
	cond := faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric")
	const wantPrefix = "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server is currently unable to handle the request"
	if !strings.HasPrefix(cond.Message, wantPrefix) || !strings.Contains(cond.Message, "registered but unavailable") {
		t.Errorf("ScalingActive message %q, want %q... saying the APIService is registered but unavailable", cond.Message, wantPrefix)
	}
	if strings.Contains(cond.Message, "install") || strings.Contains(cond.Message, "not served") {
		t.Errorf("ScalingActive message %q calls an unavailable metrics API uninstalled", cond.Message)
	}
	restore()
	faultWaitCondition(t, ns, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound")
}
