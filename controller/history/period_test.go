package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
)

// stepProm is a Prometheus scraping the cpu counters of pods every scrape, at phase past
// each multiple of it (Unix time): each pod uses 50m until step, 250m from it on. It holds no
// kube-state-metrics series.
type stepProm struct {
	pods          []string
	step          time.Time
	scrape, phase time.Duration
}

// podsOf are its pods, each requesting 100m of cpu, created, started and Ready two hours
// before t0.
func (p *stepProm) podsOf() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, name := range p.pods {
		pod := testbuild.Pod(ns, name, testbuild.Labels("app", "web"), testbuild.Containers(corev1.Container{Name: "app",
			Resources: corev1.ResourceRequirements{Requests: testbuild.Requests("cpu", "100m")}}),
			testbuild.StartedAt(t0.Add(-2*time.Hour)), testbuild.ReadySince(corev1.ConditionTrue, t0.Add(-2*time.Hour)))
		pod.CreationTimestamp = metav1.Time{Time: t0.Add(-2 * time.Hour)}
		pods = append(pods, pod)
	}
	return pods
}

// scrapeAtOrBefore is the last scrape at or before t.
func (p *stepProm) scrapeAtOrBefore(t time.Time) time.Time {
	return t.Add(-p.phase).Truncate(p.scrape).Add(p.phase)
}

func (p *stepProm) counter(t time.Time) float64 {
	base := p.step.Add(-time.Hour)
	if t.Before(p.step) {
		return 0.05 * t.Sub(base).Seconds()
	}
	return 0.05*time.Hour.Seconds() + 0.25*t.Sub(p.step).Seconds()
}

