package parity

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metricKind is one (metric source type, target type) pair the calculator distinguishes.
type metricKind int

const (
	kindResourceUtilization metricKind = iota
	kindResourceAverageValue
	kindContainerUtilization
	kindContainerAverageValue
	kindPodsAverageValue
	kindObjectValue
	kindObjectAverageValue
	kindExternalValue
	kindExternalAverageValue
	numKinds
)

func (k metricKind) String() string {
	return [...]string{
		"Resource/Utilization", "Resource/AverageValue",
		"ContainerResource/Utilization", "ContainerResource/AverageValue",
		"Pods/AverageValue", "Object/Value", "Object/AverageValue",
		"External/Value", "External/AverageValue",
	}[k]
}

func (k metricKind) podBased() bool { return k <= kindPodsAverageValue }

func (k metricKind) resourceBased() bool { return k <= kindContainerAverageValue }

func (k metricKind) utilization() bool {
	return k == kindResourceUtilization || k == kindContainerUtilization
}

func (k metricKind) container() bool {
	return k == kindContainerUtilization || k == kindContainerAverageValue
}

// Fixed names used by every scenario.
const (
	namespace          = "parity"
	podLabelKey        = "app"
	podLabelValue      = "web"
	podsMetricName     = "qps"
	objectMetricName   = "requests-per-second"
	externalMetricName = "queue_depth"
	fetchErrorText     = "the server could not find the requested resource (get pods.metrics.k8s.io)"
)

var objectRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "frontend"}

// offset is a point in time relative to the decision time, in whole seconds. Whole seconds keep
// the comparison with upstream exact: upstream reads time.Now() itself inside groupPods, a few
// microseconds after the time given to our core, which can only matter at sub-second distances.
type offset struct {
	set bool // false: the zero time (or a nil pointer where the API field is a pointer)
	sec int64
}

func at(sec int64) offset { return offset{set: true, sec: sec} }

func (o offset) time(now time.Time) time.Time {
	if !o.set {
		return time.Time{}
	}
	return now.Add(time.Duration(o.sec) * time.Second)
}

func (o offset) String() string {
	if !o.set {
		return "zero"
	}
	return fmt.Sprintf("now%+ds", o.sec)
}

type containerCase struct {
	name     string
	sidecar  bool                          // init container with restartPolicy Always
	requests map[corev1.ResourceName]int64 // milli-units
}

type podCase struct {
	name       string
	phase      corev1.PodPhase
	deleting   bool
	ready      corev1.ConditionStatus // "" means no Ready condition
	readySince offset                 // Ready's lastTransitionTime
	start      offset                 // status.startTime; unset means nil
	containers []containerCase
	inits      []containerCase
	podReqs    map[corev1.ResourceName]int64 // spec.resources.requests; nil means none
	overhead   map[corev1.ResourceName]int64
}

type sampleCase struct {
	value  int64 // milli-units
	at     offset
	window time.Duration
}

// scenario is one calculator call: one metric, one set of pods and samples.
type scenario struct {
	seed uint64
	kind metricKind
	ns   string
	// metricName names Pods, Object and External metrics.
	metricName string

	resource          corev1.ResourceName
	container         string
	targetUtilization int32
	target            int64 // milli-units, for value and average-value targets

	clusterTolerance float64
	upTolerance      string // behavior.scaleUp.tolerance as a quantity, "" when unset
	downTolerance    string

	cpuInitializationPeriod time.Duration
	initialReadinessDelay   time.Duration
	podLevelResources       bool

	specReplicas, statusReplicas int32

	pods            []podCase
	samples         map[string]sampleCase // pod-based metrics, by pod name
	metricTimestamp offset
	objectValue     int64
	externalValues  []int64
	metricLabels    map[string]string // Pods, Object or External metric selector; nil means none
	fetchFails      bool
}

// tolerances returns the effective (down, up) tolerances the way upstream derives them from the
// controller flag and spec.behavior.
func (s *scenario) tolerances() (down, up float64) {
	down, up = s.clusterTolerance, s.clusterTolerance
	if s.downTolerance != "" {
		q := resource.MustParse(s.downTolerance)
		down = q.AsApproximateFloat64()
	}
	if s.upTolerance != "" {
		q := resource.MustParse(s.upTolerance)
		up = q.AsApproximateFloat64()
	}
	return down, up
}

