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
// every change (a load, a pod becoming ready or going away) first advances the counters of the
// pods whose rate changes at their old rate to now, then sets their new rates, so counters stay
// exact for metrics-server, which derives usage from the difference of two scrapes. Time is read
// on the millisecond grid of the kubelet page's timestamps, so a scrape's counters are exactly
// those of the instant it reports. Each workload knows its pods and each pod its workloads, so a
// change costs the size of the workloads it touches, not of the whole model (the soak test runs
// 1,000 workloads over 10,000 pods).
type LoadModel struct {
	clock clock.PassiveClock

	mu        sync.Mutex
	workloads map[string]*workloadLoad
	// byNamespace indexes workloads for matching a pod's labels.
	byNamespace map[string]map[*workloadLoad]struct{}
	pods        map[types.NamespacedName]*podUsage
	// byNode indexes pods by node: a node's scrape costs its own pods, not the cluster's (the
	// soak spreads 50,000 pods over 500 nodes).
	byNode map[string]map[types.NamespacedName]*podUsage
	// nodeCPU is each node's cumulative CPU counter; it only grows, pods come and go.
	nodeCPU map[string]float64
	// scraped is when each node's metrics were last served.
	scraped map[string]time.Time
}

type workloadLoad struct {
	namespace string
	selector  labels.Selector
	load      Load
	pods      map[*podUsage]struct{}
	// ready counts the ready pods among pods.
	ready int64
}

type podUsage struct {
	namespace  string
	node       string
	containers []string
	labels     labels.Set
	startTime  time.Time
	ready      bool
	cpuSeconds float64
	cpuMilli   int64
	memBytes   int64
	advanced   time.Time
	workloads  map[*workloadLoad]struct{}
}

// NewLoadModel returns an empty model reading time from clk.
func NewLoadModel(clk clock.PassiveClock) *LoadModel {
	return &LoadModel{
		clock: clk, workloads: map[string]*workloadLoad{}, byNamespace: map[string]map[*workloadLoad]struct{}{},
		pods: map[types.NamespacedName]*podUsage{}, byNode: map[string]map[types.NamespacedName]*podUsage{}, nodeCPU: map[string]float64{}, scraped: map[string]time.Time{},
	}
}

// now is the model's time: the kubelet page stamps samples in whole milliseconds.
func (m *LoadModel) now() time.Time { return m.clock.Now().Truncate(time.Millisecond) }

// Set changes a workload's total load from now on.
func (m *LoadModel) Set(w Workload, l Load) {
	sel := labels.SelectorFromSet(w.Selector)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := w.Namespace + "/" + sel.String()
	wl, ok := m.workloads[key]
	if !ok {
		wl = &workloadLoad{namespace: w.Namespace, selector: sel, pods: map[*podUsage]struct{}{}}
		m.workloads[key] = wl
		if m.byNamespace[w.Namespace] == nil {
			m.byNamespace[w.Namespace] = map[*workloadLoad]struct{}{}
		}
		m.byNamespace[w.Namespace][wl] = struct{}{}
		for _, p := range m.pods {
			if p.namespace == w.Namespace && sel.Matches(p.labels) {
				join(p, wl)
			}
		}
	}
	wl.load = l
	m.rerate(m.now(), wl)
}

// PodRunning records that a pod's containers run on node since startTime; ready says whether it
// takes a share of its workload's load. Calling it again updates readiness and labels.
func (m *LoadModel) PodRunning(pod types.NamespacedName, node string, containers []string, podLabels map[string]string, startTime time.Time, ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	p, ok := m.pods[pod]
	if !ok {
		p = &podUsage{namespace: pod.Namespace, startTime: startTime, advanced: now, workloads: map[*workloadLoad]struct{}{}}
		m.pods[pod] = p
	}
	m.advance(p, now)
	newLabels := labels.Set(podLabels)
	touched := make([]*workloadLoad, 0, len(p.workloads))
	for wl := range p.workloads {
		touched = append(touched, wl)
	}
	if !ok || !labels.Equals(p.labels, newLabels) {
		for wl := range p.workloads {
			leave(p, wl)
		}
		p.ready = ready
		for wl := range m.byNamespace[pod.Namespace] {
			if wl.selector.Matches(newLabels) {
				join(p, wl)
				touched = append(touched, wl)
			}
		}
	}
	if p.ready != ready {
		for wl := range p.workloads {
			if ready {
				wl.ready++
			} else {
				wl.ready--
			}
		}
	}
	if p.node != node || !ok {
		m.unindex(pod, p.node)
		if m.byNode[node] == nil {
			m.byNode[node] = map[types.NamespacedName]*podUsage{}
		}
		m.byNode[node][pod] = p
	}
	p.node, p.containers, p.labels, p.ready = node, containers, newLabels, ready
	m.rerate(now, touched...)
	m.setRate(p, now)
}

// PodGone forgets a pod; its share moves to the workload's remaining ready pods.
func (m *LoadModel) PodGone(pod types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[pod]
	if !ok {
		return
	}
	now := m.now()
	m.advance(p, now)
	delete(m.pods, pod)
	m.unindex(pod, p.node)
	touched := make([]*workloadLoad, 0, len(p.workloads))
	for wl := range p.workloads {
		leave(p, wl)
		touched = append(touched, wl)
	}
	m.rerate(now, touched...)
}

