// Package fakemetrics is the one fake metrics.Client of this module's tests: it answers from
// maps the test fills, fails where told, and records every call. Samples builds the per-pod
// samples it serves. Tests only (see the parent package testbuild); unlike testbuild it imports
// the metrics package, so the core's tests do not import it.
package fakemetrics

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// Values is what the fake serves for one metric: a sample per pod name.
type Values = map[string]sampleset.Sample

// Client answers each metrics.Client call from its maps, with the time At. A resource, metric
// name or selector it has no entry for is an error, as is every call while Err is set. Fill the
// maps before the code under test reads them, or change them through Set.
type Client struct {
	// Name is what Source returns.
	Name string
	// At is the time every answer carries.
	At time.Time
	// Resource answers PodResource per resource, whatever the selector and container.
	Resource map[corev1.ResourceName]Values
	// BySelector, when set, answers PodResource per pod selector (its String()) instead of
	// Resource, for any resource: many HPAs in one fixture.
	BySelector map[string]Values
	// Pods, Objects and External answer PodsMetric, ObjectMetric and ExternalMetric by metric name.
	Pods     map[string]Values
	Objects  map[string]int64
	External map[string][]int64
	// Err, when set, fails every call.
	Err error

	mu    sync.Mutex
	calls []string
}

var _ metrics.Client = (*Client)(nil)

// Set replaces the samples PodResource answers for res, safely while the code under test reads.
func (c *Client) Set(res corev1.ResourceName, s Values) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Resource == nil {
		c.Resource = map[corev1.ResourceName]Values{}
	}
	c.Resource[res] = s
}

// Calls lists the calls made so far, in order, as "PodResource <namespace> <resource> <selector>",
// "PodsMetric <namespace> <name>", "ObjectMetric <namespace> <name>", "ExternalMetric <namespace> <name>".
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func (c *Client) record(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
}

// PodResource answers from BySelector, or else Resource.
func (c *Client) PodResource(_ context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, _ string) (*sampleset.Set, time.Time, error) {
	c.record(fmt.Sprintf("PodResource %s %s %s", namespace, res, selector))
	if c.Err != nil {
		return nil, time.Time{}, c.Err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.BySelector != nil {
		return own(c.BySelector[selector.String()]), c.At, nil
	}
	s, ok := c.Resource[res]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("fakemetrics: no %s samples", res)
	}
	return own(s), c.At, nil
}

// own is s as a metrics client answers, never nil, and the caller's to keep.
func own(s Values) *sampleset.Set {
	return sampleset.Of(s)
}

// PodsMetric answers from Pods.
func (c *Client) PodsMetric(_ context.Context, namespace, name string, _, _ labels.Selector) (*sampleset.Set, time.Time, error) {
	c.record("PodsMetric " + namespace + " " + name)
	if c.Err != nil {
		return nil, time.Time{}, c.Err
	}
	s, ok := c.Pods[name]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("fakemetrics: no pods metric %s", name)
	}
	return own(s), c.At, nil
}

// ObjectMetric answers from Objects.
func (c *Client) ObjectMetric(_ context.Context, namespace, name string, _ autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	c.record("ObjectMetric " + namespace + " " + name)
	if c.Err != nil {
		return 0, time.Time{}, c.Err
	}
	v, ok := c.Objects[name]
	if !ok {
		return 0, time.Time{}, fmt.Errorf("fakemetrics: no object metric %s", name)
	}
	return v, c.At, nil
}

// ExternalMetric answers from External.
func (c *Client) ExternalMetric(_ context.Context, namespace, name string, _ labels.Selector) ([]int64, time.Time, error) {
	c.record("ExternalMetric " + namespace + " " + name)
	if c.Err != nil {
		return nil, time.Time{}, c.Err
	}
	v, ok := c.External[name]
	if !ok {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %s not found", name)
	}
	return slices.Clone(v), c.At, nil
}

// Source returns Name.
func (c *Client) Source() string { return c.Name }

// Samples gives every named pod the value milli (milli-units), sampled at at over window.
func Samples(milli int64, at time.Time, window time.Duration, pods ...string) Values {
	out := make(Values, len(pods))
	for _, p := range pods {
		out[p] = sampleset.Sample{MilliValue: milli, Timestamp: sampleset.Timestamp(at), Window: window}
	}
	return out
}
