package parity

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	autoscalingdefaults "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

var reconcileFlag = flag.Int("reconcile-hpas", 500, "number of random HPAs in the reconcile-level test")

// reconcileRounds is how many times each HPA is reconciled, with new metric values each time,
// so that stabilization and rate limits also see a history.
const reconcileRounds = 3

// hpaCase is one HPA over a few reconciles: up to three metrics over the same pods, bounds,
// behavior and the scale-to-zero condition. The first metric's scenario carries the pods and the
// scale.
type hpaCase struct {
	seed    uint64
	metrics []*scenario
	// rounds[k] are the metrics' numbers at the k-th reconcile (rounds[0] is metrics).
	rounds       [][]*scenario
	minReplicas  *int32
	maxReplicas  int32
	behavior     *autoscalingv2.HorizontalPodAutoscalerBehavior // as the user wrote it
	scaledToZero bool
	// downscaleWindow is the controller's --horizontal-pod-autoscaler-downscale-stabilization
	// (5m, or 0: a zero-length window leaves the first sync's seed behind at once).
	downscaleWindow time.Duration
	// behaviors[k] is the behavior the user has written by round k: a spec edit between two
	// rounds (removing the behavior, widening a window, adding one) changes which of the
	// recommendations held in memory count.
	behaviors []*autoscalingv2.HorizontalPodAutoscalerBehavior
}

func (c *hpaCase) base() *scenario { return c.metrics[0] }

func newHPACase(seed uint64, ns string) *hpaCase {
	g := gen{r: rand.New(rand.NewPCG(seed, seed^0x51afd7ed558ccd)), reconcile: true}
	c := &hpaCase{seed: seed}
	base := g.scenario(g.r.Uint64())
	base.ns = ns
	c.metrics = []*scenario{base}
	identities := map[string]bool{base.identity(): true}
	n := int(g.between(1, 3))
	for j := 1; j < n; j++ {
		m := g.scenario(g.r.Uint64())
		if m.metricName != "" {
			m.metricName = fmt.Sprintf("%s-%d", m.metricName, j)
		}
		if m.kind.container() && len(base.pods) > 0 {
			// the metric names a container of these pods (all pods share one layout)
			var names []string
			for _, c := range base.pods[0].containers {
				names = append(names, c.name)
			}
			for _, c := range base.pods[0].inits {
				if c.sidecar {
					names = append(names, c.name)
				}
			}
			m.container = pick(g, names...)
		}
		if identities[m.identity()] {
			continue // one metric per resource and container: they would share the same samples
		}
		identities[m.identity()] = true
		m.ns, m.pods = ns, base.pods
		m.upTolerance, m.downTolerance = base.upTolerance, base.downTolerance
		m.specReplicas, m.statusReplicas = base.specReplicas, base.statusReplicas
		if m.kind.podBased() {
			m.samples = g.samples(m)
		} else {
			g.objectOrExternal(m)
		}
		c.metrics = append(c.metrics, m)
	}

	objectOrExternal := slices.ContainsFunc(c.metrics, func(s *scenario) bool { return !s.kind.podBased() })
	switch {
	case g.chance(0.3):
	case objectOrExternal && g.chance(0.3):
		c.minReplicas = ptr(int32(0))
	default:
		c.minReplicas = ptr(int32(g.between(1, 3)))
	}
	lo := int64(1)
	if c.minReplicas != nil {
		lo = max(lo, int64(*c.minReplicas))
	}
	c.maxReplicas = int32(g.between(lo, 25))
	if g.chance(0.15) {
		c.maxReplicas = int32(max(lo, int64(base.specReplicas)-g.between(1, 3))) // current above max
	}
	if g.chance(0.05) {
		base.specReplicas = 0
	}
	c.scaledToZero = base.specReplicas == 0 && g.chance(0.7)
	for _, m := range c.metrics {
		m.specReplicas = base.specReplicas
	}

	if g.chance(0.45) {
		for _, m := range c.metrics { // without behavior only the controller's tolerance applies
			m.upTolerance, m.downTolerance = "", ""
		}
	} else {
		c.behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: g.rules(base.upTolerance, true), ScaleDown: g.rules(base.downTolerance, false)}
	}

	c.rounds = [][]*scenario{c.metrics}
	for range reconcileRounds - 1 {
		var round []*scenario
		for _, m := range c.metrics {
			next := *m
			if next.kind.podBased() {
				next.samples = g.samples(&next)
			} else {
				g.objectOrExternal(&next)
				next.metricLabels = m.metricLabels // the selector is part of the spec
			}
			round = append(round, &next)
		}
		c.rounds = append(c.rounds, round)
	}
	// Drawn last, so that the cases above are those every earlier seed replays.
	c.downscaleWindow = 5 * time.Minute
	if g.chance(0.3) {
		c.downscaleWindow = 0
	}
	c.behaviors = make([]*autoscalingv2.HorizontalPodAutoscalerBehavior, reconcileRounds)
	for k := range c.behaviors {
		c.behaviors[k] = c.behavior
	}
	if g.chance(0.4) {
		at := int(g.between(1, reconcileRounds-1))
		edited := g.edit(c.behavior)
		for k := at; k < reconcileRounds; k++ {
			c.behaviors[k] = edited
		}
	}
	return c
}