func (s *scenario) metricSpec() autoscalingv2.MetricSpec {
	target := autoscalingv2.MetricTarget{}
	switch {
	case s.kind.utilization():
		u := s.targetUtilization
		target = autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}
	case s.kind == kindObjectValue || s.kind == kindExternalValue:
		target = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewMilliQuantity(s.target, resource.DecimalSI)}
	default:
		target = autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewMilliQuantity(s.target, resource.DecimalSI)}
	}
	switch s.kind {
	case kindResourceUtilization, kindResourceAverageValue:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: s.resource, Target: target}}
	case kindContainerUtilization, kindContainerAverageValue:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
			ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: s.resource, Container: s.container, Target: target}}
	case kindPodsAverageValue:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.metricName, Selector: s.metricSelector()}, Target: target}}
	case kindObjectValue, kindObjectAverageValue:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType,
			Object: &autoscalingv2.ObjectMetricSource{DescribedObject: objectRef, Metric: autoscalingv2.MetricIdentifier{Name: s.metricName, Selector: s.metricSelector()}, Target: target}}
	default:
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
			External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.metricName, Selector: s.metricSelector()}, Target: target}}
	}
}

func (s *scenario) metricSelector() *metav1.LabelSelector {
	if s.metricLabels == nil {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: s.metricLabels}
}

func quantity(name corev1.ResourceName, milli int64) resource.Quantity {
	if name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
		return *resource.NewMilliQuantity(milli, resource.BinarySI)
	}
	return *resource.NewMilliQuantity(milli, resource.DecimalSI)
}

func resourceList(m map[corev1.ResourceName]int64) corev1.ResourceList {
	if m == nil {
		return nil
	}
	l := corev1.ResourceList{}
	for name, v := range m {
		l[name] = quantity(name, v)
	}
	return l
}

func (c containerCase) container() corev1.Container {
	out := corev1.Container{Name: c.name, Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: resourceList(c.requests)}}
	if c.sidecar {
		always := corev1.ContainerRestartPolicyAlways
		out.RestartPolicy = &always
	}
	return out
}

// pods builds the pod objects, with times relative to now.
func (s *scenario) buildPods(now time.Time) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(s.pods))
	for _, pc := range s.pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pc.name, Namespace: s.ns, Labels: map[string]string{podLabelKey: podLabelValue}},
			Status:     corev1.PodStatus{Phase: pc.phase},
		}
		if pc.deleting {
			ts := metav1.NewTime(now.Add(-time.Second))
			pod.DeletionTimestamp = &ts
		}
		if pc.start.set {
			ts := metav1.NewTime(pc.start.time(now))
			pod.Status.StartTime = &ts
		}
		if pc.ready != "" {
			pod.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: pc.ready, LastTransitionTime: metav1.NewTime(pc.readySince.time(now))},
			}
		}
		for _, c := range pc.containers {
			pod.Spec.Containers = append(pod.Spec.Containers, c.container())
		}
		for _, c := range pc.inits {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c.container())
		}
		if pc.podReqs != nil {
			pod.Spec.Resources = &corev1.ResourceRequirements{Requests: resourceList(pc.podReqs)}
		}
		if pc.overhead != nil {
			pod.Spec.Overhead = resourceList(pc.overhead)
		}
		pods = append(pods, pod)
	}
	return pods
}

