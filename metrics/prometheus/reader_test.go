package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestValidateFollowsTheHeapsterURLRules(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"nothing set", Config{}, ""},
		{"loopback http", Config{URL: "http://127.0.0.1:9090"}, ""},
		{"localhost http with a path", Config{URL: "http://localhost:9090/prometheus"}, ""},
		{"https anywhere", Config{URL: "https://prometheus.example:9090", CAFile: "ca.pem"}, ""},
		{"remote http refused", Config{URL: "http://10.0.0.5:9090"}, "refusing plain http --prometheus-url to 10.0.0.5"},
		{"remote http opted in", Config{URL: "http://10.0.0.5:9090", InsecureHTTP: true}, ""},
		{"other scheme", Config{URL: "ftp://x"}, "the scheme must be http or https"},
		{"no host", Config{URL: "http://"}, "no host"},
		{"query", Config{URL: "http://127.0.0.1:9090?x=1"}, "without query or fragment"},
		{"credentials in the URL", Config{URL: "https://u:secret@p.example"}, "put no credentials in the URL"},
		{"credentials in an unparsable URL", Config{URL: "https://u:secret@[::1"}, "malformed --prometheus-url: missing ']' in host"},
		{"CA with http", Config{URL: "http://127.0.0.1:9090", CAFile: "ca.pem"}, "only used with an https --prometheus-url"},
		{"token without URL", Config{TokenFile: "t"}, "--prometheus-token-file is only used with --prometheus-url"},
		{"negative timeout", Config{URL: "http://127.0.0.1:9090", Timeout: -time.Second}, "--prometheus-timeout must not be negative"},
		{"sub-second window", Config{URL: "http://127.0.0.1:9090", RateWindow: time.Millisecond}, "below Prometheus' resolution"},
		{"selector with braces", Config{URL: "http://127.0.0.1:9090", Selector: `{job="x"}`}, "without braces"},
		{"bad template", Config{URL: "http://127.0.0.1:9090", Queries: map[string]string{"qps": "{{.Pods"}}, "--prometheus-query qps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

// fakeProm answers /api/v1/query_range and /api/v1/query with handle's result, after
// checking the bearer token when token is set.
type fakeProm struct {
	t       *testing.T
	token   string
	queries []string
	handle  func(query string, form map[string][]string) (resultType string, result any, status int)
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	q := r.Form.Get("query")
	f.queries = append(f.queries, q)
	typ, res, status := f.handle(q, r.Form)
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusOK {
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "execution", "error": res})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": typ, "result": res}})
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var t0 = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

func matrixPoint(sec int, v string) []any { return []any{float64(t0.Unix() + int64(sec)), v} }

func TestResourceReadsCPURatePerPodOnTheGridWithTheBearerToken(t *testing.T) {
	const token = "s3cr3t-token"
	f := &fakeProm{t: t, token: token, handle: func(q string, form map[string][]string) (string, any, int) {
		if got := form["step"][0]; got != "10" {
			t.Errorf("step %s, want 10", got)
		}
		return "matrix", []any{
			map[string]any{"metric": map[string]string{"pod": "web-1"}, "values": []any{matrixPoint(0, "0.1"), matrixPoint(10, "0.0501")}},
			map[string]any{"metric": map[string]string{"pod": "web-2"}, "values": []any{matrixPoint(10, "0.2"), matrixPoint(20, "NaN")}},
		}, http.StatusOK
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := New(Config{URL: srv.URL, TokenFile: writeFile(t, "token", token+"\n"), Selector: `cluster="prod"`})
	if err != nil {
		t.Fatal(err)
	}
	s, q, err := r.Resource(context.Background(), Pods{Namespace: "shop", Names: []string{"web-2", "web-1"}, Pattern: "web-[a-z0-9]+-[a-z0-9]+"},
		corev1.ResourceCPU, "", 15*time.Second, Grid{Start: t0, End: t0.Add(20 * time.Second), Step: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantQ := `sum by (pod) (rate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1|web-2|web-[a-z0-9]+-[a-z0-9]+",container!="",container!="POD",cluster="prod"}[15s]))`
	if q != wantQ || f.queries[0] != wantQ {
		t.Errorf("query\n %s\nsent\n %s\nwant\n %s", q, f.queries[0], wantQ)
	}
	want := Series{
		"web-1": {{t0, 100}, {t0.Add(10 * time.Second), 51}},
		"web-2": {{t0.Add(10 * time.Second), 200}},
	}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("series %v, want %v (millicores rounded up, NaN dropped)", s, want)
	}
	at := s.At(t0.Add(15*time.Second), 0)
	if at["web-1"].MilliValue != 51 || at["web-2"].MilliValue != 200 {
		t.Errorf("At(+15s) = %v, want web-1 51, web-2 200", at)
	}
	if at := s.At(t0.Add(25*time.Second), 10*time.Second); len(at) != 0 {
		t.Errorf("At(+25s, max age 10s) = %v, want nothing (the points are 15s old)", at)
	}
}

func TestResourceQueriesMemoryPerContainer(t *testing.T) {
	f := &fakeProm{t: t, handle: func(string, map[string][]string) (string, any, int) {
		return "matrix", []any{map[string]any{"metric": map[string]string{"pod": "web-1"}, "values": []any{matrixPoint(0, "67108864")}}}, http.StatusOK
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s, q, err := r.Resource(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, corev1.ResourceMemory, "app", 0, Grid{Start: t0, End: t0, Step: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if want := `sum by (pod) (container_memory_working_set_bytes{namespace="shop",pod=~"web-1",container!="",container!="POD",container="app"})`; q != want {
		t.Errorf("query %s, want %s", q, want)
	}
	if got := s["web-1"][0].MilliValue; got != 67108864*1000 {
		t.Errorf("working set %d milli-bytes, want %d", got, 67108864*1000)
	}
	if _, _, err := r.Resource(context.Background(), Pods{Namespace: "shop"}, corev1.ResourceEphemeralStorage, "", 0, Grid{Start: t0, End: t0, Step: time.Second}); err == nil {
		t.Error("ephemeral-storage: no error, want one (cAdvisor has no such series)")
	}
}

func TestFailuresSayWhatFailedAndNeverShowTheToken(t *testing.T) {
	const token = "tok-987654321"
	cases := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    string
	}{
		{"no series", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		}, 0, "no series"},
		{"a proxy echoing the request headers", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad gateway for request with "+r.Header.Get("Authorization"), http.StatusBadGateway)
		}, 0, "502"},
		{"a query error", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = fmt.Fprintf(w, `{"status":"error","errorType":"execution","error":"expanding series: %s"}`, r.Header.Get("Authorization"))
		}, 0, "expanding series"},
		{"slower than the timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
		}, 200 * time.Millisecond, "no answer within 200ms (--prometheus-timeout)"},
		{"unlabelled series", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"x"},"values":[[1,"1"]]}]}}`)
		}, 0, `without the label "pod"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			r, err := New(Config{URL: srv.URL, TokenFile: writeFile(t, "token", token), Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = r.Resource(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, corev1.ResourceCPU, "", time.Minute, Grid{Start: t0, End: t0, Step: time.Second})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "prometheus at "+srv.URL) {
				t.Errorf("error %v does not name the Prometheus it asked", err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error shows the bearer token: %v", err)
			}
			if tc.name == "no series" && !errors.Is(err, ErrNoSeries) {
				t.Errorf("errors.Is(%v, ErrNoSeries) = false", err)
			}
		})
	}
}