// edit is a spec edit of b: the behavior removed, a window widened to 5 minutes, or (without
// one) a behavior added whose windows are zero-length.
func (g gen) edit(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	zero := func() *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(0))}
	}
	if b == nil {
		return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: zero(), ScaleDown: zero()}
	}
	if g.chance(0.4) {
		return nil
	}
	out := b.DeepCopy()
	if g.chance(0.5) {
		if out.ScaleDown == nil {
			out.ScaleDown = &autoscalingv2.HPAScalingRules{}
		}
		out.ScaleDown.StabilizationWindowSeconds = ptr(int32(300))
	} else {
		if out.ScaleUp == nil {
			out.ScaleUp = &autoscalingv2.HPAScalingRules{}
		}
		out.ScaleUp.StabilizationWindowSeconds = ptr(int32(300))
	}
	return out
}

// identity is what the metrics client is asked for.
func (s *scenario) identity() string {
	switch {
	case s.kind.resourceBased():
		return fmt.Sprintf("resource/%s/%s", s.resource, s.container)
	case s.kind == kindPodsAverageValue:
		return "pods/" + s.metricName
	case s.kind == kindObjectValue || s.kind == kindObjectAverageValue:
		return "object/" + s.metricName
	default:
		return "external/" + s.metricName
	}
}

func (g gen) rules(tolerance string, up bool) *autoscalingv2.HPAScalingRules {
	if tolerance == "" && g.chance(0.3) {
		return nil
	}
	r := &autoscalingv2.HPAScalingRules{}
	if tolerance != "" {
		r.Tolerance = ptr(resource.MustParse(tolerance))
	}
	if g.chance(0.7) {
		r.StabilizationWindowSeconds = ptr(pick(g, int32(0), 0, 0, 15, 60, 300))
	}
	if g.chance(0.3) {
		r.SelectPolicy = ptr(pick(g, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect))
	}
	if g.chance(0.6) {
		for range g.between(1, 3) {
			p := autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: int32(g.between(1, 5)), PeriodSeconds: pick(g, int32(15), 60, 300)}
			if g.chance(0.5) {
				p.Type, p.Value = autoscalingv2.PercentScalingPolicy, int32(pick(g, 10, 25, 50, 100))
				if up {
					p.Value = int32(pick(g, 10, 50, 100, 200, 900))
				}
			}
			r.Policies = append(r.Policies, p)
		}
	}
	return r
}

func (c *hpaCase) hpa() *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.base().ns, Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    c.minReplicas,
			MaxReplicas:    c.maxReplicas,
			Behavior:       c.behavior.DeepCopy(), // the API defaulting of upstream's copy must not leak into ours
		},
	}
	for _, m := range c.metrics {
		h.Spec.Metrics = append(h.Spec.Metrics, m.metricSpec())
	}
	if c.scaledToZero {
		h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero", Message: "the HPA controller scaled the workload to zero"},
		}
	}
	return h
}

