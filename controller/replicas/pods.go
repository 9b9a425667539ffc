package replicas

import (
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
)

// Why phrases for PodTreatment; constants so that classifying pods allocates nothing.
const (
	whyDeleting        = "deleting"
	whyFailed          = "phase Failed"
	whyPending         = "phase Pending"
	whyNoMetric        = "no metric"
	whyReady           = "counted"
	whyNoReadyCond     = "cpu: no Ready condition"
	whyNoStartTime     = "cpu: no start time"
	whyUnreadyInInit   = "cpu: not ready within the initialization period"
	whyNoFreshSample   = "cpu: no full metric window since the last readiness change, within the initialization period"
	whyNeverReady      = "cpu: not ready and never was since the initial readiness delay"
	whyNilPod          = "nil pod"
	errNoPods          = "no pods returned by selector while calculating replica count"
	errNoMetricsForPod = "did not receive metrics for targeted pods (pods might be unready)"
	errNoMatch         = "no metrics returned matched known pods"
)

// grouping counts upstream's groupPods result; per-pod detail is in the PodTreatment slice.
type grouping struct {
	ready, unready, missing, ignored int
	// removed counts samples dropped with ignored and unready pods; removedSum is their total.
	removed    int
	removedSum int64
	// With requests: the totals over ready pods, and the first pod's request error (upstream
	// reports it only after checking that some samples are left).
	readyUsage, readyRequest int64
	requestErr               error
}

// requestSpec asks group to compute each pod's request in the same pass (utilization targets).
type requestSpec struct {
	enabled   bool
	container string
	podLevel  bool
}

// group classifies every pod exactly as upstream's groupPods and fills pts (len(pts) == len(pods)).
// resource is "" for custom (Pods) metrics; the readiness rules apply only to cpu.
// One pass over the pods keeps each pod's memory touched once, which matters at thousands of pods.
func (c *calc) group(samples map[string]Sample, res corev1.ResourceName, pts []PodTreatment, rs requestSpec) grouping {
	var g grouping
	var memo requestMemo
	cpu := res == corev1.ResourceCPU
	for k, pod := range c.pods {
		pt := &pts[k]
		pt.AssumedUsage = -1
		if pod == nil {
			pt.Class, pt.Why = PodIgnored, whyNilPod
			g.ignored++
			continue
		}
		pt.Name = pod.Name
		if rs.enabled && g.requestErr == nil {
			pt.Request, g.requestErr = podRequest(pod, rs.container, res, rs.podLevel, &memo)
		}
		s, found := samples[pod.Name]
		if found {
			pt.Usage, pt.HasSample = s.MilliValue, true
		}
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			why := whyFailed
			if pod.DeletionTimestamp != nil {
				why = whyDeleting
			}
			g.drop(pt, PodIgnored, why, found, s.MilliValue)
			g.ignored++
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			g.drop(pt, PodUnready, whyPending, found, s.MilliValue)
			g.unready++
			continue
		}
		if !found {
			pt.Class, pt.Why = PodMissing, whyNoMetric
			g.missing++
			continue
		}
		if cpu {
			if why := c.cpuUnready(pod, s); why != "" {
				g.drop(pt, PodUnready, why, found, s.MilliValue)
				g.unready++
				continue
			}
		}
		pt.Class, pt.Why = PodReady, whyReady
		g.ready++
		g.readyUsage += pt.Usage
		g.readyRequest += pt.Request
	}
	return g
}

// drop classifies a pod whose sample (if any) upstream deletes before the first pass.
func (g *grouping) drop(pt *PodTreatment, class PodClass, why string, hasSample bool, value int64) {
	pt.Class, pt.Why = class, why
	if hasSample {
		g.removed++
		g.removedSum += value
	}
}

// cpuUnready returns why a cpu sample of a running pod is not trusted, or "".
func (c *calc) cpuUnready(pod *corev1.Pod, s Sample) string {
	cond := readyCondition(pod)
	if cond == nil {
		return whyNoReadyCond
	}
	start := pod.Status.StartTime
	if start == nil {
		return whyNoStartTime
	}
	if start.Add(c.cpuInit).After(c.now) {
		if cond.Status == corev1.ConditionFalse {
			return whyUnreadyInInit
		}
		if s.Timestamp.Before(cond.LastTransitionTime.Add(s.Window)) {
			return whyNoFreshSample
		}
		return ""
	}
	if cond.Status == corev1.ConditionFalse && start.Add(c.delay).After(cond.LastTransitionTime.Time) {
		return whyNeverReady
	}
	return ""
}

