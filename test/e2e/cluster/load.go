package cluster

import (
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Workload names a set of pods that share a load: the pods of one namespace matching a selector.
type Workload struct {
	Namespace string
	Selector  map[string]string
}

// Load is the total demand of a workload, split evenly across its ready pods, so adding pods
// lowers every pod's usage the way a load balancer in front of real pods would.
type Load struct {
	CPUMilli    int64
	MemoryBytes int64
}

// A container that used no CPU is dropped by metrics-server (a zero counter reads as "no data"),
// so every running pod burns at least this much; it also stands for a real process's idle cost.
const (
	idleCPUMilli    = 1
	idleMemoryBytes = 4 << 20

	nodeBaseCPUSeconds  = 1
	nodeBaseMemoryBytes = 512 << 20
)

// PodSample is what the node stand-in reports for one pod at one instant.
type PodSample struct {
	Namespace string
	Name      string
	Node      string
	Labels    map[string]string
	// Containers are the pod's container names; the first one carries the pod's usage.
	Containers []string
	// StartTime is when the pod's container started; CPUSeconds was zero then.
	StartTime time.Time
	// CPUSeconds is the cumulative CPU time used since StartTime (a kubelet counter).
	CPUSeconds float64
	// CPUMilli is the current usage rate.
	CPUMilli    int64
	MemoryBytes int64
	Timestamp   time.Time
}

// LoadModel turns per-workload loads into per-pod usage over time. CPU is integrated piecewise:
// every change (a load, a pod becoming ready or going away) first advances each pod's counter at
// its old rate to now, then recomputes the rates, so counters stay exact for metrics-server,
// which derives usage from the difference of two scrapes.
type LoadModel struct {
	clock clock.PassiveClock

	mu        sync.Mutex
	workloads map[string]*workloadLoad
	pods      map[types.NamespacedName]*podUsage
	// nodeCPU is each node's cumulative CPU counter; it only grows, pods come and go.
	nodeCPU map[string]float64
}

type workloadLoad struct {
	namespace string
	selector  labels.Selector
	load      Load
}

type podUsage struct {
	node       string
	containers []string
	labels     labels.Set
	startTime  time.Time
	ready      bool
	cpuSeconds float64
	cpuMilli   int64
	memBytes   int64
	advanced   time.Time
}

// NewLoadModel returns an empty model reading time from clk.
func NewLoadModel(clk clock.PassiveClock) *LoadModel {
	return &LoadModel{clock: clk, workloads: map[string]*workloadLoad{}, pods: map[types.NamespacedName]*podUsage{}, nodeCPU: map[string]float64{}}
}

// Set changes a workload's total load from now on.
func (m *LoadModel) Set(w Workload, l Load) {
	sel := labels.SelectorFromSet(w.Selector)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	m.workloads[w.Namespace+"/"+sel.String()] = &workloadLoad{namespace: w.Namespace, selector: sel, load: l}
	m.recompute()
}

// PodRunning records that a pod's containers run on node since startTime; ready says whether it
// takes a share of its workload's load. Calling it again updates readiness and labels.
func (m *LoadModel) PodRunning(pod types.NamespacedName, node string, containers []string, podLabels map[string]string, startTime time.Time, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	p, ok := m.pods[pod]
	if !ok {
		p = &podUsage{startTime: startTime, advanced: m.clock.Now()}
		m.pods[pod] = p
	}
	p.node, p.containers, p.labels, p.ready = node, containers, labels.Set(podLabels), ready
	m.recompute()
}

// PodGone forgets a pod; its share moves to the workload's remaining ready pods.
func (m *LoadModel) PodGone(pod types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	delete(m.pods, pod)
	m.recompute()
}

// Samples returns the current counters of the pods on node ("" for every node), sorted by
// namespace and name.
func (m *LoadModel) Samples(node string) []PodSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	now := m.clock.Now()
	var out []PodSample
	for key, p := range m.pods {
		if node != "" && p.node != node {
			continue
		}
		out = append(out, PodSample{
			Namespace: key.Namespace, Name: key.Name, Node: p.node, Labels: p.labels, Containers: p.containers, StartTime: p.startTime,
			CPUSeconds: p.cpuSeconds, CPUMilli: p.cpuMilli, MemoryBytes: p.memBytes, Timestamp: now,
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// NodeSample returns a node's cumulative CPU seconds and working set: the sum of its pods plus
// what the node itself runs (a real node is never idle, and metrics-server drops zero counters).
func (m *LoadModel) NodeSample(node string) (cpuSeconds float64, memoryBytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance()
	memoryBytes = nodeBaseMemoryBytes
	for _, p := range m.pods {
		if p.node == node {
			memoryBytes += p.memBytes
		}
	}
	return nodeBaseCPUSeconds + m.nodeCPU[node], memoryBytes
}

// Sample returns one pod's current usage.
func (m *LoadModel) Sample(pod types.NamespacedName) (PodSample, bool) {
	for _, s := range m.Samples("") {
		if s.Namespace == pod.Namespace && s.Name == pod.Name {
			return s, true
		}
	}
	return PodSample{}, false
}

// advance moves every counter to now at the rate it had since its last advance. m.mu is held.
func (m *LoadModel) advance() {
	now := m.clock.Now()
	for _, p := range m.pods {
		if dt := now.Sub(p.advanced); dt > 0 {
			used := float64(p.cpuMilli) / 1000 * dt.Seconds()
			p.cpuSeconds += used
			m.nodeCPU[p.node] += used
			p.advanced = now
		}
	}
}

// recompute sets every pod's rate from the workloads' loads. m.mu is held.
func (m *LoadModel) recompute() {
	type share struct{ cpu, mem int64 }
	shares := map[*podUsage]share{}
	for _, w := range m.workloads {
		var ready []*podUsage
		for key, p := range m.pods {
			if p.ready && key.Namespace == w.namespace && w.selector.Matches(p.labels) {
				ready = append(ready, p)
			}
		}
		for _, p := range ready {
			s := shares[p]
			s.cpu += w.load.CPUMilli / int64(len(ready))
			s.mem += w.load.MemoryBytes / int64(len(ready))
			shares[p] = s
		}
	}
	for _, p := range m.pods {
		s := shares[p]
		p.cpuMilli, p.memBytes = max(s.cpu, idleCPUMilli), max(s.mem, idleMemoryBytes)
	}
}
