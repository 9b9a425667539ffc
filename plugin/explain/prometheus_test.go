package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// cadvisorProm is a Prometheus whose six pods used 400m cpu each until drop and 100m after,
// scraped every 5s. When token is set it wants it as a bearer token, and its refusals
// quote the Authorization header they got (as some proxies do).
type cadvisorProm struct {
	drop  time.Time
	token string
}

func (p cadvisorProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.token != "" && r.Header.Get("Authorization") != "Bearer "+p.token {
		http.Error(w, "forbidden: "+r.Header.Get("Authorization"), http.StatusForbidden)
		return
	}
	_ = r.ParseForm()
	w.Header().Set("Content-Type", "application/json")
	f := func(k string) float64 { v, _ := strconv.ParseFloat(r.Form.Get(k), 64); return v }
	if strings.HasSuffix(r.URL.Path, "/query") { // the raw counters over a range, scraped every 5s
		q := r.Form.Get("query")
		span, err := time.ParseDuration(q[strings.LastIndex(q, "[")+1 : len(q)-1])
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		at := time.Unix(int64(f("time")), 0)
		base := now.Add(-time.Hour)
		counter := func(t time.Time) float64 {
			if t.Before(p.drop) {
				return 0.4 * t.Sub(base).Seconds()
			}
			return 0.4*p.drop.Sub(base).Seconds() + 0.1*t.Sub(p.drop).Seconds()
		}
		var result []any
		for i := range 6 {
			var values []any
			for ts := at.Add(-span).Truncate(5 * time.Second).Add(5 * time.Second); !ts.After(at); ts = ts.Add(5 * time.Second) {
				values = append(values, []any{float64(ts.Unix()), strconv.FormatFloat(counter(ts), 'f', -1, 64)})
			}
			result = append(result, map[string]any{"metric": map[string]string{"pod": fmt.Sprintf("web-%d", i), "container": "app"}, "values": values})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
		return
	}
	var result []any
	for i := range 6 {
		var values []any
		for ts := f("start"); ts <= f("end"); ts += f("step") {
			v := "0.4"
			if !time.Unix(int64(ts), 0).Before(p.drop) {
				v = "0.1"
			}
			values = append(values, []any{ts, v})
		}
		result = append(result, map[string]any{"metric": map[string]string{"pod": fmt.Sprintf("web-%d", i)}, "values": values})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
}

// heldFixture: kube-controller-manager (syncing every 5s at 2s past, from its lastScaleTime)
// scaled web to 6 ten minutes ago; the load dropped 45s ago to 100m a pod (20% of 500m
// against an 80% target: 2 pods), so the 60s scale-down window holds 6 until 60s after the
// last sync that still saw 400m a pod.
func heldFixture() *fixture {
	f := newFixture()
	f.HPA.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(60))}}
	f.SetPods(6, "500m", "100m")
	f.RescaleEvent(6, 10*time.Minute-2*time.Second)
	f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
	f.HPA.Status.LastScaleTime = ptr.To(metav1.NewTime(now.Add(-10*time.Minute + 2*time.Second)))
	return f
}

func TestExplainReplaysFromPrometheusMatchesGoldenFiles(t *testing.T) {
	up := httptest.NewServer(cadvisorProm{drop: now.Add(-45 * time.Second)})
	defer up.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	for name, url := range map[string]string{"held-by-prometheus-replay": up.URL, "prometheus-unavailable": down.URL} {
		for _, format := range []struct{ ext, flag string }{{"txt", ""}, {"json", "json"}, {"yaml", "yaml"}} {
			t.Run(name+"/"+format.ext, func(t *testing.T) {
				args := []string{"web", "-n", "shop", "--prometheus-url", url, "--sync-period", "5s"}
				if format.flag != "" {
					args = append(args, "-o", format.flag)
				}
				r := heldFixture().run(t, args...)
				if r.code != 0 {
					t.Errorf("exit code %d, want 0; stderr:\n%s", r.code, r.stderr)
				}
				// A Prometheus that fails costs one warning line, not the explanation.
				wantStderr := ""
				if url == down.URL {
					wantStderr = "warning: replay from Prometheus unavailable, history reconstructed from status and events only: metric 0 (cpu resource utilization (percentage of request)): prometheus at " + url
				}
				if (wantStderr == "") != (r.stderr == "") || !strings.HasPrefix(r.stderr, wantStderr) || strings.Count(r.stderr, "\n") > 1 {
					t.Errorf("stderr %q, want one line starting %q", r.stderr, wantStderr)
				}
				cmdtest.CheckGolden(t, "explain-"+name+"."+format.ext, strings.ReplaceAll(r.stdout, url, "http://127.0.0.1:9090"))
				readOnly(t, r.c)
			})
		}
	}
}