// utilization is upstream's GetResourceReplicas on the given samples (Utilization targets).
func (c *calc) utilization(d *Decision, r *MetricResult, md MetricData, res corev1.ResourceName, container string, target int32) (replicas, util int32, raw int64, err error) {
	if md.Err != nil {
		return 0, 0, 0, fmt.Errorf("unable to get metrics for resource %s: %w", res, md.Err)
	}
	if len(c.pods) == 0 {
		return 0, 0, 0, errors.New(errNoPods)
	}
	pts := make([]PodTreatment, len(c.pods))
	r.Pods = pts
	g := c.group(md.PodSamples, res, pts, requestSpec{enabled: true, container: container, podLevel: c.podLevel})
	entries := len(md.PodSamples) - g.removed
	if entries == 0 {
		return 0, 0, 0, errors.New(errNoMetricsForPod)
	}
	if g.requestErr != nil {
		return 0, 0, 0, g.requestErr
	}
	usageSum, reqSum, counted := g.readyUsage, g.readyRequest, g.ready
	if reqSum == 0 {
		return 0, 0, 0, errors.New(errNoMatch)
	}
	util = int32((usageSum * 100) / reqSum)
	raw = usageSum / int64(counted)
	ratio := float64(util) / float64(target)
	r.Ratio, r.RebalancedRatio, r.ReadyPods = ratio, ratio, g.ready
	current := c.scale.SpecReplicas
	scope := "of request"
	if container != "" {
		scope = "of container " + container + "'s request"
	}
	d.trace("pods", r.Index, groupingText(r.Name, g, len(md.PodSamples)-(g.ready+g.removed)))
	d.trace("metric", r.Index, fmt.Sprintf("%s: %d ready pods use %s of %s requested = %d%% %s vs target %d%% -> ratio %.3f",
		r.Name, g.ready, milli(usageSum), milli(reqSum), util, scope, target, ratio))

	upWithUnready := g.unready > 0 && ratio > 1.0
	if !upWithUnready && g.missing == 0 {
		if c.tol.Within(ratio) {
			r.WithinTolerance = true
			d.trace("proposal", r.Index, fmt.Sprintf("%s: ratio %.3f is within tolerance [%.3f, %.3f] -> keep %d replicas", r.Name, ratio, 1-c.tol.Down, 1+c.tol.Up, current))
			return current, util, raw, nil
		}
		replicas = int32(math.Ceil(ratio * float64(g.ready)))
		d.trace("proposal", r.Index, fmt.Sprintf("%s: ceil(%.3f x %d ready pods) -> %d replicas", r.Name, ratio, g.ready, replicas))
		return replicas, util, raw, nil
	}

	usage2, req2, entries2 := usageSum, reqSum, entries
	for k := range pts {
		if pts[k].Class == PodReady {
			pts[k].AssumedUsage = pts[k].Usage
		}
	}
	assumed := "unchanged"
	if g.missing > 0 && (ratio < 1.0 || ratio > 1.0) {
		fallback := int64(0)
		assumed = "0% of request"
		if ratio < 1.0 {
			fallback = int64(max(100, target))
			assumed = fmt.Sprintf("%d%% of request", fallback)
		}
		for k := range pts {
			if pts[k].Class == PodMissing {
				v := pts[k].Request * fallback / 100
				pts[k].AssumedUsage = v
				usage2 += v
				req2 += pts[k].Request
				entries2++
			}
		}
	}
	if upWithUnready {
		for k := range pts {
			if pts[k].Class == PodUnready {
				pts[k].AssumedUsage = 0
				req2 += pts[k].Request
				entries2++
			}
		}
	}
	if req2 == 0 {
		return 0, util, raw, errors.New(errNoMatch)
	}
	newUtil := int32((usage2 * 100) / req2)
	newRatio := float64(newUtil) / float64(target)
	r.RebalancedRatio = newRatio
	d.trace("metric", r.Index, fmt.Sprintf("%s: rebalanced with %d missing pods at %s and %s -> %d%% -> ratio %.3f",
		r.Name, g.missing, assumed, unreadyText(upWithUnready, g.unready), newUtil, newRatio))
	replicas = c.rebalancedReplicas(d, r, ratio, newRatio, entries2)
	return replicas, util, raw, nil
}

