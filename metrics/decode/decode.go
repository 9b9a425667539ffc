package decode

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// PodUsage is one pod's entry of a PodMetrics list, whichever API served it.
type PodUsage struct {
	Name       string
	Timestamp  time.Time
	Window     time.Duration
	Containers []ContainerUsage
}

// ContainerUsage is one container's usage per resource.
type ContainerUsage struct {
	Name  string
	Usage map[corev1.ResourceName]resource.Quantity
}

// PodResourceSamples turns pod usages into per-pod milli-values of res, as upstream's
// resource metrics client does: summed over containers (or the one named container), a
// pod lacking the resource in any container in scope (or lacking the container) is left
// out, and the time is the first item's timestamp. Unlike upstream it refuses duplicates,
// unnamed pods, negative, huge and stale values instead of passing them on.
func PodResourceSamples(items []PodUsage, res corev1.ResourceName, container string, now time.Time, maxAge time.Duration) (*sampleset.Set, time.Time, error) {
	out := sampleset.New(len(items))
	// A repeated pod is found in out, or among the pods left out (rare: kept in a map of their
	// own, made only when a pod is left out).
	var leftOut map[string]bool
	for _, it := range items {
		if it.Name == "" {
			return nil, time.Time{}, fmt.Errorf("an item has no pod name")
		}
		if _, dup := out.Get(it.Name); dup || leftOut[it.Name] {
			return nil, time.Time{}, fmt.Errorf("pod %s is listed twice", it.Name)
		}
		sum, ok, err := podResourceValue(it, res, container)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("pod %s: %w", it.Name, err)
		}
		if !ok {
			if leftOut == nil {
				leftOut = map[string]bool{}
			}
			leftOut[it.Name] = true
			continue
		}
		if err := CheckFresh(it.Timestamp, now, maxAge, "the sample of pod "+it.Name); err != nil {
			return nil, time.Time{}, err
		}
		if it.Window < 0 {
			return nil, time.Time{}, fmt.Errorf("pod %s: negative window %s", it.Name, it.Window)
		}
		out.Add(it.Name, sampleset.Sample{MilliValue: sum, Timestamp: sampleset.Timestamp(it.Timestamp), Window: it.Window}) // not a repeat: checked above
	}
	return out, items[0].Timestamp, nil
}

func podResourceValue(it PodUsage, res corev1.ResourceName, container string) (int64, bool, error) {
	if container != "" {
		for _, c := range it.Containers {
			if c.Name != container {
				continue
			}
			q, found := c.Usage[res]
			if !found {
				return 0, false, nil
			}
			v, err := MilliValue(q)
			if err != nil {
				return 0, false, fmt.Errorf("container %s %s: %w", c.Name, res, err)
			}
			return v, true, nil
		}
		return 0, false, nil
	}
	if len(it.Containers) == 0 {
		return 0, false, nil
	}
	var sum int64
	for _, c := range it.Containers {
		q, found := c.Usage[res]
		if !found {
			return 0, false, nil
		}
		v, err := MilliValue(q)
		if err != nil {
			return 0, false, fmt.Errorf("container %s %s: %w", c.Name, res, err)
		}
		if sum, err = addMilli(sum, v); err != nil {
			return 0, false, fmt.Errorf("%s summed over containers: %w", res, err)
		}
	}
	return sum, true, nil
}

// Heapster's metrics/v1alpha1 wire types. Usage values stay raw until checked by
// parseQuantity.
type heapsterPodMetricsList struct {
	Items []heapsterPodMetrics `json:"items"`
}

type heapsterPodMetrics struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Timestamp  metav1.Time     `json:"timestamp"`
	Window     metav1.Duration `json:"window"`
	Containers []struct {
		Name  string                                  `json:"name"`
		Usage map[corev1.ResourceName]json.RawMessage `json:"usage"`
	} `json:"containers"`
}

// HeapsterPodMetrics decodes Heapster's metrics/v1alpha1 PodMetricsList.
func HeapsterPodMetrics(body []byte) ([]PodUsage, error) {
	var list heapsterPodMetricsList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("not a PodMetricsList (%w); body starts %s", err, BodySnippet(body))
	}
	items := make([]PodUsage, len(list.Items))
	for i, m := range list.Items {
		items[i] = PodUsage{Name: m.Metadata.Name, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
		for _, c := range m.Containers {
			cu := ContainerUsage{Name: c.Name, Usage: make(map[corev1.ResourceName]resource.Quantity, len(c.Usage))}
			for res, raw := range c.Usage {
				q, err := parseQuantity(raw)
				if err != nil {
					return nil, fmt.Errorf("pod %s container %s %s: %w", m.Metadata.Name, c.Name, res, err)
				}
				cu.Usage[res] = q
			}
			items[i].Containers = append(items[i].Containers, cu)
		}
	}
	return items, nil
}

// quantityPattern is the quantity grammar with at most a two-digit exponent:
// resource.ParseQuantity itself spends practically forever on "1e-1000000000".
var quantityPattern = regexp.MustCompile(`^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,2}|[numkMGTPE]|[KMGTPE]i)?$`)

// parseQuantity parses a JSON quantity (a string, or a bare number as Quantity's own
// decoder accepts) that is short and has a sane exponent.
func parseQuantity(raw json.RawMessage) (resource.Quantity, error) {
	s := string(raw)
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return resource.Quantity{}, fmt.Errorf("malformed quantity %s", BodySnippet(raw))
		}
	}
	if len(s) > 64 || !quantityPattern.MatchString(s) {
		return resource.Quantity{}, fmt.Errorf("malformed or absurd quantity %s", BodySnippet([]byte(s)))
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("malformed quantity %q: %w", s, err)
	}
	return q, nil
}