// String is the readable dump printed when a scenario disagrees.
func (s *scenario) String() string {
	var b strings.Builder
	down, up := s.tolerances()
	fmt.Fprintf(&b, "scenario seed=%d kind=%s\n", s.seed, s.kind)
	switch {
	case s.kind.utilization():
		fmt.Fprintf(&b, "  metric: %s container=%q target averageUtilization=%d%%\n", s.resource, s.container, s.targetUtilization)
	case s.kind.resourceBased():
		fmt.Fprintf(&b, "  metric: %s container=%q target averageValue=%dm\n", s.resource, s.container, s.target)
	default:
		fmt.Fprintf(&b, "  metric: target %dm\n", s.target)
	}
	fmt.Fprintf(&b, "  tolerance: cluster=%g behavior.scaleDown=%q behavior.scaleUp=%q -> down=%g up=%g\n",
		s.clusterTolerance, s.downTolerance, s.upTolerance, down, up)
	fmt.Fprintf(&b, "  cpuInitializationPeriod=%s initialReadinessDelay=%s PodLevelResources=%t\n",
		s.cpuInitializationPeriod, s.initialReadinessDelay, s.podLevelResources)
	fmt.Fprintf(&b, "  scale: spec.replicas=%d status.replicas=%d\n", s.specReplicas, s.statusReplicas)
	if s.fetchFails {
		fmt.Fprintf(&b, "  metrics fetch fails: %q\n", fetchErrorText)
	}
	switch s.kind {
	case kindObjectValue, kindObjectAverageValue:
		fmt.Fprintf(&b, "  object value=%dm selector=%v at %s\n", s.objectValue, s.metricLabels, s.metricTimestamp)
	case kindExternalValue, kindExternalAverageValue:
		fmt.Fprintf(&b, "  external values=%v selector=%v at %s\n", s.externalValues, s.metricLabels, s.metricTimestamp)
	}
	fmt.Fprintf(&b, "  pods (%d):\n", len(s.pods))
	for _, p := range s.pods {
		fmt.Fprintf(&b, "    %s phase=%s", p.name, p.phase)
		if p.deleting {
			b.WriteString(" deleting")
		}
		if p.ready == "" {
			b.WriteString(" ready=absent")
		} else {
			fmt.Fprintf(&b, " ready=%s since %s", p.ready, p.readySince)
		}
		if p.start.set {
			fmt.Fprintf(&b, " started %s", p.start)
		} else {
			b.WriteString(" startTime=nil")
		}
		if p.podReqs != nil {
			fmt.Fprintf(&b, " podRequests=%s", formatRequests(p.podReqs))
		}
		if p.overhead != nil {
			fmt.Fprintf(&b, " overhead=%s", formatRequests(p.overhead))
		}
		b.WriteString("\n      containers:")
		for _, c := range p.containers {
			fmt.Fprintf(&b, " %s%s", c.name, formatRequests(c.requests))
		}
		if len(p.inits) > 0 {
			b.WriteString(" init:")
			for _, c := range p.inits {
				kind := ""
				if c.sidecar {
					kind = "(sidecar)"
				}
				fmt.Fprintf(&b, " %s%s%s", c.name, kind, formatRequests(c.requests))
			}
		}
		b.WriteString("\n")
	}
	if s.kind.podBased() {
		fmt.Fprintf(&b, "  samples (%d, metric timestamp %s, selector %v):\n", len(s.samples), s.metricTimestamp, s.metricLabels)
		for _, name := range sortedKeys(s.samples) {
			sm := s.samples[name]
			fmt.Fprintf(&b, "    %s=%dm at %s window %s\n", name, sm.value, sm.at, sm.window)
		}
	}
	return b.String()
}

