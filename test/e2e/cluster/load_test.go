package cluster

import (
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
