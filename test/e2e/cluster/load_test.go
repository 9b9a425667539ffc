package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func pod(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

// usage is the part of a sample the load model computes.
type usage struct {
	Name       string
	CPUSeconds float64
	CPUMilli   int64
	Memory     int64
}

func usages(m *LoadModel) []usage {
	var out []usage
	for _, s := range m.Samples("") {
		out = append(out, usage{Name: s.Name, CPUSeconds: s.CPUSeconds, CPUMilli: s.CPUMilli, Memory: s.MemoryBytes})
	}
	return out
}

func TestLoadModelSplitsWorkloadLoadAcrossReadyPodsAndIntegratesCounters(t *testing.T) {
	web := map[string]string{"app": "web"}
	type step struct {
		advance time.Duration
		do      func(m *LoadModel)
		want    []usage
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{
			name: "one ready pod carries the whole load and its counter grows at that rate",
			steps: []step{
				{do: func(m *LoadModel) {
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 300, MemoryBytes: 100 << 20})
				}, want: []usage{{"a", 0, 300, 100 << 20}}},
				{advance: 10 * time.Second, want: []usage{{"a", 3, 300, 100 << 20}}},
			},
		},
		{
			name: "a second ready pod halves the rate from the moment it is ready",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 300})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
				}},
				{advance: 10 * time.Second, do: func(m *LoadModel) {
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0.Add(10*time.Second), true)
				}, want: []usage{{"a", 3, 150, idleMemoryBytes}, {"b", 0, 150, idleMemoryBytes}}},
				{advance: 10 * time.Second, want: []usage{{"a", 4.5, 150, idleMemoryBytes}, {"b", 1.5, 150, idleMemoryBytes}}},
			},
		},
		{
			name: "a pod that is running but not ready idles and takes no share",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 200})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, false)
				}, want: []usage{{"a", 0, 200, idleMemoryBytes}, {"b", 0, idleCPUMilli, idleMemoryBytes}}},
			},
		},
		{
			name: "a pod going away hands its share to the others and a later load change applies from then on",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 400})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
				}},
				{advance: 5 * time.Second, do: func(m *LoadModel) { m.PodGone(pod("b")) },
					want: []usage{{"a", 1, 400, idleMemoryBytes}}},
				{advance: 5 * time.Second, do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 0})
				}, want: []usage{{"a", 3, idleCPUMilli, idleMemoryBytes}}},
			},
		},
		{
			name: "pods outside the selector or namespace only idle",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 500})
					m.PodRunning(pod("db"), "node-1", []string{"c"}, map[string]string{"app": "db"}, t0, true)
					m.PodRunning(types.NamespacedName{Namespace: "other", Name: "web"}, "node-1", []string{"c"}, web, t0, true)
				}, want: []usage{{"db", 0, idleCPUMilli, idleMemoryBytes}, {"web", 0, idleCPUMilli, idleMemoryBytes}}},
			},
		},
		{
			name: "a pod matched by two workloads carries a share of each",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 200})
					m.Set(Workload{Namespace: "ns", Selector: map[string]string{"tier": "front"}}, Load{CPUMilli: 60})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, map[string]string{"app": "web", "tier": "front"}, t0, true)
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
				}, want: []usage{{"a", 0, 160, idleMemoryBytes}, {"b", 0, 100, idleMemoryBytes}}},
			},
		},
		{
			name: "relabelling a pod moves it from one workload to the other",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 200})
					m.Set(Workload{Namespace: "ns", Selector: map[string]string{"app": "db"}}, Load{CPUMilli: 50})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
				}},
				{advance: time.Second, do: func(m *LoadModel) {
					m.PodRunning(pod("b"), "node-1", []string{"c"}, map[string]string{"app": "db"}, t0, true)
				}, want: []usage{{"a", 0.1, 200, idleMemoryBytes}, {"b", 0.1, 50, idleMemoryBytes}}},
			},
		},
		{
			name: "a pod that stops being ready hands its share back",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 200})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
				}},
				{advance: 2 * time.Second, do: func(m *LoadModel) {
					m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, false)
				}, want: []usage{{"a", 0.2, 200, idleMemoryBytes}, {"b", 0.2, idleCPUMilli, idleMemoryBytes}}},
			},
		},
		{
			name: "counters move on the millisecond grid of the kubelet page",
			steps: []step{
				{do: func(m *LoadModel) {
					m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 1000})
					m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
				}},
				{advance: 1500 * time.Microsecond, want: []usage{{"a", 0.001, 1000, idleMemoryBytes}}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			m := NewLoadModel(clk)
			for i, s := range tc.steps {
				clk.Step(s.advance)
				if s.do != nil {
					s.do(m)
				}
				if s.want == nil {
					continue
				}
				if diff := cmp.Diff(s.want, usages(m)); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestNodeCounterNeverDecreasesWhenPodsLeave(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	web := map[string]string{"app": "web"}
	m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 1000})
	m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
	clk.Step(2 * time.Second)
	before, _ := m.NodeSample("node-1")
	m.PodGone(pod("a"))
	after, mem := m.NodeSample("node-1")
	if before != nodeBaseCPUSeconds+2 || after != before {
		t.Errorf("node counter before %v after %v; want %v both", before, after, nodeBaseCPUSeconds+2)
	}
	if mem != nodeBaseMemoryBytes {
		t.Errorf("node memory without pods %d, want %d", mem, nodeBaseMemoryBytes)
	}
}

