// Package heapsterstandin is a stand-in for Heapster v1.5, the metrics server the
// Heapster-era HPA controller read through the API server's service proxy. Heapster is
// retired and cannot be run, so this is the one fake kubectl-hpa keeps: an http.Handler
// serving the two paths that controller used, from a mutable Scenario, with Heapster's
// JSON shapes and quirks (see docs/hpa-spec.md section D):
//
//	GET /apis/metrics/v1alpha1/namespaces/{ns}/pods?labelSelector=...
//	GET /api/v1/model/namespaces/{ns}/pod-list/{pod,pod,...}/metrics/{metric}?start=&end=
//	GET /healthz
//
// Faults (Scenario.Faults, Server.SetFault) make it misbehave for one namespace at a time:
// garbage bodies, wrong item counts, stale timestamps, error statuses and slow answers.
//
// Everything else in the end-to-end tests is real.
package heapsterstandin

import (
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// Scenario is what the stand-in serves. The zero value is a Heapster that knows no pods.
type Scenario struct {
	// Pods are the pods Heapster knows, in the order its pod lister returns them. Heapster
	// lists pods from the API server; a test keeps this in step with the pods it creates.
	Pods []Pod `json:"pods,omitempty"`
	// BatchTime is the timestamp of Heapster's latest data batch, reported by the
	// metrics/v1alpha1 API for every pod. Zero means "now" by the server's clock,
	// truncated to the second.
	BatchTime time.Time `json:"batchTime,omitempty"`
	// NoBatch makes the metrics/v1alpha1 API behave as a Heapster that has not scraped
	// yet: every pod is left out.
	NoBatch bool `json:"noBatch,omitempty"`
	// Faults makes the stand-in misbehave, by namespace: only requests about that namespace
	// are affected, so tests sharing one stand-in do not disturb each other.
	Faults map[string]Fault `json:"faults,omitempty"`
}

// Pod is one pod as Heapster sees it.
type Pod struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	// Containers are the pod's spec.containers with their latest usage.
	Containers []Container `json:"containers,omitempty"`
	// Series holds model API time series by metric name as Heapster stores it
	// ("custom/qps", "cpu/usage_rate"); the deprecated request names ("cpu-usage", ...)
	// are translated as Heapster does.
	Series map[string][]Point `json:"series,omitempty"`
}

// Container is one container's latest usage in Heapster's latest batch.
type Container struct {
	Name string `json:"name"`
	// CPUMilli is cpu/usage_rate in millicores.
	CPUMilli int64 `json:"cpuMilli"`
	// MemoryBytes is memory/working_set in bytes.
	MemoryBytes int64 `json:"memoryBytes"`
	// Missing means Heapster has no metric set for this container, so the whole pod is
	// left out of the metrics/v1alpha1 answer (Heapster logs "No metrics for pod").
	Missing bool `json:"missing,omitempty"`
}

// Point is one stored sample of a model time series.
type Point struct {
	Timestamp time.Time `json:"timestamp"`
	// IntValue is the value of an integer metric.
	IntValue int64 `json:"intValue,omitempty"`
	// FloatValue, when set, makes this a float metric: Heapster 1.5 exports it truncated to
	// an integer and never fills the wire's floatValue field.
	FloatValue *float64 `json:"floatValue,omitempty"`
}

// Clone returns a deep copy, so a caller can keep editing its own value.
func (s Scenario) Clone() Scenario {
	out := s
	out.Pods = make([]Pod, len(s.Pods))
	for i, p := range s.Pods {
		out.Pods[i] = p.clone()
	}
	if s.Pods == nil {
		out.Pods = nil
	}
	out.Faults = maps.Clone(s.Faults)
	return out
}

func (p Pod) clone() Pod {
	out := p
	if p.Labels != nil {
		out.Labels = make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			out.Labels[k] = v
		}
	}
	out.Containers = append([]Container(nil), p.Containers...)
	if p.Series != nil {
		out.Series = make(map[string][]Point, len(p.Series))
		for k, pts := range p.Series {
			cp := make([]Point, len(pts))
			for i, pt := range pts {
				cp[i] = pt
				if pt.FloatValue != nil {
					f := *pt.FloatValue
					cp[i].FloatValue = &f
				}
			}
			out.Series[k] = cp
		}
	}
	return out
}

// Validate reports a scenario the stand-in cannot serve meaningfully.
func (s Scenario) Validate() error {
	for ns, f := range s.Faults {
		if ns == "" {
			return fmt.Errorf("a fault has no namespace")
		}
		if err := f.Validate(); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	seen := make(map[string]bool, len(s.Pods))
	for i, p := range s.Pods {
		if p.Namespace == "" || p.Name == "" {
			return fmt.Errorf("pod %d: namespace and name are required", i)
		}
		key := p.Namespace + "/" + p.Name
		if seen[key] {
			return fmt.Errorf("pod %s appears twice", key)
		}
		seen[key] = true
		names := make(map[string]bool, len(p.Containers))
		for _, c := range p.Containers {
			if c.Name == "" {
				return fmt.Errorf("pod %s: a container has no name", key)
			}
			if names[c.Name] {
				return fmt.Errorf("pod %s: container %s appears twice", key, c.Name)
			}
			names[c.Name] = true
		}
	}
	return nil
}

// ParseScenario decodes a JSON scenario (the format of the control endpoint and of the
// stand-in command's --scenario file) and validates it.
func ParseScenario(data []byte) (Scenario, error) {
	var s Scenario
	if err := json.Unmarshal(data, &s); err != nil {
		return Scenario{}, fmt.Errorf("decoding scenario: %w", err)
	}
	if err := s.Validate(); err != nil {
		return Scenario{}, fmt.Errorf("invalid scenario: %w", err)
	}
	return s, nil
}