func TestTheTokenFileIsReadAtEachRequest(t *testing.T) {
	f := &fakeProm{t: t, token: "first", handle: func(string, map[string][]string) (string, any, int) {
		return "matrix", []any{map[string]any{"metric": map[string]string{"pod": "web-1"}, "values": []any{matrixPoint(0, "12")}}}, http.StatusOK
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	file := writeFile(t, "token", "first")
	r, err := New(Config{URL: srv.URL, TokenFile: file})
	if err != nil {
		t.Fatal(err)
	}
	read := func() error {
		_, _, err := r.Resource(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, corev1.ResourceMemory, "", 0, Grid{Start: t0, End: t0, Step: time.Second})
		return err
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	f.token = "rotated"
	if err := os.WriteFile(file, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := read(); err != nil {
		t.Fatalf("after the token file changed: %v", err)
	}
	if _, err := New(Config{URL: srv.URL, TokenFile: filepath.Join(t.TempDir(), "missing")}); err == nil || !strings.Contains(err.Error(), "reading --prometheus-token-file") {
		t.Errorf("a missing token file: %v, want an error naming the flag", err)
	}
}

// TestCPUAveragesIsTheCountersIncreaseOverTheWindow: a container at 100m until +12s and 300m
// after, scraped every 5s, restarted (its counter back to 0) at +32s; a second container at
// 50m. The average over 10s at each instant is the interpolated counter's increase.
func TestCPUAveragesIsTheCountersIncreaseOverTheWindow(t *testing.T) {
	usage := func(sec float64) float64 { // the first container's cumulative cpu seconds
		if sec <= 12 {
			return 0.1 * sec
		}
		return 1.2 + 0.3*(sec-12)
	}
	var app, side []any
	for sec := 0; sec <= 45; sec += 5 {
		v := usage(float64(sec))
		if sec >= 35 { // restarted at +32s
			v = 0.3 * float64(sec-32)
		}
		app = append(app, matrixPoint(sec, strconv.FormatFloat(v, 'f', -1, 64)))
		side = append(side, matrixPoint(sec, strconv.FormatFloat(0.05*float64(sec), 'f', -1, 64)))
	}
	f := &fakeProm{t: t, handle: func(q string, form map[string][]string) (string, any, int) {
		if !strings.HasPrefix(q, `container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1"`) {
			t.Errorf("query %s", q)
		}
		return "matrix", []any{
			map[string]any{"metric": map[string]string{"pod": "web-1", "container": "app"}, "values": app},
			map[string]any{"metric": map[string]string{"pod": "web-1", "container": "side"}, "values": side},
		}, http.StatusOK
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := r.CPUAverages(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, "", 10*time.Second,
		Grid{Start: t0.Add(5 * time.Second), End: t0.Add(50 * time.Second), Step: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int64{}
	for _, p := range s["web-1"] {
		got[int(p.Time.Sub(t0).Seconds())] = p.MilliValue
	}
	want := map[int]int64{
		// +5s: the window starts before the first scrape: no point. Every other instant is a
		// scrape, so the increase is exact (the 12s step included) but for the reset.
		10: 100 + 50,
		15: 160 + 50, // [5,15]: 0.7s at 100m, 0.9s at 300m
		20: 260 + 50,
		25: 300 + 50, 30: 300 + 50,
		// The restart at +32s: the counter from zero again, so [30,32] is lost, as rate() loses it.
		35: 240 + 50, 40: 240 + 50,
		45: 300 + 50,
		50: 300 + 50, // extrapolated 5s past the last scrape
	}
	for sec, w := range want {
		if got[sec] != w {
			t.Errorf("+%ds: %dm, want %dm (all: %v)", sec, got[sec], w, got)
		}
	}
	// Between scrapes the counter is interpolated: exact where the usage did not change
	// between the two scrapes around each end of the window, not where it did.
	s, _, err = r.CPUAverages(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, "", 10*time.Second,
		Grid{Start: t0.Add(12 * time.Second), End: t0.Add(17 * time.Second), Step: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s["web-1"]); got != fmt.Sprint([]Point{{t0.Add(12 * time.Second), 124 + 50}, {t0.Add(17 * time.Second), 200 + 50}}) {
		t.Errorf("at +12s and +17s: %s, want 174m (100m exact, the step at +12s is inside [10,15]) and 250m (exact)", got)
	}
	if _, ok := got[5]; ok {
		t.Errorf("+5s has a point, want none (the window starts before the first scrape)")
	}
}

func TestNamedQueryRendersTheTemplate(t *testing.T) {
	r, err := New(Config{URL: "http://127.0.0.1:9090", Selector: `cluster="a"`, Queries: map[string]string{
		"qps": `sum by (pod) (rate(http_requests_total{namespace="{{.Namespace}}",pod=~"{{.Pods}}"{{.Selector}}}[{{.Window}}]))`,
		"bad": `{{.Nope}}`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	pods := Pods{Namespace: "shop", Names: []string{"web-1"}}
	q, ok, err := r.NamedQuery("qps", pods, "", 30*time.Second)
	if want := `sum by (pod) (rate(http_requests_total{namespace="shop",pod=~"web-1",cluster="a"}[30s]))`; err != nil || !ok || q != want {
		t.Errorf("NamedQuery(qps) = %q, %v, %v; want %q", q, ok, err, want)
	}
	if _, ok, _ := r.NamedQuery("other", pods, "", time.Minute); ok {
		t.Error("NamedQuery(other) found a template, want none")
	}
	if _, _, err := r.NamedQuery("bad", pods, "", time.Minute); err == nil || !strings.Contains(err.Error(), "--prometheus-query bad") {
		t.Errorf("NamedQuery(bad) error %v, want one naming the flag", err)
	}
}

func TestWindowIsTheFlagsOrTheLiveSamples(t *testing.T) {
	r := &Reader{}
	if got := r.Window(15 * time.Second); got != 15*time.Second {
		t.Errorf("live window 15s: %s", got)
	}
	if got := r.Window(0); got != time.Minute {
		t.Errorf("no live window: %s, want 1m", got)
	}
	r.cfg.RateWindow = 30 * time.Second
	if got := r.Window(15 * time.Second); got != 30*time.Second {
		t.Errorf("--prometheus-rate-window 30s: %s", got)
	}
}

// LastCPUScrape is the latest scrape of the pods' cpu counters, to the millisecond; none is
// ErrNoSeries.
func TestLastCPUScrapeIsTheLatestSampleOfTheCounters(t *testing.T) {
	tests := []struct {
		name    string
		result  []any
		want    time.Time
		wantErr error
	}{
		{name: "the latest over the pods", result: []any{map[string]any{"metric": map[string]string{}, "value": []any{float64(t0.Unix()), "1796133596.123"}}},
			want: time.UnixMilli(1796133596123)},
		{name: "no series", result: []any{}, wantErr: ErrNoSeries},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeProm{t: t, handle: func(q string, form map[string][]string) (string, any, int) {
				if want := `max(timestamp(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1",container!="",container!="POD"}))`; q != want {
					t.Errorf("query %s, want %s", q, want)
				}
				return "vector", tc.result, http.StatusOK
			}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			r, err := New(Config{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := r.LastCPUScrape(context.Background(), Pods{Namespace: "shop", Names: []string{"web-1"}}, t0)
			if !errors.Is(err, tc.wantErr) || !got.Equal(tc.want) {
				t.Errorf("%s, %v; want %s, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