// Heapster's model API wire types (heapster metrics/api/v1/types). Value is kept as
// the literal number so that a negative or fractional value is reported as such.
type ModelResultList struct {
	Items []modelResult `json:"items"`
}

type modelResult struct {
	Metrics         []modelPoint `json:"metrics"`
	LatestTimestamp time.Time    `json:"latestTimestamp"`
}

type modelPoint struct {
	Timestamp  time.Time   `json:"timestamp"`
	Value      json.Number `json:"value"`
	FloatValue *float64    `json:"floatValue,omitempty"`
}

// maxRawValue is the largest raw model value whose milli-value is sane. Heapster exports
// int64 values as uint64, so a negative number arrives as one near 2^64 and is caught here.
const maxRawValue = uint64(MaxMilliValue / 1000)

func HeapsterModel(body []byte) (ModelResultList, error) {
	var list ModelResultList
	if err := json.Unmarshal(body, &list); err != nil {
		return ModelResultList{}, fmt.Errorf("not a MetricResultList (%w); body starts %s", err, BodySnippet(body))
	}
	return list, nil
}

func (p modelPoint) raw() (uint64, error) {
	s := p.Value.String()
	if s == "" {
		return 0, nil // absent, as Go's decoder leaves Heapster's uint64 field
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("negative value %s", s)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %s is not an unsigned integer", s)
	}
	if v > maxRawValue {
		return 0, fmt.Errorf("absurdly large value %d (a negative number exported as unsigned?)", v)
	}
	return v, nil
}

// collapseSamples reduces one pod's series to the mean of its last minute in milli-units,
// as the Heapster-era client did: the newest point is the first with the greatest
// timestamp; every point whose timestamp plus window is strictly after the newest one's
// counts; if the newest point carries floatValue the result is int64(mean(floatValue)*1000)
// over the counted points that have one, else (sum(value)*1000)/count in integer
// arithmetic. ok is false for an empty series.
func collapseSamples(points []modelPoint, window time.Duration) (milli int64, newest time.Time, ok bool, err error) {
	if len(points) == 0 {
		return 0, time.Time{}, false, nil
	}
	n := 0
	for i := range points {
		if points[n].Timestamp.Before(points[i].Timestamp) {
			n = i
		}
	}
	newest = points[n].Timestamp
	var intSum, intCount int64
	var floatSum float64
	var floatCount int
	for _, p := range points {
		if !p.Timestamp.Add(window).After(newest) {
			continue
		}
		v, err := p.raw()
		if err != nil {
			return 0, time.Time{}, false, fmt.Errorf("sample at %s: %w", p.Timestamp.UTC().Format(time.RFC3339), err)
		}
		if int64(v) > math.MaxInt64/1000-intSum {
			return 0, time.Time{}, false, fmt.Errorf("the sum of the last minute's samples overflows")
		}
		intSum += int64(v)
		intCount++
		if p.FloatValue != nil {
			if *p.FloatValue < 0 {
				return 0, time.Time{}, false, fmt.Errorf("sample at %s: negative value %g", p.Timestamp.UTC().Format(time.RFC3339), *p.FloatValue)
			}
			floatSum += *p.FloatValue
			floatCount++
		}
	}
	if points[n].FloatValue != nil {
		milli, err = scaleFloat(floatSum / float64(floatCount))
		if err != nil {
			return 0, time.Time{}, false, err
		}
		return milli, newest, true, nil
	}
	return intSum * 1000 / intCount, newest, true, nil
}

// HeapsterPodsSamples matches model API items to the requested pods by position and
// collapses each; the time is the oldest of the per-pod newest timestamps (zero if no pod
// had data). Pods with an empty series are left out, as upstream.
func HeapsterPodsSamples(podNames []string, list ModelResultList, now time.Time, maxAge time.Duration) (*sampleset.Set, time.Time, error) {
	if len(list.Items) != len(podNames) {
		// Heapster answers every requested pod, with an empty series if it has no data, so
		// a different count means items cannot be matched to pods.
		return nil, time.Time{}, fmt.Errorf("requested metrics for %d pods, got metrics for %d", len(podNames), len(list.Items))
	}
	out := sampleset.New(len(podNames))
	var oldest int64
	found := false
	for i, item := range list.Items {
		v, ts, ok, err := collapseSamples(item.Metrics, time.Minute)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("pod %s: %w", podNames[i], err)
		}
		if !ok {
			continue
		}
		if err := CheckFresh(ts, now, maxAge, "the newest sample of pod "+podNames[i]); err != nil {
			return nil, time.Time{}, err
		}
		// The time returned is the oldest as the samples hold it: a time past 2262 is clamped
		// there, and the returned one must not be newer than every sample.
		stamp := sampleset.Timestamp(ts)
		if !out.Add(podNames[i], sampleset.Sample{MilliValue: v, Timestamp: stamp, Window: time.Minute}) {
			return nil, time.Time{}, fmt.Errorf("pod %s is listed twice", podNames[i])
		}
		if !found || stamp < oldest {
			oldest, found = stamp, true
		}
	}
	if !found {
		return out, time.Time{}, nil
	}
	return out, sampleset.Time(oldest), nil
}
