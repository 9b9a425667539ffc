package heapsterstandin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
)

// Server serves the Heapster paths from a Scenario that may be changed at any time from
// other goroutines. Create it with New.
type Server struct {
	clock clock.PassiveClock
	// timers holds slow answers: the clock given to New when it has timers, else real time.
	timers clock.Clock
	mux    *http.ServeMux

	mu       sync.RWMutex
	scenario Scenario
	requests int
	stats    map[string]Stats
}

// New returns a stand-in serving initial (deep-copied) with time read from clk; a nil clk
// means the real clock.
func New(clk clock.PassiveClock, initial Scenario) (*Server, error) {
	if err := initial.Validate(); err != nil {
		return nil, fmt.Errorf("invalid scenario: %w", err)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	timers, ok := clk.(clock.Clock)
	if !ok {
		timers = clock.RealClock{}
	}
	s := &Server{clock: clk, timers: timers, scenario: initial.Clone(), mux: http.NewServeMux(), stats: map[string]Stats{}}
	// Heapster's go-restful routes accept the list paths with and without the trailing slash.
	s.mux.HandleFunc("GET /apis/metrics/v1alpha1/namespaces/{ns}/pods", s.podMetricsList)
	s.mux.HandleFunc("GET /apis/metrics/v1alpha1/namespaces/{ns}/pods/{$}", s.podMetricsList)
	s.mux.HandleFunc("GET /api/v1/model/namespaces/{ns}/pod-list/{pods}/metrics/{metric...}", s.podListMetrics)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	return s, nil
}

// ServeHTTP serves the Heapster API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	s.mux.ServeHTTP(w, r)
}

// Requests returns how many requests the Heapster API has received (health checks included).
func (s *Server) Requests() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.requests
}

// Stats returns the counts of requests about namespace.
func (s *Server) Stats(namespace string) Stats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.stats[namespace]
}

// SetFault makes the stand-in misbehave for requests about namespace, replacing any
// fault set for it before.
func (s *Server) SetFault(namespace string, f Fault) error {
	return s.Update(func(sc *Scenario) {
		if sc.Faults == nil {
			sc.Faults = map[string]Fault{}
		}
		sc.Faults[namespace] = f
	})
}

// ClearFault makes the stand-in answer requests about namespace normally again.
func (s *Server) ClearFault(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.scenario.Faults[namespace]; !ok {
		return
	}
	next := s.scenario.Clone()
	delete(next.Faults, namespace)
	s.scenario = next
}

// Scenario returns a copy of what is being served.
func (s *Server) Scenario() Scenario {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scenario.Clone()
}

// SetScenario replaces what is served.
func (s *Server) SetScenario(sc Scenario) error {
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("invalid scenario: %w", err)
	}
	sc = sc.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenario = sc
	return nil
}

// Update applies change to a copy of the scenario and serves the result if it is valid.
func (s *Server) Update(change func(*Scenario)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.scenario.Clone()
	change(&next)
	if err := next.Validate(); err != nil {
		return fmt.Errorf("invalid scenario: %w", err)
	}
	s.scenario = next.Clone()
	return nil
}

// SetContainerUsage sets one container's latest cpu (millicores) and memory (bytes) and
// marks it as reported.
func (s *Server) SetContainerUsage(namespace, pod, container string, cpuMilli, memoryBytes int64) error {
	return s.editPod(namespace, pod, func(p *Pod) error {
		for i := range p.Containers {
			if p.Containers[i].Name == container {
				p.Containers[i] = Container{Name: container, CPUMilli: cpuMilli, MemoryBytes: memoryBytes}
				return nil
			}
		}
		return fmt.Errorf("pod %s/%s has no container %q", namespace, pod, container)
	})
}

// SetPodCPU spreads cpuMilli over the pod's containers (the first gets the remainder), a
// shortcut for tests that think in per-pod load.
func (s *Server) SetPodCPU(namespace, pod string, cpuMilli int64) error {
	return s.editPod(namespace, pod, func(p *Pod) error {
		n := int64(len(p.Containers))
		if n == 0 {
			return fmt.Errorf("pod %s/%s has no containers", namespace, pod)
		}
		for i := range p.Containers {
			share := cpuMilli / n
			if i == 0 {
				share += cpuMilli % n
			}
			p.Containers[i].CPUMilli = share
			p.Containers[i].Missing = false
		}
		return nil
	})
}

