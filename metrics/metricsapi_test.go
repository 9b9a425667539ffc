package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	core "k8s.io/client-go/testing"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1 "k8s.io/metrics/pkg/apis/metrics/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

var apiNow = time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC)

// apiFixture is a cluster serving the given group versions, with fake metrics clients
// whose reactors tests set.
type apiFixture struct {
	served    []string // "metrics.k8s.io/v1beta1", ...
	discovery *fakediscovery.FakeDiscovery
	resource  *metricsfake.Clientset
	custom    *customfake.FakeCustomMetricsClient
	external  *externalfake.FakeExternalMetricsClient
}

func newAPIFixture(served ...string) *apiFixture {
	f := &apiFixture{
		served:   served,
		resource: metricsfake.NewSimpleClientset(),
		custom:   &customfake.FakeCustomMetricsClient{},
		external: &externalfake.FakeExternalMetricsClient{},
	}
	f.discovery = &fakediscovery.FakeDiscovery{Fake: &core.Fake{}}
	for _, gv := range served {
		f.discovery.Resources = append(f.discovery.Resources, &metav1.APIResourceList{GroupVersion: gv})
	}
	return f
}

func (f *apiFixture) apiClients() APIClients {
	return APIClients{
		Discovery: f.discovery,
		Resource:  f.resource,
		Custom:    func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient { return f.custom },
		External:  f.external,
		Clock:     clocktesting.NewFakePassiveClock(apiNow),
		MaxAge:    DefaultMaxAge,
	}
}

func (f *apiFixture) client(t *testing.T) Client {
	t.Helper()
	c, err := NewAPIClient(f.apiClients(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type podCPU struct {
	name       string
	containers map[string]string // container -> cpu quantity; "" means the cpu key is absent
}

func v1beta1PodMetrics(ts time.Time, pods ...podCPU) *metricsv1beta1.PodMetricsList {
	list := &metricsv1beta1.PodMetricsList{}
	for _, p := range pods {
		m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "ns", Labels: map[string]string{"app": "web"}}, Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: 15 * time.Second}}
		for _, name := range sortedKeys(p.containers) {
			usage := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
			if q := p.containers[name]; q != "" {
				usage[corev1.ResourceCPU] = resource.MustParse(q)
			}
			m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: name, Usage: usage})
		}
		list.Items = append(list.Items, m)
	}
	return list
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestResourceMetricsAPI(t *testing.T) {
	ts := apiNow.Add(-30 * time.Second)
	pods := []podCPU{
		{"a", map[string]string{"app": "250m", "side": "10m"}},
		{"b", map[string]string{"app": "400m"}},
		{"c", map[string]string{"app": "100m", "side": ""}}, // side lacks cpu
		{"d", nil}, // no containers
	}
	tests := []struct {
		name      string
		container string
		want      sampleMap
	}{
		{name: "usage is summed over containers and pods lacking cpu anywhere are left out",
			want: sampleMap{"a": {MilliValue: 260, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}, "b": {MilliValue: 400, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}}},
		{name: "one container's usage; pods without it are left out", container: "side",
			want: sampleMap{"a": {MilliValue: 10, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}}},
		{name: "one container's usage; a pod whose container lacks cpu is left out", container: "app",
			want: sampleMap{"a": {MilliValue: 250, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}, "b": {MilliValue: 400, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}, "c": {MilliValue: 100, Timestamp: sampleset.Timestamp(ts), Window: 15 * time.Second}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture("metrics.k8s.io/v1beta1")
			var gotSelector string
			f.resource.PrependReactor("list", "pods", func(a core.Action) (bool, runtime.Object, error) {
				gotSelector = a.(core.ListAction).GetListRestrictions().Labels.String()
				return true, v1beta1PodMetrics(ts, pods...), nil
			})
			got, gotTS, err := f.client(t).PodResource(context.Background(), "ns", corev1.ResourceCPU, labels.SelectorFromSet(labels.Set{"app": "web"}), tc.container)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.Map()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !gotTS.Equal(ts) || gotSelector != "app=web" {
				t.Errorf("time %s selector %q", gotTS, gotSelector)
			}
		})
	}
}