// plainPods is upstream's calcPlainMetricReplicas (Pods metrics and Resource AverageValue
// targets); fetchErr is the already-wrapped fetch error.
func (c *calc) plainPods(d *Decision, r *MetricResult, md MetricData, fetchErr error, res corev1.ResourceName, target int64) (replicas int32, usage int64, err error) {
	if fetchErr != nil {
		return 0, 0, fetchErr
	}
	if len(c.pods) == 0 {
		return 0, 0, errors.New(errNoPods)
	}
	pts := make([]PodTreatment, len(c.pods))
	r.Pods = pts
	g := c.group(md.PodSamples, res, pts, requestSpec{})
	entries := len(md.PodSamples) - g.removed
	if entries == 0 {
		return 0, 0, errors.New(errNoMetricsForPod)
	}
	var total int64
	for _, s := range md.PodSamples {
		total += s.MilliValue
	}
	total -= g.removedSum
	usage = total / int64(entries)
	ratio := float64(usage) / float64(target)
	r.Ratio, r.RebalancedRatio, r.ReadyPods = ratio, ratio, g.ready
	current := c.scale.SpecReplicas
	d.trace("pods", r.Index, groupingText(r.Name, g, entries-g.ready))
	d.trace("metric", r.Index, fmt.Sprintf("%s: average %s over %d samples vs target %s -> ratio %.3f",
		r.Name, milli(usage), entries, milli(target), ratio))

	upWithUnready := g.unready > 0 && ratio > 1.0
	if !upWithUnready && g.missing == 0 {
		if c.tol.Within(ratio) {
			r.WithinTolerance = true
			d.trace("proposal", r.Index, fmt.Sprintf("%s: ratio %.3f is within tolerance [%.3f, %.3f] -> keep %d replicas", r.Name, ratio, 1-c.tol.Down, 1+c.tol.Up, current))
			return current, usage, nil
		}
		replicas = int32(math.Ceil(ratio * float64(g.ready)))
		d.trace("proposal", r.Index, fmt.Sprintf("%s: ceil(%.3f x %d ready pods) -> %d replicas", r.Name, ratio, g.ready, replicas))
		return replicas, usage, nil
	}

	total2, entries2 := total, entries
	for k := range pts {
		if pts[k].Class == PodReady {
			pts[k].AssumedUsage = pts[k].Usage
		}
	}
	assumed := "unchanged"
	if g.missing > 0 && (ratio < 1.0 || ratio > 1.0) {
		fallback := int64(0)
		assumed = "0"
		if ratio < 1.0 {
			fallback = target
			assumed = "the target " + milli(target)
		}
		for k := range pts {
			if pts[k].Class == PodMissing {
				pts[k].AssumedUsage = fallback
				total2 += fallback
				entries2++
			}
		}
	}
	if upWithUnready {
		for k := range pts {
			if pts[k].Class == PodUnready {
				pts[k].AssumedUsage = 0
				entries2++
			}
		}
	}
	newUsage := total2 / int64(entries2)
	newRatio := float64(newUsage) / float64(target)
	r.RebalancedRatio = newRatio
	d.trace("metric", r.Index, fmt.Sprintf("%s: rebalanced with %d missing pods at %s and %s -> average %s -> ratio %.3f",
		r.Name, g.missing, assumed, unreadyText(upWithUnready, g.unready), milli(newUsage), newRatio))
	replicas = c.rebalancedReplicas(d, r, ratio, newRatio, entries2)
	return replicas, usage, nil
}

// rebalancedReplicas is the common tail of both pod algorithms after missing and unready pods
// were filled in: hold on tolerance or a flipped direction, else ceil(newRatio x entries).
func (c *calc) rebalancedReplicas(d *Decision, r *MetricResult, ratio, newRatio float64, entries int) int32 {
	current := c.scale.SpecReplicas
	if c.tol.Within(newRatio) {
		r.WithinTolerance = true
		d.trace("proposal", r.Index, fmt.Sprintf("%s: rebalanced ratio %.3f is within tolerance -> keep %d replicas", r.Name, newRatio, current))
		return current
	}
	if (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		d.trace("proposal", r.Index, fmt.Sprintf("%s: rebalancing flipped the direction (%.3f -> %.3f) -> keep %d replicas", r.Name, ratio, newRatio, current))
		return current
	}
	n := int32(math.Ceil(newRatio * float64(entries)))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		d.trace("proposal", r.Index, fmt.Sprintf("%s: ceil(%.3f x %d samples) = %d would move against the ratio's direction -> keep %d replicas", r.Name, newRatio, entries, n, current))
		return current
	}
	d.trace("proposal", r.Index, fmt.Sprintf("%s: ceil(%.3f x %d samples) -> %d replicas", r.Name, newRatio, entries, n))
	return n
}

func groupingText(name string, g grouping, superfluous int) string {
	return fmt.Sprintf("%s: pods %d ready, %d unready, %d missing a metric, %d ignored (deleting or failed); %d samples for pods not selected",
		name, g.ready, g.unready, g.missing, g.ignored, superfluous)
}

func unreadyText(applied bool, n int) string {
	if applied {
		return fmt.Sprintf("%d unready pods at 0", n)
	}
	return "unready pods left out"
}