func TestExplainNeverShowsThePrometheusToken(t *testing.T) {
	const token = "prom-token-0123456789"
	srv := httptest.NewServer(cadvisorProm{drop: now.Add(-45 * time.Second), token: token})
	defer srv.Close()
	good := filepath.Join(t.TempDir(), "good")
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(good, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A wrong token makes the server quote it back; the right one is quoted by nobody.
	if err := os.WriteFile(bad, []byte("wrong-"+token), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{good, bad} {
		var logs strings.Builder
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(10), textlogger.Output(&logs)))
		ctx := klog.NewContext(context.Background(), logger)
		ec, c := heldFixture().build()
		r := runExplain(t, ctx, nil, ec, c, "web", "-n", "shop", "--prometheus-url", srv.URL, "--prometheus-token-file", file, "--sync-period", "5s", "-o", "json")
		if r.code != 0 {
			t.Fatalf("exit code %d: %s", r.code, r.stderr)
		}
		if file == good && !strings.Contains(r.stdout, `"source": "prometheus"`) {
			t.Errorf("with the right token the history is not replayed:\n%s", r.stdout)
		}
		if file == bad && !strings.Contains(r.stderr, "403") {
			t.Errorf("with a wrong token: stderr %q, want the 403", r.stderr)
		}
		for what, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "logs at -v=10": logs.String()} {
			if strings.Contains(text, token) {
				t.Errorf("%s with token file %s shows the token:\n%s", what, filepath.Base(file), text)
			}
		}
	}
}

func TestExplainPrometheusFlagsAreCheckedBeforeTheCluster(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--prometheus-url", "http://10.1.2.3:9090"}, "refusing plain http --prometheus-url to 10.1.2.3"},
		{[]string{"--prometheus-token-file", "/nonexistent"}, "--prometheus-token-file is only used with --prometheus-url"},
		{[]string{"--prometheus-url", "http://127.0.0.1:9090", "--prometheus-token-file", "/nonexistent"}, "reading --prometheus-token-file"},
		{[]string{"--prometheus-url", "http://127.0.0.1:9090", "--prometheus-query", "qps"}, "want METRIC=QUERY"},
		{[]string{"--prometheus-url", "http://127.0.0.1:9090", "--sync-period", "0s"}, "--sync-period must be positive"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := newFixture().run(t, append([]string{"web", "-n", "shop"}, tc.args...)...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, tc.want)
			}
			if n := len(requests(r.c)); n != 0 {
				t.Errorf("%d requests to the cluster, want none", n)
			}
		})
	}
}

// A history kubectl hpa run recorded is that run's own: explain decides from it and asks
// Prometheus nothing, even with --prometheus-url.
func TestExplainPrefersTheRecordedHistoryToAReplay(t *testing.T) {
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		cadvisorProm{drop: now.Add(-45 * time.Second)}.ServeHTTP(w, r)
	}))
	defer srv.Close()
	f := heldFixture()
	written := now.Add(-10 * time.Second)
	rec := annotation.New(replicas.History{Recommendations: []replicas.Recommendation{
		{Replicas: 6, Timestamp: now.Add(-50 * time.Second)}, {Replicas: 2, Timestamp: written}}},
		string(f.HPA.UID), "node-a_5f1c", written, 5*time.Second, annotation.Horizon{Window: 60, UpPeriod: 15, DownPeriod: 15})
	f.HPA.Annotations = map[string]string{annotation.Key: rec.Encode()}
	r := f.run(t, "web", "-n", "shop", "--prometheus-url", srv.URL, "--sync-period", "5s", "-o", "json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit code %d, stderr %q", r.code, r.stderr)
	}
	var e v1alpha1.Explanation
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatal(err)
	}
	if e.History.Source != v1alpha1.HistoryRecorded || e.History.Replay != nil || e.Decision.DesiredReplicas != 6 {
		t.Errorf("history %s with replay %v, desired %d; want the recorded history holding 6 and no replay", e.History.Source, e.History.Replay, e.Decision.DesiredReplicas)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("Prometheus was asked %d times, want none", n)
	}
}
