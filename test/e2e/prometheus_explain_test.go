//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// explainPredictsUpstreamHoldFromPrometheus continues TestRunLeavesHPAsOfTheUpstreamControllerAlone
// on its HPA, which kube-controller-manager (syncing every 5s) has scaled to 6 pods at 280m in
// total: with a 50s scale-down window, the load drops to 210m. As soon as every pod's
// metrics-server sample lies wholly after the drop, explain --prometheus-url replays the window
// from the real Prometheus and predicts the hold and when it ends, as a range;
// kube-controller-manager's own scale write (audit log) must fall within that range, give or take
// one sync, with the count predicted (SuccessfulRescale). Plain explain, at the same moment, says
// its history is reconstructed.
//
// The drop is to 35m a pod, whose recommendation (5) is also that of every sample whose window
// straddles the drop, unless nearly all of the window lies before it (6): the drop comes about
// 2s after a scrape, so that the straddling sample is mostly after it. The replay knows where
// that window lies only to the second (the sample's timestamp), and a straddling sample near
// the 6/5 boundary would make its prediction a coin toss, as it did in a run that dropped 1s
// before a scrape. Explain runs once the samples have settled: it predicts "if the metrics stay
// as they are now", and a straddling sample is replaced at the next scrape. The window is long enough that the hold still
// runs then: its last 6 comes no earlier than a sync before the drop, and the settled sample at
// most three scrapes after it (two, and one more when its second-precision timestamp hides that
// its window began after the drop).
func explainPredictsUpstreamHoldFromPrometheus(t *testing.T, ns string, prom *cluster.Prometheus, promUp time.Time) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	const sync = 5 * time.Second
	window := int32(50)
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window}}
	if _, err := hpas.Update(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager keeps its recommendations (6 since it scaled up) across the spec
	// change; Prometheus must hold the window before the drop, and the syncs before it.
	time.Sleep(time.Until(promUp.Add(time.Duration(window)*time.Second + 2*sync)))
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"app": "web"}
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The drop comes about 2s after a metrics-server scrape (10s apart), so that the next
	// sample, whose window straddles it, is mostly after it. Its window's position is known to
	// the replay only from a timestamp written to the second; a straddling sample mostly
	// before the drop would put the recommendation it gives (6 or 5) within that second's
	// uncertainty. Mostly after, it gives 5 either way.
	waitForAScrape(t, mc, ns, sel)
	time.Sleep(2 * time.Second)
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: 210, MemoryBytes: 6 * 64 << 20})
	dropped := time.Now()

	// Every pod's metrics-server sample measured wholly after the drop (6 pods at 46m before,
	// 35m after: 70% of the request against a 50% target, 5 replicas).
	eventually(t, 60*time.Second, "metrics-server shows the drop", func(ctx context.Context) error {
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		if err != nil {
			return err
		}
		for _, pm := range list.Items {
			from := pm.Timestamp.Add(-pm.Window.Duration)
			if from.Before(dropped) || pm.Containers[0].Usage.Cpu().MilliValue() > 36 {
				return fmt.Errorf("pod %s at %dm over [%s, %s]", pm.Name, pm.Containers[0].Usage.Cpu().MilliValue(),
					from.Format(time.StampMilli), pm.Timestamp.Format(time.StampMilli))
			}
		}
		return nil
	})
	k := plugin()
	replayed := explainJSON(t, k, ns, "--prometheus-url", prom.URL(), "--prometheus-insecure-http", "--sync-period", sync.String())
	plain := explainJSON(t, k, ns)
	explainedAt := time.Now()
	// The text, for the record (docs/explain.md shows it).
	if text, err := k.Run(ctx, "hpa", "explain", "web", "-n", ns, "--prometheus-url", prom.URL(), "--prometheus-insecure-http", "--sync-period", sync.String()); err == nil {
		t.Logf("explain --prometheus-url:\n%s", text)
	}
	if h := plain.History; h == nil || h.Source != "reconstructed" || h.Replay != nil {
		t.Errorf("plain explain: history %+v, want reconstructed", h)
	}
	h := replayed.History
	if h == nil || h.Source != "prometheus" || h.Replay == nil || h.Replay.Error != "" {
		t.Fatalf("explain --prometheus-url: history %+v, want replayed from Prometheus", h)
	}
	rp := h.Replay
	if rp.HoldEnds == nil || rp.HoldEndsAt == nil {
		t.Fatalf("explain --prometheus-url predicts no end of the hold: %+v (decision %+v)", rp, replayed.Decision)
	}
	if replayed.Decision.DesiredReplicas != 6 {
		t.Errorf("explain --prometheus-url decides %d, want the hold at 6", replayed.Decision.DesiredReplicas)
	}
	t.Logf("dropped %s; explained %s (%.1fs later): hold at 6 ends in [%s, %s) with %d; sync phase %+v; notes %q",
		dropped.Format(time.StampMilli), explainedAt.Format(time.StampMilli), explainedAt.Sub(dropped).Seconds(),
		rp.HoldEnds.From.Format(time.TimeOnly), rp.HoldEnds.To.Format(time.TimeOnly), *rp.HoldEndsAt, rp.SyncPhase, rp.Notes)

	// kube-controller-manager's own write, from the audit log.
	var write cluster.AuditRequest
	eventually(t, 90*time.Second, "kube-controller-manager scales web down", func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{UserAgentPrefix: "kube-controller-manager", Namespace: ns, WritesOnly: true})
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if r.Resource == "deployments" && r.Subresource == "scale" {
				write = r
				return nil
			}
		}
		return fmt.Errorf("%d writes, no scale write yet", len(reqs))
	})
	from, to := rp.HoldEnds.From.Add(-sync), rp.HoldEnds.To.Add(sync)
	t.Logf("kube-controller-manager's scale write at %s: %+.1fs from the predicted range's start",
		write.Received.Format(time.StampMilli), write.Received.Sub(rp.HoldEnds.From.Time).Seconds())
	if write.Received.Before(from) || !write.Received.Before(to) {
		t.Errorf("kube-controller-manager wrote the scale at %s, outside the predicted [%s, %s) give or take one sync (%s)",
			write.Received.Format(time.StampMilli), rp.HoldEnds.From.Format(time.TimeOnly), rp.HoldEnds.To.Format(time.TimeOnly), sync)
	}
	// The controller records its event after the scale write, through its event broadcaster:
	// it may not be there yet when the write is.
	var first string
	eventually(t, 30*time.Second, "kube-controller-manager's rescale event after the drop", func(ctx context.Context) error {
		events, err := shared.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=SuccessfulRescale"})
		if err != nil {
			return err
		}
		var firstAt time.Time
		first = ""
		for _, ev := range events.Items {
			if at := ev.LastTimestamp.Time; !at.Before(dropped.Truncate(time.Second)) && (first == "" || at.Before(firstAt)) {
				first, firstAt = ev.Message, at
			}
		}
		if first == "" {
			return errors.New("no SuccessfulRescale event since the drop yet")
		}
		return nil
	})
	if want := fmt.Sprintf("New size: %d;", *rp.HoldEndsAt); !strings.HasPrefix(first, want) {
		t.Errorf("kube-controller-manager's first rescale after the drop: %q, want %q", first, want)
	}
	// simulate takes its load from the same Prometheus: the last two minutes every 15s, cpu
	// as rate() over 15s; Prometheus has run for at least 110s of them (the window, two syncs
	// and the hold since it started), so the curve has at least six of its instants (four
	// asserted: a first scrape late under load costs one or two).
	simOut, err := k.Run(ctx, "hpa", "simulate", "web", "-n", ns, "--from-prometheus", "--prometheus-url", prom.URL(), "--prometheus-insecure-http",
		"--since", "2m", "--prometheus-rate-window", "15s", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var sim struct {
		Load struct {
			File    string   `json:"file"`
			Metrics []string `json:"metrics"`
			Points  int      `json:"points"`
		} `json:"load"`
	}
	if err := json.Unmarshal([]byte(simOut), &sim); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sim.Load.Metrics) != "[cpu]" || sim.Load.Points < 4 {
		t.Errorf("simulate --from-prometheus: load %+v, want cpu over at least 4 points", sim.Load)
	}
	t.Logf("simulate --from-prometheus: load %+v", sim.Load)
	t.Logf("the Prometheus part took %s", time.Since(start).Round(time.Second))
}

// waitForAScrape returns as soon as metrics-server's samples of the pods matching sel carry a
// newer timestamp than when it was called: a scrape has just happened (within the poll).
func waitForAScrape(t *testing.T, mc metricsclient.Interface, ns string, sel map[string]string) {
	t.Helper()
	newest := func(ctx context.Context) (time.Time, error) {
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		if err != nil {
			return time.Time{}, err
		}
		var at time.Time
		for _, pm := range list.Items {
			if pm.Timestamp.After(at) {
				at = pm.Timestamp.Time
			}
		}
		return at, nil
	}
	before, err := newest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		at, err := newest(context.Background())
		if err == nil && at.After(before) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("metrics-server's samples of %s/%v kept the timestamp %s for 30s", ns, sel, before.Format(time.RFC3339))
}