func (p *stepProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	ts, _ := strconv.ParseFloat(r.Form.Get("time"), 64)
	at := time.Unix(0, int64(ts*1e9))
	w.Header().Set("Content-Type", "application/json")
	data := map[string]any{"resultType": "matrix", "result": []any{}}
	switch {
	case strings.HasSuffix(r.URL.Path, "/query") && strings.Contains(q, "timestamp("): // the latest scrape
		last := float64(p.scrapeAtOrBefore(at).UnixMilli()) / 1000
		data = map[string]any{"resultType": "vector", "result": []any{map[string]any{"metric": map[string]string{}, "value": []any{ts, strconv.FormatFloat(last, 'f', -1, 64)}}}}
	case strings.HasSuffix(r.URL.Path, "/query"): // the raw counters over a range
		span, err := time.ParseDuration(q[strings.LastIndex(q, "[")+1 : len(q)-1])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var result []any
		for _, pod := range p.pods {
			var values []any
			for s := p.scrapeAtOrBefore(at.Add(-span)).Add(p.scrape); !s.After(at); s = s.Add(p.scrape) {
				values = append(values, []any{float64(s.UnixMilli()) / 1000, strconv.FormatFloat(p.counter(s), 'f', -1, 64)})
			}
			result = append(result, map[string]any{"metric": map[string]string{"pod": pod, "container": "app"}, "values": values})
		}
		data["result"] = result
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

// The replay reads the metrics at the controller's syncs when its status puts them, else at
// Prometheus' scrapes of the cpu counters: never on a grid of its own (multiples of the sync
// period since the epoch), which reads a load step up to a sync before or after the
// controller could. Two pods at 50m of 100m requested (a 50% target) until the step, at 250m
// after, averaged over 10s.
func TestReplayPeriodReadsTheMetricsAtTheSyncsOrElseAtTheScrapes(t *testing.T) {
	cases := []struct {
		name          string
		managedFields []metav1.ManagedFieldsEntry
		step          time.Time
		scrape, phase time.Duration
		// wantRescale is the first sync that can see the step, wantAligned what the grid is
		// aligned with, wantPhase its phase.
		wantRescale time.Time
		wantAligned string
		wantPhase   time.Duration
	}{
		{
			// The last status write puts the syncs at 3s past each 5s: the sync at t0-52s
			// reads [t0-62s, t0-52s], 2.5s of the step (scraped every second). A grid since
			// the epoch reads t0-55s for it, before the step, and rescales at t0-47s.
			name: "at the syncs the status write puts",
			managedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				Time: &metav1.Time{Time: t0.Add(-7 * time.Second)}}},
			step: t0.Add(-54*time.Second - 500*time.Millisecond), scrape: time.Second,
			wantRescale: t0.Add(-52 * time.Second), wantAligned: history.GridAtSyncs, wantPhase: 3 * time.Second,
		},
		{
			// No status write: the syncs are placed at 2s past each 5s, the metrics read at
			// the scrapes, every 5s at 4s past: the sync at t0-53s has the scrape of t0-56s,
			// before the step, the one at t0-48s that of t0-51s, after it. A grid since the
			// epoch reads t0-55s for the sync at t0-53s, interpolated towards the scrape of
			// t0-51s, which no reader had then, and rescales there.
			name: "at the scrapes when the syncs are unknown",
			step: t0.Add(-55*time.Second - 500*time.Millisecond), scrape: 5 * time.Second, phase: 4 * time.Second,
			wantRescale: t0.Add(-48 * time.Second), wantAligned: history.GridAtScrapes, wantPhase: 4 * time.Second,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prom := &stepProm{pods: []string{"web-0", "web-1"}, step: tc.step, scrape: tc.scrape, phase: tc.phase}
			srv := httptest.NewServer(prom)
			defer srv.Close()
			r, err := prometheus.New(prometheus.Config{URL: srv.URL, RateWindow: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			hpa := testbuild.HPA(ns, "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(2), testbuild.Max(10),
				testbuild.Metrics(testbuild.CPUUtilization(50)), func(h *autoscalingv2.HorizontalPodAutoscaler) {
					h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2}
					h.ManagedFields = tc.managedFields
				})
			pods := prom.podsOf()
			in := replicas.Input{HPA: hpa, Scale: &replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"}, Pods: pods,
				Now: t0, Config: replicas.DefaultConfig()}
			rp, err := history.ReplayPeriod(context.Background(), r, in, t0.Add(-2*time.Minute), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var rescales []string
			for _, s := range rp.Syncs {
				if s.Decision.Rescale {
					rescales = append(rescales, fmt.Sprintf("%s to %d", s.Now.Sub(t0), s.Decision.DesiredReplicas))
				}
			}
			if len(rescales) == 0 || !strings.HasPrefix(rescales[0], tc.wantRescale.Sub(t0).String()+" ") {
				t.Errorf("rescales %v, want the first at %s (the load stepped at %s)", rescales, tc.wantRescale.Sub(t0), tc.step.Sub(t0))
			}
			if rp.Grid.AlignedWith != tc.wantAligned || rp.Grid.Phase != tc.wantPhase || rp.Grid.Step != 5*time.Second {
				t.Errorf("grid %+v, want every 5s at %s past each period, aligned with %s", rp.Grid, tc.wantPhase, tc.wantAligned)
			}
		})
	}
}

// No controller decided before the HPA existed: the replay begins at its creation, with the
// pods there then, as the controller's first sync did. Two pods at 250m of 100m (a 50%
// target) ask for 10; the first sync after the creation 90s ago goes 2 -> 4, the scale-up
// limit, inside the period; a replay begun a window before the period rescaled there, before
// the HPA existed, and listed no rescale from 2.
func TestReplayPeriodBeginsAtTheHPAsCreation(t *testing.T) {
	prom := &stepProm{pods: []string{"web-0", "web-1"}, step: t0.Add(-3 * time.Hour), scrape: 5 * time.Second}
	srv := httptest.NewServer(prom)
	defer srv.Close()
	r, err := prometheus.New(prometheus.Config{URL: srv.URL, RateWindow: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	created := t0.Add(-90 * time.Second)
	hpa := testbuild.HPA(ns, "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(2), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(50)), func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.CreationTimestamp = metav1.Time{Time: created}
			h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 10, DesiredReplicas: 10}
		})
	pods := prom.podsOf()
	in := replicas.Input{HPA: hpa, Scale: &replicas.Scale{SpecReplicas: 10, StatusReplicas: 10, Selector: "app=web"}, Pods: pods,
		Now: t0, Config: replicas.DefaultConfig()}
	rp, err := history.ReplayPeriod(context.Background(), r, in, t0.Add(-2*time.Minute), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Syncs) == 0 || rp.Syncs[0].Now.Before(created) {
		first := "none"
		if len(rp.Syncs) > 0 {
			first = rp.Syncs[0].Now.Sub(t0).String()
		}
		t.Fatalf("the first sync listed at %s, want none before the HPA's creation at %s", first, created.Sub(t0))
	}
	var first *history.PeriodSync
	for i := range rp.Syncs {
		if rp.Syncs[i].Decision.Rescale {
			first = &rp.Syncs[i]
			break
		}
	}
	if first == nil || first.Decision.CurrentReplicas != 2 || first.Decision.DesiredReplicas != 4 || first.Now.After(created.Add(5*time.Second)) {
		got := "none"
		if first != nil {
			got = fmt.Sprintf("%d -> %d at %s", first.Decision.CurrentReplicas, first.Decision.DesiredReplicas, first.Now.Sub(t0))
		}
		t.Errorf("first rescale %s, want 2 -> 4 at the first sync after the creation (%s)", got, created.Sub(t0))
	}
}