// unindex removes pod from node's index. m.mu is held.
func (m *LoadModel) unindex(pod types.NamespacedName, node string) {
	delete(m.byNode[node], pod)
	if len(m.byNode[node]) == 0 {
		delete(m.byNode, node)
	}
}

// Samples returns the current counters of the pods on node ("" for every node), sorted by
// namespace and name.
func (m *LoadModel) Samples(node string) []PodSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.samples(node, m.now())
}

// Scrape returns what a kubelet serves for node at one instant: its pods' counters, the node's
// cumulative CPU seconds and working set, and that instant, which it records (LastScrape).
func (m *LoadModel) Scrape(node string) (pods []PodSample, nodeCPUSeconds float64, nodeMemoryBytes int64, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at = m.now()
	pods = m.samples(node, at)
	nodeCPUSeconds, nodeMemoryBytes = m.nodeSample(node)
	m.scraped[node] = at
	return pods, nodeCPUSeconds, nodeMemoryBytes, at
}

// SampleNodeAt is Scrape at the instant at (the Summary API's whole seconds) for a reader other
// than metrics-server, whose last scrape LastScrape keeps naming. at should not be in the
// past: a pod changed after at reports its counter as of that change.
func (m *LoadModel) SampleNodeAt(node string, at time.Time) (pods []PodSample, nodeCPUSeconds float64, nodeMemoryBytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods = m.samples(node, at)
	nodeCPUSeconds, nodeMemoryBytes = m.nodeSample(node)
	return pods, nodeCPUSeconds, nodeMemoryBytes
}

// LastScrape is the instant of node's last Scrape (zero before the first): metrics-server's
// newest sample of the node's pods carries this timestamp.
func (m *LoadModel) LastScrape(node string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.scraped[node]
}

// samples advances the pods on node to now and returns their counters. m.mu is held.
func (m *LoadModel) samples(node string, now time.Time) []PodSample {
	pods := m.pods
	if node != "" {
		pods = m.byNode[node]
	}
	out := make([]PodSample, 0, len(pods))
	for key, p := range pods {
		m.advance(p, now)
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
	now := m.now()
	for _, p := range m.byNode[node] {
		m.advance(p, now)
	}
	return m.nodeSample(node)
}

// nodeSample sums a node whose pods are advanced. m.mu is held.
func (m *LoadModel) nodeSample(node string) (cpuSeconds float64, memoryBytes int64) {
	memoryBytes = nodeBaseMemoryBytes
	for _, p := range m.byNode[node] {
		memoryBytes += p.memBytes
	}
	return nodeBaseCPUSeconds + m.nodeCPU[node], memoryBytes
}

// Sample returns one pod's current usage.
func (m *LoadModel) Sample(pod types.NamespacedName) (PodSample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pods[pod]
	if !ok {
		return PodSample{}, false
	}
	now := m.now()
	m.advance(p, now)
	return PodSample{
		Namespace: pod.Namespace, Name: pod.Name, Node: p.node, Labels: p.labels, Containers: p.containers, StartTime: p.startTime,
		CPUSeconds: p.cpuSeconds, CPUMilli: p.cpuMilli, MemoryBytes: p.memBytes, Timestamp: now,
	}, true
}

// advance moves one pod's counter (and its node's) to now at the rate it had since its last
// advance. m.mu is held.
func (m *LoadModel) advance(p *podUsage, now time.Time) {
	if dt := now.Sub(p.advanced); dt > 0 {
		used := float64(p.cpuMilli) / 1000 * dt.Seconds()
		p.cpuSeconds += used
		m.nodeCPU[p.node] += used
		p.advanced = now
	}
}

// rerate sets the rates of every pod of the given workloads from now on. m.mu is held.
func (m *LoadModel) rerate(now time.Time, wls ...*workloadLoad) {
	for _, wl := range wls {
		for p := range wl.pods {
			m.setRate(p, now)
		}
	}
}

// setRate advances p at its old rate, then gives it the sum of its shares of its workloads'
// loads (an even split over each workload's ready pods), never less than the idle floor.
// m.mu is held.
func (m *LoadModel) setRate(p *podUsage, now time.Time) {
	m.advance(p, now)
	var cpu, mem int64
	if p.ready {
		for wl := range p.workloads {
			cpu += wl.load.CPUMilli / wl.ready
			mem += wl.load.MemoryBytes / wl.ready
		}
	}
	p.cpuMilli, p.memBytes = max(cpu, idleCPUMilli), max(mem, idleMemoryBytes)
}

// join and leave keep a workload's pods, a pod's workloads and the ready count in step.
func join(p *podUsage, wl *workloadLoad) {
	wl.pods[p], p.workloads[wl] = struct{}{}, struct{}{}
	if p.ready {
		wl.ready++
	}
}

func leave(p *podUsage, wl *workloadLoad) {
	delete(wl.pods, p)
	delete(p.workloads, wl)
	if p.ready {
		wl.ready--
	}
}
