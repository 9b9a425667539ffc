package simulate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/prometheus"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

func TestCurveFromSeriesIsEachMetricsTotalInTheLoadsUnits(t *testing.T) {
	at := func(sec int) time.Time { return cmdtest.Now.Add(time.Duration(sec) * time.Second) }
	series := map[string]prometheus.Series{
		// millicores per pod
		"cpu": {"web-1": {{Time: at(0), MilliValue: 100}, {Time: at(30), MilliValue: 150}, {Time: at(60), MilliValue: 200}}, "web-2": {{Time: at(0), MilliValue: 120}, {Time: at(30), MilliValue: 130}, {Time: at(60), MilliValue: 140}}},
		// milli-bytes per pod
		"memory": {"web-1": {{Time: at(30), MilliValue: 64 << 20 * 1000}, {Time: at(60), MilliValue: 64 << 20 * 1000}}, "web-2": {{Time: at(30), MilliValue: 32 << 20 * 1000}, {Time: at(60), MilliValue: 32 << 20 * 1000}}},
		// a custom metric's milli-units, one series
		"qps": {`{job="x"}`: {{Time: at(30), MilliValue: 12500}, {Time: at(60), MilliValue: 20000}}},
	}
	c, err := curveFromSeries([]string{"cpu", "memory", "qps"}, series)
	if err != nil {
		t.Fatal(err)
	}
	// +0s has no memory nor qps: the curve starts at +30s.
	want := load.Curve{Metrics: []string{"cpu", "memory", "qps"}, Interpolation: load.Linear, Points: []load.Point{
		{At: 0, Values: map[string]float64{"cpu": 280, "memory": 96 << 20, "qps": 12.5}},
		{At: 30 * time.Second, Values: map[string]float64{"cpu": 340, "memory": 96 << 20, "qps": 20}},
	}}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("curve\n %v\nwant\n %v", c, want)
	}
	if _, err := curveFromSeries([]string{"cpu", "qps"}, map[string]prometheus.Series{"cpu": series["cpu"], "qps": {"x": {{Time: at(5), MilliValue: 1}}}}); err == nil {
		t.Error("no common instant: no error")
	}
}

// TestSimulateTakesItsLoadFromPrometheus: the HPA and workload from the cluster, the load
// from a Prometheus whose 4 pods each use 100m for the first half of the period and 300m
// after.
func TestSimulateTakesItsLoadFromPrometheus(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		queries = append(queries, r.Form.Get("query"))
		f := func(k string) float64 { v, _ := strconv.ParseFloat(r.Form.Get(k), 64); return v }
		start, end, step := f("start"), f("end"), f("step")
		var result []any
		for i := range 4 {
			var values []any
			for ts := start; ts <= end; ts += step {
				v := "0.1"
				if ts > (start+end)/2 {
					v = "0.3"
				}
				values = append(values, []any{ts, v})
			}
			result = append(result, map[string]any{"metric": map[string]string{"pod": fmt.Sprintf("web-abc-%d", i)}, "values": values})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "matrix", "result": result}})
	}))
	defer srv.Close()
	f := cmdtest.NewFixture()
	f.SetPods(4, "200m", "100m")
	ec, _ := f.Build()
	r := runSimulate(t, ec, "web", "-n", "shop", "--from-prometheus", "--prometheus-url", srv.URL, "--since", "1h", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var s struct {
		Load struct {
			File    string   `json:"file"`
			Metrics []string `json:"metrics"`
			Points  int      `json:"points"`
		} `json:"load"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	// 1h at one point per 15s (the minimum step): 241 instants.
	if s.Load.File != "prometheus "+srv.URL+", the last 1h0m0s" || fmt.Sprint(s.Load.Metrics) != "[cpu]" || s.Load.Points < 240 || s.Load.Points > 242 {
		t.Errorf("load %+v, want cpu from prometheus over 1h in about 241 points", s.Load)
	}
	if len(queries) != 1 || !strings.HasPrefix(queries[0], `sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-[a-z0-9]+-[a-z0-9]+"`) {
		t.Errorf("queries %q", queries)
	}
	// The step is 15s here: the rate window is --prometheus-rate-window's default, 1m.
	if len(queries) == 1 && !strings.Contains(queries[0], "[1m])") {
		t.Errorf("query %q, want rate() over 1m", queries[0])
	}
}

func TestSimulateFromPrometheusRefusesFlagsThatDoNotGoTogether(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"web", "--from-prometheus"}, "--from-prometheus needs --prometheus-url"},
		{[]string{"web", "--from-prometheus", "--prometheus-url", "http://127.0.0.1:9090", "--load", td("load.csv")}, "--load and --from-prometheus both give the load"},
		{[]string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--from-prometheus", "--prometheus-url", "http://127.0.0.1:9090"}, "give an HPA NAME, not -f"},
		{[]string{"web", "--load", td("load.csv"), "--prometheus-url", "http://127.0.0.1:9090"}, "--prometheus-url is read with --from-prometheus"},
		{[]string{"web", "--load", td("load.csv"), "--prometheus-rate-window", "2m"}, "--prometheus-rate-window is only used with --prometheus-url"},
		{[]string{"web", "--from-prometheus", "--prometheus-url", "http://127.0.0.1:9090", "--from-recording", "run.jsonl"}, "--from-recording and --from-prometheus both give the load"},
		{[]string{"web", "--from-prometheus", "--prometheus-url", "http://10.0.0.1:9090"}, "refusing plain http --prometheus-url"},
		{[]string{"web", "--from-prometheus", "--prometheus-url", "http://127.0.0.1:9090", "--since", "0s"}, "--since must be positive"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := runSimulate(t, nil, tc.args...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, tc.want)
			}
		})
	}
}
