package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// roundBarrier holds every request of a round until all of that round's requests have
// arrived. If explain sent a round's requests one after another instead of together, the
// first would wait for the second forever; the deadlock guard turns that into a failure.
type roundBarrier struct {
	t      *testing.T
	rounds [][]string

	mu       sync.Mutex
	arrived  map[string]bool
	released []chan struct{}
	log      []string
}

func newRoundBarrier(t *testing.T, rounds ...[]string) *roundBarrier {
	b := &roundBarrier{t: t, rounds: rounds, arrived: map[string]bool{}}
	for range rounds {
		b.released = append(b.released, make(chan struct{}))
	}
	return b
}

// deadlockGuard bounds how long a request waits for the rest of its round; reaching it
// means the round was not sent in parallel.
const deadlockGuard = 20 * time.Second

func (b *roundBarrier) pass(key string) {
	b.mu.Lock()
	b.log = append(b.log, key)
	round := -1
	for i, keys := range b.rounds {
		for _, k := range keys {
			if k == key {
				round = i
			}
		}
	}
	if round < 0 {
		b.mu.Unlock()
		b.t.Errorf("unexpected request %q", key)
		return
	}
	if b.arrived[key] {
		b.mu.Unlock()
		b.t.Errorf("request %q sent twice", key)
		return
	}
	b.arrived[key] = true
	complete := true
	for _, k := range b.rounds[round] {
		complete = complete && b.arrived[k]
	}
	if complete {
		close(b.released[round])
	}
	b.mu.Unlock()
	select {
	case <-b.released[round]:
	case <-time.After(deadlockGuard):
		b.t.Errorf("request %q waited for the rest of round %d %v: that round was not sent in parallel", key, round+1, b.rounds[round])
	}
}

// barrierMetrics is a metrics.Client whose reads take part in the barrier.
type barrierMetrics struct {
	b       *roundBarrier
	samples *sampleset.Set
}

