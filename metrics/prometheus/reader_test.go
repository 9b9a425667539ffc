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
			case <-time.After(5 * time.Second):
			}
		}, 200 * time.Millisecond, "Client.Timeout"},
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
		return "vector", []any{map[string]any{"metric": map[string]string{}, "value": matrixPoint(0, "12")}}, http.StatusOK
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	file := writeFile(t, "token", "first")
	r, err := New(Config{URL: srv.URL, TokenFile: file})
	if err != nil {
		t.Fatal(err)
	}
	pods := Pods{Namespace: "shop", Names: []string{"web-1"}}
	if d, err := r.ScrapeInterval(context.Background(), pods, t0); err != nil || d != 5*time.Second {
		t.Fatalf("ScrapeInterval = %s, %v; want 5s (12 samples a minute)", d, err)
	}
	f.token = "rotated"
	if err := os.WriteFile(file, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ScrapeInterval(context.Background(), pods, t0); err != nil {
		t.Fatalf("after the token file changed: %v", err)
	}
	if _, err := New(Config{URL: srv.URL, TokenFile: filepath.Join(t.TempDir(), "missing")}); err == nil || !strings.Contains(err.Error(), "reading --prometheus-token-file") {
		t.Errorf("a missing token file: %v, want an error naming the flag", err)
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

func TestRateWindowCoversTwoScrapes(t *testing.T) {
	r := &Reader{}
	if got := r.RateWindow(10*time.Second, 5*time.Second); got != 10*time.Second {
		t.Errorf("window 10s, scrape 5s: %s, want 10s", got)
	}
	if got := r.RateWindow(10*time.Second, 15*time.Second); got != 30*time.Second {
		t.Errorf("window 10s, scrape 15s: %s, want 30s", got)
	}
	r.cfg.RateWindow = time.Minute
	if got := r.RateWindow(10*time.Second, 15*time.Second); got != time.Minute {
		t.Errorf("--prometheus-rate-window 1m: %s", got)
	}
}
