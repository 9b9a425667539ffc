package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{name: "the defaults are valid", change: func(*Config) {}},
		{name: "an unknown source is refused", change: func(o *Config) { o.Source = "prometheus" }, wantErr: `unknown --metrics-source "prometheus": use auto, heapster or metrics-api`},
		{name: "a negative max age is refused", change: func(o *Config) { o.MaxAge = -time.Second }, wantErr: "--metrics-max-age must not be negative"},
		{name: "a loopback http URL is fine", change: func(o *Config) { o.HeapsterURL = "http://127.0.0.1:8082" }},
		{name: "localhost over http is fine", change: func(o *Config) { o.HeapsterURL = "http://localhost:8082/" }},
		{name: "IPv6 loopback over http is fine", change: func(o *Config) { o.HeapsterURL = "http://[::1]:8082" }},
		{name: "https anywhere is fine", change: func(o *Config) { o.HeapsterURL = "https://heapster.example.com" }},
		{name: "plain http to another host is refused", change: func(o *Config) { o.HeapsterURL = "http://10.0.0.7:8082" },
			wantErr: "refusing plain http --heapster-url to 10.0.0.7, which is not loopback: use https, kubectl port-forward to 127.0.0.1, or pass --heapster-insecure-http"},
		{name: "plain http to another host is allowed when asked", change: func(o *Config) { o.HeapsterURL, o.HeapsterInsecureHTTP = "http://10.0.0.7:8082", true }},
		{name: "a URL without scheme is refused", change: func(o *Config) { o.HeapsterURL = "127.0.0.1:8082" }, wantErr: "malformed --heapster-url"},
		{name: "a URL with another scheme is refused", change: func(o *Config) { o.HeapsterURL = "ftp://127.0.0.1" }, wantErr: "the scheme must be http or https"},
		{name: "a URL without host is refused", change: func(o *Config) { o.HeapsterURL = "http:///path" }, wantErr: "no host"},
		{name: "a URL with a query is refused", change: func(o *Config) { o.HeapsterURL = "http://127.0.0.1/?a=b" }, wantErr: "without query or fragment"},
		{name: "an unparsable URL is refused", change: func(o *Config) { o.HeapsterURL = "http://[::1" }, wantErr: "malformed --heapster-url"},
		{name: "a URL with --metrics-source=metrics-api is a contradiction", change: func(o *Config) { o.HeapsterURL, o.Source = "http://127.0.0.1", SourceMetricsAPI },
			wantErr: "--heapster-url contradicts --metrics-source=metrics-api"},
		{name: "a bad namespace is refused", change: func(o *Config) { o.HeapsterNamespace = "Kube_System" }, wantErr: "invalid --heapster-namespace"},
		{name: "a bad service is refused", change: func(o *Config) { o.HeapsterService = "" }, wantErr: "invalid --heapster-service"},
		{name: "a bad scheme is refused", change: func(o *Config) { o.HeapsterScheme = "grpc" }, wantErr: "invalid --heapster-scheme"},
		{name: "a port with a colon is refused", change: func(o *Config) { o.HeapsterPort = "80:81" }, wantErr: "invalid --heapster-port"},
		{name: "a negative timeout is refused", change: func(o *Config) { o.Timeout = -time.Second }, wantErr: "--metrics-timeout must not be negative"},
		{name: "no timeout is allowed", change: func(o *Config) { o.Timeout = 0 }},
		{name: "a CA for an https URL is fine", change: func(o *Config) { o.HeapsterURL, o.HeapsterCAFile = "https://heapster.example.com", "ca.pem" }},
		{name: "a CA for an http URL is refused", change: func(o *Config) { o.HeapsterURL, o.HeapsterCAFile = "http://127.0.0.1:8082", "ca.pem" },
			wantErr: "--heapster-certificate-authority is only used with an https --heapster-url"},
		{name: "a CA without a URL is refused", change: func(o *Config) { o.HeapsterCAFile = "ca.pem" },
			wantErr: "--heapster-certificate-authority is only used with --heapster-url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultConfig()
			tc.change(&o)
			checkErr(t, o.Validate(), tc.wantErr)
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	if d := DefaultConfig(); d.Source != SourceAuto || d.HeapsterNamespace != "kube-system" || d.HeapsterService != "heapster" || d.HeapsterScheme != "http" || d.HeapsterPort != "" || d.MaxAge != DefaultMaxAge || d.Timeout != DefaultTimeout || d.HeapsterCAFile != "" {
		t.Errorf("defaults %+v", d)
	}
}

// newClient is NewClient with an uncached discovery client of rc, as run passes.
func newClient(t *testing.T, cfg Config, rc *rest.Config, clk clock.PassiveClock) (Client, Selection, error) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return NewClient(context.Background(), cfg, rc, dc, clk)
}

func heapsterService() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "heapster"}}
}