func (m *barrierMetrics) PodResource(_ context.Context, _ string, res corev1.ResourceName, _ labels.Selector, _ string) (*sampleset.Set, time.Time, error) {
	m.b.pass("metrics PodResource " + string(res))
	return m.samples, now.Add(-30 * time.Second), nil
}
func (m *barrierMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (*sampleset.Set, time.Time, error) {
	m.b.pass("metrics PodsMetric")
	return nil, time.Time{}, nil
}
func (m *barrierMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	m.b.pass("metrics ObjectMetric")
	return 0, time.Time{}, nil
}
func (m *barrierMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	m.b.pass("metrics ExternalMetric")
	return nil, time.Time{}, nil
}
func (m *barrierMetrics) Source() string { return "barrier" }

// fakeAPIServer serves discovery and the fixture's objects over HTTP on 127.0.0.1.
func fakeAPIServer(t *testing.T, f *fixture, b *roundBarrier) *httptest.Server {
	t.Helper()
	list := func(kind string, items any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"resourceVersion": "1"}, "items": items}
	}
	hpa := f.HPA.DeepCopy()
	hpa.APIVersion, hpa.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	scale := f.Scale.DeepCopy()
	scale.APIVersion, scale.Kind = "autoscaling/v1", "Scale"
	var pods []corev1.Pod
	for _, p := range f.Pods {
		pods = append(pods, *p)
	}
	hpas := list("HorizontalPodAutoscalerList", []any{hpa})
	var deployments []any
	if d := f.Deployment(); d != nil {
		deployments = append(deployments, d)
	}
	var events []corev1.Event
	for _, e := range f.Events {
		events = append(events, *e)
	}
	discovery := map[string]any{
		"/api": metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{
			{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}},
			{Name: "autoscaling", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "autoscaling/v2", Version: "v2"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "autoscaling/v2", Version: "v2"}},
			{Name: "metrics.k8s.io", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "metrics.k8s.io/v1beta1", Version: "v1beta1"}},
		}},
		"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"get", "list"}},
		}},
		"/apis/apps/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: []string{"get", "list"}},
			{Name: "deployments/scale", Kind: "Scale", Group: "autoscaling", Version: "v1", Namespaced: true, Verbs: []string{"get", "update"}},
		}},
		"/apis/autoscaling/v2": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", Namespaced: true, Verbs: []string{"get", "list"}},
		}},
		"/apis/metrics.k8s.io/v1beta1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "PodMetrics", Namespaced: true, Verbs: []string{"get", "list"}},
		}},
	}
	objects := map[string]any{
		"GET /apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web": hpa,
		"GET /api/v1/namespaces/shop/events?" + rescalesSelector:                list("EventList", events),
		"GET /api/v1/namespaces/shop/events?" + resizesSelector:                 list("EventList", []any{}),
		"GET /apis/apps/v1/namespaces/shop/deployments/web/scale":               scale,
		"GET /api/v1/namespaces/shop/pods":                                      list("PodList", pods),
		"GET /apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers":     hpas,
		"GET /apis/apps/v1/namespaces/shop/deployments":                         list("DeploymentList", deployments),
		"GET /apis/policy/v1/namespaces/shop/poddisruptionbudgets":              list("PodDisruptionBudgetList", []any{}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if body, ok := discovery[r.URL.Path]; ok && r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(body)
			return
		}
		key := r.Method + " " + r.URL.Path
		if strings.HasSuffix(r.URL.Path, "/events") {
			// Two lists of the same path: the HPA's rescales and the Deployments' resizes.
			key += "?" + r.URL.Query().Get("fieldSelector")
		}
		b.pass(key)
		body, ok := objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
			return
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The two lists of events explain sends: the HPA's rescales, the Deployments' resizes.
const (
	rescalesSelector = "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=web,reason=SuccessfulRescale"
	resizesSelector  = "involvedObject.kind=Deployment,reason=ScalingReplicaSet"
)

// Beside the decision's nine reads (the HPA with the evidence of the controller's memory: its
// rescales, the Deployments' resizes, the leader Leases of kube-controller-manager and of a
// kubectl hpa run in the namespace or in the cluster; then the scale, the pods, the metrics), explain sends list's three for its overlap check and lint findings (the
// namespace's HPAs with the scale, then its Deployments and PodDisruptionBudgets with the
// pods); the metrics go out once the pods and those lists say no other HPA selects the pods,
// as upstream reads them.
func TestExplainAgainstAnAPIServerUsesFourParallelRoundTripsAndTwelveRequests(t *testing.T) {
	f := newFixture()
	f.RescaleEvent(4, 10*time.Minute)
	b := newRoundBarrier(t,
		[]string{"GET /apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/web", "GET /api/v1/namespaces/shop/events?" + rescalesSelector,
			"GET /api/v1/namespaces/shop/events?" + resizesSelector, "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager",
			"GET /apis/coordination.k8s.io/v1/namespaces/shop/leases/kubectl-hpa", "GET /apis/coordination.k8s.io/v1/namespaces/kubectl-hpa/leases/kubectl-hpa"},
		[]string{"GET /apis/apps/v1/namespaces/shop/deployments/web/scale", "GET /apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers"},
		[]string{"GET /api/v1/namespaces/shop/pods", "GET /apis/apps/v1/namespaces/shop/deployments", "GET /apis/policy/v1/namespaces/shop/poddisruptionbudgets"},
		[]string{"metrics PodResource cpu"},
	)
	srv := fakeAPIServer(t, f, b)

	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: test, context: {cluster: c, user: u, namespace: shop}}, {name: other, context: {cluster: c, user: u, namespace: elsewhere}}]
current-context: other
`, srv.URL)
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	cacheDir := filepath.Join(dir, "cache")
	configFlags.CacheDir = &cacheDir
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.Clock = clocktesting.NewFakeClock(now)
	o.newMetrics = func(context.Context, *Options, *rest.Config, discovery.DiscoveryInterface) (metrics.Client, metrics.Selection, error) {
		return &barrierMetrics{b: b, samples: sampleset.Of(f.M.Resource[corev1.ResourceCPU])}, metrics.Selection{}, nil
	}
	root.AddCommand(newCmd(o))
	// The context flag picks the namespace "shop" from the kubeconfig: no -n.
	root.SetArgs([]string{"explain", "web", "--kubeconfig", kc, "--context", "test"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("explain failed: %v\nstderr: %s", err, errOut.String())
	}
	if len(b.log) != 12 {
		t.Errorf("%d requests after discovery, want 12: %v", len(b.log), b.log)
	}
	for _, want := range []string{"Verdict:", "would stay at 4", "Binding constraint:  Tolerance"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