func TestResourceMetricsAPIPrefersV1(t *testing.T) {
	f := newAPIFixture("metrics.k8s.io/v1", "metrics.k8s.io/v1beta1")
	ts := apiNow
	f.resource.PrependReactor("list", "pods", func(a core.Action) (bool, runtime.Object, error) {
		if v := a.GetResource().Version; v != "v1" {
			t.Errorf("asked version %s, want v1", v)
		}
		return true, &metricsv1.PodMetricsList{Items: []metricsv1.PodMetrics{{
			ObjectMeta: metav1.ObjectMeta{Name: "a"}, Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: time.Minute},
			Containers: []metricsv1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ki")}}},
		}}}, nil
	})
	c := f.client(t)
	got, _, err := c.PodResource(context.Background(), "ns", corev1.ResourceMemory, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleMap{"a": {MilliValue: 1024000, Timestamp: sampleset.Timestamp(ts), Window: time.Minute}}, got.Map()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if want := "metrics.k8s.io/v1, custom.metrics.k8s.io (not served), external.metrics.k8s.io (not served)"; c.Source() != want {
		t.Errorf("source %q, want %q", c.Source(), want)
	}
}

func TestMetricsAPIErrorsSayWhatToDo(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "", errors.New("no RBAC"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
	unavailable := apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
	ts := apiNow
	tests := []struct {
		name    string
		served  []string
		list    runtime.Object
		err     error
		wantErr []string
		// wantSourceFailure: the source failed (not what was asked), so explain exits 1.
		wantSourceFailure bool
	}{
		{name: "an unserved API says what to install", served: nil,
			wantErr: []string{"unable to fetch metrics from resource metrics API", "metrics.k8s.io (v1 or v1beta1) is not served by this cluster", "install metrics-server", "--metrics-source=heapster"}},
		{name: "403 names the permission", served: []string{"metrics.k8s.io/v1beta1"}, err: forbidden,
			wantErr: []string{"(metrics.k8s.io/v1beta1): forbidden", "list pods.metrics.k8s.io in ns"}},
		{name: "404 points at the APIService", served: []string{"metrics.k8s.io/v1beta1"}, err: notFound,
			wantErr: []string{"kubectl get apiservices"}},
		{name: "503 points at the APIService", served: []string{"metrics.k8s.io/v1beta1"}, err: unavailable,
			wantErr: []string{"unavailable", "kubectl get apiservices"}, wantSourceFailure: true},
		{name: "500 is the source's failure", served: []string{"metrics.k8s.io/v1beta1"}, err: apierrors.NewInternalError(errors.New("boom")),
			wantErr: []string{"unable to fetch metrics from resource metrics API", "boom"}, wantSourceFailure: true},
		{name: "a refused connection is the source's failure", served: []string{"metrics.k8s.io/v1beta1"}, err: errors.New("dial tcp 10.0.0.1:443: connect: connection refused"),
			wantErr: []string{"connection refused"}, wantSourceFailure: true},
		{name: "a deadline says so", served: []string{"metrics.k8s.io/v1beta1"}, err: context.DeadlineExceeded,
			wantErr: []string{"no answer in time"}, wantSourceFailure: true},
		{name: "no items", served: []string{"metrics.k8s.io/v1beta1"}, list: &metricsv1beta1.PodMetricsList{},
			wantErr: []string{"no metrics returned from resource metrics API"}, wantSourceFailure: true},
		{name: "stale samples are refused", served: []string{"metrics.k8s.io/v1beta1"}, list: v1beta1PodMetrics(ts.Add(-time.Hour), podCPU{"a", map[string]string{"c": "1"}}),
			wantErr: []string{"the sample of pod a is stale", "1h0m0s old"}, wantSourceFailure: true},
		{name: "negative usage is refused", served: []string{"metrics.k8s.io/v1beta1"}, list: v1beta1PodMetrics(ts, podCPU{"a", map[string]string{"c": "-1"}}),
			wantErr: []string{"pod a: container c cpu: negative value -1"}, wantSourceFailure: true},
		{name: "huge usage is refused", served: []string{"metrics.k8s.io/v1beta1"}, list: v1beta1PodMetrics(ts, podCPU{"a", map[string]string{"c": "1E"}}),
			wantErr: []string{"pod a: container c cpu: absurdly large value 1e+18"}, wantSourceFailure: true},
		{name: "duplicate pods are refused", served: []string{"metrics.k8s.io/v1beta1"}, list: v1beta1PodMetrics(ts, podCPU{"a", map[string]string{"c": "1"}}, podCPU{"a", map[string]string{"c": "1"}}),
			wantErr: []string{"pod a is listed twice"}, wantSourceFailure: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture(tc.served...)
			f.resource.PrependReactor("list", "pods", func(core.Action) (bool, runtime.Object, error) {
				if tc.err != nil {
					return true, nil, tc.err
				}
				return true, tc.list, nil
			})
			_, _, err := f.client(t).PodResource(context.Background(), "ns", corev1.ResourceCPU, labels.Everything(), "")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if got := IsSourceFailure(err); got != tc.wantSourceFailure {
				t.Errorf("IsSourceFailure(%q) = %v, want %v", err, got, tc.wantSourceFailure)
			}
		})
	}
}