func TestNewClientChoosesTheSource(t *testing.T) {
	tests := []struct {
		name      string
		source    string
		url       string
		served    []string
		objects   []runtime.Object
		forbidden bool
		// probe answers discovery for a group version it does not list (nil: 404).
		probe      error
		wantSource string
		wantReason string
		wantDetail string
		wantErr    []string
	}{
		{name: "auto takes the metrics APIs when metrics.k8s.io is served", served: []string{"metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2"}, objects: []runtime.Object{heapsterService()},
			wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1",
			wantDetail: "metrics.k8s.io/v1beta1, custom.metrics.k8s.io/v1beta2, external.metrics.k8s.io (not served)"},
		{name: "auto takes heapster when metrics.k8s.io is not served and the service exists", objects: []runtime.Object{heapsterService()},
			wantSource: SourceHeapster, wantReason: "auto: metrics.k8s.io is not served, service kube-system/heapster exists",
			wantDetail: "heapster via service proxy kube-system/http:heapster:"},
		{name: "auto keeps a registered metrics.k8s.io whose server is down rather than switching to heapster", objects: []runtime.Object{heapsterService()},
			probe:      apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
			wantSource: SourceMetricsAPI, wantReason: "auto: metrics.k8s.io is registered but unavailable now"},
		{name: "auto keeps a registered metrics.k8s.io whose server is down when there is no heapster either",
			probe:      apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
			wantSource: SourceMetricsAPI, wantReason: "auto: metrics.k8s.io is registered but unavailable now"},
		{name: "auto takes the metrics APIs for custom metrics when there is neither", served: []string{"external.metrics.k8s.io/v1beta1"},
			wantSource: SourceMetricsAPI, wantReason: "resource metrics will fail"},
		{name: "auto with nothing at all is an actionable error",
			wantErr: []string{"no metrics source", "no heapster service in kube-system", "--heapster-namespace", "install metrics-server"}},
		{name: "auto with a heapster URL takes it without asking the cluster", url: "http://127.0.0.1:8082",
			wantSource: SourceHeapster, wantReason: "--heapster-url", wantDetail: "heapster at http://127.0.0.1:8082"},
		{name: "heapster without its service is an actionable error", source: SourceHeapster,
			wantErr: []string{"no heapster service in kube-system", "--heapster-namespace", "--metrics-source=metrics-api"}},
		{name: "heapster whose service may not be read is still tried", source: SourceHeapster, forbidden: true,
			wantSource: SourceHeapster, wantReason: "--metrics-source=heapster"},
		{name: "metrics-api is taken even if nothing is served yet", source: SourceMetricsAPI,
			wantSource: SourceMetricsAPI, wantReason: "--metrics-source=metrics-api",
			wantDetail: "metrics.k8s.io (not served), custom.metrics.k8s.io (not served), external.metrics.k8s.io (not served)"},
		{name: "invalid options are refused before anything else", source: "nope", wantErr: []string{"unknown --metrics-source"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture(tc.served...)
			f.discovery.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) {
				return tc.probe != nil, nil, tc.probe
			})
			kube := fake.NewClientset(tc.objects...)
			if tc.forbidden {
				kube.PrependReactor("get", "services", func(core.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "heapster", errors.New("no"))
				})
			}
			o := DefaultConfig()
			if tc.source != "" {
				o.Source = tc.source
			}
			o.HeapsterURL = tc.url
			api := f.apiClients()
			_, sel, err := NewClientFrom(context.Background(), o, Clients{
				Kube: kube, Discovery: api.Discovery, Resource: api.Resource, Custom: api.Custom, External: api.External, HeapsterHTTP: http.DefaultClient,
			}, clocktesting.NewFakePassiveClock(apiNow))
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, selection %v", sel)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.Source != tc.wantSource || !strings.Contains(sel.Reason, tc.wantReason) || (tc.wantDetail != "" && sel.Detail != tc.wantDetail) {
				t.Errorf("selection %+v, want source %s reason ~%q detail %q", sel, tc.wantSource, tc.wantReason, tc.wantDetail)
			}
		})
	}
}