func TestScrapeReportsCountersAtTheInstantItRecords(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	web := map[string]string{"app": "web"}
	m.Set(Workload{Namespace: "ns", Selector: web}, Load{CPUMilli: 500})
	m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
	m.PodRunning(pod("b"), "node-2", []string{"c"}, web, t0, true)
	if got := m.LastScrape("node-1"); !got.IsZero() {
		t.Errorf("LastScrape before any scrape = %v, want zero", got)
	}
	clk.Step(10*time.Second + 700*time.Microsecond)
	pods, cpu, mem, at := m.Scrape("node-1")
	want := t0.Add(10 * time.Second)
	if !at.Equal(want) || !m.LastScrape("node-1").Equal(want) || !m.LastScrape("node-2").IsZero() {
		t.Errorf("scrape at %v, LastScrape node-1 %v node-2 %v; want %v, %v, zero", at, m.LastScrape("node-1"), m.LastScrape("node-2"), want, want)
	}
	if len(pods) != 1 || pods[0].Name != "a" || pods[0].CPUSeconds != 2.5 || !pods[0].Timestamp.Equal(want) {
		t.Errorf("pods %+v, want only a at 2.5 CPU seconds stamped %v", pods, want)
	}
	if cpu != nodeBaseCPUSeconds+2.5 || mem != nodeBaseMemoryBytes+idleMemoryBytes {
		t.Errorf("node counters %v, %d; want %v, %d", cpu, mem, nodeBaseCPUSeconds+2.5, nodeBaseMemoryBytes+idleMemoryBytes)
	}
}

func TestThousandWorkloadsEachSplitAcrossTheirOwnPods(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	const workloads, perWorkload = 1000, 10
	for w := range workloads {
		sel := map[string]string{"app": fmt.Sprintf("w%04d", w)}
		m.Set(Workload{Namespace: "ns", Selector: sel}, Load{CPUMilli: int64(10 * (w + 1))})
		for i := range perWorkload {
			m.PodRunning(pod(fmt.Sprintf("w%04d-%d", w, i)), "node-1", []string{"c"}, sel, t0, true)
		}
	}
	for _, s := range m.Samples("") {
		var w, i int
		if _, err := fmt.Sscanf(s.Name, "w%04d-%d", &w, &i); err != nil {
			t.Fatal(err)
		}
		if want := int64(w + 1); s.CPUMilli != want {
			t.Fatalf("pod %s at %dm, want %dm", s.Name, s.CPUMilli, want)
		}
	}
}

func TestANodeServesOnlyThePodsItRunsNow(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	m := NewLoadModel(clk)
	web := map[string]string{"app": "web"}
	m.PodRunning(pod("a"), "node-1", []string{"c"}, web, t0, true)
	m.PodRunning(pod("b"), "node-1", []string{"c"}, web, t0, true)
	m.PodRunning(pod("b"), "node-2", []string{"c"}, web, t0, true)
	m.PodGone(pod("a"))
	names := func(node string) []string {
		var out []string
		for _, s := range m.Samples(node) {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names("node-1"); len(got) != 0 {
		t.Errorf("node-1 serves %v, want none (a is gone, b moved)", got)
	}
	if got := names("node-2"); len(got) != 1 || got[0] != "b" {
		t.Errorf("node-2 serves %v, want [b]", got)
	}
	if _, mem := m.NodeSample("node-1"); mem != nodeBaseMemoryBytes {
		t.Errorf("node-1 memory %d, want the node's own %d", mem, nodeBaseMemoryBytes)
	}
}
