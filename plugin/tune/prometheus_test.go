package tune

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// fakeProm is a Prometheus holding the cpu of the fixture's Deployment web: four pods using
// 100m each for the first half of any period asked and 300m after, with no point from
// gapFrom to gapTo (fractions of the period), and resets restarts of their containers.
type fakeProm struct {
	gapFrom, gapTo float64
	resets         int
	// empty answers every query with no series.
	empty bool

	mu sync.Mutex
	// instant are the instant queries asked.
	instant []string
}

func (p *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f := func(k string) float64 { v, _ := strconv.ParseFloat(r.Form.Get(k), 64); return v }
	var data map[string]any
	switch {
	case strings.HasSuffix(r.URL.Path, "/query_range"):
		start, end, step := f("start"), f("end"), f("step")
		result := []any{}
		for i := range 4 {
			if p.empty {
				break
			}
			var values []any
			for ts := start; ts <= end; ts += step {
				if at := (ts - start) / (end - start); at >= p.gapFrom && at < p.gapTo {
					continue
				}
				v := "0.1"
				if ts > (start+end)/2 {
					v = "0.3"
				}
				values = append(values, []any{ts, v})
			}
			result = append(result, map[string]any{"metric": map[string]string{"pod": fmt.Sprintf("web-abc-%d", i)}, "values": values})
		}
		data = map[string]any{"resultType": "matrix", "result": result}
	case strings.HasSuffix(r.URL.Path, "/query"):
		p.mu.Lock()
		p.instant = append(p.instant, r.Form.Get("query"))
		p.mu.Unlock()
		result := []any{}
		if !p.empty {
			result = append(result, map[string]any{"metric": map[string]string{}, "value": []any{f("time"), strconv.Itoa(p.resets)}})
		}
		data = map[string]any{"resultType": "vector", "result": result}
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

func TestTuneFromPrometheusSaysWhatTheDataCannotSupport(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prom       *fakeProm
		wantCode   int
		wantOut    []string
		wantStderr string
	}{
		{
			name: "no gap, no restart: both said",
			prom: &fakeProm{gapFrom: 2, gapTo: 2},
			wantOut: []string{
				"  - Gaps: none (Prometheus' points every 15s).\n",
				"  - Counter resets: none in the pods' CPU usage counters (no container restarted in the period).\n",
				"  It meets the constraints (no limit on the time above target, no limit on rescales) on this load.\n",
			},
		},
		{
			name:     "a gap of a fifth of the period and restarts: the recommendation is not supported, and --apply writes nothing",
			prom:     &fakeProm{gapFrom: 0.3, gapTo: 0.5, resets: 3},
			wantCode: cmdutil.ExitUsage,
			wantOut: []string{
				"  It meets the constraints on this load, but the load cannot support it: its gaps (1, 12m0s in all) cover more than 10% of the period.\n",
				"  - Gaps: 1, 12m0s in all, where Prometheus had no point for a metric (every 15s otherwise): the load is a straight line across them.\n",
				"  - Counter resets: 3 in the pods' CPU usage counters (containers restarted): the load counts across them, but the demand a container did not serve while it was down is not in it.\n",
				"  - Not supported: its gaps (1, 12m0s in all) cover more than 10% of the period.\n",
			},
			wantStderr: "error: --apply: nothing written: the load cannot support the recommendation: its gaps (1, 12m0s in all) cover more than 10% of the period\n",
		},
		{
			name:       "no data: one line, nothing printed",
			prom:       &fakeProm{empty: true},
			wantCode:   cmdutil.ExitUsage,
			wantStderr: "error: --from-prometheus: no data for shop/web's pods over the last 1h0m0s (check --since, --prometheus-selector and that Prometheus scrapes them): ",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.prom)
			defer srv.Close()
			f := cmdtest.NewFixture()
			ec, fakes := f.Build()
			hpas := serveHPA(t, fakes.Kube, f.HPA, nil)
			r := runTuneOn(t, ec, "web", "-n", "shop", "--from-prometheus", "--prometheus-url", srv.URL, "--since", "1h",
				"--candidates", "4", "--max-above-target", "none", "--apply")
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.wantCode, r.stderr)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("no line %q in:\n%s", want, r.stdout)
				}
			}
			if len(tc.wantOut) == 0 && r.stdout != "" {
				t.Errorf("printed %q before failing", r.stdout)
			}
			if tc.wantStderr != "" && (!strings.HasPrefix(r.stderr, tc.wantStderr) || strings.Count(r.stderr, "\n") != 1) {
				t.Errorf("stderr %q, want one line starting %q", r.stderr, tc.wantStderr)
			}
			tc.prom.mu.Lock()
			defer tc.prom.mu.Unlock()
			resets := `sum(resets(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-[a-z0-9]+-[a-z0-9]+",container!="",container!="POD"}[1h]))`
			if !tc.prom.empty && !slices.Equal(tc.prom.instant, []string{resets}) {
				t.Errorf("instant queries %q, want %q", tc.prom.instant, resets)
			}
			if tc.wantCode != 0 && len(hpas.calls) > 0 {
				t.Errorf("patches sent: %v", hpas.calls)
			}
		})
	}
}
