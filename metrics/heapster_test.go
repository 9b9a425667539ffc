package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

// fixedTimestamp is the Heapster-era unit tests' reference time.
var fixedTimestamp = time.Date(2015, time.November, 10, 12, 30, 0, 0, time.UTC)

const (
	testNamespace = "test-namespace"
	podPrefix     = "test-pod"
)

var testSelector = labels.SelectorFromSet(labels.Set{"name": podPrefix})

func testPods(n int) []runtime.Object {
	var out []runtime.Object
	for i := range n {
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", podPrefix, i), Namespace: testNamespace, Labels: map[string]string{"name": podPrefix},
		}})
	}
	return out
}

func podName(i int) string { return fmt.Sprintf("%s-%d", podPrefix, i) }

// apiServer emulates the API server's service proxy: requests under the prefix of
// service ns/svc go to backend with the prefix stripped, other services are absent, and
// a non-zero status makes the API server itself refuse (403, 503).
type apiServer struct {
	namespace, service string
	status             int
	backend            http.Handler
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if a.status != 0 {
		writeStatus(w, apierrors.FromObject(&metav1.Status{Status: metav1.StatusFailure, Code: int32(a.status), Reason: reasonFor(a.status), Message: "refused by the test API server"}))
		return
	}
	prefix := fmt.Sprintf("/api/v1/namespaces/%s/services/", a.namespace)
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	nameSeg, tail, _ := strings.Cut(rest, "/")
	parts := strings.Split(nameSeg, ":")
	name := nameSeg
	if len(parts) == 3 {
		name = parts[1]
	}
	if name != a.service {
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, name))
		return
	}
	sub, ok := strings.CutPrefix(tail, "proxy")
	if !ok {
		http.NotFound(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = sub
	r2.URL.RawPath = ""
	a.backend.ServeHTTP(w, r2)
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonUnknown
}

func writeStatus(w http.ResponseWriter, err error) {
	st := err.(apierrors.APIStatus).Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

type heapsterFixture struct {
	now      time.Time
	pods     int
	backend  http.Handler
	status   int    // API server refusal
	service  string // the service the client asks for; default heapster
	maxAge   time.Duration
	direct   bool // use --heapster-url instead of the service proxy
	scenario *heapsterstandin.Scenario
	timeout  time.Duration
}

func (f heapsterFixture) client(t *testing.T) Client {
	t.Helper()
	backend := f.backend
	if f.scenario != nil {
		srv, err := heapsterstandin.New(clocktesting.NewFakePassiveClock(f.now), *f.scenario)
		if err != nil {
			t.Fatal(err)
		}
		backend = srv
	}
	cfg := HeapsterConfig{
		Namespace: DefaultHeapsterNamespace, Service: DefaultHeapsterService, Scheme: DefaultHeapsterScheme, Port: DefaultHeapsterPort,
		Pods:    fake.NewClientset(testPods(f.pods)...).CoreV1(),
		Clock:   clocktesting.NewFakePassiveClock(f.now),
		MaxAge:  DefaultMaxAge,
		Timeout: f.timeout,
	}
	if f.maxAge != 0 {
		cfg.MaxAge = f.maxAge
	}
	if f.service != "" {
		cfg.Service = f.service
	}
	if f.direct {
		ts := httptest.NewServer(backend)
		t.Cleanup(ts.Close)
		u, err := url.Parse(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.URL, cfg.HTTPClient = u, ts.Client()
	} else {
		ts := httptest.NewServer(&apiServer{namespace: DefaultHeapsterNamespace, service: DefaultHeapsterService, status: f.status, backend: backend})
		t.Cleanup(ts.Close)
		kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Services = kube.CoreV1()
	}
	c, err := NewHeapsterClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cpuScenario builds a stand-in scenario from per-pod, per-container millicores; pods
// beyond the reported ones exist but lack metrics, so Heapster leaves them out.
func cpuScenario(pods int, reported [][]int64, batch time.Time) *heapsterstandin.Scenario {
	sc := &heapsterstandin.Scenario{BatchTime: batch}
	for i := range pods {
		p := heapsterstandin.Pod{Namespace: testNamespace, Name: podName(i), Labels: map[string]string{"name": podPrefix}}
		if i < len(reported) {
			for j, cpu := range reported[i] {
				p.Containers = append(p.Containers, heapsterstandin.Container{Name: fmt.Sprintf("%s-container-%d", p.Name, j), CPUMilli: cpu, MemoryBytes: 1 << 20})
			}
		} else {
			p.Containers = []heapsterstandin.Container{{Name: "app", Missing: true}}
		}
		sc.Pods = append(sc.Pods, p)
	}
	return sc
}

type point struct {
	level  int64
	minute int
}

// qpsScenario stores one series per pod, points at fixedTimestamp + minute.
func qpsScenario(pods int, series [][]point) *heapsterstandin.Scenario {
	sc := &heapsterstandin.Scenario{}
	for i := range pods {
		p := heapsterstandin.Pod{Namespace: testNamespace, Name: podName(i), Labels: map[string]string{"name": podPrefix}}
		if i < len(series) {
			p.Series = map[string][]heapsterstandin.Point{}
			for _, pt := range series[i] {
				p.Series["qps"] = append(p.Series["qps"], heapsterstandin.Point{Timestamp: fixedTimestamp.Add(time.Duration(pt.minute) * time.Minute), IntValue: pt.level})
			}
		}
		sc.Pods = append(sc.Pods, p)
	}
	return sc
}

// sampleMap is what a client answered, as a map to compare (PodSamples.Map).
type sampleMap = map[string]sampleset.Sample

func podSamplesAt(ts time.Time, window time.Duration, kv ...any) sampleMap {
	out := sampleMap{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = sampleset.Sample{MilliValue: int64(kv[i+1].(int)), Timestamp: sampleset.Timestamp(ts), Window: window}
	}
	return out
}

func minute(n int) time.Time { return fixedTimestamp.Add(time.Duration(n) * time.Minute) }

// TestHeapsterResourceLikeTheHeapsterEraClient ports the CPU cases of Kubernetes 1.11's
// legacy_metrics_client_test.go, served by the stand-in through the service proxy.
func TestHeapsterResourceLikeTheHeapsterEraClient(t *testing.T) {
	tests := []struct {
		name     string
		pods     int
		reported [][]int64
		minute   int
		want     sampleMap
		wantErr  string
	}{
		{name: "one container per pod gives each pod its usage", pods: 3, reported: [][]int64{{5000}, {5000}, {5000}}, minute: 1,
			want: podSamplesAt(minute(1), time.Minute, podName(0), 5000, podName(1), 5000, podName(2), 5000)},
		{name: "containers are summed per pod", pods: 5, reported: [][]int64{{1000, 2000, 2000}, {5000}, {1000, 1000, 1000, 2000}, {4000, 1000}, {5000}}, minute: 10,
			want: podSamplesAt(minute(10), time.Minute, podName(0), 5000, podName(1), 5000, podName(2), 5000, podName(3), 5000, podName(4), 5000)},
		{name: "pods heapster has no metrics for are left out", pods: 3, reported: [][]int64{{4000}},
			want: podSamplesAt(minute(0), time.Minute, podName(0), 4000)},
		{name: "a pod without containers is left out", pods: 3, reported: [][]int64{{100}, {300, 400}, {}},
			want: podSamplesAt(minute(0), time.Minute, podName(0), 100, podName(1), 700)},
		{name: "no metrics at all is an error", pods: 3, reported: [][]int64{},
			wantErr: "no metrics returned from heapster"},
		{name: "no pods at all is an error", pods: 0,
			wantErr: "no metrics returned from heapster"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := heapsterFixture{now: minute(10), pods: tc.pods, scenario: cpuScenario(tc.pods, tc.reported, minute(tc.minute))}.client(t)
			got, ts, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tc.want, got.Map()); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if !ts.Equal(minute(tc.minute)) {
				t.Errorf("timestamp %s, want %s", ts, minute(tc.minute))
			}
		})
	}
}

// TestHeapsterPodsMetricLikeTheHeapsterEraClient ports the QPS cases of Kubernetes 1.11's
// legacy_metrics_client_test.go.
func TestHeapsterPodsMetricLikeTheHeapsterEraClient(t *testing.T) {
	tests := []struct {
		name    string
		pods    int
		series  [][]point
		raw     string // served instead of the stand-in, for answers Heapster itself never gives
		want    sampleMap
		wantTS  time.Time
		wantErr string
	}{
		{name: "each pod's last minute mean in milli-units", pods: 3, series: [][]point{{{10, 1}}, {{20, 1}}, {{10, 1}}},
			want: podSamplesAt(minute(1), time.Minute, podName(0), 10000, podName(1), 20000, podName(2), 10000), wantTS: minute(1)},
		{name: "zero values are values", pods: 3, series: [][]point{{{0, 0}}, {{0, 0}}, {{0, 0}}},
			want: podSamplesAt(minute(0), time.Minute, podName(0), 0, podName(1), 0, podName(2), 0), wantTS: minute(0)},
		{name: "pods with an empty series are left out", pods: 3, series: [][]point{{{4000, 4}}, {}, {{2000, 4}}},
			want: podSamplesAt(minute(4), time.Minute, podName(0), 4000000, podName(2), 2000000), wantTS: minute(4)},
		{name: "the time is the oldest of the pods' newest samples", pods: 2, series: [][]point{{{1, 3}, {2, 4}}, {{3, 2}}},
			want: sampleMap{podName(0): {MilliValue: 2000, Timestamp: sampleset.Timestamp(minute(4)), Window: time.Minute}, podName(1): {MilliValue: 3000, Timestamp: sampleset.Timestamp(minute(2)), Window: time.Minute}}, wantTS: minute(2)},
		{name: "no pod with data gives no samples and a zero time", pods: 2, series: [][]point{{}, {}},
			want: sampleMap{}},
		{name: "fewer items than pods is an error", pods: 3,
			raw:     `{"items":[{"metrics":[{"timestamp":"2015-11-10T12:34:00Z","value":4000}],"latestTimestamp":"2015-11-10T12:34:00Z"}]}`,
			wantErr: "requested metrics for 3 pods, got metrics for 1"},
		{name: "more items than pods is an error", pods: 3,
			raw:     `{"items":[` + strings.Repeat(`{"metrics":[],"latestTimestamp":"0001-01-01T00:00:00Z"},`, 5) + `{"metrics":[],"latestTimestamp":"0001-01-01T00:00:00Z"}]}`,
			wantErr: "requested metrics for 3 pods, got metrics for 6"},
		{name: "no pods matching the selector is an error", pods: 0,
			wantErr: "no pods matched the provided selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := heapsterFixture{now: minute(5), pods: tc.pods, scenario: qpsScenario(tc.pods, tc.series)}
			if tc.raw != "" {
				f.scenario, f.backend = nil, rawJSON(tc.raw)
			}
			got, ts, err := f.client(t).PodsMetric(context.Background(), testNamespace, "qps", testSelector, nil)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tc.want, got.Map()); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if !ts.Equal(tc.wantTS) {
				t.Errorf("timestamp %s, want %s", ts, tc.wantTS)
			}
		})
	}
}

