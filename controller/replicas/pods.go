package replicas

import (
	"errors"
	"fmt"
	"math"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	corev1 "k8s.io/api/core/v1"
)

// Why phrases for PodTreatment; constants so that classifying pods allocates nothing.
const (
	whyDeleting      = "deleting"
	whyFailed        = "phase Failed"
	whyPending       = "phase Pending"
	whyNoMetric      = "no metric"
	whyReady         = "counted"
	whyNoReadyCond   = "cpu: no Ready condition"
	whyNoStartTime   = "cpu: no start time"
	whyUnreadyInInit = "cpu: not ready within the initialization period"
	whyNoFreshSample = "cpu: no full metric window since the last readiness change, within the initialization period"
	whyNeverReady    = "cpu: not ready and never was since the initial readiness delay"
	whyNilPod        = "nil pod"
)

// Why a pod-based metric has no proposal, with upstream's text; a metric's error wraps them, so
// errors.Is finds them in MetricResult.Err and Decision.Err.
var (
	// ErrNoPods: the selector matches no pod.
	ErrNoPods = errors.New("no pods returned by selector while calculating replica count")
	// ErrNoPodMetrics: no sample is left once deleted, failed and unready pods are dropped.
	ErrNoPodMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	// ErrNoMatchingMetrics: no sample belongs to a pod with a request (utilization targets).
	ErrNoMatchingMetrics = errors.New("no metrics returned matched known pods")
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
	// What the rebalancing pass adds with requests: the missing and the unready pods' request
	// totals, and the missing pods' usage at requestSpec.fillPercent of request (rounded down
	// per pod, as upstream computes it).
	missingRequest, missingFill, unreadyRequest int64
}

// requestSpec asks group to compute each pod's request in the same pass (utilization targets).
type requestSpec struct {
	enabled   bool
	container string
	podLevel  bool
	// fillPercent is the utilization a missing pod is assumed at when the ratio is below 1.
	fillPercent int64
}

// group classifies every pod exactly as upstream's groupPods and fills pts (len(pts) ==
// len(pods)), unless pts is nil (Input.OmitPodTreatments): the counts and totals are the same.
// resource is "" for custom (Pods) metrics; the readiness rules apply only to cpu.
// One pass over the pods keeps each pod's memory touched once, which matters at thousands of pods.
func (c *calc) group(samples *sampleset.Set, res corev1.ResourceName, pts []PodTreatment, rs requestSpec) grouping {
	var g grouping
	cpu := res == corev1.ResourceCPU
	var memo requestMemo
	// next is the samples' position after the last pod's: the pods mostly come in the order
	// their samples were added, and a sample found there needs no hashing of the name.
	next := 0
	for k, pod := range c.pods {
		t := PodTreatment{AssumedUsage: -1}
		c.treat(&g, &t, pod, samples, res, cpu, &memo, rs, &next)
		if pts != nil {
			pts[k] = t
		}
	}
	return g
}

// treat classifies one pod into pt and counts it in g.
func (c *calc) treat(g *grouping, pt *PodTreatment, pod *corev1.Pod, samples *sampleset.Set, res corev1.ResourceName, cpu bool, memo *requestMemo, rs requestSpec, next *int) {
	if pod == nil {
		pt.Class, pt.Why = PodIgnored, whyNilPod
		g.ignored++
		return
	}
	pt.Name = pod.Name
	if rs.enabled && g.requestErr == nil {
		pt.Request, g.requestErr = memo.request(pod, rs.container, res, rs.podLevel)
	}
	s, at, found := samples.GetNear(pod.Name, *next)
	if found {
		pt.Usage, pt.HasSample = s.MilliValue, true
		*next = at + 1
	}
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
		why := whyFailed
		if pod.DeletionTimestamp != nil {
			why = whyDeleting
		}
		g.drop(pt, PodIgnored, why, found, s.MilliValue)
		g.ignored++
		return
	}
	if pod.Status.Phase == corev1.PodPending {
		g.drop(pt, PodUnready, whyPending, found, s.MilliValue)
		g.unready++
		g.unreadyRequest += pt.Request
		return
	}
	if !found {
		pt.Class, pt.Why = PodMissing, whyNoMetric
		g.missing++
		g.missingRequest += pt.Request
		g.missingFill += pt.Request * rs.fillPercent / 100
		return
	}
	if cpu {
		if why := c.cpuUnready(pod, s); why != "" {
			g.drop(pt, PodUnready, why, found, s.MilliValue)
			g.unready++
			g.unreadyRequest += pt.Request
			return
		}
	}
	pt.Class, pt.Why = PodReady, whyReady
	g.ready++
	g.readyUsage += pt.Usage
	g.readyRequest += pt.Request
}