// AppendPoint adds a sample to a pod's model time series.
func (s *Server) AppendPoint(namespace, pod, metric string, pt Point) error {
	return s.editPod(namespace, pod, func(p *Pod) error {
		if p.Series == nil {
			p.Series = map[string][]Point{}
		}
		p.Series[metric] = append(p.Series[metric], pt)
		return nil
	})
}

// SetBatchTime sets the metrics/v1alpha1 batch timestamp (zero: follow the clock).
func (s *Server) SetBatchTime(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scenario.BatchTime = t
}

func (s *Server) editPod(namespace, pod string, edit func(*Pod) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.scenario.Pods {
		p := &s.scenario.Pods[i]
		if p.Namespace == namespace && p.Name == pod {
			cp := p.clone()
			if err := edit(&cp); err != nil {
				return err
			}
			*p = cp
			return nil
		}
	}
	return fmt.Errorf("the stand-in knows no pod %s/%s", namespace, pod)
}

// ControlHandler serves the scenario as JSON: GET returns it, PUT replaces it. It is not
// part of Heapster's API; the stand-in command mounts it under /standin/scenario so a test
// running the stand-in as a separate process can change the load.
func (s *Server) ControlHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, s.Scenario())
		case http.MethodPut:
			body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			sc, err := ParseScenario(body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if err := s.SetScenario(sc); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, PUT")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
}

// Wire types: Heapster's metrics/v1alpha1 PodMetricsList without TypeMeta (Heapster never
// set it), and its model API MetricResultList.

type podMetricsList struct {
	Metadata metav1.ListMeta `json:"metadata"`
	Items    []podMetrics    `json:"items"`
}

type podMetrics struct {
	Metadata   metav1.ObjectMeta  `json:"metadata"`
	Timestamp  metav1.Time        `json:"timestamp"`
	Window     metav1.Duration    `json:"window"`
	Containers []containerMetrics `json:"containers"`
}

type containerMetrics struct {
	Name  string              `json:"name"`
	Usage corev1.ResourceList `json:"usage"`
}

type metricResultList struct {
	Items []metricResult `json:"items"`
}

type metricResult struct {
	Metrics         []metricPoint `json:"metrics"`
	LatestTimestamp time.Time     `json:"latestTimestamp"`
}

type metricPoint struct {
	Timestamp  time.Time `json:"timestamp"`
	Value      uint64    `json:"value"`
	FloatValue *float64  `json:"floatValue,omitempty"`
}

// begin counts a request about ns and plays its fault up to the answer: it holds a slow
// answer and answers garbage and error statuses itself. done says the request needs no
// further answer; otherwise the returned fault (zero if none) shapes the answer.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, ns string) (f Fault, done bool) {
	s.mu.Lock()
	st := s.stats[ns]
	st.Requests++
	s.stats[ns] = st
	f = s.scenario.Faults[ns]
	s.mu.Unlock()
	switch f.Kind {
	case FaultSlow:
		t := s.timers.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C():
		case <-r.Context().Done():
			s.mu.Lock()
			st := s.stats[ns]
			st.Abandoned++
			s.stats[ns] = st
			s.mu.Unlock()
			return f, true
		}
	case FaultGarbage:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, f.body())
		return f, true
	case FaultStatus:
		code := f.Status
		if code == 0 {
			code = http.StatusInternalServerError
		}
		http.Error(w, f.body(), code)
		return f, true
	}
	return f, false
}

// resized drops the last -delta items (delta < 0), or appends delta items made by extra
// from the original items.
func resized[T any](items []T, delta int, extra func(orig []T, i int) T) []T {
	if delta < 0 {
		return items[:max(len(items)+delta, 0)]
	}
	out := slices.Clone(items)
	for i := range delta {
		out = append(out, extra(items, i))
	}
	return out
}

