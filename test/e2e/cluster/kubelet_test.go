package cluster

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
)

func TestResourceMetricsPageMatchesGolden(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pods := []PodSample{
		{Namespace: "ns", Name: "web-1", Containers: []string{"app", "sidecar"}, StartTime: now.Add(-100 * time.Second), CPUSeconds: 12.5, CPUMilli: 250, MemoryBytes: 64 << 20},
		{Namespace: "ns", Name: "web-2", Containers: []string{"app"}, StartTime: now.Add(-10 * time.Second), CPUSeconds: 0.25, CPUMilli: 25, MemoryBytes: 32 << 20},
	}
	got := renderResourceMetrics(pods, 101.5, 600<<20, now)
	golden.Check(t, filepath.Join("testdata", "metrics-resource.golden"), got)
}

func TestCadvisorMetricsPageMatchesGolden(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pods := []cadvisorPod{
		{PodSample: PodSample{Namespace: "ns", Name: "web-1", Containers: []string{"app", "sidecar"}, StartTime: now.Add(-100 * time.Second), CPUSeconds: 12.5, CPUMilli: 250, MemoryBytes: 64 << 20},
			UID: "0b6f5a1e-1111-4c2d-9e3f-000000000001", QOSClass: corev1.PodQOSBurstable, Images: map[string]string{"app": "e2e/web:1", "sidecar": "e2e/proxy:2"}},
		{PodSample: PodSample{Namespace: "ns", Name: "web-2", Containers: []string{"app"}, StartTime: now.Add(-10 * time.Second), CPUSeconds: 0.25, CPUMilli: 25, MemoryBytes: 32 << 20},
			UID: "0b6f5a1e-2222-4c2d-9e3f-000000000002", QOSClass: corev1.PodQOSGuaranteed, Images: map[string]string{"app": "e2e/web:1"}},
	}
	got := renderCadvisorMetrics(pods, 101.5, 600<<20, now)
	golden.Check(t, filepath.Join("testdata", "metrics-cadvisor.golden"), got)
}

// cadvisorCPU parses a /metrics/cadvisor page with Prometheus' own text parser and returns the
// CPU counter of ns/pod's container (its timestamp too).
func cadvisorCPU(t *testing.T, page []byte, ns, pod, container string) (float64, time.Time) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse as the Prometheus text format: %v", err)
	}
	fam := families["container_cpu_usage_seconds_total"]
	if fam == nil || fam.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("container_cpu_usage_seconds_total is missing or not a counter: %v", fam)
	}
	for _, m := range fam.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["namespace"] == ns && l["pod"] == pod && l["container"] == container {
			return m.GetCounter().GetValue(), time.UnixMilli(m.GetTimestampMs())
		}
	}
	t.Fatalf("no CPU series for %s/%s container %q", ns, pod, container)
	return 0, time.Time{}
}

// Prometheus' rate() is the counter's increase over the time between samples: scrapes of the
// page at any instants give the modelled usage, before and after the load changes, and the
// counter never goes down.
func TestCadvisorCPUCounterIsMonotonicAndItsRateIsTheModelledUsage(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	web := map[string]string{"app": "web"}
	m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
	m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
	w := Workload{Namespace: "ns", Selector: web}
	m.Set(w, Load{CPUMilli: 300, MemoryBytes: 64 << 20})
	page := func(at time.Time) []byte {
		clk.SetTime(at)
		samples, cpu, mem := m.SampleNodeAt("node-1", at)
		pods := make([]cadvisorPod, 0, len(samples))
		for _, s := range samples {
			pods = append(pods, cadvisorPod{PodSample: s, UID: "uid-" + s.Name})
		}
		return renderCadvisorMetrics(pods, cpu, mem, at)
	}
	type scrape struct {
		at        time.Duration
		setLoad   int64 // if not zero, the workload's load is set to it (millicores) before the scrape
		wantMilli float64
	}
	steps := []scrape{
		{at: 7300 * time.Millisecond},
		{at: 12100 * time.Millisecond, wantMilli: 150},
		{at: 17 * time.Second, wantMilli: 150},
		{at: 30 * time.Second, setLoad: 50},
		{at: 35500 * time.Millisecond, wantMilli: 25},
		{at: 60 * time.Second, wantMilli: 25},
	}
	var prev float64
	var prevAt time.Time
	for i, s := range steps {
		if s.setLoad != 0 {
			clk.SetTime(t0.Add(s.at))
			m.Set(w, Load{CPUMilli: s.setLoad, MemoryBytes: 64 << 20})
		}
		v, at := cadvisorCPU(t, page(t0.Add(s.at)), "ns", "a", "c")
		if !at.Equal(t0.Add(s.at)) {
			t.Errorf("scrape %d stamped %s, want %s", i, at, t0.Add(s.at))
		}
		if i > 0 && v < prev {
			t.Errorf("scrape %d: counter went down from %v to %v", i, prev, v)
		}
		if s.wantMilli != 0 {
			rate := (v - prev) / at.Sub(prevAt).Seconds() * 1000
			if math.Abs(rate-s.wantMilli) > 1e-6 {
				t.Errorf("scrape %d: rate %.9fm, want %vm", i, rate, s.wantMilli)
			}
		}
		prev, prevAt = v, at
	}
}