func TestResourceVersionIsRediscoveredAfterTheAPIGoesAway(t *testing.T) {
	f := newAPIFixture("metrics.k8s.io/v1beta1")
	calls := 0
	f.resource.PrependReactor("list", "pods", func(a core.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "")
		}
		if v := a.GetResource().Version; v != "v1" {
			t.Errorf("second call asked %s, want v1 after rediscovery", v)
		}
		return true, &metricsv1.PodMetricsList{Items: []metricsv1.PodMetrics{{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Timestamp: metav1.NewTime(apiNow),
			Containers: []metricsv1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}, nil
	})
	c, err := NewAPIClient(f.apiClients(), map[string][]string{"metrics.k8s.io": {"v1beta1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.PodResource(context.Background(), "ns", corev1.ResourceCPU, nil, ""); err == nil {
		t.Fatal("first call: no error")
	}
	// metrics-server was upgraded meanwhile.
	f.discovery.Resources = []*metav1.APIResourceList{{GroupVersion: "metrics.k8s.io/v1"}}
	if _, _, err := c.PodResource(context.Background(), "ns", corev1.ResourceCPU, nil, ""); err != nil {
		t.Fatal(err)
	}
}

func metricValue(kind, name string, v string, ts time.Time, window *int64) cmv1beta2.MetricValue {
	return cmv1beta2.MetricValue{
		DescribedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "ns"},
		Metric:          cmv1beta2.MetricIdentifier{Name: "qps"},
		Timestamp:       metav1.NewTime(ts),
		WindowSeconds:   window,
		Value:           resource.MustParse(v),
	}
}

func TestCustomMetricsPods(t *testing.T) {
	thirty := int64(30)
	f := newAPIFixture("custom.metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2")
	var got core.Action
	f.custom.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) {
		got = a
		return true, &cmv1beta2.MetricValueList{Items: []cmv1beta2.MetricValue{
			metricValue("Pod", "a", "1500m", apiNow, nil),
			metricValue("Pod", "b", "2", apiNow.Add(-time.Second), &thirty),
		}}, nil
	})
	c := f.client(t)
	podSamples, ts, err := c.PodsMetric(context.Background(), "ns", "qps", labels.SelectorFromSet(labels.Set{"app": "web"}), labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	want := sampleMap{"a": {MilliValue: 1500, Timestamp: sampleset.Timestamp(apiNow), Window: time.Minute}, "b": {MilliValue: 2000, Timestamp: sampleset.Timestamp(apiNow.Add(-time.Second)), Window: 30 * time.Second}}
	if diff := cmp.Diff(want, podSamples.Map()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !ts.Equal(apiNow) {
		t.Errorf("time %s, want the first item's", ts)
	}
	if got.GetResource().Resource != "pods" || got.(customfake.GetForAction).GetMetricName() != "qps" {
		t.Errorf("asked %#v", got)
	}
	if want := "metrics.k8s.io (not served), custom.metrics.k8s.io/v1beta2, external.metrics.k8s.io (not served)"; c.Source() != want {
		t.Errorf("source %q, want %q", c.Source(), want)
	}
}

func TestCustomMetricsErrors(t *testing.T) {
	ts := apiNow
	tests := []struct {
		name    string
		served  []string
		items   []cmv1beta2.MetricValue
		err     error
		wantErr []string
		// wantSourceFailure: the source failed (not what was asked), so explain exits 1.
		wantSourceFailure bool
		// wantNotFound: the adapter has no such metric (AsMetricNotFound).
		wantNotFound bool
	}{
		{name: "an unserved API says what to install", wantErr: []string{"custom.metrics.k8s.io (v1beta2 or v1beta1) is not served", "custom metrics adapter"}},
		// The adapter answered: it has nothing for that metric and selector.
		{name: "no items is a metric not found, not a failed source", served: []string{"custom.metrics.k8s.io/v1beta1"}, wantErr: []string{"no metrics returned from custom metrics API (custom.metrics.k8s.io/v1beta1)"}, wantNotFound: true},
		{name: "404 is a metric not found", served: []string{"custom.metrics.k8s.io/v1beta1"}, err: apierrors.NewNotFound(schema.GroupResource{Group: "custom.metrics.k8s.io", Resource: "pods"}, "qps"),
			wantErr: []string{"not found"}, wantNotFound: true},
		{name: "negative values are refused", served: []string{"custom.metrics.k8s.io/v1beta1"}, items: []cmv1beta2.MetricValue{metricValue("Pod", "a", "-1", ts, nil)},
			wantErr: []string{"metric qps: pod a: negative value -1"}, wantSourceFailure: true},
		{name: "negative windows are refused", served: []string{"custom.metrics.k8s.io/v1beta1"}, items: []cmv1beta2.MetricValue{metricValue("Pod", "a", "1", ts, new(int64(-1)))},
			wantErr: []string{"negative windowSeconds -1"}, wantSourceFailure: true},
		{name: "stale values are refused", served: []string{"custom.metrics.k8s.io/v1beta1"}, items: []cmv1beta2.MetricValue{metricValue("Pod", "a", "1", ts.Add(-11*time.Minute), nil)},
			wantErr: []string{"the value of pod a is stale"}, wantSourceFailure: true},
		{name: "unnamed pods are refused", served: []string{"custom.metrics.k8s.io/v1beta1"}, items: []cmv1beta2.MetricValue{metricValue("Pod", "", "1", ts, nil)},
			wantErr: []string{"an item names no pod"}, wantSourceFailure: true},
		{name: "duplicate pods are refused", served: []string{"custom.metrics.k8s.io/v1beta1"}, items: []cmv1beta2.MetricValue{metricValue("Pod", "a", "1", ts, nil), metricValue("Pod", "a", "2", ts, nil)},
			wantErr: []string{"pod a is listed twice"}, wantSourceFailure: true},
		{name: "403 names the permission", served: []string{"custom.metrics.k8s.io/v1beta1"}, err: apierrors.NewForbidden(schema.GroupResource{Group: "custom.metrics.k8s.io", Resource: "pods"}, "*", errors.New("no")),
			wantErr: []string{"forbidden", "get pods.custom.metrics.k8s.io (metric qps) in ns"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture(tc.served...)
			f.custom.AddReactor("get", "*", func(core.Action) (bool, runtime.Object, error) {
				if tc.err != nil {
					return true, nil, tc.err
				}
				return true, &cmv1beta2.MetricValueList{Items: tc.items}, nil
			})
			_, _, err := f.client(t).PodsMetric(context.Background(), "ns", "qps", labels.Everything(), nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if got := IsSourceFailure(err); got != tc.wantSourceFailure {
				t.Errorf("IsSourceFailure(%q) = %v, want %v", err, got, tc.wantSourceFailure)
			}
			if _, got := AsMetricNotFound(err); got != tc.wantNotFound {
				t.Errorf("AsMetricNotFound(%q) = %v, want %v", err, got, tc.wantNotFound)
			}
		})
	}
}

// kubectl's discovery cache lives for hours: a read on the version it names, which the adapter
// no longer serves, is made again on the version discovery names once refreshed. A 404 of a
// metric the adapter does not know is not read twice.
func TestCustomVersionDroppedByTheAdapterIsReadAgainOnTheOneServed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dropped   bool
		wantCalls int
		wantErr   bool
	}{
		{name: "v1beta2 dropped: read again on v1beta1", dropped: true, wantCalls: 2},
		{name: "metric unknown on a version still served: read once", wantCalls: 1, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture("custom.metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2")
			calls := 0
			f.custom.AddReactor("get", "*", func(core.Action) (bool, runtime.Object, error) {
				calls++
				if calls == 1 {
					if tc.dropped {
						f.discovery.Resources = []*metav1.APIResourceList{{GroupVersion: "custom.metrics.k8s.io/v1beta1"}}
					}
					return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "custom.metrics.k8s.io", Resource: "pods"}, "qps")
				}
				return true, &cmv1beta2.MetricValueList{Items: []cmv1beta2.MetricValue{metricValue("Pod", "a", "1", apiNow, nil)}}, nil
			})
			c := f.client(t)
			_, _, err := c.PodsMetric(context.Background(), "ns", "qps", labels.Everything(), nil)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want one: %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d reads, want %d", calls, tc.wantCalls)
			}
			if tc.dropped && !strings.Contains(c.Source(), "custom.metrics.k8s.io/v1beta1") {
				t.Errorf("source %q, want the version read again", c.Source())
			}
		})
	}
}

