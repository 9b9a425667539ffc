package timeline

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// fakeProm is a Prometheus holding an hour of a Deployment's cpu: four pods throughout
// (web-0..web-3, the fixture's), four more from 40 to 20 minutes ago (gone now), sharing a
// demand of 400m until 45 minutes ago, 1600m until 20 minutes ago, 200m since; scraped every
// 15s; with ksm, kube-state-metrics' series of the HPA.
type ksmPoint struct {
	// from is when the controller's sync wrote the status, current and desired what it wrote.
	from             time.Time
	current, desired int32
}

type fakeProm struct {
	// ksm are kube-state-metrics' replicas of the HPA from each time on (none: no series).
	ksm []ksmPoint

	mu      sync.Mutex
	queries []string
}

var (
	fakeSurge = cmdtest.Now.Add(-45 * time.Minute)
	fakeMore  = cmdtest.Now.Add(-40 * time.Minute)
	fakeCalm  = cmdtest.Now.Add(-20 * time.Minute)
	fakeStart = cmdtest.Now.Add(-2 * time.Hour)
)

// usage is each running pod's cpu in cores from t on, and the pods running then.
func usage(t time.Time) (float64, int) {
	n := 4
	if !t.Before(fakeMore) && t.Before(fakeCalm) {
		n = 8
	}
	demand := 0.4
	switch {
	case !t.Before(fakeCalm):
		demand = 0.2
	case !t.Before(fakeSurge):
		demand = 1.6
	}
	return demand / float64(n), n
}

// counter is a pod's cpu usage counter at t: the integral of its usage since it started.
func counter(from, t time.Time) float64 {
	var total float64
	bounds := []time.Time{fakeSurge, fakeMore, fakeCalm}
	for at := from; at.Before(t); {
		next := t
		for _, b := range bounds {
			if b.After(at) && b.Before(next) {
				next = b
			}
		}
		u, _ := usage(at)
		total += u * next.Sub(at).Seconds()
		at = next
	}
	return total
}

func (p *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	q := r.Form.Get("query")
	p.mu.Lock()
	p.queries = append(p.queries, q)
	p.mu.Unlock()
	f := func(k string) float64 { v, _ := strconv.ParseFloat(r.Form.Get(k), 64); return v }
	unix := func(v float64) time.Time { return time.Unix(0, int64(v*1e9)) }
	result := []any{}
	switch {
	case strings.HasSuffix(r.URL.Path, "/query") && strings.Contains(q, "timestamp("): // the last scrape, every 15s
		last := unix(f("time")).Truncate(15 * time.Second)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector",
			"result": []any{map[string]any{"metric": map[string]string{}, "value": []any{f("time"), strconv.FormatInt(last.Unix(), 10)}}}}})
		return
	case strings.HasSuffix(r.URL.Path, "/query"): // the raw counters over a range
		span, err := time.ParseDuration(q[strings.LastIndex(q, "[")+1 : len(q)-1])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		end := unix(f("time"))
		for i := range 8 {
			pod, from, until := fmt.Sprintf("web-%d", i), fakeStart, end
			if i >= 4 {
				pod, from, until = fmt.Sprintf("web-abc12-x%d", i), fakeMore, fakeCalm
			}
			var values []any
			for ts := end.Add(-span).Truncate(15 * time.Second).Add(15 * time.Second); !ts.After(end); ts = ts.Add(15 * time.Second) {
				if ts.Before(from) || !ts.Before(until) {
					continue
				}
				values = append(values, []any{float64(ts.Unix()), strconv.FormatFloat(counter(from, ts), 'f', -1, 64)})
			}
			if len(values) > 0 {
				result = append(result, map[string]any{"metric": map[string]string{"pod": pod, "container": "app"}, "values": values})
			}
		}
	case strings.Contains(q, "kube_horizontalpodautoscaler") && len(p.ksm) > 0: // kube-state-metrics
		var values []any
		for ts := f("start"); ts <= f("end"); ts += f("step") {
			var n int32
			for _, k := range p.ksm {
				if !unix(ts).Before(k.from) {
					n = k.desired
					if strings.Contains(q, "current_replicas") {
						n = k.current
					}
				}
			}
			values = append(values, []any{ts, strconv.Itoa(int(n))})
		}
		result = append(result, map[string]any{"metric": map[string]string{}, "values": values})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