func (c *hpaCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hpa case seed=%d minReplicas=%s maxReplicas=%d scaledToZero=%t\n", c.seed, formatPtr(c.minReplicas), c.maxReplicas, c.scaledToZero)
	fmt.Fprintf(&b, "  behavior: %s\n  controller downscale window: %s\n", formatBehavior(c.behavior), c.downscaleWindow)
	for k := 1; k < len(c.behaviors); k++ {
		if c.behaviors[k] != c.behaviors[k-1] {
			fmt.Fprintf(&b, "  behavior from round %d: %s\n", k, formatBehavior(c.behaviors[k]))
		}
	}
	for i, m := range c.metrics {
		fmt.Fprintf(&b, "metric %d (%s): ", i, m.identity())
		b.WriteString(m.String())
	}
	for k, round := range c.rounds[1:] {
		fmt.Fprintf(&b, "round %d:\n", k+1)
		for i, m := range round {
			fmt.Fprintf(&b, "  metric %d: ", i)
			switch {
			case m.kind.podBased():
				for _, name := range sortedKeys(m.samples) {
					sm := m.samples[name]
					fmt.Fprintf(&b, "%s=%dm at %s window %s; ", name, sm.value, sm.at, sm.window)
				}
			case m.kind == kindObjectValue || m.kind == kindObjectAverageValue:
				fmt.Fprintf(&b, "object value=%dm", m.objectValue)
			default:
				fmt.Fprintf(&b, "external values=%v", m.externalValues)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func formatPtr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func formatBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	if b == nil {
		return "nil"
	}
	rules := func(r *autoscalingv2.HPAScalingRules) string {
		if r == nil {
			return "nil"
		}
		var policies []string
		for _, p := range r.Policies {
			policies = append(policies, fmt.Sprintf("%s %d/%ds", p.Type, p.Value, p.PeriodSeconds))
		}
		tol := "nil"
		if r.Tolerance != nil {
			tol = r.Tolerance.String()
		}
		return fmt.Sprintf("{window=%s select=%s policies=[%s] tolerance=%s}", formatPtr(r.StabilizationWindowSeconds), formatPtr(r.SelectPolicy), strings.Join(policies, ", "), tol)
	}
	return fmt.Sprintf("scaleUp=%s scaleDown=%s", rules(b.ScaleUp), rules(b.ScaleDown))
}

// controllerMetrics serves every HPA's metrics of the current round to one upstream controller,
// by namespace and metric identity.
type controllerMetrics struct {
	now      time.Time
	mu       sync.Mutex
	round    int
	byMetric map[string][]*scenario // "<namespace>/<identity>" -> per round
}

func (m *controllerMetrics) setRound(round int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.round = round
}

func (m *controllerMetrics) lookup(ns, identity string) (fakeMetrics, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rounds, ok := m.byMetric[ns+"/"+identity]
	if !ok {
		return fakeMetrics{}, fmt.Errorf("parity: the controller asked for %s in %s, which no scenario defines", identity, ns)
	}
	return fakeMetrics{s: rounds[m.round], now: m.now}, nil
}

func (m *controllerMetrics) GetResourceMetric(ctx context.Context, res corev1.ResourceName, ns string, sel labels.Selector, container string) (metricsclient.PodMetricsInfo, time.Time, error) {
	f, err := m.lookup(ns, fmt.Sprintf("resource/%s/%s", res, container))
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetResourceMetric(ctx, res, ns, sel, container)
}

func (m *controllerMetrics) GetRawMetric(name, ns string, sel, metricSel labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	f, err := m.lookup(ns, "pods/"+name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetRawMetric(name, ns, sel, metricSel)
}

func (m *controllerMetrics) GetObjectMetric(name, ns string, ref *autoscalingv2.CrossVersionObjectReference, metricSel labels.Selector) (int64, time.Time, error) {
	f, err := m.lookup(ns, "object/"+name)
	if err != nil {
		return 0, time.Time{}, err
	}
	return f.GetObjectMetric(name, ns, ref, metricSel)
}

func (m *controllerMetrics) GetExternalMetric(name, ns string, sel labels.Selector) ([]int64, time.Time, error) {
	f, err := m.lookup(ns, "external/"+name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetExternalMetric(name, ns, sel)
}

// reconciled is what one reconcile wrote: the scale (if rescaled) and the HPA status.
type reconciled struct {
	rescaled bool
	replicas int32
	status   autoscalingv2.HorizontalPodAutoscalerStatus
}

// render writes the compared parts as lines (timestamps are the controller's own clock).
func (r reconciled) render() string {
	var b strings.Builder
	if r.rescaled {
		fmt.Fprintf(&b, "scale write: %d replicas\n", r.replicas)
	} else {
		b.WriteString("scale write: none\n")
	}
	st := r.status
	fmt.Fprintf(&b, "status: currentReplicas=%d desiredReplicas=%d observedGeneration=%s lastScaleTime set=%t\n",
		st.CurrentReplicas, st.DesiredReplicas, formatPtr(st.ObservedGeneration), st.LastScaleTime != nil)
	for i, m := range st.CurrentMetrics {
		fmt.Fprintf(&b, "  currentMetrics[%d]: %s\n", i, renderStatus(m))
	}
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// runUpstreamController runs upstream's HorizontalController with fake clients over every round:
// round 0 reconciles each HPA as it appears; each later round changes the metrics and bumps the
// HPA's generation, which makes the controller reconcile it at once. It returns what each
// reconcile wrote, per namespace.
func runUpstreamController(cases []*hpaCase, now time.Time) (map[string][]reconciled, error) {
	window := cases[0].downscaleWindow // a batch shares one controller, so one window
	var objects []runtime.Object
	metrics := &controllerMetrics{now: now, byMetric: map[string][]*scenario{}}
	scales := map[string]*autoscalingv1.Scale{}
	for _, c := range cases {
		base := c.base()
		h := c.hpa()
		autoscalingdefaults.SetDefaults_HorizontalPodAutoscaler(h) // what the API server stores
		objects = append(objects, h)
		for _, p := range base.buildPods(now) {
			objects = append(objects, p)
		}
		for i, m := range c.metrics {
			for _, round := range c.rounds {
				metrics.byMetric[base.ns+"/"+m.identity()] = append(metrics.byMetric[base.ns+"/"+m.identity()], round[i])
			}
		}
		scales[base.ns] = &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: base.ns},
			Spec:       autoscalingv1.ScaleSpec{Replicas: base.specReplicas},
			Status:     autoscalingv1.ScaleStatus{Replicas: base.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
		}
	}

	// A reconcile writes the scale (when rescaling) and then, always, the status: every round
	// changes status.observedGeneration, and round 0 starts without conditions.
	var mu sync.Mutex
	out := map[string][]reconciled{}
	pending := map[string]*int32{}
	// NewClientset's field-managed tracker builds a REST mapper on every update (most of this
	// test's time); nothing here needs server-side apply.
	client := fake.NewSimpleClientset(objects...) //nolint:staticcheck // see above
	client.PrependReactor("update", "horizontalpodautoscalers", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			h := action.(clienttesting.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
			mu.Lock()
			r := reconciled{status: *h.Status.DeepCopy()}
			if p := pending[h.Namespace]; p != nil {
				r.rescaled, r.replicas = true, *p
			}
			delete(pending, h.Namespace)
			out[h.Namespace] = append(out[h.Namespace], r)
			mu.Unlock()
		}
		return false, nil, nil
	})
	scaleClient := &scalefake.FakeScaleClient{}
	scaleClient.AddReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		s, ok := scales[action.GetNamespace()]
		if !ok {
			return true, nil, fmt.Errorf("no scale in %s", action.GetNamespace())
		}
		return true, s.DeepCopy(), nil
	})
	scaleClient.AddReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s := action.(clienttesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		mu.Lock()
		defer mu.Unlock()
		pending[action.GetNamespace()] = ptr(s.Spec.Replicas)
		scales[action.GetNamespace()].Spec.Replicas = s.Spec.Replicas
		return true, s.DeepCopy(), nil
	})
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, apimeta.RESTScopeNamespace)

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl := podautoscaler.NewHorizontalController(ctx, client.CoreV1(), scaleClient, client.AutoscalingV2(), mapper, metrics,
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		time.Hour, // resync: nothing but the test's own changes triggers a reconcile
		window, 0.1, 5*time.Minute, 30*time.Second)
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 1)
	}()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(2 * time.Minute)
	for round := range reconcileRounds {
		if round > 0 {
			metrics.setRound(round)
			for _, c := range cases {
				hpas := client.AutoscalingV2().HorizontalPodAutoscalers(c.base().ns)
				h, err := hpas.Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("reading back HPA in %s: %w", c.base().ns, err)
				}
				h.Generation++
				if b := c.behaviors[round]; b != c.behaviors[round-1] {
					h.Spec.Behavior = b.DeepCopy()
					autoscalingdefaults.SetDefaults_HorizontalPodAutoscaler(h)
				}
				if _, err := hpas.Update(ctx, h, metav1.UpdateOptions{}); err != nil {
					return nil, fmt.Errorf("bumping the generation of the HPA in %s: %w", c.base().ns, err)
				}
			}
		}
		for {
			mu.Lock()
			finished := 0
			for _, c := range cases {
				if len(out[c.base().ns]) > round {
					finished++
				}
			}
			mu.Unlock()
			if finished == len(cases) {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("round %d: upstream's controller wrote the status of %d of %d HPAs within 2 minutes", round, finished, len(cases))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return out, nil
}

// runOursReconcile decides and applies every round of one case with our core, carrying the
// status, history and scale from one round to the next as the controller does (scale writes
// succeed). Round k happens k*100ms after now: later, as upstream's rounds are.
func runOursReconcile(c *hpaCase, now time.Time) []reconciled {
	base := c.base()
	h := c.hpa()
	current := base.specReplicas
	var history replicas.History
	var out []reconciled
	for k, round := range c.rounds {
		h.Generation = int64(k + 1)
		h.Spec.Behavior = c.behaviors[k].DeepCopy()
		at := now.Add(time.Duration(k) * 100 * time.Millisecond)
		src := &source{
			hpa:     h,
			history: history,
			scale:   replicas.Scale{SpecReplicas: current, StatusReplicas: base.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
			pods:    base.buildPods(now),
			metrics: map[string]*scenario{},
			now:     now,
		}
		for _, m := range round {
			src.metrics[m.identity()] = m
		}
		cfg := base.config()
		cfg.DownscaleStabilizationWindow = c.downscaleWindow
		ev, err := src.evaluate(at, cfg, false)
		if err != nil {
			panic(fmt.Sprintf("parity: Evaluate from a source that cannot fail: %v", err))
		}
		in, d := ev.Input, ev.Decision
		o := replicas.Apply(in, d, nil)
		out = append(out, reconciled{rescaled: d.Rescale, replicas: d.DesiredReplicas, status: o.Status})
		h = h.DeepCopy()
		h.Status = o.Status
		history = o.History
		if d.Rescale {
			current = d.DesiredReplicas
		}
	}
	return out
}

// TestReconcileParity runs upstream's whole HorizontalController over random HPAs (several
// metrics, bounds, behavior, scale-to-zero), reconciling each three times with new metric values,
// and requires our Decide and Apply, given the same inputs and carrying their own history, to
// write the same scale and the same status: replicas, metric statuses, and conditions with their
// messages. Events are not compared (upstream records them asynchronously).
func TestReconcileParity(t *testing.T) {
	seeds := scenarioSeeds(t)
	if len(seeds) > 1 {
		seeds = seeds[:min(len(seeds), *reconcileFlag)]
	}
	cases := make([]*hpaCase, len(seeds))
	for i, seed := range seeds {
		cases[i] = newHPACase(seed, fmt.Sprintf("ns-%016x", seed))
	}
	// The controller's klog output (reconcile errors of cases that fail on purpose) is noise here.
	klog.SetLogger(logr.Discard())
	t.Cleanup(klog.ClearLogger)

	var mismatches []string
	stats := map[string]int{}
	// One controller runs a batch, under one downscale window.
	byWindow := map[time.Duration][]*hpaCase{}
	for _, c := range cases {
		byWindow[c.downscaleWindow] = append(byWindow[c.downscaleWindow], c)
	}
	for _, w := range slices.Sorted(maps.Keys(byWindow)) {
		for batch := range slices.Chunk(byWindow[w], reconcileBatch) {
			mismatches = append(mismatches, reconcileBatchParity(t, batch, stats)...)
		}
	}
	t.Logf("%d HPAs; upstream outcomes: %s", len(cases), formatStats(stats))
	if len(mismatches) > 0 {
		shown := mismatches[:min(len(mismatches), maxReportedMismatches)]
		t.Errorf("%d of %d HPAs reconcile differently from upstream; first %d:\n\n%s", len(mismatches), len(cases), len(shown), strings.Join(shown, "\n\n"))
	}
}

// reconcileBatch HPAs share one controller run. A run must end within reconcileBudget: our core
// sees the rounds 100ms apart while upstream reads its own clock, which is equivalent only while
// every round lies well inside the shortest window and policy period (15s) and pod start times
// stay on their side of the CPU initialization boundary (reconcileMargin).
const (
	reconcileBatch  = 50
	reconcileBudget = 7 * time.Second
)

func reconcileBatchParity(t *testing.T, cases []*hpaCase, stats map[string]int) []string {
	for attempt := 0; ; attempt++ {
		now := time.Now()
		got, err := runUpstreamController(cases, now)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(now) >= reconcileBudget {
			if attempt == 2 {
				t.Fatalf("upstream's controller took over %s three times for %d HPAs", reconcileBudget, len(cases))
			}
			continue
		}
		var mismatches []string
		for _, c := range cases {
			up := got[c.base().ns]
			ours := runOursReconcile(c, now)
			for k := range up {
				stats[reconcileClass(up[k])]++
				if u, o := up[k].render(), ours[k].render(); u != o {
					mismatches = append(mismatches, fmt.Sprintf("round %d:\nupstream:\n%s\nours:\n%s\n%s  replay: cd test/parity && go test -run TestReconcileParity -seed=%d",
						k, indent(u), indent(o), c, c.seed))
					break // later rounds start from different states
				}
			}
		}
		return mismatches
	}
}

func reconcileClass(r reconciled) string {
	switch {
	case !r.rescaled:
		return "hold"
	case r.replicas > r.status.CurrentReplicas:
		return "up"
	default:
		return "down"
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