func TestCustomMetricsObject(t *testing.T) {
	tests := []struct {
		name         string
		object       autoscalingv2.CrossVersionObjectReference
		wantResource string
		wantName     string
		wantNS       string
	}{
		{name: "a namespaced object is asked for by name",
			object: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"}, wantResource: "ingresses.networking.k8s.io", wantName: "main", wantNS: "ns"},
		{name: "the Namespace kind reads the HPA's own namespace, whatever name it gives",
			object: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "other"}, wantResource: "namespaces", wantName: "ns", wantNS: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture("custom.metrics.k8s.io/v1beta2")
			var got core.GetAction
			f.custom.AddReactor("get", "*", func(a core.Action) (bool, runtime.Object, error) {
				got = a.(core.GetAction)
				return true, &cmv1beta2.MetricValueList{Items: []cmv1beta2.MetricValue{metricValue(tc.object.Kind, tc.object.Name, "42", apiNow, nil)}}, nil
			})
			v, ts, err := f.client(t).ObjectMetric(context.Background(), "ns", "hits", tc.object, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v != 42000 || !ts.Equal(apiNow) {
				t.Errorf("got %d at %s", v, ts)
			}
			if got.GetResource().Resource != tc.wantResource || got.GetName() != tc.wantName || got.GetNamespace() != tc.wantNS {
				t.Errorf("asked resource %q name %q namespace %q", got.GetResource().Resource, got.GetName(), got.GetNamespace())
			}
		})
	}

	f := newAPIFixture("custom.metrics.k8s.io/v1beta2")
	_, _, err := f.client(t).ObjectMetric(context.Background(), "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "a/b/c", Kind: "X", Name: "y"}, nil)
	checkErr(t, err, `malformed apiVersion "a/b/c"`)
}

func TestExternalMetrics(t *testing.T) {
	f := newAPIFixture("external.metrics.k8s.io/v1beta1")
	var gotSelector string
	f.external.AddReactor("list", "*", func(a core.Action) (bool, runtime.Object, error) {
		gotSelector = a.(core.ListAction).GetListRestrictions().Labels.String()
		return true, &emv1beta1.ExternalMetricValueList{Items: []emv1beta1.ExternalMetricValue{
			{MetricName: "queue", Timestamp: metav1.NewTime(apiNow), Value: resource.MustParse("3")},
			{MetricName: "queue", Timestamp: metav1.NewTime(apiNow), Value: resource.MustParse("250m")},
		}}, nil
	})
	vals, ts, err := f.client(t).ExternalMetric(context.Background(), "ns", "queue", labels.SelectorFromSet(labels.Set{"q": "jobs"}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{3000, 250}, vals); diff != "" || !ts.Equal(apiNow) || gotSelector != "q=jobs" {
		t.Errorf("values (-want +got):\n%s time %s selector %q", diff, ts, gotSelector)
	}
}

func TestExternalMetricsErrors(t *testing.T) {
	tests := []struct {
		name    string
		served  []string
		items   []emv1beta1.ExternalMetricValue
		err     error
		wantErr string
		// wantSourceFailure: the source failed (not what was asked), so explain exits 1.
		wantSourceFailure bool
		// wantNotFound: the adapter has no such metric (AsMetricNotFound).
		wantNotFound bool
	}{
		{name: "an unserved API says what to install", wantErr: "external.metrics.k8s.io (v1beta1) is not served by this cluster; install an external metrics adapter"},
		// The adapter answered: no series of the metric matches the selector.
		{name: "no items is a metric not found, not a failed source", served: []string{"external.metrics.k8s.io/v1beta1"}, wantErr: "no metrics returned from external metrics API", wantNotFound: true},
		{name: "negative values", served: []string{"external.metrics.k8s.io/v1beta1"}, items: []emv1beta1.ExternalMetricValue{{Timestamp: metav1.NewTime(apiNow), Value: resource.MustParse("-3")}},
			wantErr: "negative value -3", wantSourceFailure: true},
		{name: "stale values", served: []string{"external.metrics.k8s.io/v1beta1"}, items: []emv1beta1.ExternalMetricValue{{Timestamp: metav1.NewTime(apiNow.Add(-time.Hour)), Value: resource.MustParse("3")}},
			wantErr: "value 0 is stale", wantSourceFailure: true},
		{name: "503", served: []string{"external.metrics.k8s.io/v1beta1"}, err: apierrors.NewServiceUnavailable("down"), wantErr: "unavailable", wantSourceFailure: true},
		{name: "400 is what was asked, not the source", served: []string{"external.metrics.k8s.io/v1beta1"}, err: apierrors.NewBadRequest("invalid selector"), wantErr: "invalid selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture(tc.served...)
			f.external.AddReactor("list", "*", func(core.Action) (bool, runtime.Object, error) {
				if tc.err != nil {
					return true, nil, tc.err
				}
				return true, &emv1beta1.ExternalMetricValueList{Items: tc.items}, nil
			})
			_, _, err := f.client(t).ExternalMetric(context.Background(), "ns", "queue", nil)
			checkErr(t, err, tc.wantErr)
			if got := IsSourceFailure(err); got != tc.wantSourceFailure {
				t.Errorf("IsSourceFailure(%v) = %v, want %v", err, got, tc.wantSourceFailure)
			}
			if _, got := AsMetricNotFound(err); got != tc.wantNotFound {
				t.Errorf("AsMetricNotFound(%v) = %v, want %v", err, got, tc.wantNotFound)
			}
		})
	}
}

func TestCallsWithoutContextStopWaitingAtTheDeadline(t *testing.T) {
	f := newAPIFixture("external.metrics.k8s.io/v1beta1")
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	f.external.AddReactor("list", "*", func(core.Action) (bool, runtime.Object, error) {
		defer wg.Done()
		<-release
		return true, &emv1beta1.ExternalMetricValueList{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := f.client(t)
	_, _, err := c.ExternalMetric(ctx, "ns", "queue", nil)
	checkErr(t, err, "context canceled")

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = c.ExternalMetric(ctx, "ns", "queue", nil)
	checkErr(t, err, "no answer in time")
	close(release)
	wg.Wait()
}

func TestAnUnavailableResourceMetricsAPIIsNotCalledUninstalled(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("the server is currently unable to handle the request (get pods.metrics.k8s.io)")
	tests := []struct {
		name string
		// listed is what discovery lists; probe is the answer for a group version it does not list.
		listed  []string
		probe   error
		wantErr []string
	}{
		{name: "an APIService left out of discovery that answers 503 is unavailable, not uninstalled", probe: unavailable,
			wantErr: []string{"unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io); metrics.k8s.io/v1 is registered but unavailable: check the APIService", "kubectl get apiservices"}},
		{name: "a group version that answers 404 is not installed", probe: apierrors.NewNotFound(schema.GroupResource{}, ""),
			wantErr: []string{"metrics.k8s.io (v1 or v1beta1) is not served by this cluster; install metrics-server"}},
		{name: "a listed version that answers 503 quotes the server as upstream does", listed: []string{"metrics.k8s.io/v1beta1"},
			wantErr: []string{"unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io); metrics.k8s.io/v1beta1 is registered but unavailable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newAPIFixture(tc.listed...)
			f.discovery.PrependReactor("get", "resource", func(core.Action) (bool, runtime.Object, error) {
				return tc.probe != nil, nil, tc.probe
			})
			f.resource.PrependReactor("list", "pods", func(core.Action) (bool, runtime.Object, error) {
				return true, nil, unavailable
			})
			c := f.client(t)
			// The second read shows what a later sync reports: one failure must not turn
			// into "not served".
			for i := range 2 {
				_, _, err := c.PodResource(context.Background(), "ns", corev1.ResourceCPU, labels.Everything(), "")
				if err == nil {
					t.Fatalf("read %d: no error", i+1)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("read %d: error %q does not contain %q", i+1, err, w)
					}
				}
				if tc.probe == nil && strings.Contains(err.Error(), "install") {
					t.Errorf("read %d: error %q tells to install what is installed", i+1, err)
				}
			}
		})
	}
}

// TestNamespacePodResourcesServeEachSelectorWhatItsOwnListWould: one PodMetrics list of the
// whole namespace, filtered per selector, gives every selector the samples, time and error a
// list with that selector gives (the server filters by the PodMetrics' labels, as here).
func TestNamespacePodResourcesServeEachSelectorWhatItsOwnListWould(t *testing.T) {
	ts := apiNow.Add(-30 * time.Second)
	item := func(name string, at time.Time, cpu string, lbls ...string) metricsv1beta1.PodMetrics {
		m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{}},
			Timestamp: metav1.NewTime(at), Window: metav1.Duration{Duration: 15 * time.Second},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
		for i := 0; i+1 < len(lbls); i += 2 {
			m.Labels[lbls[i]] = lbls[i+1]
		}
		return m
	}
	all := []metricsv1beta1.PodMetrics{
		item("web-1", ts, "250m", "app", "web"),
		item("web-2", ts, "300m", "app", "web", "tier", "front"),
		item("api-1", ts, "100m", "app", "api"),
		item("api-2", apiNow.Add(-time.Hour), "100m", "app", "api"), // older than --metrics-max-age
		item("job-1", ts, "50m", "tier", "front"),
	}
	f := newAPIFixture("metrics.k8s.io/v1beta1")
	lists := 0
	f.resource.PrependReactor("list", "pods", func(a core.Action) (bool, runtime.Object, error) {
		lists++
		sel := a.(core.ListAction).GetListRestrictions().Labels
		out := &metricsv1beta1.PodMetricsList{}
		for _, m := range all {
			if sel.Matches(labels.Set(m.Labels)) {
				out.Items = append(out.Items, m)
			}
		}
		return true, out, nil
	})
	c := f.client(t)
	nsWide := c.(NamespaceLister).NamespacePodResources(context.Background(), "ns")
	if lists != 1 {
		t.Fatalf("the namespace read sent %d lists, want 1", lists)
	}
	for _, s := range []string{"app=web", "app=api", "tier=front", "app in (web)", "tier=front,app=web", "app in (api,web)", "app=web,tier!=front", "app=none", ""} {
		t.Run(s, func(t *testing.T) {
			sel, err := labels.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			want, wantTS, wantErr := c.PodResource(context.Background(), "ns", corev1.ResourceCPU, sel, "")
			got, gotTS, gotErr := nsWide.PodResource(corev1.ResourceCPU, sel, "")
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || IsSourceFailure(gotErr) != IsSourceFailure(wantErr) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if wantErr == nil && (!gotTS.Equal(wantTS) || !cmp.Equal(got.Map(), want.Map())) {
				t.Errorf("namespace list gave %v at %s, the selector's own list %v at %s", got.Map(), gotTS, want.Map(), wantTS)
			}
		})
	}
}

// BenchmarkNamespacePodResourcesServeItsHPAs is one namespace's share of a steady pass of run
// with --metrics-reads=per-namespace at the soak's 5,000-HPA size: a list of 1,000 pods, 100
// Deployments of 10, each HPA served its Deployment's pods from that one list.
func BenchmarkNamespacePodResourcesServeItsHPAs(b *testing.B) {
	const deployments, perDeployment = 100, 10
	list := &metricsv1beta1.PodMetricsList{}
	sels := make([]labels.Selector, deployments)
	for d := range deployments {
		app := fmt.Sprintf("soak-%04d", d)
		sels[d] = labels.SelectorFromSet(labels.Set{"app": app})
		for i := range perDeployment {
			list.Items = append(list.Items, metricsv1beta1.PodMetrics{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-7d4b9c8f6d-%05d", app, i), Namespace: "ns",
					Labels: map[string]string{"app": app, "pod-template-hash": "7d4b9c8f6d"}},
				Timestamp: metav1.NewTime(apiNow.Add(-10 * time.Second)), Window: metav1.Duration{Duration: 15 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}},
			})
		}
	}
	f := newAPIFixture("metrics.k8s.io/v1beta1")
	f.resource.PrependReactor("list", "pods", func(core.Action) (bool, runtime.Object, error) { return true, list, nil })
	c, err := NewAPIClient(f.apiClients(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		read := c.(NamespaceLister).NamespacePodResources(context.Background(), "ns")
		for _, sel := range sels {
			set, _, err := read.PodResource(corev1.ResourceCPU, sel, "")
			if err != nil || set.Len() != perDeployment {
				b.Fatalf("%s: %v samples, %v", sel, set, err)
			}
		}
	}
}
