package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// The real Heapster's answers (testdata/heapster-v1.6.0-beta.1/README.md says how and when they
// were recorded): 2 pods at 75m CPU and 64Mi, sampled every 10s.
const recordedDir = "testdata/heapster-v1.6.0-beta.1"

var (
	recordedAt   = time.Date(2026, 12, 1, 14, 6, 13, 0, time.UTC)
	recordedLast = time.Date(2026, 12, 1, 14, 6, 0, 0, time.UTC)
	recordedPods = []string{"web-569bd6b49c-qmq6l", "web-569bd6b49c-tqq2b"}
)

// recordedHeapster serves the recorded files where the real Heapster answered them, and 404
// elsewhere (as it did for /apis/metrics/v1alpha1).
func recordedHeapster(t *testing.T) http.Handler {
	t.Helper()
	files := map[string]string{
		"/apis/metrics.k8s.io/v1alpha1/namespaces/demo/pods":                                                        "pod-metrics.json",
		"/api/v1/model/namespaces/demo/pod-list/" + strings.Join(recordedPods, ",") + "/metrics/cpu/usage_rate":     "model-cpu-usage-rate.json",
		"/api/v1/model/namespaces/demo/pod-list/" + strings.Join(recordedPods, ",") + "/metrics/memory/working_set": "model-memory-working-set.json",
	}
	bodies := map[string][]byte{}
	for path, file := range files {
		b, err := os.ReadFile(filepath.Join(recordedDir, file))
		if err != nil {
			t.Fatal(err)
		}
		bodies[path] = b
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

func recordedClient(t *testing.T) Client {
	t.Helper()
	var pods []runtime.Object
	for _, name := range recordedPods {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo", Labels: map[string]string{"app": "web"}}})
	}
	ts := httptest.NewServer(&apiServer{namespace: DefaultHeapsterNamespace, service: DefaultHeapsterService, backend: recordedHeapster(t)})
	t.Cleanup(ts.Close)
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewHeapsterClient(HeapsterConfig{
		Namespace: DefaultHeapsterNamespace, Service: DefaultHeapsterService, Scheme: DefaultHeapsterScheme, Port: DefaultHeapsterPort,
		Services: kube.CoreV1(), Pods: fake.NewClientset(pods...).CoreV1(),
		Clock: clocktesting.NewFakePassiveClock(recordedAt), MaxAge: DefaultMaxAge,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRecordedHeapster16AnswersGiveTheLoadOfTheRecording(t *testing.T) {
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	both := func(milli int64, window time.Duration) sampleMap {
		out := sampleMap{}
		for _, p := range recordedPods {
			out[p] = sampleset.Sample{MilliValue: milli, Timestamp: sampleset.Timestamp(recordedLast), Window: window}
		}
		return out
	}
	cases := []struct {
		name string
		read func(Client) (*sampleset.Set, time.Time, error)
		want sampleMap
	}{
		{"cpu from metrics.k8s.io/v1alpha1 after the 1.4 path's 404", func(c Client) (*sampleset.Set, time.Time, error) {
			return c.PodResource(context.Background(), "demo", corev1.ResourceCPU, web, "")
		}, both(75, time.Minute)},
		{"memory from metrics.k8s.io/v1alpha1", func(c Client) (*sampleset.Set, time.Time, error) {
			return c.PodResource(context.Background(), "demo", corev1.ResourceMemory, web, "")
		}, both(64<<20*1000, time.Minute)},
		{"cpu/usage_rate from the model API, the minute's average in milli-units", func(c Client) (*sampleset.Set, time.Time, error) {
			return c.PodsMetric(context.Background(), "demo", "cpu/usage_rate", web, nil)
		}, both(75*1000, time.Minute)},
		{"memory/working_set from the model API", func(c Client) (*sampleset.Set, time.Time, error) {
			return c.PodsMetric(context.Background(), "demo", "memory/working_set", web, nil)
		}, both(64<<20*1000, time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ts, err := tc.read(recordedClient(t))
			if err != nil {
				t.Fatal(err)
			}
			if !ts.Equal(recordedLast) {
				t.Errorf("timestamp %s, want %s", ts, recordedLast)
			}
			if diff := cmp.Diff(tc.want, got.Map()); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
}
