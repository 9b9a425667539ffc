package metrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery/cached/disk"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// changingAPIServer is a fakeAPIServer whose metrics APIs the test registers and removes
// between commands; it counts the discovery requests (GET /api, GET /apis).
type changingAPIServer struct {
	mu  sync.Mutex
	api fakeAPIServer
	// unavailable answers 503 under these path prefixes, as the aggregator does for an
	// APIService it cannot reach.
	unavailable []string
	discovery   int
}

func (s *changingAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path == "/api" || r.URL.Path == "/apis" {
		s.discovery++
	}
	for _, p := range s.unavailable {
		if strings.HasPrefix(r.URL.Path, p) {
			writeStatus(w, apierrors.NewServiceUnavailable("the server is currently unable to handle the request"))
			return
		}
	}
	s.api.ServeHTTP(w, r)
}

func (s *changingAPIServer) change(f func(*changingAPIServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// discoveryRequests returns the discovery requests since the last call.
func (s *changingAPIServer) discoveryRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.discovery
	s.discovery = 0
	return n
}

// TestCachedDiscoveryOnlySparesRequests runs commands one after the other, each with its
// own client over one on-disk discovery cache, as explain passes kubectl's: a warm cache
// spares the discovery requests, and metrics APIs registered, removed or unavailable since
// the cache was written are chosen or reported as without a cache (a removed one after the
// one command whose read found it gone).
func TestCachedDiscoveryOnlySparesRequests(t *testing.T) {
	const podsPath = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"
	podMetrics := map[string]any{
		"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
		"items": []any{map[string]any{"metadata": map[string]any{"name": "a", "namespace": "ns"}, "timestamp": apiNow.Add(-10 * time.Second).Format(time.RFC3339), "window": "15s",
			"containers": []any{map[string]any{"name": "c", "usage": map[string]any{"cpu": "120m"}}}}},
	}
	standin := http.NotFoundHandler() // a heapster service exists; its proxy is not read here
	withMetricsServer := func(s *changingAPIServer) {
		s.api.groups = []metav1.APIGroup{group("metrics.k8s.io", "v1beta1")}
		s.api.routes = map[string]any{podsPath: podMetrics}
		s.unavailable = nil
	}
	withoutMetricsServer := func(s *changingAPIServer) {
		s.api.groups, s.api.routes, s.unavailable = nil, nil, nil
	}
	// Discovery leaves out an APIService that is registered but unavailable.
	unavailable := func(s *changingAPIServer) {
		s.api.groups, s.api.routes = nil, nil
		s.unavailable = []string{"/apis/metrics.k8s.io/"}
	}
	type command struct {
		before func(*changingAPIServer)
		// wantReason is the selection's reason; wantRead a substring of the CPU read's
		// error, "" for a successful read.
		wantSource, wantReason, wantRead string
		wantDiscovery                    int
	}
	tests := []struct {
		name     string
		commands []command
	}{
		{name: "a warm cache spares the discovery requests", commands: []command{
			{before: withMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 2},
			{wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 0},
		}},
		{name: "a metrics API registered since the cache was written is chosen, not heapster", commands: []command{
			{before: withoutMetricsServer, wantSource: SourceHeapster, wantReason: "auto: metrics.k8s.io is not served, service kube-system/heapster exists", wantRead: "skip", wantDiscovery: 2},
			{before: withMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 2},
			{wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 0},
		}},
		{name: "a metrics API unavailable since the cache was written is kept and its reads say so", commands: []command{
			{before: withMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 2},
			{before: unavailable, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1",
				wantRead: "metrics.k8s.io/v1beta1 is registered but unavailable", wantDiscovery: 0},
			{before: withMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 0},
		}},
		{name: "a metrics API unavailable when nothing is cached is kept, not heapster", commands: []command{
			{before: unavailable, wantSource: SourceMetricsAPI, wantReason: "auto: metrics.k8s.io is registered but unavailable now",
				wantRead: "metrics.k8s.io/v1 is registered but unavailable", wantDiscovery: 4},
		}},
		{name: "a metrics API removed since the cache was written fails one read, which refreshes the cache", commands: []command{
			{before: withMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1", wantDiscovery: 2},
			{before: withoutMetricsServer, wantSource: SourceMetricsAPI, wantReason: "auto: the cluster serves metrics.k8s.io/v1beta1",
				wantRead: "metrics.k8s.io is no longer served", wantDiscovery: 2},
			{wantSource: SourceHeapster, wantReason: "auto: metrics.k8s.io is not served, service kube-system/heapster exists", wantRead: "skip", wantDiscovery: 2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &changingAPIServer{api: fakeAPIServer{heapster: standin}}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			rc := &rest.Config{Host: hs.URL}
			cacheDir := filepath.Join(t.TempDir(), "discovery")
			for i, cmd := range tc.commands {
				if cmd.before != nil {
					srv.change(cmd.before)
				}
				// A new process: a new client over the same cache on disk.
				dc, err := disk.NewCachedDiscoveryClientForConfig(rest.CopyConfig(rc), cacheDir, "", time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				c, sel, err := NewClient(ctx, DefaultConfig(), rc, dc, clocktesting.NewFakePassiveClock(apiNow))
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				if sel.Source != cmd.wantSource || sel.Reason != cmd.wantReason {
					t.Errorf("command %d: selection %+v, want %s (%s)", i, sel, cmd.wantSource, cmd.wantReason)
				}
				if cmd.wantRead != "skip" {
					_, _, err = c.PodResource(ctx, "ns", corev1.ResourceCPU, labels.Everything(), "")
					checkErr(t, err, cmd.wantRead)
				}
				if got := srv.discoveryRequests(); got != cmd.wantDiscovery {
					t.Errorf("command %d: %d discovery requests, want %d", i, got, cmd.wantDiscovery)
				}
			}
		})
	}
}

// TestCachedDiscoveryStillShowsALongRunAMetricsAPIRegisteredLater: run's client asks again
// for an API it found unserved at every read, through a cache as without one.
func TestCachedDiscoveryStillShowsALongRunAMetricsAPIRegisteredLater(t *testing.T) {
	srv, c := clientWithoutCustomMetrics(t)
	ctx := context.Background()
	_, _, err := c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	checkErr(t, err, "custom.metrics.k8s.io (v1beta2 or v1beta1) is not served by this cluster")

	srv.change(registerQPS)
	got, _, err := c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	if err != nil {
		t.Fatalf("after the custom metrics API was registered: %v", err)
	}
	if s, _ := got.Get("a"); s.MilliValue != 7000 {
		t.Errorf("samples %v, want a at 7", got.Map())
	}
}

// TestADiscoveryPassHoldsAnUnservedAPIUntilTheNextPass: list reads every HPA of one pass (a
// run, a --watch frame) under one answer of discovery, not one per HPA; the next pass asks
// again, and sees an adapter installed meanwhile.
func TestADiscoveryPassHoldsAnUnservedAPIUntilTheNextPass(t *testing.T) {
	srv, c := clientWithoutCustomMetrics(t)
	ctx := context.Background()
	passes := c.(DiscoveryPasses)
	passes.StartDiscoveryPass()
	_, _, err := c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	checkErr(t, err, "custom.metrics.k8s.io (v1beta2 or v1beta1) is not served by this cluster")

	srv.change(registerQPS)
	// Held: the pass does not ask again, so it does not see the adapter yet.
	_, _, err = c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	checkErr(t, err, "custom.metrics.k8s.io (v1beta2 or v1beta1) is not served by this cluster")

	passes.StartDiscoveryPass()
	got, _, err := c.PodsMetric(ctx, "ns", "qps", labels.Everything(), labels.Everything())
	if err != nil {
		t.Fatalf("in the pass after the custom metrics API was registered: %v", err)
	}
	if s, _ := got.Get("a"); s.MilliValue != 7000 {
		t.Errorf("samples %v, want a at 7", got.Map())
	}
}

// clientWithoutCustomMetrics is a metrics client through kubectl's disk cache of discovery,
// over a server that serves metrics.k8s.io and no custom metrics API yet (registerQPS adds it).
func clientWithoutCustomMetrics(t *testing.T) (*changingAPIServer, Client) {
	t.Helper()
	srv := &changingAPIServer{}
	srv.change(func(s *changingAPIServer) { s.api.groups = []metav1.APIGroup{group("metrics.k8s.io", "v1beta1")} })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	rc := &rest.Config{Host: hs.URL}
	dc, err := disk.NewCachedDiscoveryClientForConfig(rest.CopyConfig(rc), filepath.Join(t.TempDir(), "discovery"), "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := NewClient(context.Background(), DefaultConfig(), rc, dc, clocktesting.NewFakePassiveClock(apiNow))
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// registerQPS registers custom.metrics.k8s.io/v1beta1 with a qps of 7 for pod ns/a.
func registerQPS(s *changingAPIServer) {
	s.api.groups = append(s.api.groups, group("custom.metrics.k8s.io", "v1beta1"))
	s.api.routes = map[string]any{"/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/qps": map[string]any{
		"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta1",
		"items": []any{map[string]any{"describedObject": map[string]any{"kind": "Pod", "name": "a", "namespace": "ns", "apiVersion": "/v1"},
			"metricName": "qps", "timestamp": apiNow.Format(time.RFC3339), "value": "7"}},
	}}
}