// treatments is r.Pods, one zero record per pod, or nil when the caller omits them.
func (c *calc) treatments(r *MetricResult) []PodTreatment {
	if c.omitPods {
		return nil
	}
	r.Pods = make([]PodTreatment, len(c.pods))
	return r.Pods
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
func (c *calc) cpuUnready(pod *corev1.Pod, s sampleset.Sample) string {
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
		if sampleset.Time(s.Timestamp).Before(cond.LastTransitionTime.Add(s.Window)) {
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
func (c *calc) utilization(d *decision, r *MetricResult, md MetricData, res corev1.ResourceName, container string, target int32) (replicas, util int32, raw int64, err error) {
	if md.Err != nil {
		return 0, 0, 0, fmt.Errorf("unable to get metrics for resource %s: %w", res, md.Err)
	}
	if len(c.pods) == 0 {
		return 0, 0, 0, ErrNoPods
	}
	pts := c.treatments(r)
	g := c.group(md.PodSamples, res, pts, requestSpec{enabled: true, container: container, podLevel: c.podLevel, fillPercent: int64(max(100, target))})
	entries := md.PodSamples.Len() - g.removed
	if entries == 0 {
		return 0, 0, 0, ErrNoPodMetrics
	}
	if g.requestErr != nil {
		return 0, 0, 0, g.requestErr
	}
	usageSum, reqSum, counted := g.readyUsage, g.readyRequest, g.ready
	if reqSum == 0 {
		return 0, 0, 0, ErrNoMatchingMetrics
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
	d.groupingLine(r, g, md.PodSamples.Len()-(g.ready+g.removed))
	d.line().s(r.Name).s(": ").i(int64(g.ready)).s(" ready pods use ").milli(usageSum).s(" of ").milli(reqSum).s(" requested = ").i(int64(util)).s("% ").s(scope).
		s(" vs target ").i(int64(target)).s("% -> ratio ").f3(ratio).end("metric", r.Index)

	upWithUnready := g.unready > 0 && ratio > 1.0
	if !upWithUnready && g.missing == 0 {
		if c.tol.Within(ratio) {
			r.WithinTolerance = true
			d.line().s(r.Name).s(": ratio ").f3(ratio).s(" is within tolerance [").f3(1-c.tol.Down).s(", ").f3(1+c.tol.Up).s("] -> keep ").i(int64(current)).s(" replicas").end("proposal", r.Index)
			return current, util, raw, nil
		}
		replicas = int32(math.Ceil(ratio * float64(g.ready)))
		d.line().s(r.Name).s(": ceil(").f3(ratio).s(" x ").i(int64(g.ready)).s(" ready pods) -> ").i(int64(replicas)).s(" replicas").end("proposal", r.Index)
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
			if d.tracing() {
				assumed = fmt.Sprintf("%d%% of request", fallback)
			}
			usage2 += g.missingFill
		}
		req2 += g.missingRequest
		entries2 += g.missing
		for k := range pts {
			if pts[k].Class == PodMissing {
				pts[k].AssumedUsage = pts[k].Request * fallback / 100
			}
		}
	}
	if upWithUnready {
		req2 += g.unreadyRequest
		entries2 += g.unready
		for k := range pts {
			if pts[k].Class == PodUnready {
				pts[k].AssumedUsage = 0
			}
		}
	}
	if req2 == 0 {
		return 0, util, raw, ErrNoMatchingMetrics
	}
	newUtil := int32((usage2 * 100) / req2)
	newRatio := float64(newUtil) / float64(target)
	r.RebalancedRatio = newRatio
	d.line().s(r.Name).s(": rebalanced with ").i(int64(g.missing)).s(" missing pods at ").s(assumed).s(" and ").unready(upWithUnready, g.unready).
		s(" -> ").i(int64(newUtil)).s("% -> ratio ").f3(newRatio).end("metric", r.Index)
	replicas = c.rebalancedReplicas(d, r, ratio, newRatio, entries2)
	return replicas, util, raw, nil
}

// plainPods is upstream's calcPlainMetricReplicas (Pods metrics and Resource AverageValue
// targets); fetchErr is the already-wrapped fetch error.
func (c *calc) plainPods(d *decision, r *MetricResult, md MetricData, fetchErr error, res corev1.ResourceName, target int64) (replicas int32, usage int64, err error) {
	if fetchErr != nil {
		return 0, 0, fetchErr
	}
	if len(c.pods) == 0 {
		return 0, 0, ErrNoPods
	}
	pts := c.treatments(r)
	g := c.group(md.PodSamples, res, pts, requestSpec{})
	entries := md.PodSamples.Len() - g.removed
	if entries == 0 {
		return 0, 0, ErrNoPodMetrics
	}
	var total int64
	for s := range md.PodSamples.Values() {
		total += s.MilliValue
	}
	total -= g.removedSum
	usage = total / int64(entries)
	ratio := float64(usage) / float64(target)
	r.Ratio, r.RebalancedRatio, r.ReadyPods = ratio, ratio, g.ready
	current := c.scale.SpecReplicas
	d.groupingLine(r, g, entries-g.ready)
	d.line().s(r.Name).s(": average ").milli(usage).s(" over ").i(int64(entries)).s(" samples vs target ").milli(target).s(" -> ratio ").f3(ratio).end("metric", r.Index)

	upWithUnready := g.unready > 0 && ratio > 1.0
	if !upWithUnready && g.missing == 0 {
		if c.tol.Within(ratio) {
			r.WithinTolerance = true
			d.line().s(r.Name).s(": ratio ").f3(ratio).s(" is within tolerance [").f3(1-c.tol.Down).s(", ").f3(1+c.tol.Up).s("] -> keep ").i(int64(current)).s(" replicas").end("proposal", r.Index)
			return current, usage, nil
		}
		replicas = int32(math.Ceil(ratio * float64(g.ready)))
		d.line().s(r.Name).s(": ceil(").f3(ratio).s(" x ").i(int64(g.ready)).s(" ready pods) -> ").i(int64(replicas)).s(" replicas").end("proposal", r.Index)
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
			if d.tracing() {
				assumed = "the target " + milli(target)
			}
		}
		total2 += fallback * int64(g.missing)
		entries2 += g.missing
		for k := range pts {
			if pts[k].Class == PodMissing {
				pts[k].AssumedUsage = fallback
			}
		}
	}
	if upWithUnready {
		entries2 += g.unready
		for k := range pts {
			if pts[k].Class == PodUnready {
				pts[k].AssumedUsage = 0
			}
		}
	}
	newUsage := total2 / int64(entries2)
	newRatio := float64(newUsage) / float64(target)
	r.RebalancedRatio = newRatio
	d.line().s(r.Name).s(": rebalanced with ").i(int64(g.missing)).s(" missing pods at ").s(assumed).s(" and ").unready(upWithUnready, g.unready).
		s(" -> average ").milli(newUsage).s(" -> ratio ").f3(newRatio).end("metric", r.Index)
	replicas = c.rebalancedReplicas(d, r, ratio, newRatio, entries2)
	return replicas, usage, nil
}

// rebalancedReplicas is the common tail of both pod algorithms after missing and unready pods
// were filled in: hold on tolerance or a flipped direction, else ceil(newRatio x entries).
func (c *calc) rebalancedReplicas(d *decision, r *MetricResult, ratio, newRatio float64, entries int) int32 {
	current := c.scale.SpecReplicas
	if c.tol.Within(newRatio) {
		r.WithinTolerance = true
		d.line().s(r.Name).s(": rebalanced ratio ").f3(newRatio).s(" is within tolerance -> keep ").i(int64(current)).s(" replicas").end("proposal", r.Index)
		return current
	}
	if (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		d.line().s(r.Name).s(": rebalancing flipped the direction (").f3(ratio).s(" -> ").f3(newRatio).s(") -> keep ").i(int64(current)).s(" replicas").end("proposal", r.Index)
		return current
	}
	n := int32(math.Ceil(newRatio * float64(entries)))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		d.line().s(r.Name).s(": ceil(").f3(newRatio).s(" x ").i(int64(entries)).s(" samples) = ").i(int64(n)).s(" would move against the ratio's direction -> keep ").i(int64(current)).s(" replicas").end("proposal", r.Index)
		return current
	}
	d.line().s(r.Name).s(": ceil(").f3(newRatio).s(" x ").i(int64(entries)).s(" samples) -> ").i(int64(n)).s(" replicas").end("proposal", r.Index)
	return n
}

func (d *decision) groupingLine(r *MetricResult, g grouping, superfluous int) {
	d.line().s(r.Name).s(": pods ").i(int64(g.ready)).s(" ready, ").i(int64(g.unready)).s(" unready, ").i(int64(g.missing)).s(" missing a metric, ").
		i(int64(g.ignored)).s(" ignored (deleting or failed); ").i(int64(superfluous)).s(" samples for pods not selected").end("pods", r.Index)
}

func (l line) unready(applied bool, n int) line {
	if applied {
		return l.i(int64(n)).s(" unready pods at 0")
	}
	return l.s("unready pods left out")
}