// promRun runs timeline --prometheus-url --since 1h over the fixture (web's 4 pods at 200m
// requested, cpu target 50%, max 8), changed by fix when given, and fake Prometheus p.
func promRun(t *testing.T, p *fakeProm, fix func(*cmdtest.Fixture), args ...string) result {
	t.Helper()
	srv := httptest.NewServer(p)
	defer srv.Close()
	f := cmdtest.NewFixture()
	f.SetPods(4, "200m", "50m")
	for _, pod := range f.Pods { // running since before the period, as their series say
		started := metav1.NewTime(fakeStart)
		pod.Status.StartTime, pod.CreationTimestamp = &started, started
		for i := range pod.Status.Conditions {
			pod.Status.Conditions[i].LastTransitionTime = started
		}
	}
	f.HPA.Spec.MaxReplicas = 8
	f.HPA.Spec.Metrics[0].Resource.Target.AverageUtilization = ptr.To[int32](50)
	if fix != nil {
		fix(f)
	}
	ec, _ := f.Build()
	r := runTimeline(t, ec, append([]string{"web", "-n", "shop", "--since", "1h", "--prometheus-url", srv.URL}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// The server's port changes from run to run.
	r.stdout = strings.ReplaceAll(r.stdout, srv.URL, "http://prometheus.test")
	return r
}

// promTimeline is promRun's every sync, -o json.
func promTimeline(t *testing.T, p *fakeProm, fix func(*cmdtest.Fixture), args ...string) v1alpha1.Timeline {
	t.Helper()
	r := promRun(t, p, fix, append([]string{"--all-syncs", "-o", "json"}, args...)...)
	var tl v1alpha1.Timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
		t.Fatal(err)
	}
	return tl
}

func rescaleLines(tl v1alpha1.Timeline) string {
	var out []string
	for _, r := range tl.Rescales {
		out = append(out, fmt.Sprintf("-%s %d->%d", cmdtest.Now.Sub(r.Time.Time), *r.From, r.To))
	}
	return strings.Join(out, ", ")
}

// The replay of the hour: every sync every 15s, the scale-up at the first sync after the
// surge whose one-minute average is above the tolerance, held at max while the gone pods
// ran, and the scale-down to 2 once the 5-minute window passed over the calm.
func TestTimelineFromPrometheusReplaysEverySyncOfThePeriod(t *testing.T) {
	tl := promTimeline(t, &fakeProm{}, nil)
	if tl.Source.Kind != v1alpha1.TimelinePrometheus || tl.Source.Exact || len(tl.Syncs) != 240 {
		t.Errorf("source %s (exact %v), %d syncs; want a replay from prometheus, not exact, 240 syncs", tl.Source.Kind, tl.Source.Exact, len(tl.Syncs))
	}
	rs := tl.Rescales
	if len(rs) < 2 {
		t.Fatalf("rescales %s, want up after the surge and down after the calm", rescaleLines(tl))
	}
	first, last := rs[0], rs[len(rs)-1]
	within := func(r v1alpha1.TimelineRescale, from, to time.Duration) bool {
		ago := cmdtest.Now.Sub(r.Time.Time)
		return ago < from && ago >= to
	}
	if first.Direction != "up" || *first.From != 4 || !within(first, 45*time.Minute, 44*time.Minute) ||
		last.Direction != "down" || last.To != 2 || !within(last, 15*time.Minute, 13*time.Minute) {
		t.Errorf("rescales %s, want 4 up within the minute after the surge (-45m), and down to 2 five minutes after the calm (-20m)", rescaleLines(tl))
	}
	// Up to max, then down: one reversal, 30 minutes after.
	peak := 0
	for i, r := range rs {
		if r.To == 8 {
			peak = i
		}
	}
	for i, r := range rs {
		if (i <= peak) != (r.Direction == "up") {
			t.Errorf("rescales %s, want scale-ups to 8, then scale-downs only", rescaleLines(tl))
			break
		}
	}
	found := map[string]v1alpha1.TimelineFinding{}
	for _, f := range tl.Findings {
		found[f.Type] = f
	}
	if f := found[v1alpha1.FindingCappedAtMax]; !f.Found || f.Seconds < 20*60 {
		t.Errorf("capped at max: %+v, want at least the 20 minutes the extra pods ran", f)
	}
	if f := found[v1alpha1.FindingBlind]; f.Found {
		t.Errorf("blind: %+v, want never (every pod has samples)", f)
	}
	if f := found[v1alpha1.FindingFlapping]; f.Found {
		t.Errorf("flapping: %+v, want none (the scale-downs 30 minutes after the scale-ups)", f)
	}
	notes := strings.Join(tl.Source.Notes, "\n")
	if !strings.Contains(notes, "no kube-state-metrics series") || !strings.Contains(tl.Source.Queries[0], "container_cpu_usage_seconds_total") {
		t.Errorf("notes %q, queries %q: want the missing kube-state-metrics said and the cpu query listed", notes, tl.Source.Queries)
	}
	for _, s := range tl.Syncs {
		if s.Observed != nil {
			t.Fatalf("sync at %s has observed replicas %d without kube-state-metrics", s.Time, *s.Observed)
		}
	}
}

// With kube-state-metrics' series the replicas at each sync are those it saw: here those of
// the controller the replay is, so the timeline is the same,
// and the output says the replay decided what the controller set at every sync.
func TestTimelineFromPrometheusTakesTheReplicasKubeStateMetricsSaw(t *testing.T) {
	alone := promTimeline(t, &fakeProm{}, nil)
	// Each sync writes the replicas it read and those it decided; kube-state-metrics scrapes
	// them a second later.
	p := &fakeProm{}
	for _, s := range alone.Syncs {
		p.ksm = append(p.ksm, ksmPoint{s.Time.Add(time.Second), s.Replicas, s.Desired})
	}
	tl := promTimeline(t, p, nil)
	if got, want := rescaleLines(tl), rescaleLines(alone); got != want {
		t.Errorf("rescales %s, want the replay's own %s", got, want)
	}
	for _, s := range tl.Syncs {
		if s.Observed == nil {
			t.Fatalf("sync at %s has no observed replicas", s.Time)
		}
	}
	if notes := strings.Join(tl.Source.Notes, "\n"); !strings.Contains(notes, "kube-state-metrics saw the controller's decision at 240 of 240 syncs; the replay decided the same at 240") {
		t.Errorf("notes %q, want the agreement at every sync", notes)
	}
}

// The replay says where it placed the syncs and read the metrics, and from what: at the
// controller's syncs when the HPA's last status write puts them, else at Prometheus' scrapes.
func TestTimelineFromPrometheusSaysWhereItReadTheMetrics(t *testing.T) {
	tests := []struct {
		name, golden string
		fix          func(*cmdtest.Fixture)
		want         v1alpha1.TimelineGrid
		wantPhase    *v1alpha1.SyncPhase
	}{
		{
			name: "at the syncs the status write puts", golden: "timeline-prometheus-syncs.txt",
			fix: func(f *cmdtest.Fixture) {
				f.HPA.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
					Subresource: "status", Time: ptr.To(metav1.NewTime(cmdtest.Now.Add(-2*time.Minute + 7*time.Second)))}}
			},
			want:      v1alpha1.TimelineGrid{StepSeconds: 15, PhaseSeconds: 7, AlignedWith: "syncs", Anchor: "the status write by kube-controller-manager at 2026-11-30T11:58:07Z"},
			wantPhase: &v1alpha1.SyncPhase{FromSeconds: 7, ToSeconds: 8, Anchor: "the status write by kube-controller-manager at 2026-11-30T11:58:07Z"},
		},
		{
			name: "at the scrapes when the syncs are unknown", golden: "timeline-prometheus-scrapes.txt",
			want: v1alpha1.TimelineGrid{StepSeconds: 15, PhaseSeconds: 0, AlignedWith: "scrapes", Anchor: "Prometheus' scrape of container_cpu_usage_seconds_total at 2026-11-30T12:00:00.000Z"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := promTimeline(t, &fakeProm{}, tc.fix)
			if g := tl.Source.Grid; g == nil || *g != tc.want {
				t.Errorf("grid %+v, want %+v", g, tc.want)
			}
			if got := tl.Source.SyncPhase; (got == nil) != (tc.wantPhase == nil) || got != nil && *got != *tc.wantPhase {
				t.Errorf("sync phase %+v, want %+v", got, tc.wantPhase)
			}
			for _, s := range tl.Syncs {
				if off := time.Duration(s.Time.UnixNano() % int64(15*time.Second)); tc.wantPhase != nil && off != 7*time.Second {
					t.Fatalf("sync at %s, %s past its period, want at 7s", s.Time.UTC().Format(time.TimeOnly), off)
				}
			}
			cmdtest.CheckGolden(t, tc.golden, promRun(t, &fakeProm{}, tc.fix).stdout)
		})
	}
}