func TestHeapsterModelRequestAsksForTheLastFiveMinutes(t *testing.T) {
	var got *url.URL
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL
		_, _ = w.Write([]byte(`{"items":[{"metrics":[]},{"metrics":[]}]}`))
	})
	c := heapsterFixture{now: minute(5), pods: 2, backend: backend}.client(t)
	if _, _, err := c.PodsMetric(context.Background(), testNamespace, "custom/qps", testSelector, labels.Everything()); err != nil {
		t.Fatal(err)
	}
	want := "/api/v1/model/namespaces/test-namespace/pod-list/test-pod-0,test-pod-1/metrics/custom/qps?start=2015-11-10T12%3A30%3A00Z"
	if got.String() != want {
		t.Errorf("request %s, want %s", got, want)
	}
}

func TestHeapsterResourceRequestCarriesTheSelector(t *testing.T) {
	var got *url.URL
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL
		_, _ = w.Write([]byte(`{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","window":"1m0s","containers":[{"name":"c","usage":{"cpu":"1"}}]}]}`))
	})
	c := heapsterFixture{now: minute(0), backend: backend}.client(t)
	got0, _, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "/apis/metrics/v1alpha1/namespaces/test-namespace/pods?labelSelector=name%3Dtest-pod"; got.String() != want {
		t.Errorf("request %s, want %s", got, want)
	}
	if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, "a", 1000), got0.Map()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func TestHeapsterContainerResource(t *testing.T) {
	sc := cpuScenario(3, [][]int64{{100, 7}, {300}, {}}, minute(0))
	c := heapsterFixture{now: minute(0), pods: 3, scenario: sc}.client(t)
	got, _, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, podName(0)+"-container-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, podName(0), 7), got.Map()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
}

