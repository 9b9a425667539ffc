package heapsterstandin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

var now = time.Date(2018, time.June, 1, 10, 0, 7, 0, time.UTC)

func webPod(name string, cpu ...int64) Pod {
	p := Pod{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}}
	for i, c := range cpu {
		p.Containers = append(p.Containers, Container{Name: fmt.Sprintf("c%d", i), CPUMilli: c, MemoryBytes: 8 << 20})
	}
	return p
}

func at(sec int, v int64) Point {
	return Point{Timestamp: now.Add(time.Duration(sec) * time.Second), IntValue: v}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// decoded turns a JSON body into generic values so tests compare shapes, not bytes.
func decoded(t *testing.T, body string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	return v
}

func TestPodMetricsList(t *testing.T) {
	tests := []struct {
		name     string
		scenario Scenario
		path     string
		wantCode int
		want     string
	}{{
		name: "pods matching the selector are listed with summed shape, no TypeMeta, window 1m0s",
		scenario: Scenario{BatchTime: now.Add(-7 * time.Second), Pods: []Pod{
			webPod("web-1", 250, 10), webPod("web-2", 400), {Namespace: "default", Name: "db", Labels: map[string]string{"app": "db"}, Containers: []Container{{Name: "c0", CPUMilli: 5}}},
		}},
		path:     "/apis/metrics/v1alpha1/namespaces/default/pods?labelSelector=app%3Dweb",
		wantCode: http.StatusOK,
		want: `{"metadata":{},"items":[
		 {"metadata":{"name":"web-1","namespace":"default","creationTimestamp":"2018-06-01T10:00:07Z"},"timestamp":"2018-06-01T10:00:00Z","window":"1m0s",
		  "containers":[{"name":"c0","usage":{"cpu":"250m","memory":"8Mi"}},{"name":"c1","usage":{"cpu":"10m","memory":"8Mi"}}]},
		 {"metadata":{"name":"web-2","namespace":"default","creationTimestamp":"2018-06-01T10:00:07Z"},"timestamp":"2018-06-01T10:00:00Z","window":"1m0s",
		  "containers":[{"name":"c0","usage":{"cpu":"400m","memory":"8Mi"}}]}]}`,
	}, {
		name: "a pod with a container lacking metrics is left out entirely",
		scenario: Scenario{BatchTime: now, Pods: []Pod{
			{Namespace: "default", Name: "web-1", Containers: []Container{{Name: "a", CPUMilli: 1}, {Name: "b", Missing: true}}},
		}},
		path:     "/apis/metrics/v1alpha1/namespaces/default/pods",
		wantCode: http.StatusOK,
		want:     `{"metadata":{},"items":null}`,
	}, {
		name:     "a pod without containers is listed with an empty container list",
		scenario: Scenario{BatchTime: now, Pods: []Pod{{Namespace: "default", Name: "web-1"}}},
		path:     "/apis/metrics/v1alpha1/namespaces/default/pods/",
		wantCode: http.StatusOK,
		want:     `{"metadata":{},"items":[{"metadata":{"name":"web-1","namespace":"default","creationTimestamp":"2018-06-01T10:00:07Z"},"timestamp":"2018-06-01T10:00:07Z","window":"1m0s","containers":[]}]}`,
	}, {
		name:     "no batch yet leaves every pod out",
		scenario: Scenario{NoBatch: true, Pods: []Pod{webPod("web-1", 1)}},
		path:     "/apis/metrics/v1alpha1/namespaces/default/pods",
		wantCode: http.StatusOK,
		want:     `{"metadata":{},"items":null}`,
	}, {
		name:     "a zero batch time follows the clock",
		scenario: Scenario{Pods: []Pod{webPod("web-1", 1)}},
		path:     "/apis/metrics/v1alpha1/namespaces/default/pods",
		wantCode: http.StatusOK,
		want: `{"metadata":{},"items":[{"metadata":{"name":"web-1","namespace":"default","creationTimestamp":"2018-06-01T10:00:07Z"},"timestamp":"2018-06-01T10:00:07Z","window":"1m0s",
		 "containers":[{"name":"c0","usage":{"cpu":"1m","memory":"8Mi"}}]}]}`,
	}, {
		name:     "pods of other namespaces are not listed",
		scenario: Scenario{Pods: []Pod{webPod("web-1", 1)}},
		path:     "/apis/metrics/v1alpha1/namespaces/other/pods",
		wantCode: http.StatusOK,
		want:     `{"metadata":{},"items":null}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := New(clocktesting.NewFakePassiveClock(now), tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			code, body := get(t, srv, tc.path)
			if code != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", code, tc.wantCode, body)
			}
			if diff := cmp.Diff(decoded(t, tc.want), decoded(t, body)); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestModelPodListMetrics(t *testing.T) {
	half := 2.7
	scenario := Scenario{Pods: []Pod{
		{Namespace: "default", Name: "p1", Series: map[string][]Point{"custom/qps": {at(-60, 14), at(-120, 10)}}},
		{Namespace: "default", Name: "p2"},
		{Namespace: "default", Name: "p3", Series: map[string][]Point{
			"custom/qps":     {at(-600, 99), at(-60, 20)},
			"custom/float":   {{Timestamp: now.Add(-time.Minute), FloatValue: &half}},
			"custom/neg":     {at(-60, -5)},
			"cpu/usage_rate": {at(-60, 123)},
		}},
	}}
	tests := []struct {
		name     string
		path     string
		wantCode int
		want     string
	}{{
		name:     "one item per requested pod in request order, empty metrics and zero latestTimestamp without data",
		path:     "/api/v1/model/namespaces/default/pod-list/p3,p2,p1,ghost/metrics/custom/qps?start=2018-06-01T09:55:07Z",
		wantCode: http.StatusOK,
		want: `{"items":[
		 {"metrics":[{"timestamp":"2018-06-01T09:59:07Z","value":20}],"latestTimestamp":"2018-06-01T09:59:07Z"},
		 {"metrics":[],"latestTimestamp":"0001-01-01T00:00:00Z"},
		 {"metrics":[{"timestamp":"2018-06-01T09:58:07Z","value":10},{"timestamp":"2018-06-01T09:59:07Z","value":14}],"latestTimestamp":"2018-06-01T09:59:07Z"},
		 {"metrics":[],"latestTimestamp":"0001-01-01T00:00:00Z"}]}`,
	}, {
		name:     "start and end are inclusive bounds",
		path:     "/api/v1/model/namespaces/default/pod-list/p1/metrics/custom/qps?start=2018-06-01T09:58:07Z&end=2018-06-01T09:58:07Z",
		wantCode: http.StatusOK,
		want:     `{"items":[{"metrics":[{"timestamp":"2018-06-01T09:58:07Z","value":10}],"latestTimestamp":"2018-06-01T09:58:07Z"}]}`,
	}, {
		name:     "without start every stored point is returned",
		path:     "/api/v1/model/namespaces/default/pod-list/p3/metrics/custom/qps",
		wantCode: http.StatusOK,
		want:     `{"items":[{"metrics":[{"timestamp":"2018-06-01T09:50:07Z","value":99},{"timestamp":"2018-06-01T09:59:07Z","value":20}],"latestTimestamp":"2018-06-01T09:59:07Z"}]}`,
	}, {
		name:     "float metrics are truncated to integers and floatValue is never set",
		path:     "/api/v1/model/namespaces/default/pod-list/p3/metrics/custom/float",
		wantCode: http.StatusOK,
		want:     `{"items":[{"metrics":[{"timestamp":"2018-06-01T09:59:07Z","value":2}],"latestTimestamp":"2018-06-01T09:59:07Z"}]}`,
	}, {
		name:     "negative values come out as huge unsigned numbers",
		path:     "/api/v1/model/namespaces/default/pod-list/p3/metrics/custom/neg",
		wantCode: http.StatusOK,
		want:     `{"items":[{"metrics":[{"timestamp":"2018-06-01T09:59:07Z","value":18446744073709551611}],"latestTimestamp":"2018-06-01T09:59:07Z"}]}`,
	}, {
		name:     "deprecated metric names are translated",
		path:     "/api/v1/model/namespaces/default/pod-list/p3/metrics/cpu-usage",
		wantCode: http.StatusOK,
		want:     `{"items":[{"metrics":[{"timestamp":"2018-06-01T09:59:07Z","value":123}],"latestTimestamp":"2018-06-01T09:59:07Z"}]}`,
	}}
	srv, err := New(clocktesting.NewFakePassiveClock(now), scenario)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv, tc.path)
			if code != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", code, tc.wantCode, body)
			}
			// Compare numbers exactly: decode with UseNumber so 2^64-5 survives.
			dec := func(s string) any {
				d := json.NewDecoder(strings.NewReader(s))
				d.UseNumber()
				var v any
				if err := d.Decode(&v); err != nil {
					t.Fatalf("not JSON: %v: %s", err, s)
				}
				return v
			}
			if diff := cmp.Diff(dec(tc.want), dec(body)); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadRequestsAreRefusedAsHeapsterDid(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		wantCode int
		wantBody string
	}{
		{"a start that is not RFC 3339 is a 400", "/api/v1/model/namespaces/default/pod-list/p1/metrics/custom/qps?start=yesterday", http.StatusBadRequest, "timestamp argument cannot be parsed"},
		{"an end that is not RFC 3339 is a 400", "/api/v1/model/namespaces/default/pod-list/p1/metrics/custom/qps?end=1", http.StatusBadRequest, "timestamp argument cannot be parsed"},
		{"an unparsable label selector is a 400", "/apis/metrics/v1alpha1/namespaces/default/pods?labelSelector=a%3D%3D%3D", http.StatusBadRequest, "Error while parsing selector"},
		{"an unknown path is a 404", "/apis/metrics/v1beta1/namespaces/default/pods", http.StatusNotFound, "not found"},
		{"the health check answers ok", "/healthz", http.StatusOK, "ok"},
	}
	srv, err := New(clocktesting.NewFakePassiveClock(now), Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, srv, tc.path)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestSettersChangeWhatIsServed(t *testing.T) {
	srv, err := New(clocktesting.NewFakePassiveClock(now), Scenario{BatchTime: now, Pods: []Pod{webPod("web-1", 100, 100)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetPodCPU("default", "web-1", 301); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetContainerUsage("default", "web-1", "c1", 7, 1024); err != nil {
		t.Fatal(err)
	}
	if err := srv.AppendPoint("default", "web-1", "custom/qps", at(0, 5)); err != nil {
		t.Fatal(err)
	}
	got := srv.Scenario().Pods[0]
	want := Pod{Namespace: "default", Name: "web-1", Labels: map[string]string{"app": "web"},
		Containers: []Container{{Name: "c0", CPUMilli: 151, MemoryBytes: 8 << 20}, {Name: "c1", CPUMilli: 7, MemoryBytes: 1024}},
		Series:     map[string][]Point{"custom/qps": {at(0, 5)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scenario mismatch (-want +got):\n%s", diff)
	}

	errs := []error{
		srv.SetPodCPU("default", "ghost", 1),
		srv.SetContainerUsage("default", "web-1", "ghost", 1, 1),
		srv.SetScenario(Scenario{Pods: []Pod{webPod("a"), webPod("a")}}),
		srv.Update(func(s *Scenario) { s.Pods[0].Name = "" }),
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("edit %d: want an error, got none", i)
		}
	}
	if diff := cmp.Diff(want, srv.Scenario().Pods[0]); diff != "" {
		t.Errorf("a refused edit changed the scenario (-want +got):\n%s", diff)
	}
}

func TestScenarioCopiesAreIndependent(t *testing.T) {
	in := Scenario{Pods: []Pod{webPod("web-1", 1)}}
	srv, err := New(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	in.Pods[0].Labels["app"] = "changed"
	out := srv.Scenario()
	out.Pods[0].Containers[0].CPUMilli = 999
	if diff := cmp.Diff(Scenario{Pods: []Pod{webPod("web-1", 1)}}, srv.Scenario()); diff != "" {
		t.Errorf("caller edits leaked into the server (-want +got):\n%s", diff)
	}
}

func TestControlHandlerReplacesTheScenario(t *testing.T) {
	srv, err := New(clocktesting.NewFakePassiveClock(now), Scenario{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.ControlHandler())
	defer ts.Close()

	put := func(body string) int {
		req, err := http.NewRequest(http.MethodPut, ts.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := put(`{"pods":[{"namespace":"default","name":"web-1","containers":[{"name":"c","cpuMilli":42,"memoryBytes":1}]}]}`); code != http.StatusNoContent {
		t.Fatalf("PUT: status %d", code)
	}
	if code := put(`{"pods":[{"name":"no-namespace"}]}`); code != http.StatusBadRequest {
		t.Errorf("PUT of an invalid scenario: status %d, want 400", code)
	}
	if code := put(`not json`); code != http.StatusBadRequest {
		t.Errorf("PUT of non-JSON: status %d, want 400", code)
	}
	resp, err := ts.Client().Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	got, err := ParseScenario(body)
	if err != nil {
		t.Fatal(err)
	}
	want := Scenario{Pods: []Pod{{Namespace: "default", Name: "web-1", Containers: []Container{{Name: "c", CPUMilli: 42, MemoryBytes: 1}}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET after PUT (-want +got):\n%s", diff)
	}
}

// TestConcurrentUpdatesAndRequests is for the race detector: load changes while serving.
func TestConcurrentUpdatesAndRequests(t *testing.T) {
	srv, err := New(clocktesting.NewFakePassiveClock(now), Scenario{Pods: []Pod{webPod("web-1", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 20 {
				_ = srv.SetPodCPU("default", "web-1", int64(i*100+j))
				_ = srv.AppendPoint("default", "web-1", "custom/qps", at(j, int64(j)))
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/metrics/v1alpha1/namespaces/default/pods", nil))
				rec = httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/model/namespaces/default/pod-list/web-1/metrics/custom/qps", nil))
			}
		}()
	}
	wg.Wait()
	if got := len(srv.Scenario().Pods[0].Series["custom/qps"]); got != 80 {
		t.Errorf("got %d points, want 80", got)
	}
}
