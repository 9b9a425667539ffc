package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakesource"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const ns = "default"

// replayProm is a Prometheus whose pods use highMilli cpu until drop and lowMilli after,
// scraped every 5s; gone is a pod of the window that no longer exists.
type replayProm struct {
	mu      sync.Mutex
	pods    []string
	gone    string
	drop    time.Time
	queries []string
}

func (p *replayProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	p.mu.Lock()
	p.queries = append(p.queries, r.Form.Get("query"))
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	f := func(k string) float64 { v, _ := strconv.ParseFloat(r.Form.Get(k), 64); return v }
	if strings.HasSuffix(r.URL.Path, "/query") { // the raw counters over a range, scraped every 5s
		q := r.Form.Get("query")
		span, err := time.ParseDuration(q[strings.LastIndex(q, "[")+1 : len(q)-1])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		at := time.Unix(0, int64(f("time")*1e9))
		base := at.Add(-time.Hour)
		counter := func(t time.Time) float64 { // 50m until drop, 10m after
			if t.Before(p.drop) {
				return 0.05 * t.Sub(base).Seconds()
			}
			return 0.05*p.drop.Sub(base).Seconds() + 0.01*t.Sub(p.drop).Seconds()
		}
		var result []any
		for _, pod := range append([]string{p.gone}, p.pods...) {
			var values []any
			for ts := at.Add(-span).Truncate(5 * time.Second).Add(5 * time.Second); !ts.After(at); ts = ts.Add(5 * time.Second) {
				if pod == p.gone && !ts.Before(p.drop) {
					break
				}
				values = append(values, []any{float64(ts.Unix()), strconv.FormatFloat(counter(ts), 'f', -1, 64)})
			}
			result = append(result, map[string]any{"metric": map[string]string{"pod": pod, "container": "app"}, "values": values})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
		return
	}
	start, end, step := f("start"), f("end"), f("step")
	var result []any
	for _, pod := range append([]string{p.gone}, p.pods...) {
		var values []any
		for ts := start; ts <= end; ts += step {
			at := time.Unix(0, int64(ts*1e9))
			v := "0.05"
			if !at.Before(p.drop) {
				if pod == p.gone {
					continue
				}
				v = "0.01"
			}
			values = append(values, []any{ts, v})
		}
		result = append(result, map[string]any{"metric": map[string]string{"pod": pod}, "values": values})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

// replayFixture: 6 pods at 100m requested, a 50% cpu target and a 60s scale-down window,
// kube-controller-manager syncing every 5s. The live samples (metrics-server's, stamped
// t0-10s over 30s) say 10m each: 2 replicas. The counters in Prometheus say 50m each (6
// replicas) until t0-25s and 10m after, so metrics-server's sample at t0-40s said 50m and
// the one at t0-10s 30m: the controller's last recommendation of 6 was at its last sync
// before t0-10s, and holds 6 for 60s after it.
func replayFixture(t *testing.T, promURL string, status autoscalingv2.HorizontalPodAutoscalerStatus, managedFields []metav1.ManagedFieldsEntry) (evaluation.Readers, *autoscalingv2.HorizontalPodAutoscaler) {
	t.Helper()
	hpa := testbuild.HPA(ns, "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(50)), func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
			h.Status = status
			h.ManagedFields = managedFields
		})
	var pods []*corev1.Pod
	var names []string
	for i := range 6 {
		p := testbuild.Pod(ns, fmt.Sprintf("web-%d", i), testbuild.Labels("app", "web"), testbuild.Containers(corev1.Container{Name: "app",
			Resources: corev1.ResourceRequirements{Requests: testbuild.Requests("cpu", "100m")}}),
			testbuild.StartedAt(t0.Add(-10*time.Minute)), testbuild.ReadySince(corev1.ConditionTrue, t0.Add(-9*time.Minute)))
		p.CreationTimestamp = metav1.Time{Time: t0.Add(-10 * time.Minute)}
		pods = append(pods, p)
		names = append(names, p.Name)
	}
	r, err := prometheus.New(prometheus.Config{URL: promURL})
	if err != nil {
		t.Fatal(err)
	}
	return evaluation.Readers{
		HPAReader:     fakesource.OneHPA{Object: hpa},
		HistoryReader: history.PrometheusReader{Events: live.EventReader(fake.NewClientset(), replicas.Config{}), Reader: r, SyncPeriod: 5 * time.Second},
		ScaleReader:   fakesource.Scale{SpecReplicas: 6, StatusReplicas: 6, Selector: "app=web"},
		PodReader:     fakesource.Pods(pods),
		MetricsReader: &fakemetrics.Client{Name: "fixture", At: t0.Add(-10 * time.Second), Resource: map[corev1.ResourceName]fakemetrics.Values{
			corev1.ResourceCPU: fakemetrics.Samples(10, t0.Add(-10*time.Second), 30*time.Second, names...)}},
	}, hpa
}

func TestReplayFromPrometheusPredictsTheHoldAndItsEnd(t *testing.T) {
	now := t0.Add(500 * time.Millisecond)
	cases := []struct {
		name             string
		status           autoscalingv2.HorizontalPodAutoscalerStatus
		managedFields    []metav1.ManagedFieldsEntry
		wantFrom, wantTo time.Time
		wantPhase        string
	}{
		{
			// lastScaleTime at phase 2s (mod 5s), written to the second: syncs at t0-13s..t0-12s
			// saw the last high sample, so the window ends 60s later.
			name:   "phase narrowed by status.lastScaleTime",
			status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 6, DesiredReplicas: 6, LastScaleTime: &metav1.Time{Time: t0.Add(-10*time.Minute + 2*time.Second)}},
			// The hold ends at the first sync 60s after the last high one: t0-13s..t0-12s + 60s.
			wantFrom: t0.Add(47 * time.Second), wantTo: t0.Add(48 * time.Second), wantPhase: "status.lastScaleTime",
		},
		{
			// A later condition transition is the better anchor (phase 4s).
			name: "phase narrowed by a condition's lastTransitionTime",
			status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 6, DesiredReplicas: 6, LastScaleTime: &metav1.Time{Time: t0.Add(-10*time.Minute + 2*time.Second)},
				Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ScaleDownStabilized",
					LastTransitionTime: metav1.Time{Time: t0.Add(-5*time.Minute + 4*time.Second)}}}},
			wantFrom: t0.Add(49 * time.Second), wantTo: t0.Add(50 * time.Second), wantPhase: "condition AbleToScale",
		},
		{
			// The last status write (managedFields, phase 3s) is later still: the syncs
			// since it are the fewest over which they can have drifted.
			name: "phase narrowed by the last status write",
			status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 6, DesiredReplicas: 6, LastScaleTime: &metav1.Time{Time: t0.Add(-10*time.Minute + 2*time.Second)},
				Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ScaleDownStabilized",
					LastTransitionTime: metav1.Time{Time: t0.Add(-5*time.Minute + 4*time.Second)}}}},
			managedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: t0.Add(-2*time.Minute + 3*time.Second)}},
				// A spec write is no sync of the controller's.
				{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: t0.Add(-time.Minute + 1*time.Second)}},
			},
			wantFrom: t0.Add(48 * time.Second), wantTo: t0.Add(49 * time.Second), wantPhase: "the status write by kube-controller-manager",
		},
		{
			// No anchor: every phase of the 5s period, so the end is known to within a period.
			name:     "phase unknown",
			status:   autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 6, DesiredReplicas: 6},
			wantFrom: t0.Add(45 * time.Second), wantTo: t0.Add(50 * time.Second),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prom := &replayProm{pods: []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-5"}, gone: "web-abc12-xyz34", drop: t0.Add(-25 * time.Second)}
			srv := httptest.NewServer(prom)
			defer srv.Close()
			src, _ := replayFixture(t, srv.URL, tc.status, tc.managedFields)
			ev, err := evaluation.Evaluate(context.Background(), src, ns, "web", evaluation.Options{Now: now, Config: replicas.DefaultConfig(), WithoutHistory: true})
			if err != nil {
				t.Fatal(err)
			}
			rp := ev.Known.(*history.Prometheus).Replay
			if rp == nil || rp.Err != nil {
				t.Fatalf("replay %+v", rp)
			}
			// The decision now is the core's with the replayed history: the window holds 6.
			if d := ev.Decision; d.DesiredReplicas != 6 || d.Stabilization == nil || d.Stabilization.Reason != "ScaleDownStabilized" {
				t.Errorf("decision %d (%v), want a hold at 6 (ScaleDownStabilized)", d.DesiredReplicas, d.Stabilization)
			}
			// Prometheus' counters average 30m over the window of t0-10s (4 replicas), but the
			// controller read metrics-server's sample of then, the live one (10m: 2 replicas),
			// from its first sync after it: when the 6 leaves the window, it writes 2.
			if !rp.HoldEndsFrom.Equal(tc.wantFrom) || !rp.HoldEndsTo.Equal(tc.wantTo) || rp.EndsAt != 2 {
				t.Errorf("hold ends %s..%s at %d, want %s..%s at 2", rp.HoldEndsFrom.Sub(t0), rp.HoldEndsTo.Sub(t0), rp.EndsAt, tc.wantFrom.Sub(t0), tc.wantTo.Sub(t0))
			}
			if !strings.HasPrefix(rp.PhaseAnchor, tc.wantPhase) || (tc.wantPhase == "") != (rp.PhaseTo-rp.PhaseFrom == 5*time.Second) {
				t.Errorf("phase %s..%s anchored by %q, want %q", rp.PhaseFrom, rp.PhaseTo, rp.PhaseAnchor, tc.wantPhase)
			}
			// metrics-server's 30s window, aligned to its last scrape (t0-10s).
			if rp.Step != 30*time.Second || rp.RateWindow != 30*time.Second || !strings.HasPrefix(rp.Queries[0], "container_cpu_usage_seconds_total{") {
				t.Errorf("step %s, rate window %s, queries %v; want 30s, 30s", rp.Step, rp.RateWindow, rp.Queries)
			}
			if !strings.Contains(strings.Join(rp.Notes, "\n"), "web-abc12-xyz34") {
				t.Errorf("notes %v, want one naming the pod gone since", rp.Notes)
			}
			if drift := strings.Contains(strings.Join(rp.Notes, "\n"), "drift later"); drift != (tc.wantPhase != "") {
				t.Errorf("notes %v: a note on the drift since the anchor is %v, want %v", rp.Notes, drift, tc.wantPhase != "")
			}
		})
	}
}

func TestReplayUnavailableFallsBackToTheReconstruction(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	src, _ := replayFixture(t, srv.URL, autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 6, DesiredReplicas: 6}, nil)
	ev, err := evaluation.Evaluate(context.Background(), src, ns, "web", evaluation.Options{Now: t0, Config: replicas.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	rp := ev.Known.(*history.Prometheus).Replay
	if rp == nil || rp.Err == nil || !strings.Contains(rp.Err.Error(), "503") {
		t.Fatalf("replay %+v, want an error quoting the 503", rp)
	}
	// The reconstruction (no events, no lastScaleTime) holds nothing back.
	if ev.Decision.DesiredReplicas != 2 {
		t.Errorf("decision %d, want 2 from the reconstruction", ev.Decision.DesiredReplicas)
	}
}