func formatRequests(m map[corev1.ResourceName]int64) string {
	if len(m) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(m))
	for _, name := range sortedKeys(m) {
		q := quantity(name, m[name])
		parts = append(parts, fmt.Sprintf("%s=%s", name, q.String()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// gen draws scenarios. Probabilities favour the edges upstream's code branches on: readiness
// around the CPU initialization period and the readiness delay, missing requests and samples,
// ratios at the tolerance bounds, direction flips after rebalancing.
type gen struct {
	r *rand.Rand
	// reconcile draws scenarios for a whole controller run: controller-wide settings at their
	// defaults, start times at least reconcileMargin away from the end of the CPU initialization
	// period (the controller reconciles a while after the scenario's time is taken), and no pod
	// without a request (upstream's informer lists pods in random order, so which pod an error
	// names would be random).
	reconcile bool
}

const reconcileMargin = 60 // seconds

func newScenario(seed uint64) *scenario {
	g := gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	return g.scenario(seed)
}

func (g gen) chance(p float64) bool { return g.r.Float64() < p }

func (g gen) between(lo, hi int64) int64 { return lo + g.r.Int64N(hi-lo+1) }

func pick[T any](g gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

func (g gen) scenario(seed uint64) *scenario {
	s := &scenario{seed: seed, kind: metricKind(g.r.IntN(int(numKinds))), ns: namespace}
	if g.chance(0.2) {
		s.kind = kindResourceUtilization // the metric nearly every HPA has
	}
	switch s.kind {
	case kindPodsAverageValue:
		s.metricName = podsMetricName
	case kindObjectValue, kindObjectAverageValue:
		s.metricName = objectMetricName
	case kindExternalValue, kindExternalAverageValue:
		s.metricName = externalMetricName
	}

	s.clusterTolerance = 0.1
	if g.chance(0.25) {
		s.clusterTolerance = pick(g, 0.0, 0.05, 0.2, 0.5)
	}
	tolerances := []string{"0", "0.01", "0.05", "0.08", "0.1", "0.125", "0.34", "0.36", "2"}
	if g.chance(0.3) {
		s.upTolerance = pick(g, tolerances...)
	}
	if g.chance(0.3) {
		s.downTolerance = pick(g, tolerances...)
	}
	if g.chance(0.5) {
		s.cpuInitializationPeriod, s.initialReadinessDelay = 5*time.Minute, 30*time.Second // kube-controller-manager defaults
	} else {
		s.cpuInitializationPeriod, s.initialReadinessDelay = 2*time.Minute, 10*time.Second // upstream unit-test values
	}
	s.podLevelResources = !g.chance(0.15)
	if g.reconcile {
		s.clusterTolerance = 0.1
		s.cpuInitializationPeriod, s.initialReadinessDelay = 5*time.Minute, 30*time.Second
		s.podLevelResources = true
	}
	s.fetchFails = g.chance(0.03)
	s.metricTimestamp = at(-g.between(0, 60))

	s.resource = corev1.ResourceCPU
	if s.kind.resourceBased() && g.chance(0.3) {
		s.resource = corev1.ResourceMemory
	}

	nPods := int(g.between(1, 8))
	switch {
	case g.chance(0.02):
		nPods = 0
	case g.chance(0.1):
		nPods = int(g.between(9, 40))
	}
	layout := g.containerLayout()
	missingRequest := 0.0
	if g.chance(0.15) {
		missingRequest = pick(g, 0.02, 0.1, 0.4)
	}
	if g.reconcile {
		missingRequest = 0
	}
	for i := range nPods {
		s.pods = append(s.pods, g.pod(s, i, layout, missingRequest))
	}

	switch {
	case s.kind.utilization():
		s.targetUtilization = int32(pick(g, 10, 30, 50, 60, 70, 80, 90, 100, 110, 150, 200, 300))
		if g.chance(0.2) {
			s.targetUtilization = int32(g.between(1, 400))
		}
	case s.kind.resourceBased():
		s.target = pick(g, int64(100), 250, 500, 1000, 2000)
		if s.resource == corev1.ResourceMemory {
			s.target = g.between(32, 1024) << 20 * 1000
		}
	default:
		s.target = pick(g, int64(500), 1000, 2150, 2867, 4400, 5000, 10000, 15000, 20000)
		if g.chance(0.3) {
			s.target = g.between(1, 100000)
		}
	}
	if s.kind.container() {
		s.container = g.containerName(layout)
	}
	if (s.kind == kindPodsAverageValue || s.kind == kindObjectValue || s.kind == kindObjectAverageValue) && g.chance(0.3) {
		s.metricLabels = map[string]string{"verb": "GET"}
	}

	switch {
	case s.kind.podBased():
		s.specReplicas = int32(max(1, int64(nPods)+g.between(-2, 2)))
		s.statusReplicas = int32(nPods)
		s.samples = g.samples(s)
	default:
		s.specReplicas = int32(g.between(1, 12))
		if g.chance(0.1) && (s.kind == kindObjectValue || s.kind == kindExternalValue) {
			s.specReplicas = 0 // scale from zero: no tolerance, no pod count
		}
		s.statusReplicas = s.specReplicas
		switch {
		case g.chance(0.3):
			s.statusReplicas = int32(g.between(1, 12))
		case g.chance(0.03):
			s.statusReplicas = 0 // a target whose pods are all gone, e.g. just scaled from zero
		}
		g.objectOrExternal(s)
	}
	return s
}

// layout is the container shape shared by the pods of one workload; requests vary per pod.
type layout struct {
	containers []string
	inits      []string // names; sidecars end in "-sidecar"
}

func (g gen) containerLayout() layout {
	l := layout{}
	for i := range g.between(1, 3) {
		l.containers = append(l.containers, fmt.Sprintf("c%d", i))
	}
	if g.chance(0.3) {
		l.inits = append(l.inits, "init-setup")
	}
	if g.chance(0.3) {
		l.inits = append(l.inits, "proxy-sidecar")
	}
	return l
}

func (g gen) containerName(l layout) string {
	if g.reconcile {
		names := slices.Clone(l.containers)
		for _, name := range l.inits {
			if strings.HasSuffix(name, "-sidecar") {
				names = append(names, name)
			}
		}
		return pick(g, names...)
	}
	switch {
	case g.chance(0.04):
		return "not-there"
	case len(l.inits) > 0 && g.chance(0.2):
		return pick(g, l.inits...) // a sidecar is found by name, a plain init container is not
	default:
		return pick(g, l.containers...)
	}
}

func (g gen) requests(missing float64) map[corev1.ResourceName]int64 {
	m := map[corev1.ResourceName]int64{}
	if !g.chance(missing) {
		m[corev1.ResourceCPU] = 50 * g.between(1, 40)
	}
	if !g.chance(missing) {
		m[corev1.ResourceMemory] = g.between(16, 1024) << 20 * 1000
	}
	if g.chance(0.01) {
		m[pick(g, corev1.ResourceCPU, corev1.ResourceMemory)] = 0 // an explicit zero request is not a missing one
	}
	return m
}

func (g gen) pod(s *scenario, i int, l layout, missingRequest float64) podCase {
	p := podCase{name: fmt.Sprintf("pod-%02d", i), phase: corev1.PodRunning}
	switch x := g.r.Float64(); {
	case x < 0.07:
		p.phase = corev1.PodPending
	case x < 0.12:
		p.phase = corev1.PodFailed
	case x < 0.16:
		p.phase = corev1.PodSucceeded
	case x < 0.18:
		p.phase = corev1.PodUnknown
	}
	p.deleting = g.chance(0.05)

	initPeriod := int64(s.cpuInitializationPeriod / time.Second)
	delay := int64(s.initialReadinessDelay / time.Second)
	var start int64
	switch x := g.r.Float64(); {
	case x < 0.3:
		start = -initPeriod - g.between(reconcileMargin, 3600) // long past its initialization
	case x < 0.55 && g.reconcile:
		start = -initPeriod + pick(g, int64(-1), 1)*(reconcileMargin+g.between(0, 5))
	case x < 0.55:
		start = -initPeriod + g.between(-2, 2) // at the end of the initialization period
	case x < 0.85 && g.reconcile:
		start = -g.between(0, initPeriod-reconcileMargin)
	case x < 0.85:
		start = -g.between(0, initPeriod) // initializing
	default:
		start = -g.between(0, 5)
	}
	p.start = at(start)
	if g.chance(0.04) {
		p.start = offset{}
	}

	if !g.chance(0.07) {
		p.ready = corev1.ConditionTrue
		switch x := g.r.Float64(); {
		case x < 0.25:
			p.ready = corev1.ConditionFalse
		case x < 0.3:
			p.ready = corev1.ConditionUnknown
		}
		switch x := g.r.Float64(); {
		case x < 0.3:
			p.readySince = at(start + delay + g.between(-2, 2)) // around the initial readiness delay
		case x < 0.8:
			p.readySince = at(start + g.between(0, max(1, -start)))
		case x < 0.87:
			p.readySince = at(start - g.between(0, 10)) // clock skew: before the start
		case x < 0.9:
			p.readySince = at(g.between(1, 5)) // clock skew: in the future
		default:
			p.readySince = offset{}
		}
	}

	for _, name := range l.containers {
		p.containers = append(p.containers, containerCase{name: name, requests: g.requests(missingRequest)})
	}
	for _, name := range l.inits {
		p.inits = append(p.inits, containerCase{name: name, sidecar: strings.HasSuffix(name, "-sidecar"), requests: g.requests(missingRequest)})
	}
	if g.chance(0.12) {
		switch x := g.r.Float64(); {
		case x < 0.35:
			p.podReqs = map[corev1.ResourceName]int64{corev1.ResourceCPU: 100 * g.between(1, 40)}
		case x < 0.55:
			p.podReqs = map[corev1.ResourceName]int64{corev1.ResourceMemory: g.between(64, 2048) << 20 * 1000}
		case x < 0.8:
			p.podReqs = map[corev1.ResourceName]int64{corev1.ResourceCPU: 100 * g.between(1, 40), corev1.ResourceMemory: g.between(64, 2048) << 20 * 1000}
		case x < 0.9:
			p.podReqs = map[corev1.ResourceName]int64{"hugepages-2Mi": 4 << 20 * 1000} // counts as pod-level requests
		default:
			p.podReqs = map[corev1.ResourceName]int64{corev1.ResourceEphemeralStorage: 1 << 30 * 1000} // does not
		}
	}
	if g.chance(0.05) {
		p.overhead = map[corev1.ResourceName]int64{corev1.ResourceCPU: 250, corev1.ResourceMemory: 120 << 20 * 1000}
	}
	return p
}

// requestOf approximates a pod's request for the scenario's metric, to draw samples near a
// chosen utilization; it need not match upstream's rules (those are what is being tested).
func (s *scenario) requestOf(p podCase) int64 {
	if v, ok := p.podReqs[s.resource]; ok && s.container == "" {
		return v
	}
	total := int64(0)
	for _, c := range append(slices.Clone(p.containers), p.inits...) {
		if s.container == "" || s.container == c.name {
			total += c.requests[s.resource]
		}
	}
	if total == 0 {
		total = 1000
	}
	return total
}

func (g gen) samples(s *scenario) map[string]sampleCase {
	// One level for the whole workload, so the ratio lands near interesting spots, plus noise.
	var level float64 // utilization fraction or multiple of the average-value target
	down, up := s.tolerances()
	switch x := g.r.Float64(); {
	case x < 0.15:
		level = 1 + up
	case x < 0.3:
		level = 1 - down
	case x < 0.45:
		level = 1
	default:
		level = g.r.Float64() * 3
	}
	if s.kind.utilization() {
		level *= float64(s.targetUtilization) / 100
	}
	noise := pick(g, 0.0, 0.0, 0.02, 0.2)
	missing := pick(g, 0.0, 0.0, 0.1, 0.3)
	sign, huge := 1.0, false
	if s.kind == kindPodsAverageValue {
		// custom metrics may be negative, or large enough for their sum to overflow int64
		sign = pick(g, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, -1.0)
		huge = g.chance(0.02)
	}

	samples := map[string]sampleCase{}
	add := func(name string, base int64, readySince offset) {
		v := float64(base) * level * (1 + noise*(2*g.r.Float64()-1))
		window := pick(g, 15*time.Second, 30*time.Second, 60*time.Second)
		ts := s.metricTimestamp
		if g.chance(0.4) && readySince.set {
			// around "one full window since the last readiness transition"
			ts = at(readySince.sec + int64(window/time.Second) + g.between(-1, 1))
		}
		value := int64(math.Max(0, math.Round(v))) * int64(sign)
		if huge {
			value = math.MaxInt64/4 + g.r.Int64N(1000)
		}
		samples[name] = sampleCase{value: value, at: ts, window: window}
	}
	for _, p := range s.pods {
		if g.chance(missing) {
			continue
		}
		base := s.target
		if s.kind.utilization() {
			base = s.requestOf(p)
		}
		add(p.name, base, p.readySince)
	}
	if g.chance(0.08) {
		for i := range g.between(1, 2) { // samples for pods the informer does not know (yet)
			base := s.target
			if s.kind.utilization() {
				base = 1000
			}
			add(fmt.Sprintf("ghost-%d", i), base, offset{})
		}
	}
	return samples
}

func (g gen) objectOrExternal(s *scenario) {
	expected := s.target * int64(max(1, s.specReplicas))
	if s.kind == kindObjectAverageValue || s.kind == kindExternalAverageValue {
		expected = s.target * int64(max(1, s.statusReplicas))
	}
	down, up := s.tolerances()
	var value int64
	switch x := g.r.Float64(); {
	case x < 0.15:
		value = int64(float64(expected) * (1 + up))
	case x < 0.3:
		value = int64(float64(expected) * (1 - down))
	case x < 0.4:
		value = expected
	case x < 0.43:
		value = math.MaxInt64
	default:
		value = int64(g.r.Float64() * 3 * float64(expected))
	}
	if g.chance(0.03) {
		value = -value // object and external metrics may be negative
	}
	if s.kind == kindObjectValue || s.kind == kindObjectAverageValue {
		s.objectValue = value
		return
	}
	if g.chance(0.5) {
		s.metricLabels = map[string]string{"queue": "jobs"}
	}
	n := int(g.between(0, 4))
	if value == math.MaxInt64 {
		// overflow of the sum: two halves plus one
		s.externalValues = []int64{math.MaxInt64/2 + 1, math.MaxInt64/2 + 1}
		return
	}
	for i := range n {
		share := value / int64(max(1, n))
		if i == n-1 {
			share = value - share*int64(n-1)
		}
		s.externalValues = append(s.externalValues, share)
	}
}