func (s *Server) podMetricsList(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	fault, done := s.begin(w, r, ns)
	if done {
		return
	}
	raw := r.URL.Query().Get("labelSelector")
	selector, err := labels.Parse(raw)
	if err != nil {
		http.Error(w, fmt.Sprintf("Error while parsing selector %v: %v", raw, err), http.StatusBadRequest)
		return
	}
	now := s.clock.Now()
	s.mu.RLock()
	sc := s.scenario.Clone()
	s.mu.RUnlock()

	var out podMetricsList // Items stays nil without pods: Heapster answers "items": null.
	if sc.NoBatch {
		writeJSON(w, out)
		return
	}
	batch := sc.BatchTime
	if batch.IsZero() {
		batch = now.Truncate(time.Second)
	}
	if fault.Kind == FaultStale {
		batch = batch.Add(-fault.Age)
	}
	for _, p := range sc.Pods {
		if p.Namespace != ns || !selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		pm := podMetrics{
			Metadata:   metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, CreationTimestamp: metav1.NewTime(now)},
			Timestamp:  metav1.NewTime(batch),
			Window:     metav1.Duration{Duration: time.Minute},
			Containers: make([]containerMetrics, 0, len(p.Containers)),
		}
		complete := true
		for _, c := range p.Containers {
			if c.Missing {
				complete = false
				break
			}
			pm.Containers = append(pm.Containers, containerMetrics{Name: c.Name, Usage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(c.CPUMilli, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(c.MemoryBytes, resource.BinarySI),
			}})
		}
		if complete {
			out.Items = append(out.Items, pm)
		}
	}
	if fault.Kind == FaultItemCount && len(out.Items) > 0 {
		out.Items = resized(out.Items, fault.ItemDelta, func(orig []podMetrics, i int) podMetrics { return orig[i%len(orig)] })
	}
	writeJSON(w, out)
}

// deprecatedNames are the metric names Heapster translated for old clients.
var deprecatedNames = map[string]string{
	"cpu-usage":      "cpu/usage_rate",
	"cpu-limit":      "cpu/limit",
	"memory-limit":   "memory/limit",
	"memory-usage":   "memory/usage",
	"memory-working": "memory/working_set",
}

func (s *Server) podListMetrics(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	fault, done := s.begin(w, r, ns)
	if done {
		return
	}
	q := r.URL.Query()
	now := s.clock.Now()
	start, err := timeParam(q.Get("start"), time.Time{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	end, err := timeParam(q.Get("end"), now)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if q.Get("labels") != "" {
		http.Error(w, "the heapster stand-in does not serve labeled metrics", http.StatusBadRequest)
		return
	}
	metric := r.PathValue("metric")
	if n, ok := deprecatedNames[metric]; ok {
		metric = n
	}
	s.mu.RLock()
	sc := s.scenario.Clone()
	s.mu.RUnlock()

	names := strings.Split(r.PathValue("pods"), ",")
	out := metricResultList{Items: make([]metricResult, 0, len(names))}
	for _, name := range names {
		var series []Point
		for _, p := range sc.Pods {
			if p.Namespace == ns && p.Name == name {
				series = p.Series[metric]
				break
			}
		}
		if fault.Kind == FaultStale {
			series = aged(series, fault.Age)
		}
		out.Items = append(out.Items, export(series, start, end))
	}
	if fault.Kind == FaultItemCount {
		out.Items = resized(out.Items, fault.ItemDelta, func([]metricResult, int) metricResult { return metricResult{Metrics: []metricPoint{}} })
	}
	writeJSON(w, out)
}

// export keeps the points inside [start, end] (both inclusive, as Heapster's sink) and
// encodes values as Heapster 1.5 did: float metrics truncated to an integer, everything
// reinterpreted as unsigned, floatValue never set.
func export(series []Point, start, end time.Time) metricResult {
	res := metricResult{Metrics: make([]metricPoint, 0, len(series))}
	// Heapster's sink walks its batches oldest first, whatever order a test added points in.
	series = slices.Clone(series)
	slices.SortStableFunc(series, func(a, b Point) int { return a.Timestamp.Compare(b.Timestamp) })
	for _, pt := range series {
		if pt.Timestamp.Before(start) || pt.Timestamp.After(end) {
			continue
		}
		if res.LatestTimestamp.Before(pt.Timestamp) {
			res.LatestTimestamp = pt.Timestamp
		}
		v := pt.IntValue
		if pt.FloatValue != nil {
			v = int64(*pt.FloatValue)
		}
		res.Metrics = append(res.Metrics, metricPoint{Timestamp: pt.Timestamp, Value: uint64(v)})
	}
	return res
}

// aged returns a copy of series with every timestamp age earlier.
func aged(series []Point, age time.Duration) []Point {
	out := make([]Point, len(series))
	for i, pt := range series {
		out[i] = pt
		out[i].Timestamp = pt.Timestamp.Add(-age)
	}
	return out
}

func timeParam(raw string, def time.Time) (time.Time, error) {
	if raw == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp argument cannot be parsed: %w", err)
	}
	return t, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
