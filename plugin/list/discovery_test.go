package list

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// metricsAPIServer stands in for the API server's discovery and the metrics APIs, which
// list reaches through the clients liveClients builds (kubectl's discovery cache on disk,
// the metrics clients); it counts the discovery requests: GET /api, /apis and a group
// version's resources.
type metricsAPIServer struct {
	// groups are the group versions /apis lists; the others answer 404, as an APIService
	// not registered. The custom and external metrics APIs, when listed, answer 404 for
	// every metric, as an adapter without it.
	groups []string

	mu        sync.Mutex
	discovery []string
}

func (s *metricsAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if p == "/api" || p == "/apis" || p == "/api/v1" || (parts[0] == "apis" && len(parts) == 3) {
		s.mu.Lock()
		s.discovery = append(s.discovery, p)
		s.mu.Unlock()
	}
	write := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case p == "/api":
		write(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		return
	case p == "/apis":
		list := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range s.groups {
			g, v, _ := strings.Cut(gv, "/")
			ver := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{ver}, PreferredVersion: ver})
		}
		write(list)
		return
	case p == "/api/v1":
		write(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list"}}}})
		return
	case parts[0] == "apis" && len(parts) == 3:
		for _, gv := range s.groups {
			if p == "/apis/"+gv {
				write(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv})
				return
			}
		}
	}
	st := apierrors.NewNotFound(schema.GroupResource{Resource: p}, "").Status()
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(st)
}

// discoveryRequests returns the discovery requests since the last call.
func (s *metricsAPIServer) discoveryRequests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.discovery
	s.discovery = nil
	return out
}

// withMetricsClients are f's clients with the discovery and metrics clients list builds
// itself (liveClients) over srv, kubectl's discovery cache in a new directory: the kube
// reads stay the fakes'.
func withMetricsClients(t *testing.T, f *fakes, srv string) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = ptr.To(cmdtest.Kubeconfig(t))
	flags.APIServer = ptr.To(srv)
	flags.CacheDir = ptr.To(t.TempDir())
	o := NewOptions(flags, genericiooptions.NewTestIOStreamsDiscard())
	o.Clock = clocktesting.NewFakeClock(now)
	live, err := liveClients(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	f.clients.Discovery, f.clients.Metrics, f.clients.MetricsSelection = live.Discovery, live.Metrics, live.MetricsSelection
}

// metricHPAs is namespace s with n HPAs reading the Pods metric qps and n reading the
// External metric queue, each on a Deployment of its own.
func metricHPAs(n int) *cluster {
	c := &cluster{}
	for i := range n {
		for _, m := range []struct {
			name string
			spec func() testbuild.HPAOption
		}{
			{"pods", func() testbuild.HPAOption { return testbuild.Metrics(testbuild.PodsAverage("qps", 10000)) }},
			{"external", func() testbuild.HPAOption {
				return testbuild.Metrics(testbuild.ExternalAverage("queue", nil, 30000))
			}},
		} {
			name := fmt.Sprintf("%s%d", m.name, i)
			c.app("s", name, 2, "", testbuild.HPA("s", name, testbuild.Target("apps/v1", "Deployment", name), testbuild.Min(1), testbuild.Max(10),
				m.spec(), testbuild.Generation(1), testbuild.ObservedGeneration(1), testbuild.Replicas(2, 2)))
		}
	}
	return c
}

// watchFrames runs list -n s -w over f for two frames and returns the discovery requests of
// each.
func watchFrames(t *testing.T, f *fakes, srv *metricsAPIServer) [2][]string {
	t.Helper()
	clk := clocktesting.NewFakeClock(now)
	in := invocation{clock: clk, out: &cmdtest.SyncBuffer{}, errOut: &cmdtest.SyncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- runIn(t, ctx, in, f, "-n", "s", "--watch") }()
	var frames [2][]string
	for i := range frames {
		if i > 0 {
			clk.Step(15 * time.Second)
		}
		deadline := time.Now().Add(time.Minute)
		for strings.Count(in.out.String(), "MIN/MAX") < i+1 || !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatalf("the watch never printed frame %d:\n%s\nstderr: %s", i+1, in.out.String(), in.errOut.String())
			}
			time.Sleep(time.Millisecond)
		}
		frames[i] = srv.discoveryRequests()
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, stderr %q", code, in.errOut.String())
	}
	return frames
}

func TestDiscoveryIsReadOncePerRunAndWatchFrameNotPerHPA(t *testing.T) {
	tests := []struct {
		name   string
		groups []string
	}{
		{name: "no custom or external metrics adapter", groups: []string{"metrics.k8s.io/v1beta1"}},
		{name: "adapters that answer 404 for metrics they do not have",
			groups: []string{"metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2", "external.metrics.k8s.io/v1beta1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The discovery requests of a run, then of each of two --watch frames, by the
			// number of HPAs of each metric.
			type counts struct{ run, frame1, frame2 []string }
			got := map[int]counts{}
			for _, n := range []int{1, 4} {
				srv := &metricsAPIServer{groups: tc.groups}
				hs := httptest.NewServer(srv)
				defer hs.Close()
				f := metricHPAs(n).build(t)
				withMetricsClients(t, f, hs.URL)
				srv.discoveryRequests() // the client's own choice of the metrics source
				r := run(t, f, "-n", "s")
				if r.code != 0 {
					t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
				}
				if rows := strings.Count(r.stdout, "Deployment/"); rows != 2*n {
					t.Fatalf("%d rows, want %d:\n%s", rows, 2*n, r.stdout)
				}
				c := counts{run: srv.discoveryRequests()}
				withMetricsClients(t, f, hs.URL)
				srv.discoveryRequests()
				frames := watchFrames(t, f, srv)
				c.frame1, c.frame2 = frames[0], frames[1]
				got[n] = c
			}
			one, four := got[1], got[4]
			for _, c := range []struct {
				what      string
				one, four []string
			}{{"a run", one.run, four.run}, {"a first --watch frame", one.frame1, four.frame1}, {"a second --watch frame", one.frame2, four.frame2}} {
				if len(c.four) != len(c.one) {
					t.Errorf("%s with 8 HPAs with custom or external metrics cost %d discovery requests %q, with 2 HPAs %d %q: discovery is read per HPA",
						c.what, len(c.four), c.four, len(c.one), c.one)
				}
			}
			// Each frame asks again, as the cluster's controller does once per sync period, so
			// that an adapter installed or removed meanwhile is seen.
			if len(four.frame2) == 0 {
				t.Errorf("the second --watch frame asked discovery nothing")
			}
		})
	}
}