func rawJSON(body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

// TestHeapsterErrorsSayWhatToDo covers every way reaching or reading Heapster fails.
func TestHeapsterErrorsSayWhatToDo(t *testing.T) {
	hang := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	stale := cpuScenario(1, [][]int64{{1}}, minute(0))
	fresh := cpuScenario(1, [][]int64{{1}}, minute(0))
	tests := []struct {
		name    string
		f       heapsterFixture
		pods    bool // ask for the custom metric instead of cpu
		timeout bool
		wantErr []string
	}{
		{name: "an absent service names the namespace and the flags",
			f:       heapsterFixture{service: "heapster-missing", scenario: fresh},
			wantErr: []string{"no heapster service in kube-system", "--heapster-namespace", "--metrics-source=metrics-api"}},
		{name: "a 403 from the API server asks for services/proxy",
			f:       heapsterFixture{status: http.StatusForbidden, scenario: fresh},
			wantErr: []string{"forbidden to use the service proxy of kube-system/heapster", "services/proxy"}},
		{name: "a 503 from the API server points at the heapster pod",
			f:       heapsterFixture{status: http.StatusServiceUnavailable, scenario: fresh},
			wantErr: []string{"is unavailable", "check the heapster pod"}},
		{name: "a timeout says so",
			f: heapsterFixture{backend: hang}, timeout: true,
			wantErr: []string{"did not answer", "in time"}},
		{name: "a direct URL that hangs times out too",
			f: heapsterFixture{backend: hang, direct: true}, timeout: true,
			wantErr: []string{"did not answer", "in time"}},
		{name: "a non-JSON answer is quoted",
			f:       heapsterFixture{backend: rawJSON("<html>oops</html>")},
			wantErr: []string{"heapster via service proxy kube-system/http:heapster:", "not a PodMetricsList", `"<html>oops</html>"`}},
		{name: "a non-JSON model answer is quoted",
			f: heapsterFixture{pods: 1, backend: rawJSON("bad gateway")}, pods: true,
			wantErr: []string{"not a MetricResultList", `"bad gateway"`}},
		{name: "paths heapster does not serve are 404s naming both",
			f:       heapsterFixture{backend: http.NotFoundHandler()},
			wantErr: []string{"has neither /apis/metrics/v1alpha1/namespaces/test-namespace/pods", "nor /apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods", "heapster 1.3 or later"}},
		{name: "a stale batch is refused, not dropped",
			f:       heapsterFixture{now: minute(11), scenario: stale},
			wantErr: []string{"the sample of pod test-pod-0 is stale", "is 11m0s old", "--metrics-max-age"}},
		{name: "a stale model sample is refused",
			f:    heapsterFixture{now: minute(3), pods: 1, maxAge: time.Minute, backend: rawJSON(`{"items":[{"metrics":[{"timestamp":"2015-11-10T12:30:00Z","value":1}]}]}`)},
			pods: true, wantErr: []string{"newest sample of pod test-pod-0 is stale", "3m0s old"}},
		{name: "a negative quantity is refused",
			f:       heapsterFixture{backend: rawJSON(`{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"cpu":"-100m"}}]}]}`)},
			wantErr: []string{"pod a: container c cpu: negative value -0.1"}},
		{name: "a huge quantity is refused",
			f:       heapsterFixture{backend: rawJSON(`{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"cpu":"1e20"}}]}]}`)},
			wantErr: []string{"pod a: container c cpu: absurdly large value 1e+20"}},
		{name: "a negative model value exported as unsigned is refused",
			f:    heapsterFixture{pods: 1, backend: rawJSON(`{"items":[{"metrics":[{"timestamp":"2015-11-10T12:30:00Z","value":18446744073709551611}]}]}`)},
			pods: true, wantErr: []string{"pod test-pod-0", "absurdly large value 18446744073709551611"}},
		{name: "a negative model value is refused",
			f:    heapsterFixture{pods: 1, backend: rawJSON(`{"items":[{"metrics":[{"timestamp":"2015-11-10T12:30:00Z","value":-5}]}]}`)},
			pods: true, wantErr: []string{"negative value -5"}},
		{name: "a pod listed twice is refused",
			f:       heapsterFixture{backend: rawJSON(`{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[]},{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[]}]}`)},
			wantErr: []string{"pod a is listed twice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f.now.IsZero() {
				tc.f.now = minute(0)
			}
			ctx := context.Background()
			if tc.timeout {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			var err error
			if tc.pods {
				_, _, err = tc.f.client(t).PodsMetric(ctx, testNamespace, "qps", testSelector, nil)
			} else {
				_, _, err = tc.f.client(t).PodResource(ctx, testNamespace, corev1.ResourceCPU, testSelector, "")
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestHeapsterRefusesWhatItCannotServe(t *testing.T) {
	c := heapsterFixture{now: minute(0), pods: 1, scenario: qpsScenario(1, nil)}.client(t)
	ctx := context.Background()
	_, _, err := c.ObjectMetric(ctx, testNamespace, "hits", autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "web"}, nil)
	checkErr(t, err, "object metrics are not supported by heapster; use --metrics-source=metrics-api")
	_, _, err = c.ExternalMetric(ctx, testNamespace, "queue", labels.Everything())
	checkErr(t, err, "external metrics are not supported by heapster; use --metrics-source=metrics-api")
	_, _, err = c.PodsMetric(ctx, testNamespace, "qps", testSelector, labels.SelectorFromSet(labels.Set{"verb": "GET"}))
	checkErr(t, err, `cannot filter metric qps by the metric selector "verb=GET"`)
	// An absent metric selector reaches the client as labels.Nothing() (upstream's
	// LabelSelectorAsSelector of nil) or labels.Everything(): no filter, nothing refused.
	for _, none := range []labels.Selector{nil, labels.Nothing(), labels.Everything()} {
		if _, _, err := c.PodsMetric(ctx, testNamespace, "qps", testSelector, none); err != nil {
			t.Errorf("metric selector %#v: %v", none, err)
		}
	}
	_, _, err = c.PodsMetric(ctx, testNamespace, "qps", labels.SelectorFromSet(labels.Set{"app": "none"}), nil)
	checkErr(t, err, `no pods matched the provided selector "app=none"`)
	if IsSourceFailure(err) {
		t.Errorf("asking for what heapster cannot serve is not heapster's failure: %v", err)
	}
}

func TestHeapsterDirectURL(t *testing.T) {
	sc := cpuScenario(2, [][]int64{{250, 10}, {400}}, minute(0))
	c := heapsterFixture{now: minute(0), pods: 2, scenario: sc, direct: true}.client(t)
	got, _, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, podName(0), 260, podName(1), 400), got.Map()); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(c.Source(), "heapster at http://127.0.0.1:") {
		t.Errorf("source %q", c.Source())
	}

	forbidden := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	_, _, err = heapsterFixture{now: minute(0), backend: forbidden, direct: true}.client(t).PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
	checkErr(t, err, "refused /apis/metrics/v1alpha1/namespaces/test-namespace/pods (403 Forbidden)")
}

func TestHeapsterSourceNamesTheProxyPath(t *testing.T) {
	c := heapsterFixture{scenario: &heapsterstandin.Scenario{}}.client(t)
	if got, want := c.Source(), "heapster via service proxy kube-system/http:heapster:"; got != want {
		t.Errorf("source %q, want %q", got, want)
	}
}

// Heapster 1.5 and 1.6 serve the PodMetricsList Kubernetes 1.11's client asked for at
// /apis/metrics/v1alpha1 (Heapster 1.3 and 1.4) only under /apis/metrics.k8s.io/v1alpha1; a
// client that knows one path only cannot read the other versions' resource metrics.
func TestHeapsterResourceReadsHeapster14AndHeapster16Paths(t *testing.T) {
	const answer = `{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","window":"1m0s","containers":[{"name":"c","usage":{"cpu":"90m"}}]}]}`
	cases := []struct {
		name      string
		serves    string
		direct    bool
		reads     int
		wantPaths []string
		wantErr   string
	}{
		{name: "heapster 1.4 through the service proxy", serves: "/apis/metrics/v1alpha1/", reads: 2,
			wantPaths: []string{"/apis/metrics/v1alpha1/namespaces/test-namespace/pods", "/apis/metrics/v1alpha1/namespaces/test-namespace/pods"}},
		{name: "heapster 1.6 through the service proxy: one 404, then the path that answered", serves: "/apis/metrics.k8s.io/v1alpha1/", reads: 2,
			wantPaths: []string{"/apis/metrics/v1alpha1/namespaces/test-namespace/pods", "/apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods", "/apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods"}},
		{name: "heapster 1.6 at a URL", serves: "/apis/metrics.k8s.io/v1alpha1/", direct: true, reads: 1,
			wantPaths: []string{"/apis/metrics/v1alpha1/namespaces/test-namespace/pods", "/apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods"}},
		{name: "neither path: the error names both", serves: "/nothing/", reads: 1,
			wantPaths: []string{"/apis/metrics/v1alpha1/namespaces/test-namespace/pods", "/apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods"},
			wantErr:   "has neither /apis/metrics/v1alpha1/namespaces/test-namespace/pods (heapster 1.3, 1.4) nor /apis/metrics.k8s.io/v1alpha1/namespaces/test-namespace/pods (heapster 1.5, 1.6)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				paths = append(paths, r.URL.Path)
				if !strings.HasPrefix(r.URL.Path, tc.serves) {
					http.NotFound(w, r)
					return
				}
				_, _ = w.Write([]byte(answer))
			})
			c := heapsterFixture{now: minute(0), backend: backend, direct: tc.direct}.client(t)
			for range tc.reads {
				got, _, err := c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
				checkErr(t, err, tc.wantErr)
				if tc.wantErr != "" {
					break
				}
				if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, "a", 90), got.Map()); diff != "" {
					t.Errorf("samples (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.wantPaths, paths); diff != "" {
				t.Errorf("requested paths (-want +got):\n%s", diff)
			}
		})
	}
}