func TestSelectionString(t *testing.T) {
	s := Selection{Source: SourceHeapster, Reason: "--metrics-source=heapster", Detail: "heapster via service proxy kube-system/http:heapster:"}
	if got, want := s.String(), "metrics from heapster via service proxy kube-system/http:heapster: (--metrics-source=heapster)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// fakeAPIServer answers the few API server paths NewClient needs, from a rest.Config
// pointed at it: discovery, the Heapster service and its proxy, the metrics APIs.
type fakeAPIServer struct {
	groups   []metav1.APIGroup
	heapster http.Handler // nil: no heapster service
	routes   map[string]any
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	writeObj := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	p := r.URL.Path
	switch {
	case p == "/api":
		writeObj(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case p == "/apis":
		writeObj(metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.groups})
	case p == "/api/v1":
		writeObj(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list"}}}})
	case p == "/api/v1/namespaces/kube-system/services/heapster" && s.heapster != nil:
		writeObj(&corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "heapster", Namespace: "kube-system"}})
	case p == "/api/v1/namespaces/kube-system/services/heapster":
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "heapster"))
	case p == "/api/v1/namespaces/test-namespace/pods":
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, o := range testPods(2) {
			list.Items = append(list.Items, *o.(*corev1.Pod))
		}
		writeObj(list)
	case strings.HasPrefix(p, "/api/v1/namespaces/kube-system/services/http:heapster:/proxy/") && s.heapster != nil:
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(p, "/api/v1/namespaces/kube-system/services/http:heapster:/proxy")
		s.heapster.ServeHTTP(w, r2)
	default:
		if v, ok := s.routes[p]; ok {
			writeObj(v)
			return
		}
		for _, g := range s.groups {
			for _, v := range g.Versions {
				if p == "/apis/"+v.GroupVersion {
					writeObj(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: v.GroupVersion})
					return
				}
			}
		}
		writeStatus(w, apierrors.NewNotFound(schema.GroupResource{}, p))
	}
}

func group(name string, versions ...string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

// TestNewClientAgainstAnAPIServer wires real client-go clients to an HTTP server: the
// metrics.k8s.io client, the custom metrics client falling back to v1beta1 through our
// version getter, and in a second cluster Heapster (the stand-in) behind the service proxy.
func TestNewClientAgainstAnAPIServer(t *testing.T) {
	ts := apiNow.Add(-10 * time.Second)
	srv := &fakeAPIServer{
		groups: []metav1.APIGroup{group("metrics.k8s.io", "v1beta1"), group("custom.metrics.k8s.io", "v1beta1")},
		routes: map[string]any{
			"/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods": map[string]any{
				"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
				"items": []any{map[string]any{"metadata": map[string]any{"name": "a", "namespace": "ns"}, "timestamp": ts.Format(time.RFC3339), "window": "15s",
					"containers": []any{map[string]any{"name": "c", "usage": map[string]any{"cpu": "120m", "memory": "1Mi"}}}}},
			},
			"/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/qps": map[string]any{
				"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1",
				"items": []any{map[string]any{"describedObject": map[string]any{"kind": "Pod", "name": "a", "namespace": "ns", "apiVersion": "/v1"},
					"metricName": "qps", "timestamp": ts.Format(time.RFC3339), "value": "7"}},
			},
		},
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	ctx := context.Background()
	c, sel, err := newClient(t, DefaultConfig(), &rest.Config{Host: hs.URL}, clocktesting.NewFakePassiveClock(apiNow))
	if err != nil {
		t.Fatal(err)
	}
	if sel.Source != SourceMetricsAPI {
		t.Fatalf("selection %+v", sel)
	}
	cpu, _, err := c.PodResource(ctx, "ns", corev1.ResourceCPU, labels.Everything(), "")
	if err != nil {
		t.Fatal(err)
	}
	qps, _, err := c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	want := []sampleMap{{"a": {MilliValue: 120, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}}, {"a": {MilliValue: 7000, Timestamp: sampleset.Timestamp(ts), Window: time.Minute}}}
	if diff := cmp.Diff(want, []sampleMap{cpu.Map(), qps.Map()}); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want := "metrics.k8s.io/v1beta1, custom.metrics.k8s.io/v1beta1, external.metrics.k8s.io (not served)"; c.Source() != want {
		t.Errorf("source %q, want %q", c.Source(), want)
	}

	standin, err := heapsterstandin.New(clocktesting.NewFakePassiveClock(minute(0)), *cpuScenario(2, [][]int64{{100}, {300}}, minute(0)))
	if err != nil {
		t.Fatal(err)
	}
	legacy := httptest.NewServer(&fakeAPIServer{heapster: standin})
	defer legacy.Close()
	c, sel, err = newClient(t, DefaultConfig(), &rest.Config{Host: legacy.URL}, clocktesting.NewFakePassiveClock(minute(0)))
	if err != nil {
		t.Fatal(err)
	}
	if sel.Source != SourceHeapster {
		t.Fatalf("selection %+v", sel)
	}
	cpu, _, err = c.PodResource(ctx, testNamespace, corev1.ResourceCPU, testSelector, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(podSamplesAt(minute(0), time.Minute, podName(0), 100, podName(1), 300), cpu.Map()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestHeapsterURLErrorsNeverShowItsPassword(t *testing.T) {
	for _, raw := range []string{
		"http://alice:s3cret@[::1",
		"ftp://alice:s3cret@127.0.0.1",
		"http://alice:s3cret@127.0.0.1/?a=b",
		"http://alice:s3cret@/path",
	} {
		t.Run(raw, func(t *testing.T) {
			o := DefaultConfig()
			o.HeapsterURL = raw
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), "--heapster-url") {
				t.Fatalf("error %v, want one naming --heapster-url", err)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows the URL's password: %v", err)
			}
		})
	}
}
